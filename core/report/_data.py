"""The release report as plain data, and how to gather it from a run's stage outputs."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from privgate.core.exceptions import VerificationError
from privgate.core.gate import class_stats_of
from privgate.core.policy import ReleasePolicy, Role

__all__ = ["ReleaseReport", "build_report", "validation_summary"]

#: Report statuses.
STATUSES = ("published", "blocked", "dry-run")


@dataclass(frozen=True)
class ReleaseReport:
    """Everything the release report shows, as plain (JSON-able) data.

    Attributes
    ----------
    dataset, release_id : str
    status : {"published", "blocked", "dry-run"}
    blocked_by : list of str
        ``"privacy"`` and/or ``"utility"`` when blocked.
    privacy_gate : dict
        :meth:`privgate.core.gate.GateDecision.to_dict`.
    utility_gate : dict or None
        :meth:`privgate.core.utility.UtilityDecision.to_dict`.
    privacy : dict
        ``k``, ``suppression_limit``, ``criteria`` (one row per privacy model: ``criterion``,
        ``reached``, ``holds``), ``class_sizes`` (``{size: number of classes}``),
        ``sensitive`` (per l-diversity / t-closeness column: per-class distinct values and
        distances), ``records``.
    utility : dict or None
        :meth:`privgate.core.utility.UtilityReport.to_dict`.
    transformation : dict
        ``algorithm``, ``levels`` and ``heights`` per quasi-identifier (full-domain), or
        ``partitions`` (Mondrian), and ``labels`` (distinct values per QI, original and
        release).
    validation : dict
        :func:`validation_summary`.
    risk : dict
        ``before`` (the input) and ``after`` (the release): re-identification risk as
        :func:`privgate.core.risk.analyse` measures it (attacker models, sample and estimated
        population uniques, the quasi-identifier combinations that drive uniqueness); empty
        when the release cannot be grouped.
    run : dict
        Run metadata: ids, dates, versions, fingerprints, paths, timings.
    """

    dataset: str
    release_id: str
    status: str
    blocked_by: list[str] = field(default_factory=list)
    privacy_gate: dict = field(default_factory=dict)
    utility_gate: dict | None = None
    privacy: dict = field(default_factory=dict)
    utility: dict | None = None
    transformation: dict = field(default_factory=dict)
    validation: dict = field(default_factory=dict)
    run: dict = field(default_factory=dict)
    risk: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(
                f"The 'status' parameter of ReleaseReport must be one of {STATUSES}. "
                f"Got {self.status!r} instead."
            )
        if self.status == "published" and self.blocked_by:
            raise ValueError(
                f"a release blocked by the {' and '.join(self.blocked_by)} gate cannot have "
                "status 'published'"
            )

    @property
    def passed(self) -> bool:
        """Both gates passed (a missing utility gate counts as passed)."""
        utility_ok = self.utility_gate is None or bool(self.utility_gate.get("passed"))
        return bool(self.privacy_gate.get("passed")) and utility_ok

    def to_dict(self) -> dict:
        return _plain(asdict(self))


def _plain(value: Any) -> Any:
    """Numpy scalars and arrays to Python values, NaN to ``None``, keys to text."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def validation_summary(frame: pd.DataFrame, policy: ReleasePolicy) -> dict:
    """What the schema validation established about the input, column by column.

    The input reached this point, so every check passed; the summary lists what was checked
    (type, nullability, declared range, categories or hierarchy coverage) and counts per column
    (missing, distinct). It holds no value of the input: the report is published.
    """
    columns = []
    for name, spec in policy.columns.items():
        if name not in frame.columns:
            continue
        col = frame[name]
        checks = [f"type {spec.type.value}", "nullable" if spec.allows_missing else "not null"]
        if spec.minimum is not None:
            checks.append(f">= {spec.minimum:g}")
        if spec.maximum is not None:
            checks.append(f"<= {spec.maximum:g}")
        if spec.categories is not None:
            checks.append(f"in {len(spec.categories)} declared categories")
        elif spec.hierarchy is not None:
            checks.append("covered by its hierarchy")
        entry = {
            "column": name,
            "role": spec.role.value,
            "type": spec.type.value,
            "missing": int(col.isna().sum()),
            "distinct": int(col.nunique(dropna=True)),
            "checks": checks,
        }
        # The declared range only: the input's own minimum and maximum are single records'
        # values (an outlier a release generalizes away must not reappear in its report).
        if spec.minimum is not None or spec.maximum is not None:
            entry["declared_range"] = [spec.minimum, spec.maximum]
        columns.append(entry)
    dropped = [n for n, s in policy.columns.items() if s.role is Role.IDENTIFIER]
    return {
        "rows": len(frame),
        "columns": columns,
        "dropped_identifiers": dropped,
        "passed": True,
        "schema": "pandera, lazy (every failure at once), strict (no undeclared column)",
    }


