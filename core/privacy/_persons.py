"""Counting people, not rows, in equivalence classes (a table with several rows per person).

One definition, used by the person-keyed search (``privgate.core.anonymize._persons``) and by
the gate (:func:`privgate.core.gate.class_stats_of`): both build a class table with
:func:`person_class_stats` and check it with the models' own ``satisfied_by``/``achieved``.
The argument for each definition is in ``docs/PERSONS.md``; in short:

* **size** of a class: its distinct persons (k-anonymity, the risk limits);
* **sensitive distribution** of a class: each person in the class weighs exactly 1, split
  evenly over that person's records in the class (:func:`person_histograms`). A prosecutor
  who knows a target is in the release and found the class of one of the target's records
  can tell neither which of the class's persons is the target (each is equally likely) nor
  which of the target's records in the class is the one they looked up (they look alike):
  the value's weight divided by the class's persons is exactly the attacker's posterior
  that the record holds it. One person's many records can neither dilute a class (fifteen
  admissions with fifteen diagnoses weigh as much as one admission) nor dominate it. With one
  record per person in a class this is the row histogram;
* **reference distribution** of t-closeness, β-likeness and δ-disclosure: the same weighting
  over the whole *input* (each input person weighs 1, split over all their records): the
  attacker's prior for a record of a person drawn at random, compared with the class's
  posterior;
* **Grassberger's estimator** reads whole counts: each person in a class is *one sample*
  (:func:`person_samples`), of the value they hold there if they hold one; a person holding
  several values there is one sample of the one the class weighs most (ties by the value's
  text). Moving a person's weight onto the heavier value only concentrates the distribution:
  the sample majorizes the person weights, so it is never more diverse than they are (by any
  Schur-concave measure: distinct values, Shannon's entropy);
* **a person's risk**: ``1 / persons`` of the smallest class holding one of their records
  (:func:`privgate.core.risk.person_risks`); the average and share limits read these.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from privgate.core.encoding import ClassStats
from privgate.core.privacy._base import PrivacyModel
from privgate.core.privacy._disclosure import DeltaDisclosure
from privgate.core.privacy._k_anonymity import KAnonymity
from privgate.core.privacy._k_map import EstimatedKMap
from privgate.core.privacy._l_diversity import (
    DistinctLDiversity,
    EntropyLDiversity,
    RecursiveCLDiversity,
)
from privgate.core.privacy._likeness import BetaLikeness
from privgate.core.privacy._risk import AverageRisk, HighestRisk, PopulationUniques, RiskShareAbove
from privgate.core.privacy._t_closeness import TCloseness
from privgate.core.risk import person_risks

__all__ = [
    "PERSON_MODELS",
    "PERSON_COUNTED_MODELS",
    "person_class_stats",
    "person_histograms",
    "person_samples",
    "persons_per_class",
    "unsupported_with_persons",
]

#: Models whose satisfaction survives adding a person's records to a class: for them, the
#: people a node must suppress form a largest releasable set and the person-keyed search may
#: prune the lattice by monotonicity (see ``privgate.core.anonymize._persons``).
PERSON_MODELS = (KAnonymity, DistinctLDiversity, HighestRisk)

#: Every model with a per-person definition (:func:`person_class_stats`). The ones outside
#: :data:`PERSON_MODELS` can fail by a class *gaining* a person's records: the search applies
#: the fixed-point rule without pruning (``privgate.core.anonymize._persons``).
PERSON_COUNTED_MODELS = (
    *PERSON_MODELS,
    EntropyLDiversity,
    RecursiveCLDiversity,
    TCloseness,
    BetaLikeness,
    DeltaDisclosure,
    AverageRisk,
    RiskShareAbove,
    PopulationUniques,
    EstimatedKMap,
)


def _why_not_per_person(model: PrivacyModel) -> str | None:
    """Why ``model`` has no per-person definition here (``None`` if it has one)."""
    if not isinstance(model, PERSON_COUNTED_MODELS):
        return "no per-person definition"
    return None


def unsupported_with_persons(models: Sequence[PrivacyModel]) -> list[str]:
    """The names of the models that cannot be guaranteed per person."""
    return [str(m) for m in models if _why_not_per_person(m) is not None]


def persons_per_class(class_ids: np.ndarray, persons: np.ndarray, n_classes: int) -> np.ndarray:
    """Distinct persons in each class: a person with three records in a class counts once.

    Parameters
    ----------
    class_ids : ndarray of int, shape (n_rows,)
        Each row's class, ``0..n_classes-1``.
    persons : ndarray of int, shape (n_rows,)
        Each row's person code (any non-negative integers).
    n_classes : int
    """
    class_ids = np.asarray(class_ids, dtype=np.int64)
    persons = np.asarray(persons, dtype=np.int64)
    if len(class_ids) == 0:
        return np.zeros(n_classes, dtype=np.int64)
    pairs = np.unique(class_ids * (int(persons.max()) + 1) + persons)
    return np.bincount(pairs // (int(persons.max()) + 1), minlength=n_classes).astype(np.int64)


def person_histograms(
    class_ids: np.ndarray, persons: np.ndarray, codes: np.ndarray, n_classes: int, n_values: int
) -> np.ndarray:
    """Per class, each sensitive value's weight when every person in the class weighs 1.

    A person with ``r`` records in a class gives ``n_v / r`` to each value ``v`` they hold
    ``n_v`` times there, so a class's row sums to its number of persons.

    The weights are summed in a canonical order (each class and value's terms ascending), so
    two callers that group the same records differently (the search by lattice codes, the
    gate by the written text) compute bit-identical histograms: a strict comparison such as
    recursive (c,l)-diversity's then reaches the same verdict in both.

    Parameters
    ----------
    class_ids, persons, codes : ndarray of int, shape (n_rows,)
        Each row's class (``0..n_classes-1``), person (non-negative) and value
        (``0..n_values-1``).

    Returns
    -------
    ndarray of float, shape (n_classes, n_values)
    """
    class_ids = np.asarray(class_ids, dtype=np.int64)
    persons = np.asarray(persons, dtype=np.int64)
    codes = np.asarray(codes, dtype=np.int64)
    out = np.zeros(n_classes * n_values, dtype=np.float64)
    if len(class_ids) == 0:
        return out.reshape(n_classes, n_values)
    n_persons = int(persons.max()) + 1
    pair_ids, pair_of_row = np.unique(class_ids * n_persons + persons, return_inverse=True)
    pair_of_row = pair_of_row.reshape(-1)
    records = np.bincount(pair_of_row)  # each (class, person)'s records
    triple_ids, triple_of_row = np.unique(pair_of_row * n_values + codes, return_inverse=True)
    held = np.bincount(triple_of_row.reshape(-1))  # each (class, person, value)'s records
    pair = triple_ids // n_values
    value = triple_ids % n_values
    bucket = (pair_ids[pair] // n_persons) * n_values + value
    term = held / records[pair]
    order = np.lexsort((term, bucket))
    out += np.bincount(bucket[order], weights=term[order], minlength=n_classes * n_values)
    return out.reshape(n_classes, n_values)


#: Person weights within this absolute distance rank as tied (then by the value's text): the
#: weights are sums of fractions, and an exact tie must not be decided by rounding.
_WEIGHT_GRID = 1e-9


def person_samples(
    class_ids: np.ndarray,
    persons: np.ndarray,
    codes: np.ndarray,
    weights: np.ndarray,
    values: np.ndarray,
) -> np.ndarray:
    """Per class, each value's count when every person in the class is one sample of it.

    A person whose records in a class all hold ``v`` is one sample of ``v``. A person holding
    several values there is one sample of the value among theirs that the class weighs most
    (``weights``, the class's person weights from :func:`person_histograms`; weights within
    ``1e-9`` tie, and ties go to the value whose text sorts first, a missing value first).

    Why this choice: rank the class's values by weight, heaviest first. A person's weight
    only moves from values they hold to a value ranked at least as high, so for every ``j``
    the sample's top-``j`` ranked values hold at least as much as the weights' top-``j``:
    the sample (``P`` persons) majorizes the weights (also ``P``). Every Schur-concave
    measure of diversity (the number of distinct values, Shannon's and every Rényi entropy)
    is then at most its value on the person weights. Where every person holds one value in
    the class, the sample *is* the person weights. (Grassberger's estimate itself is not
    Schur-concave, ``{3, 1}`` scores above ``{2, 2}``, so no order between its values on two
    samples is claimed: the sample fed to it is what is bounded; see docs/PERSONS.md.)

    The choice reads only the class's weights (bit-identical in the search and the gate,
    see :func:`person_histograms`) and each value's text, never a coding of the values, so
    the search and the gate draw the same sample.

    Parameters
    ----------
    class_ids, persons, codes : ndarray of int, shape (n_rows,)
    weights : ndarray of float, shape (n_classes, n_values)
    values : ndarray, shape (n_values,)
        The value of each code.

    Returns
    -------
    ndarray of int64, shape (n_classes, n_values)
    """
    n_classes, n_values = weights.shape
    out = np.zeros(n_classes * n_values, dtype=np.int64)
    if len(class_ids) == 0:
        return out.reshape(n_classes, n_values)
    class_ids = np.asarray(class_ids, dtype=np.int64)
    persons = np.asarray(persons, dtype=np.int64)
    codes = np.asarray(codes, dtype=np.int64)
    text = [(0, "") if v is None else (1, str(v)) for v in values]
    text_rank = np.empty(n_values, dtype=np.int64)
    text_rank[sorted(range(n_values), key=text.__getitem__)] = np.arange(n_values)
    grid = np.round(weights[class_ids, codes] / _WEIGHT_GRID)
    pair = class_ids * (int(persons.max()) + 1) + persons
    order = np.lexsort((text_rank[codes], -grid, pair))  # per (class, person): heaviest first
    first = order[np.r_[True, pair[order][1:] != pair[order][:-1]]]
    np.add.at(out, class_ids[first] * n_values + codes[first], 1)
    return out.reshape(n_classes, n_values)


def person_class_stats(
    class_ids: np.ndarray,
    n_classes: int,
    persons: np.ndarray,
    sensitive_codes: Mapping[str, np.ndarray],
    sensitive_values: Mapping[str, np.ndarray],
    overall: Mapping[str, np.ndarray] | None = None,
) -> ClassStats:
    """The classes of a person-keyed table as the privacy models check them.

    Sizes are distinct persons (:func:`persons_per_class`), histograms the person weights of
    :func:`person_histograms`, ``person_samples`` the whole-count samples of
    :func:`person_samples`, ``person_risks`` each person's prosecutor risk. ``overall``
    (per sensitive column, the reference distribution t-closeness compares with) defaults to
    the same person weighting over these rows.

    Parameters
    ----------
    class_ids : ndarray of int, shape (n_rows,)
    n_classes : int
    persons : ndarray of int, shape (n_rows,)
    sensitive_codes : mapping of str to ndarray of int, shape (n_rows,)
    sensitive_values : mapping of str to ndarray
        Per sensitive column, the value of each code.
    overall : mapping of str to ndarray, optional
    """
    class_ids = np.asarray(class_ids, dtype=np.int64)
    persons = np.asarray(persons, dtype=np.int64)
    sizes = persons_per_class(class_ids, persons, n_classes)
    histograms, reference, samples = {}, {}, {}
    for name, codes in sensitive_codes.items():
        m = len(sensitive_values[name])
        histograms[name] = person_histograms(class_ids, persons, codes, n_classes, m)
        samples[name] = person_samples(
            class_ids, persons, codes, histograms[name], np.asarray(sensitive_values[name])
        )
        if overall is not None and name in overall:
            reference[name] = np.asarray(overall[name], dtype=float)
        else:
            total = person_histograms(np.zeros_like(class_ids), persons, codes, 1, m)[0]
            reference[name] = total / max(total.sum(), 1.0)
    risks = person_risks(class_ids, persons, sizes)
    return ClassStats(
        sizes,
        histograms,
        reference,
        dict(sensitive_values),
        person_risks=risks,
        person_samples=samples,
    )
