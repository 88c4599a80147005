"""A table's re-identification risk, as a data owner reads it: the three attacker models,
population uniqueness and the quasi-identifiers that drive it, in one value."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np
import pandas as pd

from privgate.core.risk._attackers import (
    AttackerRisk,
    journalist_risk,
    marketer_risk,
    person_prosecutor_risk,
    person_risks,
    prosecutor_risk,
)
from privgate.core.risk._drivers import UniquenessDrivers, uniqueness_drivers
from privgate.core.risk._histogram import SizeHistogram
from privgate.core.risk._uniqueness import PopulationUniqueness, estimate_population_uniqueness

#: The threshold above which a record counts as at risk when the policy names none: ARX's
#: and the HIPAA-derived "highest risk 0.09" guidance is in the same range (1/k for k = 10..11).
DEFAULT_THRESHOLD = 0.1


@dataclass(frozen=True)
class RiskAnalysis:
    """Everything ``privgate risk`` prints and the report charts.

    Attributes
    ----------
    label : str
        Which table (``"input"``, ``"release"``).
    records : int
        Records, or persons with a person key.
    classes : int
    prosecutor, journalist : AttackerRisk
    marketer : float
    journalist_from_population : bool
        The journalist risk counts a declared population table (else it is the prosecutor
        risk, its upper bound).
    uniqueness : PopulationUniqueness or None
        Population-uniqueness estimates (``None`` without a population size).
    drivers : UniquenessDrivers or None
    """

    label: str
    records: int
    classes: int
    unit: str
    prosecutor: AttackerRisk
    journalist: AttackerRisk
    marketer: float
    journalist_from_population: bool
    sample_uniques: int
    uniqueness: PopulationUniqueness | None
    drivers: UniquenessDrivers | None
    #: Why there is no uniqueness estimate (empty when there is one).
    uniqueness_note: str = ""

    def to_dict(self) -> dict:
        out = asdict(self)
        if self.uniqueness is not None:
            out["uniqueness"]["sampling_fraction"] = self.uniqueness.sampling_fraction
            out["uniqueness"]["population_unique_share"] = {
                name: _finite(self.uniqueness.population_unique_share(name))  # type: ignore[arg-type]
                for name in self.uniqueness.estimates
            }
            out["uniqueness"]["estimates"] = {
                k: _finite(v) for k, v in self.uniqueness.estimates.items()
            }
        return out


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def analyse(
    frame: pd.DataFrame,
    quasi_identifiers: Sequence[str],
    *,
    label: str = "table",
    threshold: float = DEFAULT_THRESHOLD,
    population_size: int | None = None,
    population_counts: np.ndarray | None = None,
    person_key: str | None = None,
    drivers: bool = True,
) -> RiskAnalysis:
    """Analyse ``frame``'s re-identification risk over ``quasi_identifiers``.

    Parameters
    ----------
    population_size : int, optional
        People in the population the table was drawn from (enables the uniqueness estimates).
    population_counts : ndarray, optional
        Per class (in the order of ``pandas`` grouping over the quasi-identifiers with
        ``sort=True``), the number of population-table records matching it (journalist and
        marketer risk against a declared population table).
    person_key : str, optional
        Count persons, not rows.

    Raises
    ------
    ValueError
        A named column is missing, or the population is smaller than the table.
    """
    qis = list(quasi_identifiers)
    missing = [c for c in [*qis, *([person_key] if person_key else [])] if c not in frame]
    if missing:
        raise ValueError(f"the table has no column(s) {missing}")
    keys = frame[qis].astype("string").fillna("\x00<missing>") if qis else None
    if keys is not None and len(frame):
        class_ids = keys.groupby(qis, sort=True, dropna=False).ngroup().to_numpy(np.int64)
    else:
        class_ids = np.zeros(len(frame), dtype=np.int64)
    n_classes = int(class_ids.max()) + 1 if len(class_ids) else 0
    persons = None
    if person_key is None:
        sizes = np.bincount(class_ids, minlength=n_classes).astype(np.int64)
        prosecutor = prosecutor_risk(sizes, threshold)
        journalist = journalist_risk(sizes, population_counts, threshold)
        marketer = marketer_risk(sizes, population_counts)
        units, unit = int(sizes.sum()), "records"
        hist = SizeHistogram.from_class_sizes(sizes)
        sample_uniques = hist.classes_of_size(1)
    else:
        # Persons, not rows: a person's risk is that of their most revealing class; without
        # a population table the journalist's is its upper bound, the prosecutor's, and the
        # marketer's is the mean person risk (what C/n is when every person has one record).
        persons = pd.factorize(frame[person_key].astype("string"))[0].astype(np.int64)
        base = int(persons.max()) + 1 if len(persons) else 1
        pairs = np.unique(class_ids * base + persons)
        sizes = np.bincount(pairs // base, minlength=n_classes).astype(np.int64)
        prosecutor = person_prosecutor_risk(class_ids, persons, sizes, threshold)
        journalist = replace(prosecutor, model="journalist")
        risks = person_risks(class_ids, persons, sizes)
        marketer = float(risks.mean()) if len(risks) else 0.0
        units, unit = len(risks), "persons"
        sample_uniques = int((risks >= 1.0).sum())
        # The estimators model each person in one class: only then is the histogram theirs.
        hist = SizeHistogram.from_class_sizes(sizes) if len(pairs) == units else None
        if population_counts is not None:
            raise ValueError("a population table is compared in records, not persons")
    uniqueness = None
    note = (
        "" if population_size is not None else "set privacy.risk.population_size to estimate them"
    )
    if hist is None:
        note = (
            "not estimated: some persons' records sit in several classes, and the estimators "
            "model one class per person"
        )
    if population_size is not None and hist is not None:
        if population_size < hist.records:
            raise ValueError(
                f"privacy.risk.population_size ({population_size}) is smaller than the "
                f"{label} ({hist.records} {unit})"
            )
        uniqueness = estimate_population_uniqueness(hist, population_size)
    return RiskAnalysis(
        label=label,
        records=units,
        classes=n_classes,
        unit=unit,
        prosecutor=prosecutor,
        journalist=journalist,
        marketer=marketer,
        journalist_from_population=population_counts is not None,
        sample_uniques=sample_uniques,
        uniqueness=uniqueness,
        drivers=(
            uniqueness_drivers(frame, qis, persons=persons)
            if drivers and qis and len(frame)
            else None
        ),
        uniqueness_note=note,
    )


def _pct(value: float) -> str:
    return "n/a (no fit)" if math.isnan(value) else f"{100 * value:.4g} %"


def format_analysis(analysis: RiskAnalysis, top: int = 3) -> str:
    """Plain text for a terminal."""
    a = analysis
    lines = [
        f"Re-identification risk of the {a.label}: {a.records} {a.unit} in {a.classes} classes",
        f"  {'model':<11} {'highest':>9} {'average':>9}  "
        f"{a.unit} at risk (> {a.prosecutor.threshold:g})",
    ]
    for r in (a.prosecutor, a.journalist):
        lines.append(
            f"  {r.model:<11} {r.highest:>9.4g} {r.average:>9.4g}  {_pct(r.share_at_risk)}"
        )
    lines.append(f"  {'marketer':<11} {'':>9} {a.marketer:>9.4g}  (expected share re-identified)")
    if not a.journalist_from_population:
        lines.append(
            "  (no population table declared: journalist risk shown at its upper bound, the "
            "prosecutor risk)"
        )
    unique_share = a.sample_uniques / a.records if a.records else 0.0
    lines.append(f"  sample uniques: {a.sample_uniques} ({_pct(unique_share)})")
    u = a.uniqueness
    if u is not None:
        lines.append(
            f"  population uniques (population {u.population_size}, sampling fraction "
            f"{u.sampling_fraction:.4g}):"
        )
        for name in ("pitman", "zayatz", "snb"):
            value = u.estimates[name]
            count = "n/a" if math.isnan(value) else f"{value:.1f}"
            lines.append(f"    {name:<7} {count:>12}  {_pct(u.population_unique_share(name))}")  # type: ignore[arg-type]
        lines.append(
            f"    dankar  {u.estimates['dankar']:>12.1f}  "
            f"{_pct(u.population_unique_share('dankar'))}  (rule chose {u.dankar_choice})"
        )
    else:
        lines.append(f"  population uniques: {a.uniqueness_note}")
    if a.drivers is not None and a.drivers.combinations:
        how = "all combinations" if a.drivers.exhaustive else f"beam search, width {a.drivers.beam}"
        lines.append(f"  quasi-identifiers driving uniqueness (share of sample uniques; {how}):")
        sizes = sorted({len(c.columns) for c in a.drivers.combinations})
        for size in sizes[:3]:
            for c in a.drivers.top(size, top):
                lines.append(f"    {_pct(c.unique_share):>10}  {' + '.join(c.columns)}")
    return "\n".join(lines)
