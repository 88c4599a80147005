"""A differentially private release of a policy's table, paid for through the ε ledger.

What this module guarantees (the analysis is in ``docs/PRIVACY.md``):

* **Public shape.** Everything the release's shape depends on is declared in the policy
  (:func:`declared_domains`): each categorical quasi-identifier's domain, each numeric one's
  bounds, the class domain. Records outside a declared domain are excluded and numeric values
  clamped to their bounds, record by record (:func:`restrict_to_declared_domains`), so a
  neighbouring table (one record added or removed) still differs in at most one record, and no
  cut, label, sensitivity or scale depends on the data.
* **People, not rows, when declared.** With ``differential_privacy.person_key`` each person's
  records are bounded to one before anything else (:func:`~privgate.core.dp.person_bounding.
  bound_persons`), so a neighbouring table (one *person* added or removed) differs in at most
  one record of what the mechanisms see.
* **Paid before drawn, replayable after a crash.** :func:`run_dp_release` draws through a
  :class:`~privgate.core.dp.journal.JournaledAccountant`: the release's whole ε is reserved in
  the ledger before the first draw (a release that cannot be paid for in full is refused before
  any noise exists), and every draw is journaled before it is used, so a retry replays it and
  spends nothing more.
* **Owner-side numbers stay owner-side.** Counts of excluded or clamped records, the input's
  size and run times are exact functions of the private data: they are kept in
  :attr:`DPTable.owner` for the data owner's log, never in the published manifest or report.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from privgate.core.dp._accountant import Accountant
from privgate.core.dp.journal import JournaledAccountant, input_fingerprint
from privgate.core.dp.ledger import BudgetLedger, configured_ledger_url
from privgate.core.dp.person_bounding import bound_persons
from privgate.core.hierarchy import Hierarchy, value_key
from privgate.core.policy import ColumnType, ReleasePolicy

__all__ = [
    "COUNT_COLUMN",
    "DPTable",
    "DeclaredDomains",
    "check_dp_utility",
    "declared_domains",
    "dp_release",
    "expected_absolute_noise",
    "open_ledger",
    "restrict_records",
    "restrict_to_declared_domains",
    "run_dp_release",
]

#: The column of noisy counts in a DP release (one row per leaf partition).
COUNT_COLUMN = "count"

#: The step label of the leaf counts: the gate matches the published counts to this draw.
LEAF_COUNTS_STEP = "DPHeter leaf counts"

_log = logging.getLogger(__name__)


def open_ledger(url: str | None = None) -> BudgetLedger:
    """The ε ledger of this installation (:func:`~privgate.core.dp.ledger.configured_ledger_url`).

    Never derived from a policy or a release folder: every DP release of a dataset is charged
    to the same account, whatever policy file, output folder or input path the run uses.
    """
    return BudgetLedger(url or configured_ledger_url())


# ----------------------------------------------------------------------------------------------
# The public side: declared domains


@dataclass(frozen=True)
class DeclaredDomains:
    """The domains a DP policy declares: the only things a release's shape may depend on.

    Attributes
    ----------
    categorical : dict
        Column -> its declared values (a hierarchy's listed values, or ``categories``).
    numeric : dict
        Column -> ``(minimum, maximum)`` declared in the policy.
    integer : frozenset
        The numeric columns declared ``type: integer`` (their split grid is on integers).
    class_column : str
    classes : list
        The declared classes of ``class_column``.
    """

    categorical: dict[str, list[str]]
    numeric: dict[str, tuple[float, float]]
    integer: frozenset[str]
    class_column: str
    classes: list[str]

    def to_dict(self) -> dict:
        """JSON-ready: what the manifest and the report publish (all of it public)."""
        return {
            "categorical": {name: list(values) for name, values in self.categorical.items()},
            "numeric": {name: list(bounds) for name, bounds in self.numeric.items()},
            "class_column": self.class_column,
            "classes": list(self.classes),
        }


def declared_domains(policy: ReleasePolicy, hierarchies: dict[str, Hierarchy]) -> DeclaredDomains:
    """Read the declared domains of a DP policy (the policy model has already required them)."""
    dp = policy.differential_privacy
    categorical: dict[str, list[str]] = {}
    numeric: dict[str, tuple[float, float]] = {}
    integer = set()
    for name in policy.quasi_identifiers:
        spec = policy.columns[name]
        if spec.is_numeric:
            numeric[name] = (float(spec.minimum), float(spec.maximum))
            if spec.type is ColumnType.INTEGER:
                integer.add(name)
            continue
        listed = getattr(hierarchies[name], "domain", None)
        values = listed if listed is not None else spec.categories
        categorical[name] = [value_key(v) for v in values]
    classes = [value_key(v) for v in policy.columns[dp.class_column].categories]
    return DeclaredDomains(categorical, numeric, frozenset(integer), dp.class_column, classes)


def restrict_to_declared_domains(
    frame: pd.DataFrame, domains: DeclaredDomains
) -> tuple[pd.DataFrame, dict]:
    """Apply the declared-domain rule to the quasi-identifiers and the class
    (:func:`restrict_records`)."""
    categorical = {**domains.categorical, domains.class_column: domains.classes}
    return restrict_records(frame, categorical, domains.numeric, domains.integer)


def restrict_records(
    frame: pd.DataFrame,
    categorical: Mapping[str, Sequence[str]],
    numeric: Mapping[str, tuple[float, float]],
    integer: Collection[str] = (),
) -> tuple[pd.DataFrame, dict]:
    """The declared-domain rule: exclude records outside a domain, clamp numbers.

    A record is excluded when a categorical column holds a value outside its declared domain,
    or is missing; or when a numeric column is missing or not a number. Numeric values outside
    ``[minimum, maximum]`` are clamped to the nearer bound (and floored for ``integer``
    columns). Each record is judged on its own values only, so for tables D and D' that differ
    in one record the results differ in at most one record: the rule keeps the neighbouring
    relation, and never widens a domain.

    Returns
    -------
    (DataFrame, dict)
        The records the release is computed from (exactly the named columns; numeric ones as
        floats or integers), and the owner-side report (how many records were excluded per
        reason and values clamped per column): exact functions of the private data, for the
        data owner's log only.
    """
    keep = np.ones(len(frame), dtype=bool)
    excluded: dict[str, int] = {}
    clamped: dict[str, int] = {}
    columns: dict[str, pd.Series] = {}
    for name, values in categorical.items():
        allowed = set(values)
        key = _cell_key()
        inside = np.fromiter(
            ((k := key(v)) is not _MISSING and k in allowed for v in frame[name].tolist()),
            dtype=bool,
            count=len(frame),
        )
        excluded[name] = int((~inside & keep).sum())
        keep &= inside
        columns[name] = frame[name].map(lambda v, key=key: v if (k := key(v)) is _MISSING else k)
    for name, (low, high) in numeric.items():
        number = pd.to_numeric(frame[name], errors="coerce").astype("Float64")
        present = number.notna().to_numpy()
        excluded[name] = int((~present & keep).sum())
        keep &= present
        filled = number.fillna(low).to_numpy(dtype=float)
        outside = (filled < low) | (filled > high)
        clamped[name] = int((outside & keep).sum())
        filled = np.clip(filled, low, high)
        if name in integer:
            columns[name] = pd.Series(np.floor(filled).astype(np.int64), index=frame.index)
        else:
            columns[name] = pd.Series(filled, index=frame.index)
    restricted = pd.DataFrame(columns, index=frame.index)[keep].reset_index(drop=True)
    report = {
        "input_rows": len(frame),
        "kept_rows": int(keep.sum()),
        "excluded_by_column": {k: v for k, v in excluded.items() if v},
        "clamped_by_column": {k: v for k, v in clamped.items() if v},
    }
    return restricted, report


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA


#: A missing cell's key (:func:`_cell_key`): it is in no declared domain.
_MISSING = object()
#: Cell types whose equal values always have one ``value_key``. Not so for every type: ``Decimal
#: ("1.0") == Decimal("1.00")`` and two equal times in different zones print differently; cells
#: of other types are keyed one by one.
_PLAIN_TYPES = frozenset(
    {str, int, float, bool, np.str_, np.int32, np.int64, np.float32, np.float64, np.bool_}
)


def _cell_key():
    """A function from a cell to its :func:`value_key` (``_MISSING`` for a missing cell).

    Why: ``value_key`` (type checks, Unicode normalization) costs about a microsecond per cell
    and a column holds few distinct values, so for the plain types (text, numbers) it is
    computed once per distinct ``(type, value)`` of a column (1M Adult records: 8.3-9.9 -> 4.8-6.3
    CPU s for the whole rule). The type is part of the memo's key because ``1``, ``1.0`` and
    ``True`` are equal in Python. A cell's key is still a function of that cell alone: the rule
    stays record-wise.
    """
    memo: dict = {}

    def key(cell: object) -> object:
        kind = type(cell)
        if kind not in _PLAIN_TYPES:
            return _MISSING if _missing(cell) else value_key(cell)
        try:
            return memo[kind, cell]
        except KeyError:
            found = memo[kind, cell] = _MISSING if _missing(cell) else value_key(cell)
            return found

    return key


# ----------------------------------------------------------------------------------------------
# The release


@dataclass(frozen=True)
class DPTable:
    """A DP release table and everything about it that may be published, plus the owner's log.

    Attributes
    ----------
    frame : DataFrame
        The release: one row per leaf partition, the generalized quasi-identifiers and
        ``count``.
    epsilon, delta : float
        What the release's draws compose to (at most the policy's).
    spends : list of dict
        One entry per accountant charge (a parallel group is one entry).
    budget_split, specializations, cuts : dict, list, dict
        DPHeter's budget split, its chosen specializations (without their exact scores) and
        final cuts: functions of the declared domains and the DP outputs only.
    domains : dict
        The declared domains (:meth:`DeclaredDomains.to_dict`).
    draws : list of dict
        The journaled draws the release used (``seq``, ``attempt``, step, mechanism, cost,
        parallel group); empty when not drawn through a journal.
    count_draw : (int, int) or None
        ``(seq, attempt)`` of the leaf-count draw the published counts come from.
    metrics : dict
        Public numbers: partitions, the noisy total, epsilon and delta.
    owner : dict
        **Not differentially private, never published**: input rows, the declared-domain rule's
        exclusions and clampings, how many draws were replayed, run time. For the data owner's
        log and run artifacts only.
    """

    frame: pd.DataFrame
    epsilon: float
    delta: float
    spends: list[dict]
    budget_split: dict
    specializations: list[dict]
    cuts: dict
    domains: dict
    draws: list[dict] = field(default_factory=list)
    count_draw: tuple[int, int] | None = None
    metrics: dict = field(default_factory=dict)
    owner: dict = field(default_factory=dict)
    #: The flow run that drew (or replayed) the noise.
    run_id: str = ""


def dp_release(
    frame: pd.DataFrame,
    policy: ReleasePolicy,
    hierarchies: dict[str, Hierarchy],
    accountant: Accountant,
) -> DPTable:
    """DPHeter on a policy's table: DP top-down specialization of the quasi-identifiers.

    Categorical quasi-identifiers are specialized down their hierarchies over their declared
    domains, numeric ones by split points chosen with the exponential mechanism over their
    declared bounds; the leaf partitions (all of them, empty ones included) are released with
    discrete-Laplace counts. Every draw goes through ``accountant``.
    """
    from privgate.core.dp.dpheter import DPHeterConfig, dpheter_release

    dp = policy.differential_privacy
    started = time.perf_counter()
    domains = declared_domains(policy, hierarchies)
    records, rule = restrict_to_declared_domains(frame, domains)
    config = DPHeterConfig(
        epsilon=dp.epsilon, rounds=dp.rounds, count_share=dp.count_share, score=dp.score
    )
    result = dpheter_release(
        records,
        class_column=domains.class_column,
        class_domain=domains.classes,
        categorical={q: hierarchies[q] for q in domains.categorical},
        numeric=list(domains.numeric),
        numeric_bounds=domains.numeric,
        domains=domains.categorical,
        config=config,
        accountant=accountant,
    )
    public = result.to_dict()
    epsilon, delta = accountant.total
    table = result.table
    draws: list[dict] = []
    count_draw = None
    if isinstance(accountant, JournaledAccountant):
        used = accountant.used_draws
        draws = [record.to_dict() for record in used]
        counts = [r for r in used if r.step == LEAF_COUNTS_STEP]
        count_draw = (counts[-1].seq, counts[-1].attempt) if counts else None
    return DPTable(
        frame=table,
        epsilon=epsilon,
        delta=delta,
        spends=[spend.to_dict() for spend in accountant.entries],
        budget_split=dict(public["budget"]),
        specializations=list(public["specializations"]),
        cuts=dict(public["cuts"]),
        domains=domains.to_dict(),
        draws=draws,
        count_draw=count_draw,
        metrics={
            "algorithm": "dpheter",
            "partitions": len(table),
            "noisy_total": int(table[COUNT_COLUMN].sum()),
            "epsilon": epsilon,
            "delta": delta,
        },
        owner={
            **rule,
            "replayed_draws": getattr(accountant, "replayed", 0),
            "seconds": round(time.perf_counter() - started, 4),
        },
    )


def run_dp_release(
    frame: pd.DataFrame,
    policy: ReleasePolicy,
    hierarchies: dict[str, Hierarchy],
    *,
    release_id: str,
    run_id: str,
    ledger: BudgetLedger,
) -> DPTable:
    """Make (or replay) one DP release, paid for through the ledger.

    Opens the dataset's account with the policy's lifetime budget (an existing account keeps its
    own: a lifetime budget changes only explicitly, with a reason), then runs
    :func:`dp_release` through a :class:`~privgate.core.dp.journal.JournaledAccountant`: the
    release's ε is reserved before the first draw, and draws already journaled for this release
    (a retry after a crash) are replayed rather than drawn and paid for again.

    Raises
    ------
    BudgetExceededError
        The release's ε does not fit what is left of the lifetime budget; nothing was drawn.
    LedgerError
        The ledger is unreachable, the account's budget differs from the policy's, or the
        journaled draws do not match this release's settings.
    """
    dp = policy.differential_privacy
    account = ledger.open_account(policy.dataset, dp.budget.epsilon, dp.budget.delta)
    reserved = ledger.reservation(policy.dataset, release_id)
    _log.info(
        "dp: %s with epsilon=%g; dataset %r has (epsilon=%s, delta=%s) left of its lifetime "
        "budget%s",
        dp.method,
        dp.epsilon,
        policy.dataset,
        *account.exact_remaining_text,
        f" (release {release_id} already reserved: replaying its journal)" if reserved else "",
    )
    bounded = bound_persons(frame, dp.person_key)
    accountant = JournaledAccountant(
        ledger,
        policy.dataset,
        release_id,
        run_id,
        budget=(dp.epsilon, dp.delta),
        input_sha256=input_fingerprint(bounded.frame, hierarchies),
    )
    if dp.person_key is not None:
        _log.info(
            "dp: privacy unit one person (%r); owner-side, not published: %d records of %d "
            "persons bounded to one record each",
            dp.person_key,
            bounded.owner["bounded_input_rows"],
            bounded.owner["bounded_persons"],
        )
    if dp.releases_microdata:
        from privgate.core.dp.microdata import microdata_release

        table = microdata_release(bounded.frame, policy, hierarchies, accountant)
    else:
        table = dp_release(bounded.frame, policy, hierarchies, accountant)
    table = DPTable(**{**table.__dict__, "owner": {**table.owner, **bounded.owner}})
    _log.info(
        "dp: %d rows, spent (epsilon=%g, delta=%g) in %d draws (%d replayed); owner-side, "
        "not published: %d input rows, %d kept by the declared-domain rule, excluded %s, "
        "clamped %s, %.2fs",
        len(table.frame),
        table.epsilon,
        table.delta,
        len(table.draws),
        table.owner["replayed_draws"],
        table.owner["input_rows"],
        table.owner["kept_rows"],
        table.owner["excluded_by_column"] or "none",
        table.owner["clamped_by_column"] or "none",
        table.owner["seconds"],
    )
    return DPTable(**{**table.__dict__, "run_id": run_id})


# ----------------------------------------------------------------------------------------------
# Utility from the DP output alone


def expected_absolute_noise(scale: float) -> float:
    """E|Z| of discrete Laplace noise with ``P[Z = z]`` proportional to ``exp(-|z| / scale)``.

    With ``a = exp(-1 / scale)``: ``E|Z| = 2a / (1 - a^2)`` (sum of ``|z| a^|z|`` over the
    integers, normalized by ``(1 + a) / (1 - a)``). A public number: it depends on ε only.
    """
    a = math.exp(-1.0 / scale)
    return 2 * a / (1 - a * a)


def check_dp_utility(table: DPTable, policy: ReleasePolicy):
    """The utility gate of a DP release: ``max_relative_noise``, from the DP output alone.

    The measure is the expected absolute noise of all released counts (partitions times the
    leaf counts' ``E|Z|``, a function of ε and the cuts) over the noisy total: post-processing
    of the release and public parameters, so letting it decide publication leaks nothing more.
    Comparisons with the private table are refused by the policy model for DP releases.
    """
    from privgate.core.utility import UtilityDecision

    thresholds = policy.utility.thresholds if policy.utility is not None else None
    limit = getattr(thresholds, "max_relative_noise", None) if thresholds is not None else None
    counts = [s for s in table.spends if s["step"] == LEAF_COUNTS_STEP]
    scale = counts[-1]["scale"] if counts else None
    measured = None
    if scale:
        noise = expected_absolute_noise(scale) * table.metrics["partitions"]
        measured = noise / max(table.metrics["noisy_total"], 1)
    checks, reasons = [], []
    if limit is not None:
        held = measured is not None and measured <= limit
        checks.append(
            {
                "threshold": "max_relative_noise",
                "limit": limit,
                "subject": "relative_noise",
                "measured": measured,
                "held": held,
            }
        )
        if not held:
            reasons.append(
                f"utility.thresholds.max_relative_noise = {limit:g} not met: the released "
                f"counts' expected noise is {measured:.4f} of their noisy total"
            )
    return UtilityDecision(not reasons, reasons, {"checks": checks, "relative_noise": measured})
