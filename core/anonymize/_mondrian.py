"""Mondrian multidimensional local recoding.

K. LeFevre, D. J. DeWitt, R. Ramakrishnan, "Mondrian multidimensional k-anonymity", ICDE 2006.

Full-domain algorithms (Datafly) give every record the same generalization level, so one rare
value forces its whole column to a coarse level. Mondrian instead cuts the table, like a k-d
tree, into regions of the quasi-identifier space and labels every record with the smallest box
around its region: a dense region keeps fine labels while a sparse one gets coarse ones. A cut is
*allowable* when every resulting region still satisfies all the privacy models; Mondrian stops
cutting a region when no allowable cut is left, so every final region satisfies the models and
no record is ever suppressed.

Cuts
----
* numeric quasi-identifier: at the median. *Strict* partitioning sends values ``<= median`` left
  and ``> median`` right, so regions never overlap; *relaxed* partitioning (LeFevre, section 4)
  lets records equal to the median go to either side so that both halves have the same size,
  which allows a cut where a heavily repeated median would leave one side too small. A region is
  labelled ``"lo-hi"`` with the actual smallest and largest value it holds (the plain value when
  they are equal).
* categorical quasi-identifier: along its hierarchy. A region holds one hierarchy node (the root
  ``*`` at first); a cut replaces the node by its children present in the region (a multi-way
  split, one region per child). A node with a single child present is replaced by that child at
  once: the records do not change, so the models still hold, and the label gets more precise.

The dimension to cut is the one with the widest normalized range (numeric: range over the
table's range; categorical: distinct values in the region over distinct values in the table);
if its cut is not allowable the next widest is tried. At the root every dimension has width 1,
so ties are broken by the order of the quasi-identifiers.

Complexity: each level of the partition tree touches every record a constant number of times per
dimension, and the tree has depth ``O(log n)`` for numeric median cuts, so the search is
``O(d * n log n)`` numpy work plus a Python step per region. Regions are kept on an explicit
stack, never on the call stack, so a million records cannot hit the recursion limit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from privgate.core.anonymize._contract import AnonymizationAlgorithm, SearchInput
from privgate.core.anonymize._release import release_table
from privgate.core.anonymize._result import AnonymizationResult
from privgate.core.anonymize._setup import SearchSetup
from privgate.core.encoding import ClassStats, EncodedTable, encode_table
from privgate.core.exceptions import AnonymizationError
from privgate.core.hierarchy import SUPPRESSED, Hierarchy, value_key
from privgate.core.privacy import PrivacyModel, sensitive_columns

__all__ = ["Mondrian", "MondrianResult"]


@dataclass(frozen=True)
class MondrianResult:
    """What :meth:`Mondrian.anonymize_table` returns: the release itself, for use without a
    policy (the pipeline takes the contract's :class:`AnonymizationResult` instead).

    Attributes
    ----------
    release : DataFrame
        The input with every quasi-identifier replaced by its region's label (``string``
        dtype); same index and row order, every other column untouched, no row removed.
    partitions : int
        Number of regions Mondrian produced.
    class_sizes : ndarray of int64, shape (n_classes,)
        Sizes of the release's equivalence classes (records sharing all QI labels). With strict
        partitioning every region has its own labels, so ``len(class_sizes) == partitions``;
        relaxed regions may overlap, and two regions with identical labels form one class
        (which only makes that class larger).
    """

    release: pd.DataFrame
    partitions: int
    class_sizes: np.ndarray


# ------------------------------------------------------------------------------------------------
# The encoded table Mondrian cuts


@dataclass(frozen=True)
class _NumericDim:
    """A numeric QI as ranks into its sorted distinct values (ranks order like the values)."""

    name: str
    ranks: np.ndarray  # int64, shape (n_rows,)
    values: np.ndarray  # sorted distinct values
    span: float  # the table's max - min

    def label(self, rows: np.ndarray) -> str:
        r = self.ranks[rows]
        lo, hi = self.values[r.min()], self.values[r.max()]
        return value_key(lo) if lo == hi else f"{value_key(lo)}-{value_key(hi)}"


@dataclass(frozen=True)
class _CategoricalDim:
    """A categorical QI: leaf codes plus, per level, a leaf code -> node code map and labels."""

    name: str
    slot: int  # index of this dimension's current level in a region's level tuple
    leaves: np.ndarray  # int32, shape (n_rows,)
    level_maps: list[np.ndarray]
    labels: list[np.ndarray]
    n_leaves: int

    @property
    def top(self) -> int:
        return len(self.level_maps) - 1

    def descend(self, rows: np.ndarray, level: int) -> int:
        """Lowest level at or below ``level`` at which the region still holds a single node."""
        while level > 0:
            below = self.level_maps[level - 1][self.leaves[rows]]
            if not (below == below[0]).all():
                break
            level -= 1
        return level

    def label(self, rows: np.ndarray, level: int) -> str | None:
        label = self.labels[level][self.level_maps[level][self.leaves[rows[0]]]]
        return None if label is None else str(label)  # a missing cell stays missing


@dataclass(frozen=True)
class _Space:
    """Everything a cut needs: the dimensions, the sensitive codes and the models."""

    dims: list[_NumericDim | _CategoricalDim]
    sensitive_codes: dict[str, np.ndarray]
    sensitive_values: dict[str, np.ndarray]
    overall: dict[str, np.ndarray]
    models: list[PrivacyModel]
    min_size: int
    strict: bool
    n_rows: int  # the table's records: every region is a cell of this sample

    def stats(self, rows: np.ndarray, ids: np.ndarray, n_parts: int) -> ClassStats:
        """Class statistics of the candidate regions ``ids`` (one id per row of ``rows``).

        Built directly rather than with :meth:`ClassStats.from_labels`, which would take the
        sensitive distribution of the region being cut as ``overall``: t-closeness compares
        each class with the *whole table*, whatever region it came from. For the same reason
        the sampled units are the table's records (``sampled_units``): estimated k-map's
        ``k'`` grows with the sampling fraction, and a region's own records gave it a smaller
        fraction and ``k'`` than the gate reads (classes of 2 where the table asks 10).
        """
        sizes = np.bincount(ids, minlength=n_parts).astype(np.int64)
        histograms = {}
        for name, codes in self.sensitive_codes.items():
            m = len(self.sensitive_values[name])
            flat = np.bincount(ids * m + codes[rows], minlength=n_parts * m)
            histograms[name] = flat.reshape(n_parts, m).astype(np.int64)
        return ClassStats(
            sizes, histograms, self.overall, self.sensitive_values, sampled_units=self.n_rows
        )

    def allowable(self, rows: np.ndarray, ids: np.ndarray, n_parts: int) -> bool:
        """Whether every candidate region satisfies every model."""
        sizes = np.bincount(ids, minlength=n_parts)
        if sizes.min() < self.min_size:  # cheap bound before the histograms
            return False
        stats = self.stats(rows, ids, n_parts)
        return all(bool(model.satisfied_by(stats).all()) for model in self.models)


def _numeric_dim(name: str, values: pd.Series) -> _NumericDim:
    if values.isna().any():
        raise AnonymizationError(
            f"column {name!r}: {int(values.isna().sum())} missing value(s) in a numeric "
            "quasi-identifier; Mondrian cannot place a missing cell in a range"
        )
    ranks, uniques = pd.factorize(values, sort=True)
    sorted_values = np.asarray(uniques)
    if sorted_values.dtype == object:
        try:
            sorted_values = pd.to_numeric(pd.Series(sorted_values)).to_numpy()
        except (TypeError, ValueError):
            raise AnonymizationError(
                f"column {name!r} is declared numeric but holds non-numeric values"
            ) from None
    span = float(sorted_values[-1]) - float(sorted_values[0]) if len(sorted_values) else 0.0
    return _NumericDim(name, ranks.astype(np.int64), sorted_values, span)


# ------------------------------------------------------------------------------------------------
# The algorithm


class Mondrian(AnonymizationAlgorithm):
    """Mondrian multidimensional local recoding (LeFevre, DeWitt and Ramakrishnan, ICDE 2006).

    Parameters
    ----------
    models : sequence of PrivacyModel
        Every equivalence class of the release must satisfy all of them. A region is only cut
        when its parts satisfy the models, so the whole table has to satisfy them first;
        regions with equal labels (relaxed partitioning) are checked again as the one class
        they form, which a model not kept by unions (delta-disclosure ignoring absent values)
        may fail: the release is then refused.
    strict : bool, default=True
        Strict partitioning (regions never overlap) or relaxed partitioning (records equal to a
        median may go to either side, which allows finer regions on repeated values; regions'
        numeric ranges may then share their end points).

    See Also
    --------
    Datafly : full-domain generalization with record suppression.

    Notes
    -----
    The search and its complexity are described in the module docstring. Mondrian never
    suppresses a record: if the whole table, as a single class, fails a model, no cut can help
    and :meth:`anonymize_table` raises :class:`~privgate.core.exceptions.AnonymizationError`.

    Examples
    --------
    >>> from privgate.core.hierarchy import taxonomy_hierarchy
    >>> from privgate.core.privacy import KAnonymity
    >>> df = pd.DataFrame({"age": [21, 23, 25, 41, 43, 45],
    ...                    "sex": ["M", "F", "M", "F", "M", "F"]})
    >>> sex = taxonomy_hierarchy("sex", {"any": ["M", "F"]})
    >>> result = Mondrian([KAnonymity(k=3)]).anonymize_table(df, {"age": None, "sex": sex})
    >>> result.release["age"].tolist()
    ['21-25', '21-25', '21-25', '41-45', '41-45', '41-45']
    >>> result.partitions
    2
    """

    name = "mondrian"

    def __init__(self, models: Sequence[PrivacyModel], strict: bool = True) -> None:
        if not models:
            raise ValueError("Mondrian needs at least one privacy model")
        self.models = list(models)
        self.strict = bool(strict)

    @classmethod
    def from_setup(cls, setup: SearchSetup) -> Mondrian:
        return cls(setup.models, strict=setup.strict)

    # -- preparing the table ---------------------------------------------------------------------

    def _check_against(
        self,
        frame: pd.DataFrame,
        hierarchies: Mapping[str, Hierarchy | None],
        numeric: set[str] | None,
    ) -> tuple[list[str], set[str], list[str]]:
        """Quasi-identifiers, numeric QIs and sensitive columns, checked against ``frame``."""
        qis = list(hierarchies)
        if not qis:
            raise ValueError("The 'hierarchies' parameter of Mondrian must name at least one QI")
        sensitive = sensitive_columns(self.models)
        absent = [c for c in [*qis, *sensitive] if c not in frame.columns]
        if absent:
            raise AnonymizationError(f"column(s) not in the table: {absent}")
        if numeric is None:
            numeric = {
                q
                for q in qis
                if pd.api.types.is_numeric_dtype(frame[q])
                and not pd.api.types.is_bool_dtype(frame[q])
            }
        elif not set(numeric) <= set(qis):
            raise ValueError(
                "The 'numeric' parameter of Mondrian.anonymize_table must be a subset of the "
                f"quasi-identifiers {qis}. Got {sorted(numeric)} instead."
            )
        missing_h = [q for q in qis if q not in numeric and hierarchies[q] is None]
        if missing_h:
            raise ValueError(
                f"categorical quasi-identifier(s) {missing_h} need a hierarchy; only numeric ones "
                "may map to None"
            )
        if len(frame) == 0:
            raise AnonymizationError("the table has no records to anonymize")
        return qis, set(numeric), sensitive

    def _space(
        self, rows: Mapping, encoded: EncodedTable, qis: Sequence[str], numeric: set[str]
    ) -> tuple[_Space, tuple[int, ...]]:
        """The dimensions to cut: numeric QIs from the rows, categorical ones from their
        encoding along the hierarchy (numeric QIs need not be encoded)."""
        by_name = {c.name: c for c in encoded.columns}
        dims: list[_NumericDim | _CategoricalDim] = []
        top_levels: list[int] = []
        for q in qis:
            if q in numeric:
                dims.append(_numeric_dim(q, pd.Series(rows[q])))
                continue
            col = by_name[q]
            level_maps, labels = list(col.level_maps), list(col.labels)
            if len(labels[-1]) > 1:  # no single root in the data: add '*' above the top level
                level_maps.append(np.zeros(len(labels[0]), dtype=np.int32))
                labels.append(np.array([SUPPRESSED], dtype=object))
            dim = _CategoricalDim(q, len(top_levels), col.codes, level_maps, labels, len(labels[0]))
            dims.append(dim)
            top_levels.append(dim.top)
        overall = {}
        for name, codes in encoded.sensitive_codes.items():
            counts = np.bincount(codes, minlength=len(encoded.sensitive_values[name]))
            overall[name] = counts / max(counts.sum(), 1)
        min_size = max(m.min_class_size for m in self.models)
        space = _Space(
            dims,
            dict(encoded.sensitive_codes),
            dict(encoded.sensitive_values),
            overall,
            self.models,
            min_size,
            self.strict,
            len(rows[qis[0]]),
        )
        return space, tuple(top_levels)

    def _check_whole_table(self, space: _Space, n_rows: int) -> None:
        rows = np.arange(n_rows)
        stats = space.stats(rows, np.zeros(n_rows, dtype=np.int64), 1)
        failing = [m for m in self.models if not bool(m.satisfied_by(stats).all())]
        if failing:
            detail = "; ".join(f"{m} (reaches {m.achieved(stats):g})" for m in failing)
            raise AnonymizationError(
                f"{detail} cannot be reached: even the whole table of {n_rows} records, as a "
                "single equivalence class, fails, and Mondrian does not suppress records"
            )

    # -- cutting a region ------------------------------------------------------------------------

    @staticmethod
    def _cut(
        space: _Space, dim: _NumericDim | _CategoricalDim, rows: np.ndarray, levels: tuple
    ) -> tuple[np.ndarray, int] | None:
        """Region id of every row after cutting along ``dim``, or ``None`` if it cannot cut."""
        if isinstance(dim, _CategoricalDim):
            below = dim.level_maps[levels[dim.slot] - 1][dim.leaves[rows]]
            _, ids = np.unique(below, return_inverse=True)
            return ids.reshape(-1), int(ids.max()) + 1
        r = dim.ranks[rows]
        n = len(r)
        if space.strict:
            median = np.partition(r, (n - 1) // 2)[(n - 1) // 2]  # the lower median
            ids = (r > median).astype(np.int64)
            if not ids.any():  # the median is the maximum: nothing goes right
                return None
            return ids, 2
        order = np.argsort(r, kind="stable")  # ties at the median split in row order
        ids = np.ones(n, dtype=np.int64)
        ids[order[: n // 2]] = 0
        return ids, 2

    @staticmethod
    def _widths(space: _Space, rows: np.ndarray, levels: tuple) -> list[tuple[float, int]]:
        """(normalized width, dimension index) of every dimension that can still be cut."""
        out = []
        for j, dim in enumerate(space.dims):
            if isinstance(dim, _NumericDim):
                r = dim.ranks[rows]
                lo, hi = r.min(), r.max()
                if lo == hi:
                    continue
                width = float(dim.values[hi] - dim.values[lo]) / dim.span
            else:
                if levels[dim.slot] == 0:  # a single leaf value (the region was descended)
                    continue
                width = np.count_nonzero(np.bincount(dim.leaves[rows])) / dim.n_leaves
            out.append((width, j))
        out.sort(key=lambda wj: -wj[0])  # stable: equal widths keep the QI order
        return out

    def _split(
        self, space: _Space, rows: np.ndarray, levels: tuple
    ) -> list[tuple[np.ndarray, tuple]] | None:
        """The regions of the first allowable cut, widest dimension first, or ``None``."""
        for _, j in self._widths(space, rows, levels):
            dim = space.dims[j]
            cut = self._cut(space, dim, rows, levels)
            if cut is None:
                continue
            ids, n_parts = cut
            if not space.allowable(rows, ids, n_parts):
                continue
            child_levels = list(levels)
            if isinstance(dim, _CategoricalDim):
                child_levels[dim.slot] -= 1
            order = np.argsort(ids, kind="stable")
            bounds = np.cumsum(np.bincount(ids, minlength=n_parts))[:-1]
            children = []
            for part in np.split(rows[order], bounds):
                children.append((part, self._descend_all(space, part, child_levels)))
            return children
        return None

    @staticmethod
    def _descend_all(space: _Space, rows: np.ndarray, levels: Sequence[int]) -> tuple:
        out = list(levels)
        for dim in space.dims:
            if isinstance(dim, _CategoricalDim):
                out[dim.slot] = dim.descend(rows, out[dim.slot])
        return tuple(out)

    # -- public entry point ----------------------------------------------------------------------

    def anonymize_table(
        self,
        frame: pd.DataFrame,
        hierarchies: Mapping[str, Hierarchy | None],
        numeric: set[str] | None = None,
    ) -> MondrianResult:
        """Partition ``frame`` and return the release with every QI replaced by its label.

        Parameters
        ----------
        frame : DataFrame
            The input table; its QIs must have no missing value.
        hierarchies : mapping of str to Hierarchy or None
            One entry per quasi-identifier, in QI order (the order breaks ties between
            dimensions of equal width). Numeric QIs are cut at medians, so their hierarchy is
            not consulted and may be ``None``; categorical QIs are cut along theirs.
        numeric : set of str, optional
            The QIs to treat as numbers. Default: the QIs with a numeric (non-boolean) dtype.

        Returns
        -------
        MondrianResult

        Raises
        ------
        AnonymizationError
            A QI or sensitive column is missing, the table is empty, or the whole table as one
            class already fails a model (for example ``k`` larger than the number of records).
        HierarchyError
            A categorical QI has missing values or values its hierarchy does not cover.
        """
        qis, numeric_set, sensitive = self._check_against(frame, hierarchies, numeric)
        categorical = {q: hierarchies[q] for q in qis if q not in numeric_set}
        encoded = encode_table(frame, categorical, sensitive)  # raises on uncovered values
        result, sizes = self._partition(frame, encoded, qis, numeric_set)
        release = release_table(frame, result, list(frame.columns))
        return MondrianResult(release, result.details["partitions"], sizes)

    def anonymize(self, data: SearchInput) -> AnonymizationResult:
        """Partition the prepared table (numeric QIs cut at medians, the others along their
        hierarchies); nothing is suppressed."""
        numeric = {q for q in data.covered if q in data.setup.numeric}
        result, _ = self._partition(data.rows, data.encoded, data.covered, numeric)
        return result

    def _partition(
        self, rows: Mapping, encoded: EncodedTable, qis: Sequence[str], numeric: set[str]
    ) -> tuple[AnonymizationResult, np.ndarray]:
        """The regions, as the contract's result, and the release's class sizes."""
        space, top_levels = self._space(rows, encoded, qis, numeric)
        n_rows = len(rows[qis[0]])
        self._check_whole_table(space, n_rows)

        all_rows = np.arange(n_rows, dtype=np.int64)
        stack = [(all_rows, self._descend_all(space, all_rows, top_levels))]
        final: list[tuple[np.ndarray, tuple]] = []
        while stack:  # depth-first, on an explicit stack
            region_rows, levels = stack.pop()
            children = None
            if len(region_rows) >= 2 * space.min_size:
                children = self._split(space, region_rows, levels)
            if children is None:
                final.append((region_rows, levels))
            else:
                stack.extend(reversed(children))
        result, sizes = self._result(n_rows, space, final, tuple(qis))
        if len(sizes) < len(final) or _has_table_conditions(self.models):
            _check_classes(space, result, n_rows, "use algorithm 'optimal'")
        return result, sizes

    def _result(
        self,
        n_rows: int,
        space: _Space,
        final: list[tuple[np.ndarray, tuple]],
        covered: tuple[str, ...],
    ) -> tuple[AnonymizationResult, np.ndarray]:
        region = np.empty(n_rows, dtype=np.int64)
        labels: list[list[str]] = [[] for _ in space.dims]
        for p, (rows, levels) in enumerate(final):
            region[rows] = p
            for j, dim in enumerate(space.dims):
                if isinstance(dim, _NumericDim):
                    labels[j].append(dim.label(rows))
                else:
                    labels[j].append(dim.label(rows, levels[dim.slot]))
        classes: dict[tuple[str, ...], int] = {}
        for p, (rows, _) in enumerate(final):
            key = tuple(labels[j][p] for j in range(len(space.dims)))
            classes[key] = classes.get(key, 0) + len(rows)
        sizes = np.fromiter(classes.values(), dtype=np.int64, count=len(classes))
        result = AnonymizationResult(
            algorithm=self.name,
            covered=covered,
            suppressed=np.zeros(n_rows, dtype=bool),
            labels={
                dim.name: np.asarray(labels[j], dtype=object)[region]
                for j, dim in enumerate(space.dims)
            },
            transformation={q: "local recoding (one box per region)" for q in covered},
            levels=None,
            details={"partitions": len(final), "strict": self.strict, "classes": len(sizes)},
        )
        return result, sizes


# ------------------------------------------------------------------------------------------------
# Whole-table conditions


class _TableConditionFails(AnonymizationError):
    """A partition's release fails a model's whole-table condition; ``failed`` names each
    model with the level the release reached."""

    def __init__(self, message: str, failed: str = "") -> None:
        super().__init__(message)  # ``failed`` optional: an unpickled copy is made from args
        self.failed = failed or message


def _class_stats(space: _Space, result: AnonymizationResult, n_rows: int) -> ClassStats:
    """Class statistics of a partition's release: records with equal labels form one class
    (regions of a relaxed partition, or clusters, may share their labels)."""
    keys = pd.DataFrame({name: labels for name, labels in result.labels.items()})
    ids = keys.groupby(list(keys.columns), sort=False, dropna=False).ngroup().to_numpy()
    return space.stats(np.arange(n_rows), ids.astype(np.int64), int(ids.max()) + 1)


def _check_classes(space: _Space, result: AnonymizationResult, n_rows: int, instead: str) -> None:
    """Check every class of the release (records with equal labels) against the models, and
    every model's whole-table condition; refuse rather than release a failing one.

    Each region satisfies the models by construction; regions (relaxed ones, or clusters)
    with equal labels form one class, the union of their records. k-anonymity, every
    l-diversity, t-closeness and beta-likeness hold for such a union, but not every model
    does: delta-disclosure with ``absent_values: ignored`` skips the values a class lacks, so
    a value held by one region is diluted below its bound by the other (relaxed Mondrian
    released classes the gate blocked, on 26 rows). ``instead`` names what to use then.
    """
    stats = _class_stats(space, result, n_rows)
    failing = [m for m in space.models if not bool(m.satisfied_by(stats).all())]
    if failing:
        detail = "; ".join(f"{m} (reaches {m.achieved(stats):g})" for m in failing)
        raise AnonymizationError(
            f"{detail}: a class joining regions with equal labels fails; nothing is released "
            f"({instead})"
        )
    _check_table_conditions(space.models, stats)


def _has_table_conditions(models: Sequence[PrivacyModel]) -> bool:
    """Whether a model has a whole-table condition (else the class grouping is not needed)."""
    return any(type(m).table_satisfied is not PrivacyModel.table_satisfied for m in models)


def _check_table_conditions(models: Sequence[PrivacyModel], stats: ClassStats) -> None:
    """Refuse a release failing a model's whole-table condition
    (:meth:`PrivacyModel.table_satisfied`: average risk, the share of records at risk).

    Why here: such a condition is not a property of any one region, so no cut's check sees it;
    the release is refused where it is known, rather than by the gate after the rest of the
    run (the policy accepts these limits with a partitioning algorithm, which meets them when
    its classes are large enough).
    """
    failing = [m for m in models if not m.table_satisfied(stats)]
    if failing:
        detail = "; ".join(f"{m} (reaches {m.achieved(stats):g})" for m in failing)
        raise _TableConditionFails(
            f"{detail}: a whole-table condition the partitioning cannot aim for (it checks "
            "each region and class) fails on its release; nothing is released (use algorithm "
            "'optimal' or 'datafly', whose searches check it)",
            detail,
        )
