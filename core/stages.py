"""The pipeline's stages as plain functions: what each Prefect task wraps.

Each stage takes values and returns values (no Prefect, no global state), so the whole release
can be driven and tested without an orchestrator (:func:`privgate.anonymize` does exactly
that), and the tasks in ``tasks/`` stay thin:

    fingerprint_input -> ingest -> (validations) -> rank -> anonymize -> stage -> verify

:func:`anonymize` knows no algorithm by name: it prepares the table once
(:class:`~privgate.core.anonymize.SearchInput`), asks the policy's algorithm which releases
the run makes, and turns each :class:`~privgate.core.anonymize.AnonymizationResult` into a
release table. The rows are put in a random order once, in :func:`stage`, when the release is
written; until then a released row carries its original record's index.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from privgate.core._columnar_stage import columnar_anonymization, columnar_applies
from privgate.core.anonymize import (
    AnonymizationResult,
    PlannedRelease,
    SearchInput,
    SearchSetup,
    make_algorithm,
    release_table,
    shuffle_rows,
)
from privgate.core.attacks import ControlSplit, attack_release
from privgate.core.exceptions import AnonymizationError
from privgate.core.gate import (
    GateDecision,
    check_attacks,
    check_coverage,
    read_release,
    sensitive_reference,
    verify_release,
    verify_table,
    written_counts,
)
from privgate.core.hierarchy import Hierarchy, hierarchies_for
from privgate.core.history import (
    CrossReleaseState,
    HistoryEntry,
    PastRelease,
    check_written_release,
    history_requirements,
    protect_across_releases,
    removal_budget,
    with_history,
)
from privgate.core.ingest import read_table
from privgate.core.label_coverage import hierarchy_spans
from privgate.core.metrics import precision, table_loss
from privgate.core.policy import ReleasePolicy
from privgate.core.privacy import reference_columns
from privgate.core.publish import StagedRelease, discard, stage_release
from privgate.core.research_subset import SubsetFacts, select_research_subset, subset_fingerprint

if TYPE_CHECKING:
    from privgate.core.ranking import Ranking

__all__ = [
    "AnonymizedTable",
    "IngestedTable",
    "anonymize",
    "attack",
    "fingerprint_input",
    "ingest",
    "load_hierarchies",
    "protect_against_history",
    "rank",
    "stage",
    "stage_and_check",
    "stage_and_verify",
    "verify",
]


@dataclass(frozen=True)
class IngestedTable:
    """The raw input table and the fingerprint of the file it came from.

    With a research subset (``privacy.research_subset``) ``frame`` holds the subset's records
    only (everything downstream sees the subset, see :mod:`privgate.core.research_subset`),
    ``sha256`` fingerprints the input file and the key file together (it keys the caches and
    the release id: another subset is another release), ``file_sha256`` is the input file's
    own and ``subset`` what the manifest records about the subset.
    """

    frame: pd.DataFrame
    sha256: str
    path: str
    subset: SubsetFacts | None = None
    file_sha256: str | None = None

    @property
    def rows(self) -> int:
        return len(self.frame)


def load_hierarchies(policy: ReleasePolicy) -> dict[str, Hierarchy]:
    """One hierarchy per quasi-identifier, in policy order."""
    return hierarchies_for(policy)


def _file_fingerprint(policy: ReleasePolicy) -> str:
    """sha256 of the input: a file, a folder of Parquet parts or a glob of them (the
    partitioned path's inputs); "" when there is none."""
    from privgate.core.scale import input_fingerprint

    return input_fingerprint(policy.input.path)


def fingerprint_input(policy: ReleasePolicy) -> str:
    """sha256 of the input file ("" when it does not exist; ingest then names the problem);
    with a research subset, sha256 of the input file's and the key file's together (and the
    key column), so that another subset of the same table is another release."""
    digest = _file_fingerprint(policy)
    subset = policy.privacy.research_subset if policy.privacy is not None else None
    if subset is None or not digest:
        return digest
    joined = f"{digest}:research-subset:{subset.key}:{subset_fingerprint(subset)}"
    return hashlib.sha256(joined.encode()).hexdigest()


def ingest(policy: ReleasePolicy, input_sha256: str | None = None) -> IngestedTable:
    """Read the input file (it is only ever read) and record its fingerprint; with a research
    subset, keep only the subset's records (:func:`select_research_subset`)."""
    digest = fingerprint_input(policy) if input_sha256 is None else input_sha256
    frame = read_table(policy.input)
    subset = policy.privacy.research_subset if policy.privacy is not None else None
    if subset is None:
        return IngestedTable(frame, digest, str(policy.input.path))
    frame, facts = select_research_subset(frame, subset)
    return IngestedTable(
        frame, digest, str(policy.input.path), facts, file_sha256=_file_fingerprint(policy)
    )


def rank(frame: pd.DataFrame, policy: ReleasePolicy) -> Ranking:
    """The sensitivity ranking: how much each quasi-identifier reveals about the target.

    The forests see at most ``ranking.sample_size`` records, a sample stratified by the target
    and seeded by ``ranking.seed``, so a nightly run on a large table stays bounded and the
    ranking is reproducible.
    """
    from privgate.core.ranking import rank_attributes

    spec = policy.ranking
    if spec is None:
        raise AnonymizationError("the policy has no 'ranking' section to rank attributes by")
    sample = frame
    if spec.sample_size is not None and len(frame) > spec.sample_size:
        share = spec.sample_size / len(frame)
        sample = frame.groupby(frame[spec.target], dropna=False, group_keys=False).sample(
            frac=share, random_state=spec.seed
        )
    return rank_attributes(
        sample,
        policy.quasi_identifiers,
        spec.target,
        method=spec.method,
        n_estimators=spec.n_estimators,
        runs=spec.runs,
        n_tiers=spec.tiers,
        random_state=spec.seed,
    )


@dataclass(frozen=True)
class AnonymizedTable:
    """One release table plus what the algorithm decided and measured about it.

    Attributes
    ----------
    frame : DataFrame
        The release: the kept records in input order, each with its original index (the
        rows are shuffled only when written, by :func:`stage`).
    result : AnonymizationResult
    metrics : dict
        Loss, suppression, timing and the search's own facts (``search_*``).
    covered : list of str
        The quasi-identifiers the release's guarantee covers, as the run planned them (a
        tiered release E: tiers 1..E of the ranking; otherwise all of them).
    tier : int or None
        The tier E of a tiered release.
    """

    frame: pd.DataFrame
    result: AnonymizationResult
    metrics: dict = field(default_factory=dict)
    covered: list[str] = field(default_factory=list)
    tier: int | None = None
    #: Private facts the gate verifies with, never written to the release: each kept row's
    #: person key (aligned with ``frame``) and the input's number of persons (a person-keyed
    #: policy), and the input's value counts of the t-closeness, β-likeness and δ-disclosure
    #: columns (the reference distribution the search used, see
    #: :func:`privgate.core.gate.sensitive_reference`).
    persons: np.ndarray | None = None
    input_persons: int | None = None
    reference: dict | None = None
    #: Local recoding (no level per quasi-identifier): each numeric quasi-identifier's input
    #: values, every record's, and what each of its hierarchy's labels stands for, for the
    #: gate's check that the written ranges hold them
    #: (:func:`privgate.core.label_coverage.unmatched_labels`).
    input_numbers: dict | None = None
    #: Per column released as it is, the input's count of each cell text as written: the
    #: written column must hold no more of any (:mod:`privgate.core.marginals`).
    marginals: dict | None = None
    #: Each kept row's history key (aligned with ``frame``) when the policy checks the release
    #: history: who went into which class, recorded privately on publication.
    history_keys: np.ndarray | None = None

    def gate_facts(self) -> dict:
        """The private facts as keyword arguments of :func:`verify` (those that are set)."""
        facts = {"persons": self.persons, "input_persons": self.input_persons}
        facts["reference"] = self.reference
        facts["input_numbers"] = self.input_numbers
        facts["marginals"] = self.marginals
        return {k: v for k, v in facts.items() if v is not None}

    @property
    def transformation(self) -> dict[str, str]:
        """What was done to each quasi-identifier, in words."""
        return self.result.transformation

    def release_id(self, run_release_id: str) -> str:
        """This table's release id within a run (a tiered release E: ``<id>-e<E>``)."""
        return run_release_id if self.tier is None else f"{run_release_id}-e{self.tier}"


def anonymize(
    frame: pd.DataFrame, setup: SearchSetup, ranking: Ranking | None = None
) -> list[AnonymizedTable]:
    """Run the policy's algorithm and build every release table the run makes.

    Parameters
    ----------
    frame : DataFrame
        The validated input (never modified).
    setup : SearchSetup
        :meth:`SearchSetup.from_policy` of the run's policy.
    ranking : Ranking, optional
        The sensitivity ranking (RFKA and tiered releases need it).

    Returns
    -------
    list of AnonymizedTable
        One; a tiered policy one per tier of the ranking, in increasing tier.

    Raises
    ------
    AnonymizationError
        The privacy models cannot be met (``k`` larger than the table, or not even the fully
        generalized table satisfies them within the suppression limit).
    HierarchyError
        A quasi-identifier value is not covered by its hierarchy.
    """
    started = time.perf_counter()
    tables = []
    results = _results(frame, setup, ranking)
    first = next(results, None)  # the table is checked (columns, k <= rows) before the rest
    if first is None:
        return tables
    t_columns = reference_columns(setup.models)  # t-closeness, β-likeness, δ-disclosure
    reference = None
    if t_columns:  # with a person key, each input person weighs 1 (the search's reference)
        keys = None if setup.person_key is None else frame[setup.person_key].astype("string")
        reference = sensitive_reference(frame, t_columns, setup.output_format, persons=keys)
    qis = set(setup.quasi_identifiers)
    plain = written_counts(
        frame, [c for c in setup.released_columns if c not in qis], setup.output_format
    )
    for planned, result in chain([first], results):
        release = release_table(frame, result, setup.released_columns)
        metrics = _metrics(frame, release, result, setup, planned, started)
        persons = input_persons = history_keys = None
        kept = ~np.asarray(result.suppressed, dtype=bool)
        if setup.person_key is not None:
            keys = frame[setup.person_key].astype("string").to_numpy(dtype=object)
            persons = keys[kept]
            input_persons = len(set(keys.tolist()))
            metrics["input_persons"] = input_persons
        if setup.history_key is not None:
            history_keys = frame[setup.history_key].astype("string").to_numpy(dtype=object)[kept]
        input_numbers = None
        if result.levels is None and setup.numeric:  # local recoding: ranges of its own
            input_numbers = {}
            for q in planned.covered:
                if q in setup.numeric:
                    values = pd.to_numeric(frame[q], errors="coerce").to_numpy(
                        dtype=float, na_value=np.nan
                    )
                    spans = hierarchy_spans(setup.hierarchies[q], values)
                    input_numbers[q] = (values, spans)
        tables.append(
            AnonymizedTable(
                release,
                result,
                metrics,
                list(planned.covered),
                planned.tier,
                persons=persons,
                input_persons=input_persons,
                reference=reference,
                input_numbers=input_numbers,
                marginals={c: n for c, n in plain.items() if c not in result.labels} or None,
                history_keys=history_keys,
            )
        )
        started = time.perf_counter()
    return tables


def _results(
    frame: pd.DataFrame, setup: SearchSetup, ranking: Ranking | None
) -> Iterator[tuple[PlannedRelease, AnonymizationResult]]:
    """Each planned release with its result. A single full-domain release is made by the
    columnar engine ``privgate anonymize`` runs (:mod:`privgate.core._columnar_stage`: one
    engine path for both); the other algorithms by the row engine's contract."""
    if columnar_applies(setup):
        yield PlannedRelease(tuple(setup.quasi_identifiers)), columnar_anonymization(frame, setup)
        return
    data = SearchInput.prepare(frame, setup, ranking)
    algorithm = make_algorithm(setup)
    for planned in algorithm.plan(data):
        yield planned, algorithm.anonymize(data.covering(planned.covered))


def _metrics(
    frame: pd.DataFrame,
    release: pd.DataFrame,
    result: AnonymizationResult,
    setup: SearchSetup,
    planned: PlannedRelease,
    started: float,
) -> dict:
    """Loss over every quasi-identifier (uncovered ones count as unchanged), suppression,
    the search's own facts and the time since ``started``."""
    qis = list(setup.quasi_identifiers)
    loss = table_loss(frame[qis], release[qis], setup.hierarchies, set(setup.numeric))
    metrics: dict = {"algorithm": result.algorithm, "input_rows": len(frame)}
    if planned.tier is not None:
        metrics.update(tier=planned.tier, covered=list(planned.covered))
    if result.levels is not None and set(result.levels) == set(qis):
        heights = {q: setup.hierarchies[q].height for q in qis}
        metrics["precision"] = precision(result.levels, heights, len(frame), result.n_suppressed)
    metrics.update(
        release_rows=len(release),
        suppressed=result.n_suppressed,
        loss=loss["total"],
        granularity=loss["granularity"],
        loss_per_attribute=loss["per_attribute"],
        **{f"search_{k}": v for k, v in result.details.items()},
        seconds=round(time.perf_counter() - started, 4),
    )
    return metrics


def stage(table: AnonymizedTable, policy: ReleasePolicy, release_id: str) -> StagedRelease:
    """Write the release, its rows shuffled, into a staging folder under the output directory.

    This is the one place the rows are put in a random order (drawn from the operating
    system's entropy, so nothing published lets anyone recompute it): the published order
    reveals nothing about the input's, which may be sorted by a name or an id.
    """
    return _stage(table, policy, release_id)[0]


#: A column name no policy declares (it starts with a NUL character): carries each row's
#: person key through the shuffle, then is removed before writing.
_PERSON_COLUMN = "\x00person"
_HISTORY_COLUMN = "\x00history"


def _stage(
    table: AnonymizedTable, policy: ReleasePolicy, release_id: str
) -> tuple[StagedRelease, np.ndarray | None, np.ndarray | None]:
    """Stage the release; with a person key (a history key), also each written row's person
    (history key), in written order (shuffled with the rows, kept in memory, never written)."""
    frame = table.frame
    private = {_PERSON_COLUMN: table.persons, _HISTORY_COLUMN: table.history_keys}
    private = {name: values for name, values in private.items() if values is not None}
    if private:
        frame = frame.assign(**private)
    shuffled = shuffle_rows(frame)
    aligned = {name: shuffled.pop(name).to_numpy(dtype=object) for name in private}
    staged = stage_release(
        shuffled,
        policy.output.directory,
        policy.dataset,
        release_id,
        policy.output.format,
        file_mode=policy.output.mode,
    )
    return staged, aligned.get(_PERSON_COLUMN), aligned.get(_HISTORY_COLUMN)


def stage_and_verify(
    table: AnonymizedTable,
    setup: SearchSetup,
    policy: ReleasePolicy,
    release_id: str,
    input_rows: int | None,
    split: ControlSplit | None = None,
) -> tuple[StagedRelease, GateDecision]:
    """Stage the release and verify the file as written, with the table's private facts (the
    person of each written row, the t-closeness reference); with the policy's ``attacks`` and
    the run's control ``split``, also attack the file as written (:func:`attack`)."""
    staged, decision, _ = stage_and_check(table, setup, policy, release_id, input_rows, split)
    return staged, decision


def stage_and_check(
    table: AnonymizedTable,
    setup: SearchSetup,
    policy: ReleasePolicy,
    release_id: str,
    input_rows: int | None,
    split: ControlSplit | None = None,
    past: Sequence[PastRelease] | CrossReleaseState | None = None,
) -> tuple[StagedRelease, GateDecision, HistoryEntry | None]:
    """:func:`stage_and_verify`, and with the release history's ``past`` releases (a policy
    with ``history.check``) the cross-release criterion on the written file too. Returns the
    history entry that publishing the release records (None without a history)."""
    staged, persons, history_keys = _stage(table, policy, release_id)
    facts = table.gate_facts()
    if persons is not None:
        facts["persons"] = persons
    entry = None
    try:
        decision = verify(
            staged.release_file, setup, input_rows, covered=table.covered,
            expected_rows=len(table.frame), **facts,
        )  # fmt: skip
        if split is not None:
            decision = attack(staged.release_file, decision, split, policy, setup.hierarchies)
        if past is not None:
            if history_keys is None:
                raise AnonymizationError(
                    "history.check: the release has no history keys to check against the "
                    "release history"
                )
            result, entry = check_written_release(
                staged.release_file, history_keys, policy, past, release_id
            )
            decision = with_history(decision, result, policy, entry)
    except BaseException:
        discard(staged)  # the caller never receives it: clean up here
        raise
    return staged, decision, entry


def protect_against_history(
    table: AnonymizedTable,
    policy: ReleasePolicy,
    past: Sequence[PastRelease] | CrossReleaseState,
    release_id: str,
) -> AnonymizedTable:
    """Remove from ``table`` the people its combination with the ``past`` releases would
    expose (:func:`~privgate.core.history.protect_across_releases`), within what is left of
    the suppression limit; the removed rows count as suppressed. The gate re-checks the
    written result, so a release that could not be protected within the limit is blocked."""
    if table.history_keys is None:
        raise AnonymizationError("history.check: the release table has no history keys")
    k, l_required = history_requirements(policy)
    qis = list(policy.quasi_identifiers)
    frame = table.frame
    class_ids = pd.factorize(pd.MultiIndex.from_frame(frame[qis].astype("string").fillna("")))[0]
    sensitive = {c: frame[c].astype("string").fillna("").to_numpy(dtype=object) for c in l_required}
    if table.input_persons is not None:  # the limit counts persons (privacy.person_key)
        units = table.input_persons
        suppressed = units - len(set(table.persons.tolist()))
    else:
        units, suppressed = len(table.result.suppressed), table.result.n_suppressed
    keep, _ = protect_across_releases(
        release_id, table.history_keys, class_ids, sensitive, past,
        k=k, l_required=l_required, max_removed=removal_budget(policy, units, suppressed),
    )  # fmt: skip
    removed = int((~keep).sum())
    metrics = {**table.metrics, "removed_by_history": removed}
    if not removed:
        return replace(table, metrics=metrics)
    mask = np.asarray(table.result.suppressed, dtype=bool).copy()
    mask[np.flatnonzero(~mask)[~keep]] = True
    result = replace(table.result, suppressed=mask)
    metrics.update(suppressed=int(mask.sum()), release_rows=int(keep.sum()))
    return replace(
        table,
        frame=frame.loc[keep],
        result=result,
        metrics=metrics,
        persons=None if table.persons is None else table.persons[keep],
        history_keys=table.history_keys[keep],
    )


def attack(
    release: Path,
    decision: GateDecision,
    split: ControlSplit,
    policy: ReleasePolicy,
    hierarchies: dict[str, Hierarchy],
) -> GateDecision:
    """The attack criterion: the policy's attacks on the release file re-read as text (as a
    recipient sees it), against the records it was made from and the held-out control."""
    assert policy.attacks is not None
    try:
        frame = pd.DataFrame(read_release(release))
        evidence = attack_release(frame, split, policy, hierarchies)
    except Exception as exc:  # fail closed: a declared attack that cannot run blocks
        reason = f"attacks could not be run on the written release: {type(exc).__name__}: {exc}"
        return GateDecision(False, [*decision.reasons, reason], decision.measurements)
    return check_attacks(decision, evidence, policy.attacks.limits())


def verify(
    release: Path | pd.DataFrame,
    setup: SearchSetup,
    input_rows: int | None,
    covered: list[str] | None = None,
    expected_rows: int | None = None,
    **private: object,
) -> GateDecision:
    """The gate: check every criterion of the policy on the release as written.

    ``expected_rows`` (a written file only): the rows of the release table that was written;
    a file holding another number is blocked (a writer that lost a whole class leaves a file
    that is still k-anonymous, its loss looking like suppression within the limit).

    ``private`` are the facts the gate verifies with that are never published
    (:meth:`AnonymizedTable.gate_facts`: the person of each row, aligned with ``release``, and
    the t-closeness reference).

    ``release`` is the written file (re-read as text, as a recipient sees it) or, for the
    Python API, the release table. ``covered`` (a tiered release) names the quasi-identifiers
    the release claims to protect; the criteria are measured over exactly those, and the
    coverage rule (:func:`privgate.core.gate.check_coverage`) blocks a narrower release the
    policy did not accept.
    """
    qis = list(setup.quasi_identifiers)
    covered = qis if covered is None else list(covered)
    if setup.person_key is not None and private.get("persons") is None:
        # Counted in records, 17 admissions of 3 patients would pass k = 5: a person-keyed
        # policy's criteria hold only over persons, which the release alone does not name.
        return GateDecision(
            False,
            [
                f"privacy.person_key {setup.person_key!r}: the policy counts persons, and the "
                "release does not say whose each row is; verify it with each row's person "
                "(kept privately, never published)"
            ],
            {},
        )
    check = verify_release if isinstance(release, (str, Path)) else verify_table
    limits = {**setup.gate_limits(input_rows), **private}
    if expected_rows is not None and check is verify_release:
        limits["expected_rows"] = expected_rows
    decision = check(release, covered, list(setup.models), **limits)
    return check_coverage(decision, covered, qis, narrower_accepted=setup.accept_narrower_coverage)
