"""RFKA: k-anonymity by feature selection, in the order of a feature-importance ranking.

Generalization keeps every attribute but coarsens its values; feature selection instead keeps
some attributes exactly and suppresses the others entirely. RFKA (issue #5) walks the
attributes from the most to the least important (the ranking stage's random-forest
importance), starting from the empty set, and keeps an attribute only if the table projected
on the attributes kept so far *plus this one* is still k-anonymous. The release is that
projection; every other attribute is suppressed (``*`` in every row).

Why this order and this test: the projection on no attribute is one class of all rows, hence
k-anonymous for any ``k <= rows``; adding an attribute can only split classes, so once an
attribute is rejected it would stay rejected whatever is added later. A single pass in
importance order therefore gives the greedy-by-importance selection, at the cost of one
group-by per attribute.

The same one-pass selection serves the Greedy Hamdist baseline (:mod:`core.anonymize._hamdist`),
with binary features ordered by their Hamming gain instead of attributes by importance, so the
projection check and :class:`FeatureSelection` live here.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from privgate.core.anonymize._contract import AnonymizationAlgorithm, SearchInput
from privgate.core.anonymize._release import release_table
from privgate.core.anonymize._result import AnonymizationResult
from privgate.core.anonymize._setup import SearchSetup, check_k
from privgate.core.exceptions import AnonymizationError
from privgate.core.privacy import KAnonymity

__all__ = [
    "RFKA",
    "SUPPRESSED",
    "FeatureSelection",
    "ProjectionClasses",
    "rfka_release",
    "rfka_select",
]

#: What a suppressed attribute holds in every row of an RFKA release.
SUPPRESSED = "*"


@dataclass(frozen=True)
class FeatureSelection:
    """The outcome of a k-anonymous feature selection.

    Attributes
    ----------
    algorithm : str
        ``"rfka"`` or ``"greedy_hamdist"``.
    kept : list of str
        The columns released, in the order they were accepted (RFKA: attribute names; Greedy
        Hamdist: binary feature names such as ``"workclass=Private"``).
    rejected : list of str
        The candidates that were not released, in the order they were examined.
    steps : list of dict
        One entry per candidate, in the order examined: ``name``, ``kept`` (bool),
        ``smallest_class`` (the smallest class of the projection on the kept columns plus this
        candidate, or ``None`` when the candidate was not tried) and ``reason``; Greedy Hamdist
        adds ``gain``.
    k : int
    smallest_class : int
        Smallest class of the released projection (``rows`` when nothing is kept).
    seconds : float
        Wall time of the selection itself (ranking excluded unless the algorithm computes it).
    """

    algorithm: str
    kept: list[str]
    rejected: list[str]
    steps: list[dict]
    k: int
    smallest_class: int
    seconds: float

    def to_dict(self) -> dict:
        """A JSON-ready copy, for the manifest and the report."""
        return asdict(self)


class ProjectionClasses:
    """Equivalence classes of a table projected on a growing set of columns.

    The classes are held as one integer code per row (``0 .. n_classes - 1``). Trying a
    candidate column combines its codes with the current ones (``current * cardinality +
    code``) and counts the distinct combinations with :func:`numpy.unique`: no pandas group-by
    and no string keys, so a candidate costs one ``O(n log n)`` pass. The codes are
    re-compressed after every accepted column, so the combined code never exceeds
    ``rows * cardinality`` and cannot overflow.
    """

    def __init__(self, n_rows: int) -> None:
        self.n_rows = n_rows
        self.codes = np.zeros(n_rows, dtype=np.int64)
        self.n_classes = 1 if n_rows else 0

    @property
    def smallest(self) -> int:
        """Smallest class size of the current projection (``rows`` for the empty projection)."""
        if self.n_classes <= 1:
            return self.n_rows
        return int(np.bincount(self.codes, minlength=self.n_classes).min())

    def try_add(self, codes: np.ndarray, cardinality: int) -> tuple[int, np.ndarray, int]:
        """Smallest class if ``codes`` were added, with the combined codes and class count."""
        combined = self.codes * max(cardinality, 1) + codes
        _, inverse, counts = np.unique(combined, return_inverse=True, return_counts=True)
        return int(counts.min()), inverse.astype(np.int64, copy=False), len(counts)

    def accept(self, inverse: np.ndarray, n_classes: int) -> None:
        """Make a tried combination the current projection."""
        self.codes = inverse
        self.n_classes = n_classes


def column_codes(values: pd.Series) -> tuple[np.ndarray, int]:
    """Integer codes of a column, a missing value counting as one value of its own.

    A release shows a missing value as an empty cell, which an attacker sees like any other
    value, so two records that differ only by one being missing are *not* in the same class.
    """
    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    return codes.astype(np.int64, copy=False), len(uniques)


def select_in_order(
    candidates: Iterable[tuple[str, np.ndarray, int, dict]],
    n_rows: int,
    k: int,
) -> tuple[list[str], list[str], list[dict], int]:
    """Keep each candidate whose addition leaves the projection k-anonymous.

    Parameters
    ----------
    candidates : iterable of (name, codes, cardinality, extra)
        In the order to examine them; ``extra`` is merged into the candidate's step, and a
        truthy ``extra["skip"]`` (a reason string) rejects it without trying it.
    n_rows, k : int

    Returns
    -------
    kept, rejected, steps, smallest_class
    """
    classes = ProjectionClasses(n_rows)
    kept: list[str] = []
    rejected: list[str] = []
    steps: list[dict] = []
    for name, codes, cardinality, extra in candidates:
        extra = dict(extra)
        skip = extra.pop("skip", None)
        if skip:
            rejected.append(name)
            steps.append(
                {"name": name, "kept": False, "smallest_class": None, "reason": skip, **extra}
            )
            continue
        smallest, inverse, n_classes = classes.try_add(codes, cardinality)
        ok = smallest >= k
        if ok:
            classes.accept(inverse, n_classes)
            kept.append(name)
        else:
            rejected.append(name)
        steps.append(
            {
                "name": name,
                "kept": ok,
                "smallest_class": smallest,
                "reason": f"{k}-anonymous" if ok else f"a class of {smallest} < k = {k}",
                **extra,
            }
        )
    return kept, rejected, steps, classes.smallest


def check_columns(frame: pd.DataFrame, names: Sequence[str], what: str) -> list[str]:
    names = list(names)
    missing = [n for n in names if n not in frame.columns]
    if missing:
        raise AnonymizationError(
            f"{what}: column(s) {', '.join(map(repr, missing))} not in the table "
            f"(columns: {', '.join(map(str, frame.columns))})"
        )
    seen: set[str] = set()
    repeated = [n for n in names if n in seen or seen.add(n)]
    if repeated:
        raise AnonymizationError(f"{what}: column(s) {', '.join(map(repr, repeated))} repeated")
    return names


def rfka_select(frame: pd.DataFrame, order: Sequence[str], k: int) -> FeatureSelection:
    """Select attributes in importance order, keeping each one that leaves the table k-anonymous.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table; only the columns in ``order`` are read. A missing value counts as a value.
    order : sequence of str
        The candidate attributes (the quasi-identifiers), most important first, for example
        ``privgate.core.ranking.oob_permutation_importance(...).index``.
    k : int
        Every class of the projection on the kept attributes has at least ``k`` rows.

    Returns
    -------
    FeatureSelection
        ``kept`` in importance order; ``seconds`` covers the selection only (the ranking is
        computed by the caller).

    Raises
    ------
    core.exceptions.AnonymizationError
        If ``k`` is not an integer >= 1 or exceeds the number of rows, or a name in ``order``
        is not a column of ``frame`` or is repeated.
    """
    started = time.perf_counter()
    order = check_columns(frame, order, "rfka order")
    check_k(int(k) if isinstance(k, np.integer) else k, len(frame))
    candidates = ((name, *column_codes(frame[name]), {}) for name in order)
    kept, rejected, steps, smallest = select_in_order(candidates, len(frame), k)
    return FeatureSelection(
        algorithm="rfka",
        kept=kept,
        rejected=rejected,
        steps=steps,
        k=int(k),
        smallest_class=smallest,
        seconds=time.perf_counter() - started,
    )


def _select(
    frame: pd.DataFrame, order: Sequence[str], k: int, covered: Sequence[str]
) -> tuple[AnonymizationResult, FeatureSelection]:
    """RFKA's transformation: the selected attributes kept, every other covered one ``*``."""
    selection = rfka_select(frame, order, k)
    n_rows = len(frame)
    rejected = set(selection.rejected)
    result = AnonymizationResult(
        algorithm=RFKA.name,
        covered=tuple(covered),
        suppressed=np.zeros(n_rows, dtype=bool),
        labels={q: np.full(n_rows, SUPPRESSED, dtype=object) for q in covered if q in rejected},
        transformation={q: "suppressed (*)" if q in rejected else "kept" for q in covered},
        levels=None,
        steps=selection.steps,
        details={
            "kept": selection.kept,
            "suppressed_attributes": selection.rejected,
            "smallest_class": selection.smallest_class,
        },
    )
    return result, selection