def _privacy_section(
    release: pd.DataFrame,
    policy: ReleasePolicy,
    decision: Mapping,
    models: Sequence,
    persons: Sequence[object] | None = None,
    reference: Mapping[str, Mapping] | None = None,
) -> dict:
    """The per-class figures, measured as the gate measures them: with ``persons`` (each
    release row's person, private) classes are sized in persons and sensitive values weigh
    each person 1; t-distances are to ``reference`` (the input's distribution) when given."""
    from privgate.core.gate import with_reference
    from privgate.core.privacy import class_distances, hierarchical_distances, sensitive_columns

    qis = policy.quasi_identifiers
    sensitive = sensitive_columns(models)
    present = [c for c in [*qis, *sensitive] if c in release.columns]
    criteria = []
    achieved = decision.get("measurements", {}).get("achieved", {})
    for model in models:
        level = achieved.get(str(model))
        holds = None if level is None or not math.isfinite(level) else bool(model.holds(level))
        criteria.append({"criterion": str(model), "reached": level, "holds": holds})
    section: dict = {
        "k": policy.privacy.k,
        "suppression_limit": policy.privacy.suppression_limit,
        "criteria": criteria,
        "records": len(release),
        "class_sizes": {},
        "sensitive": {},
    }
    if len(present) < len(qis) + len(sensitive) or len(release) == 0:
        return section  # a malformed release: the gate's reasons say why
    try:
        stats = class_stats_of(release, qis, sensitive, persons)
    except VerificationError as exc:  # a row without its person: the gate blocked on it
        section["unmeasured"] = str(exc)
        return section
    if reference:
        try:
            stats = with_reference(stats, reference)
        except VerificationError as exc:  # the gate blocked on it and says why
            section["unmeasured"] = str(exc)
    section["class_size_unit"] = "records" if persons is None else "persons"
    section["class_sizes"] = dict(sorted(Counter(stats.sizes.tolist()).items()))
    for model in models:
        column = getattr(model, "column", None)
        if column is None:
            continue
        hist, overall = stats.histograms[column], stats.overall[column]
        entry = section["sensitive"].setdefault(column, {})
        entry["distinct_per_class"] = dict(sorted(Counter((hist > 0).sum(axis=1).tolist()).items()))
        distance = getattr(model, "distance", None)
        if distance == "hierarchical":
            labels = model.hierarchy.generalize(list(stats.ordered_values[column]))
            entry["t_distances"] = hierarchical_distances(hist, overall, labels).tolist()
        elif distance == "ordered":
            order = _numeric_order(stats.ordered_values[column])
            entry["t_distances"] = class_distances(hist[:, order], overall[order], "ordered")
        elif distance == "equal":
            entry["t_distances"] = class_distances(hist, overall, "equal")
        if "t_distances" in entry:
            entry["t"] = model.t
            entry["t_distances"] = np.asarray(entry["t_distances"]).round(6).tolist()
    return section


def _risk_section(
    original: pd.DataFrame,
    release: pd.DataFrame,
    policy: ReleasePolicy,
    persons: Sequence[object] | None = None,
) -> dict:
    """Re-identification risk before (input) and after (release), drivers trimmed to the three
    strongest combinations of each size.

    With a person key, both sides count persons: the input carries its key, and the release
    is measured with ``persons`` (each written row's person, the gate's private mapping; the
    key is never written). Measured in records, the release's risks would read lower than the
    gate's (a patient's ten admissions look like a class of ten) beside an input counted in
    persons.
    """
    from privgate.core.risk import DEFAULT_THRESHOLD, analyse

    qis = list(policy.quasi_identifiers)
    if not qis or not len(original) or not len(release) or any(q not in release for q in qis):
        return {}
    risk = policy.privacy.risk if policy.privacy is not None else None
    threshold = risk.highest if risk is not None and risk.highest else DEFAULT_THRESHOLD
    size = risk.population_size if risk is not None else None
    key = policy.person_key
    after, after_key = release, None  # the person key is never written: the private mapping
    if key is not None and persons is not None and len(persons) == len(release):
        after, after_key = release.assign(**{key: np.asarray(persons, dtype=object)}), key
    section: dict = {}
    for name, frame, person_key in (
        ("before", original, key if key in original else None),
        ("after", after, after_key),
    ):
        try:
            analysis = analyse(frame, qis, label=name, threshold=threshold,
                               population_size=size, person_key=person_key)  # fmt: skip
        except ValueError as exc:
            return {"error": str(exc)}
        entry = analysis.to_dict()
        if analysis.drivers is not None:
            sizes = sorted({len(c.columns) for c in analysis.drivers.combinations})
            entry["drivers"] = {
                "exhaustive": analysis.drivers.exhaustive,
                "top": {
                    str(n): [
                        {"columns": list(c.columns), "unique_share": c.unique_share}
                        for c in analysis.drivers.top(n, 3)
                    ]
                    for n in sizes
                },
            }
        section[name] = entry
    return section


