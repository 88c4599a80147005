"""The engine on a table held as dictionary codes: the Dask path's steps on one process.

``privgate anonymize`` reads its CSV input as :class:`~privgate.core.columnar.TextCodes`
(one ``int32`` per cell). From there it takes the Dask path's own steps, so there is one
engine whatever the entry point: the histogram of distinct (QI, sensitive) tuples
(:func:`histogram_from_codes`, the same merged histogram the partitions sum to), the frequency
set with the global dictionaries (:func:`frequency_set_from_histogram`), the search, the plan
(:func:`plan_generalization`) and the generalization applied to codes
(:func:`generalize_codes`). The release comes out as codes too; no cell becomes a Python
string on the way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from privgate.core.anonymize import FullDomainAlgorithm, SearchSetup, make_algorithm
from privgate.core.columnar import TextCodes
from privgate.core.encoding import FrequencySet
from privgate.core.privacy import reference_columns
from privgate.core.scale._apply import GeneralizationPlan, generalize_codes, plan_generalization
from privgate.core.scale._dictionary import frequency_set_from_histogram
from privgate.core.scale._histogram import histogram_from_codes

__all__ = [
    "CodedRelease",
    "anonymize_codes",
    "frequency_set_from_codes",
    "reference_from_codes",
    "sorted_labels",
]


@dataclass(frozen=True)
class CodedRelease:
    """A release as codes, rows already in their published (permuted) order.

    Attributes
    ----------
    columns : dict of str to TextCodes
        The released columns, kept rows only.
    plan : GeneralizationPlan
    algorithm : str
    details : dict
        The search's facts (nodes evaluated, loss, ...) and ``distinct_tuples``.
    rows : ndarray of intp
        The input row of each released row (in released order): what the release flow needs
        to keep each row's private facts (person, history key) and typed cells aligned.
    steps : list of dict
        The search's history, for the report.
    """

    columns: dict[str, TextCodes]
    plan: GeneralizationPlan
    algorithm: str
    details: dict
    rows: np.ndarray
    steps: list = field(default_factory=list)


def frequency_set_from_codes(columns: Mapping[str, TextCodes], setup: SearchSetup) -> FrequencySet:
    """The frequency set of the QIs and sensitive columns (global dictionaries: each
    column's sorted distinct texts), as the Dask path builds it from its merged histogram.

    Raises
    ------
    HierarchyError
        A quasi-identifier value its hierarchy does not cover.
    """
    names = [*setup.quasi_identifiers, *setup.sensitive]
    histogram = histogram_from_codes(
        names, [columns[n].values for n in names], [columns[n].codes for n in names]
    )
    return frequency_set_from_histogram(histogram, setup.hierarchies, setup.sensitive)


def reference_from_codes(
    columns: Mapping[str, TextCodes], setup: SearchSetup
) -> dict[str, dict[str | None, int]] | None:
    """The input's count of each text of every column a model compares with the input's
    distribution (t-closeness, β-likeness, δ-disclosure; ``None``: a missing cell), or
    ``None`` without such a model (see
    :func:`privgate.core.gate.sensitive_reference`, the one definition)."""
    names = reference_columns(setup.models)  # t-closeness, β-likeness, δ-disclosure
    if not names:
        return None
    out: dict[str, dict[str | None, int]] = {}
    for name in names:
        column = columns[name]
        counts = np.bincount(column.codes + 1, minlength=len(column.values) + 1)
        found: dict[str | None, int] = {}
        if counts[0]:
            found[None] = int(counts[0])
        for value, count in zip(column.values.tolist(), counts[1:].tolist(), strict=True):
            if count:
                found[str(value)] = int(count)
        out[name] = found
    return out


def _level0_codes(column: TextCodes, dictionary: np.ndarray) -> np.ndarray:
    """Codes into the plan's dictionary: the column's own, a missing cell at ``None``'s place
    (listed last by :func:`frequency_set_from_histogram` when the column has one)."""
    if len(dictionary) == len(column.values):
        return column.codes
    return np.where(column.codes < 0, len(column.values), column.codes).astype(np.int32)


def sorted_labels(codes: np.ndarray, labels: np.ndarray) -> TextCodes:
    """Codes into sorted label texts; a ``None`` label (a missing cell kept at level 0) stays
    missing (code ``-1``, an empty cell), as the row engine writes it, not the text "None"."""
    cells = labels.tolist()
    present = np.array([i for i, v in enumerate(cells) if v is not None], dtype=np.intp)
    texts = [str(cells[i]) for i in present.tolist()]
    order = np.array(sorted(range(len(texts)), key=texts.__getitem__), dtype=np.intp)
    rank = np.full(len(cells), -1, dtype=np.int32)
    rank[present[order]] = np.arange(len(texts), dtype=np.int32)
    values = np.empty(len(texts), dtype=object)
    values[:] = [texts[i] for i in order.tolist()]
    return TextCodes(rank[codes], values)


def anonymize_codes(
    columns: Mapping[str, TextCodes],
    setup: SearchSetup,
    shuffle_seed: int | None = None,
    freq: FrequencySet | None = None,
    *,
    shuffle: bool = True,
) -> CodedRelease:
    """Search, plan and generalize a table held as codes; the kept rows permuted.

    The one engine path of every entry point: ``privgate anonymize`` calls it on the codes
    it read, the release flow's anonymize stage (:func:`privgate.core.stages.anonymize`) on
    the codes of its validated table.

    ``shuffle_seed`` reproduces an order in a test; by default the permutation is drawn from
    the operating system's entropy, so nothing published lets anyone recompute the input's
    order. ``shuffle=False`` keeps the kept rows in input order, for a caller that permutes
    them itself when it writes them (the release flow's stage). A released column absent from
    ``columns`` is left out of the release's ``columns`` (that caller takes it from its own
    typed table by ``rows``).

    Raises
    ------
    HierarchyError, AnonymizationError
        A value no hierarchy covers, or no release can meet the models.
    """
    setup.check_feasible(len(next(iter(columns.values()))) if columns else 0)
    if freq is None:
        freq = frequency_set_from_codes(columns, setup)
    algorithm = make_algorithm(setup)
    assert isinstance(algorithm, FullDomainAlgorithm)  # full_domain_setup checked it
    found = algorithm.search(freq)
    plan = plan_generalization(freq, found.levels, list(setup.models), setup.released_columns)
    level0 = [
        _level0_codes(columns[name], dictionary)
        for name, dictionary in zip(plan.quasi_identifiers, plan.values, strict=True)
    ]
    kept, generalized = generalize_codes(level0, plan)
    del level0
    rows = kept[np.random.default_rng(shuffle_seed).permutation(len(kept))] if shuffle else kept
    del kept
    by_name = dict(zip(plan.quasi_identifiers, range(len(generalized)), strict=True))
    out: dict[str, TextCodes] = {}
    for name in setup.released_columns:
        if name in by_name:
            j = by_name[name]
            out[name] = sorted_labels(generalized[j][rows], plan.labels[j])
            generalized[j] = None  # type: ignore[call-overload]
        elif name in columns:
            out[name] = columns[name].take(rows)
    details = {**found.details, "distinct_tuples": int(len(freq.counts))}
    return CodedRelease(out, plan, algorithm.name, details, rows, list(found.steps))