class RFKA(AnonymizationAlgorithm):
    """RFKA: keep attributes in order of importance while the projection stays k-anonymous.

    Parameters
    ----------
    k : int
        Every class of the projection on the kept attributes has at least ``k`` records.

    Notes
    -----
    Feature selection guarantees k-anonymity only: no record is suppressed and no other
    privacy model is searched for, so :meth:`from_setup` refuses a setup that asks for more
    (a policy with them is already refused when it loads).
    """

    name = "rfka"

    def __init__(self, k: int) -> None:
        self.k = k

    @classmethod
    def from_setup(cls, setup: SearchSetup) -> RFKA:
        others = [str(m) for m in setup.models if not isinstance(m, KAnonymity)]
        if others or setup.suppression_limit:
            raise AnonymizationError(
                "rfka selects attributes for k-anonymity only, without record suppression; "
                f"it cannot guarantee {others or 'a suppression limit'}"
            )
        return cls(setup.k)

    def anonymize(self, data: SearchInput) -> AnonymizationResult:
        """Select among the covered quasi-identifiers, in the ranking's order."""
        ranking = data.require_ranking(self.name)
        order = [q for q in ranking.order if q in set(data.covered)]
        unranked = [q for q in data.covered if q not in set(order)]
        if unranked:
            raise AnonymizationError(f"rfka: quasi-identifiers {unranked} are not ranked")
        frame = pd.DataFrame({q: data.rows[q] for q in data.covered})
        return _select(frame, order, self.k, data.covered)[0]


