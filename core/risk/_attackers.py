"""Prosecutor, journalist and marketer re-identification risk (El Emam's attacker models).

* **Prosecutor**: knows the target is in the release; picks among the records of the target's
  class: risk ``1 / f_j`` (``f_j`` the class's size in the release).
* **Journalist**: knows the target is in a larger population but not whether in the release;
  the class matches ``F_j >= f_j`` people of the population: risk ``1 / F_j``. Without a
  declared population table ``F_j`` is unknown and the prosecutor risk is its upper bound
  (reported as such, as ARX does when no research subset is given).
* **Marketer**: wants to re-identify as many records as possible: expected share
  ``(1/n) Σ_j f_j / F_j`` (``#classes / n`` without a population table).

Each summary gives the highest and average risk and the share of records above a threshold.
With a person key, "records" are persons (see :func:`person_risks`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_TOLERANCE = 1e-12


@dataclass(frozen=True)
class AttackerRisk:
    """One attacker model's risk over the records (or persons) of a table.

    Attributes
    ----------
    model : str
    highest, average : float
    threshold : float
        The risk above which a record counts as *at risk*.
    share_at_risk : float
        Fraction of the records whose risk exceeds ``threshold``.
    """

    model: str
    highest: float
    average: float
    threshold: float
    share_at_risk: float


def _summary(model: str, risks: np.ndarray, weights: np.ndarray, threshold: float) -> AttackerRisk:
    total = float(weights.sum())
    if total == 0:
        return AttackerRisk(model, 0.0, 0.0, threshold, 0.0)
    above = risks > threshold + _TOLERANCE
    return AttackerRisk(
        model=model,
        highest=float(risks[weights > 0].max()),
        average=float((risks * weights).sum() / total),
        threshold=threshold,
        share_at_risk=float(weights[above].sum() / total),
    )


def prosecutor_risk(sizes: np.ndarray, threshold: float) -> AttackerRisk:
    """Prosecutor risk of a table whose classes have ``sizes`` records."""
    sizes = np.asarray(sizes, dtype=np.int64)
    return _summary("prosecutor", 1.0 / np.maximum(sizes, 1), sizes, threshold)


def journalist_risk(
    sizes: np.ndarray, population_sizes: np.ndarray | None, threshold: float
) -> AttackerRisk:
    """Journalist risk: ``1 / F_j`` per record; the prosecutor risk when ``F`` is unknown.

    Raises
    ------
    ValueError
        A class matches fewer population records than it holds (the population table does
        not contain the release's people).
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    if population_sizes is None:
        return _summary("journalist", 1.0 / np.maximum(sizes, 1), sizes, threshold)
    population_sizes = np.asarray(population_sizes, dtype=np.int64)
    if (population_sizes < sizes).any():
        bad = int(np.flatnonzero(population_sizes < sizes)[0])
        raise ValueError(
            f"class {bad} holds {sizes[bad]} records but the population table has only "
            f"{population_sizes[bad]} matching people: the population must contain the sample"
        )
    return _summary("journalist", 1.0 / np.maximum(population_sizes, 1), sizes, threshold)


def marketer_risk(sizes: np.ndarray, population_sizes: np.ndarray | None) -> float:
    """Expected share of records a marketer re-identifies."""
    sizes = np.asarray(sizes, dtype=np.int64)
    n = int(sizes.sum())
    if n == 0:
        return 0.0
    if population_sizes is None:
        return float(len(sizes) / n)
    return float((sizes / np.maximum(np.asarray(population_sizes), 1)).sum() / n)


def person_risks(
    class_ids: np.ndarray, persons: np.ndarray, persons_in_class: np.ndarray
) -> np.ndarray:
    """Each person's prosecutor risk: ``1 / persons`` of the most revealing class holding
    one of their records (a person whose records sit in several classes is as exposed as
    in the smallest)."""
    row_risk = 1.0 / np.maximum(persons_in_class[np.asarray(class_ids)], 1)
    _, person_index = np.unique(persons, return_inverse=True)
    out = np.zeros(int(person_index.max()) + 1 if len(person_index) else 0)
    np.maximum.at(out, person_index.reshape(-1), row_risk)
    return out


def person_prosecutor_risk(
    class_ids: np.ndarray, persons: np.ndarray, persons_in_class: np.ndarray, threshold: float
) -> AttackerRisk:
    """Prosecutor risk over persons (each person weighs one)."""
    risks = person_risks(class_ids, persons, persons_in_class)
    return _summary("prosecutor", risks, np.ones(len(risks)), threshold)