def _numeric_order(values: np.ndarray) -> np.ndarray:
    """Sort sensitive values numerically when they are numbers (as ordered t-closeness does)."""
    try:
        keys = np.array([float(v) for v in values])
    except (TypeError, ValueError):
        keys = np.array([str(v) for v in values], dtype=object)
    return np.argsort(keys, kind="stable")


def _transformation_section(
    original: pd.DataFrame, release: pd.DataFrame, table: Any, policy: ReleasePolicy, heights
) -> dict:
    qis = policy.quasi_identifiers
    levels = dict(getattr(table.result, "levels", {}) or {})
    details = dict(getattr(table.result, "details", {}) or {})
    return {
        "algorithm": table.metrics.get("algorithm", policy.algorithm.name.value),
        "levels": levels,
        "heights": dict(heights),
        "partitions": details.get("partitions"),
        "labels": {
            q: {
                "original": int(original[q].nunique()),
                "release": int(release[q].nunique()) if q in release.columns else None,
            }
            for q in qis
        },
        "suppressed": int(table.metrics.get("suppressed", 0)),
        "removed_by_history": table.metrics.get("removed_by_history"),
        "seconds": table.metrics.get("seconds"),
        "search": {
            k.removeprefix("search_"): v
            for k, v in table.metrics.items()
            if k.startswith("search_")
        },
    }


def build_report(
    *,
    policy: ReleasePolicy,
    release_id: str,
    original: pd.DataFrame,
    table: Any,
    privacy_decision: Any,
    status: str,
    utility: Any | None = None,
    utility_decision: Any | None = None,
    hierarchies: Mapping[str, Any] | None = None,
    run: Mapping[str, Any] | None = None,
    setup: Any | None = None,
    input_warnings: Sequence[str] = (),
) -> ReleaseReport:
    """Gather a :class:`ReleaseReport` from a run's stage outputs.

    Parameters
    ----------
    policy : ReleasePolicy
    release_id : str
    original : DataFrame
        The validated input.
    table : AnonymizedTable
        :func:`privgate.core.stages.anonymize`'s result (its ``frame`` is the release as written).
    privacy_decision : GateDecision
    status : {"published", "blocked", "dry-run"}
    utility : UtilityReport, optional
    utility_decision : UtilityDecision, optional
    hierarchies : mapping of str to Hierarchy, optional
        For the hierarchy heights of the transformation (and hierarchical t-closeness).
    run : mapping, optional
        Run metadata shown as is (run id, dates, versions, fingerprints, paths).
    setup : SearchSetup, optional
        The run's search setup (its privacy models); built from the policy when not given.
    input_warnings : sequence of str
        What validation found about the valid input (an entirely missing quasi-identifier),
        shown in the validation section.
    """
    from privgate.core.anonymize import SearchSetup

    if setup is None:
        setup = SearchSetup.from_policy(policy, hierarchies)
    models = list(setup.models)
    decision = privacy_decision.to_dict()
    udecision = utility_decision.to_dict() if utility_decision is not None else None
    blocked_by = []
    if not decision.get("passed"):
        blocked_by.append("privacy")
    if udecision is not None and not udecision.get("passed"):
        blocked_by.append("utility")
    heights = {q: h.height for q, h in (hierarchies or {}).items()}
    return ReleaseReport(
        dataset=policy.dataset,
        release_id=release_id,
        status=status,
        blocked_by=blocked_by,
        privacy_gate=_plain(decision),
        utility_gate=_plain(udecision),
        privacy=_plain(
            _privacy_section(
                table.frame,
                policy,
                decision,
                models,
                persons=getattr(table, "persons", None),
                reference=getattr(table, "reference", None),
            )
        ),
        utility=_plain(utility.to_dict()) if utility is not None else None,
        transformation=_plain(
            _transformation_section(original, table.frame, table, policy, heights)
        ),
        validation=_plain(
            {**validation_summary(original, policy), "warnings": list(input_warnings)}
        ),
        run=_plain(dict(run or {})),
        risk=_plain(_risk_section(original, table.frame, policy, getattr(table, "persons", None))),
    )
