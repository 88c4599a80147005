"""Counting people, not rows, in equivalence classes (a table with several rows per person)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from privgate.core.privacy._base import PrivacyModel
from privgate.core.privacy._k_anonymity import KAnonymity
from privgate.core.privacy._l_diversity import DistinctLDiversity
from privgate.core.privacy._risk import HighestRisk

__all__ = ["PERSON_MODELS", "persons_per_class", "unsupported_with_persons"]

#: Models that hold per person when classes are sized in persons. Each one's satisfaction
#: survives adding records to a class, so the people a node must suppress have a largest
#: releasable set (see ``privgate.core.anonymize``'s person-keyed search). Entropy and
#: recursive l-diversity, t-closeness and the average and share risk limits can fail by a
#: class *gaining* a person's records: they are refused with a person key.
PERSON_MODELS = (KAnonymity, DistinctLDiversity, HighestRisk)


def unsupported_with_persons(models: Sequence[PrivacyModel]) -> list[str]:
    """The names of the models that cannot be guaranteed per person."""
    return [str(m) for m in models if not isinstance(m, PERSON_MODELS)]


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
