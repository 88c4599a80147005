"""privgate's Python API: anonymize a DataFrame in a notebook, verify a release, no Prefect.

The same stages the release flow runs as Prefect tasks (:mod:`privgate.core.stages`), called
as plain functions: validate the table against the policy's schema, rank its attributes when
the policy asks, anonymize with the policy's algorithm, and verify the release with the gate.
Nothing is written unless you call :meth:`Release.write`, which writes the rows in a random
order and verifies the file as written, as the flow does before publishing.

>>> import privgate
>>> policy = privgate.load_policy("policies/adult.yaml")  # doctest: +SKIP
>>> release = privgate.anonymize(frame, policy)           # doctest: +SKIP
>>> release.decision.passed, release.metrics["loss"]      # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from privgate.core import stages
from privgate.core.anonymize import SearchSetup, select_releases
from privgate.core.exceptions import PolicyError
from privgate.core.gate import GateDecision
from privgate.core.policy import ReleasePolicy, load_policy

if TYPE_CHECKING:
    import pandas as pd

    from privgate.core.ranking import Ranking

__all__ = ["Release", "anonymize", "load_policy", "releases", "verify"]


#: A column name no policy declares: carries each row's person key through the shuffle in
#: :meth:`Release.write` (never written).
_PERSON = "\x00person"


@dataclass(frozen=True)
class Release:
    """One anonymized release of a table, verified by the gate (in memory, nothing written).

    Attributes
    ----------
    frame : DataFrame
        The release: the kept records, each with its original record's index, in input order.
        Write it with :meth:`write` (rows shuffled); the input's order may be sorted by a name
        or an id, and must not be published.
    metrics : dict
        Loss, suppressed records, the search's facts, timing.
    decision : GateDecision
        The privacy gate's verdict on the release: every criterion of the policy measured on
        the released values.
    table : AnonymizedTable
        The stage's full output (the algorithm's result, the columns covered, the tier).
    policy : ReleasePolicy
    """

    frame: pd.DataFrame
    metrics: dict
    decision: GateDecision
    table: stages.AnonymizedTable
    policy: ReleasePolicy

    @property
    def passed(self) -> bool:
        return self.decision.passed

    def write(self, path: str | Path) -> GateDecision:
        """Write the release (CSV, or Parquet for a ``.parquet`` path), rows in a random order,
        and verify the file as written. A release the gate blocks is removed again.

        Returns the gate's decision on the written file, verified as the flow verifies it:
        with the person of each written row (a person-keyed policy) and the input's
        distribution as t-closeness' reference, over the columns the release covers.

        The file is written and verified under a hidden name next to ``path`` and renamed
        to ``path`` only once the gate has passed it. Why: written at ``path`` first, a gate
        that raised (out of memory) or a process killed while verifying left an unverified
        release under the name the caller publishes.
        """
        import os

        from privgate.core.anonymize import shuffle_rows
        from privgate.core.publish import staging_owner, sweep_stale_files

        path = Path(path)
        facts = self.table.gate_facts()  # the persons (shuffled with the rows), the reference
        frame = self.frame
        if self.table.persons is not None:
            frame = frame.assign(**{_PERSON: self.table.persons})
        rows = shuffle_rows(frame)
        if self.table.persons is not None:
            facts["persons"] = rows.pop(_PERSON).to_numpy(dtype=object)
        # the suffix keeps the format: the gate reads a ".parquet" file as Parquet
        prefix, suffix = f".{path.stem}.", f".tmp{path.suffix}"
        sweep_stale_files(path.parent, prefix, suffix)
        staging = path.with_name(f"{prefix}{staging_owner()}{suffix}")
        try:
            if path.suffix == ".parquet":
                rows.to_parquet(staging, index=False)
            else:
                rows.to_csv(staging, index=False)
            setup = SearchSetup.from_policy(self.policy)
            decision = stages.verify(
                staging, setup, self.metrics["input_rows"], covered=self.table.covered, **facts
            )
        except BaseException:
            staging.unlink(missing_ok=True)
            raise
        if not decision.passed:
            staging.unlink()
            return decision
        os.replace(staging, path)
        return decision


def _policy(policy: ReleasePolicy | str | Path) -> ReleasePolicy:
    return policy if isinstance(policy, ReleasePolicy) else load_policy(policy)


def releases(
    frame: pd.DataFrame,
    policy: ReleasePolicy | str | Path,
    *,
    ranking: Ranking | None = None,
    validate: bool = True,
) -> list[Release]:
    """Every release the policy publishes from ``frame`` (one; a tiered policy may name
    several tiers), each verified by the gate.

    Parameters
    ----------
    frame : DataFrame
        The input table, with the policy's declared columns.
    policy : ReleasePolicy or path
        A loaded policy, or the path of its YAML file. Its ``input`` section is not read
        (its ``privacy.research_subset`` key file is: only the records it lists are released).
    ranking : Ranking, optional
        A sensitivity ranking to reuse; by default computed when the policy has a ``ranking``
        section.
    validate : bool, default=True
        Check and coerce ``frame`` against the policy's schema first (as the flow does).

    Raises
    ------
    PolicyError
        The policy is differentially private (its releases spend a privacy budget recorded in
        a ledger: run them with ``privgate run`` or the flow).
    InputValidationError, AnonymizationError, HierarchyError
        The table does not fit the policy, or the models cannot be met.
    """
    policy = _no_attacks(_policy(policy))
    if policy.is_differentially_private:
        raise PolicyError(
            "a differential_privacy policy spends a recorded privacy budget; run it with "
            "`privgate run` or the release flow, not privgate.anonymize"
        )
    setup = SearchSetup.from_policy(policy)
    if validate:
        from privgate.validations.schema import validate_input

        frame = validate_input(frame, policy, dict(setup.hierarchies))
    if policy.privacy is not None and policy.privacy.research_subset is not None:
        from privgate.core.research_subset import select_research_subset

        # Only the subset's records are released, and every criterion counts only them.
        frame = select_research_subset(frame, policy.privacy.research_subset)[0]
    if ranking is None and policy.ranking is not None:
        ranking = stages.rank(frame, policy)
    out = []
    for table in select_releases(stages.anonymize(frame, setup, ranking), setup):
        # With the table's private facts, as the flow's gate: persons of a person-keyed
        # policy, the input's distribution as t-closeness' reference.
        facts = table.gate_facts()
        decision = stages.verify(table.frame, setup, len(frame), covered=table.covered, **facts)
        out.append(Release(table.frame, table.metrics, decision, table, policy))
    return out


def anonymize(
    frame: pd.DataFrame,
    policy: ReleasePolicy | str | Path,
    *,
    ranking: Ranking | None = None,
    validate: bool = True,
) -> Release:
    """Anonymize ``frame`` as ``policy`` says and verify the release (no Prefect, no files).

    Returns the release the policy publishes (for a tiered policy naming several tiers, the
    last of them; :func:`releases` returns each). See :func:`releases` for the parameters.

    Examples
    --------
    >>> release = privgate.anonymize(frame, "policies/adult.yaml")  # doctest: +SKIP
    >>> release.decision.summary                                    # doctest: +SKIP
    'PASSED: 30162 rows in 1 211 classes, smallest class 5, 302 records suppressed'
    """
    return releases(frame, policy, ranking=ranking, validate=validate)[-1]


def verify(
    release: pd.DataFrame | str | Path,
    policy: ReleasePolicy | str | Path,
    *,
    input_rows: int | None = None,
    covered: list[str] | None = None,
    persons: Sequence[object] | None = None,
    input_persons: int | None = None,
) -> GateDecision:
    """The gate on a release (a written file, read back as text, or a DataFrame): every
    criterion of the policy, the suppression limit when ``input_rows`` is given, the columns
    it must and must not hold, and the coverage rule when ``covered`` names fewer
    quasi-identifiers.

    A policy with ``privacy.person_key`` counts persons: ``persons`` gives each release row's
    person (in the release's row order; the key is never written), ``input_persons`` the
    input's persons for the suppression limit. Without ``persons`` such a release is
    blocked: counted in records, one patient's ten admissions would look like ten people."""
    policy = _no_attacks(_policy(policy))
    facts: dict = {"persons": persons, "input_persons": input_persons}
    facts = {name: value for name, value in facts.items() if value is not None}
    return stages.verify(release, SearchSetup.from_policy(policy), input_rows, covered, **facts)


def _no_attacks(policy: ReleasePolicy) -> ReleasePolicy:
    """Refuse a policy with ``attacks``: its gate needs the held-out control records, which only
    the release flow draws (a PASSED without the attack criterion would not be true)."""
    if policy.attacks is not None:
        raise PolicyError(
            "attacks: the Python API does not hold out control records nor run the attacks; "
            "release with `privgate run` (the release flow), or remove the attacks section"
        )
    return policy