def rfka_release(
    frame: pd.DataFrame,
    order: Sequence[str],
    k: int,
    released_columns: Sequence[str] | None = None,
) -> tuple[pd.DataFrame, FeatureSelection]:
    """The RFKA release of a table without a policy: kept attributes as they are, the other
    ranked ones suppressed (the same transformation :class:`RFKA` returns).

    Parameters
    ----------
    frame : pandas.DataFrame
    order : sequence of str
        Candidate attributes, most important first (see :func:`rfka_select`).
    k : int
    released_columns : sequence of str, optional
        The columns of the release, in order (default: all of ``frame``'s). Those in ``order``
        that were not kept hold :data:`SUPPRESSED` (``"*"``) in every row, as ``string``
        dtype; columns outside ``order`` (for example the target) are released unchanged.

    Returns
    -------
    release : pandas.DataFrame
        Same index as ``frame``.
    selection : FeatureSelection

    Raises
    ------
    core.exceptions.AnonymizationError
        As :func:`rfka_select`, or if a released column is not in ``frame``.
    """
    columns = check_columns(
        frame, frame.columns if released_columns is None else released_columns, "released"
    )
    order = check_columns(frame, order, "rfka order")
    result, selection = _select(frame, order, k, order)
    return release_table(frame, result, columns), selection
