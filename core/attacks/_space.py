"""How an attacker reads a release against original records: regions, coverage and distance.

Anonymeter compares synthetic records with original ones value by value. A generalized release
holds labels (``35-39``, ``Married``, ``*``) that stand for *sets* of original values, so each
released cell is read as the region it says the value lies in:

* a **numeric** cell is an interval: a number ``v`` is ``[v, v]``, ``lo-hi`` is ``[lo, hi]``,
  ``[lo, hi)`` is half-open, a hierarchy label that is not a range spans the original values
  under it, ``*`` (and a missing cell under ``*`` semantics) is the whole line;
* a **categorical** cell is a set of original values: a value stands for itself, a hierarchy
  label for the values under it at any level, ``*`` for every value.

With raw (synthetic) cells every region is a single value and everything below reduces to
Anonymeter's definitions exactly: coverage is equality, the distance is its Gower-like distance
(numeric L1 scaled by the column's range, categorical 0/1), a predicate holds on a record when
its condition does. With generalized cells an original value is *covered* when it lies in the
region, the distance to a cell is the distance to its region (0 inside), and a released row
satisfies a predicate only when its whole region does (the attacker can be sure of nothing
more). The attacker is assumed to know the public hierarchies.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from privgate.core.exceptions import PolicyError
from privgate.core.hierarchy import SUPPRESSED, Hierarchy, value_key

__all__ = ["ReleaseSpace", "Condition"]

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_RANGE = re.compile(rf"^\s*({_NUMBER})\s*-\s*({_NUMBER})\s*$")
_HALF_OPEN = re.compile(rf"^\s*\[\s*({_NUMBER})\s*,\s*({_NUMBER})\s*\)\s*$")
_CLOSED = re.compile(rf"^\s*\[\s*({_NUMBER})\s*,\s*({_NUMBER})\s*\]\s*$")


def _missing(value: object) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _key(value: object) -> str | None:
    return None if _missing(value) else value_key(value)


@dataclass
class _Column:
    """One attacked column: its released cells as regions, and the original values' codes."""

    name: str
    numeric: bool
    #: per released row, the index of its distinct cell
    row_cell: np.ndarray
    #: the distinct released cells (text keys; None = missing)
    cells: list[str | None]
    # categorical: the original vocabulary and each cell's coverage of it (last slot: missing)
    vocab: dict[str, int]
    member: np.ndarray  # bool (n_cells, len(vocab) + 1)
    # numeric: each cell's interval
    lo: np.ndarray
    hi: np.ndarray
    hi_open: np.ndarray
    point: np.ndarray  # the cell is a plain number
    missing_cell: np.ndarray  # the cell is missing (matches missing originals only)
    #: numeric: the distinct original values, sorted (an attacker's guesses within a region)
    values: np.ndarray

    def __post_init__(self) -> None:
        # One more column for original values no cell covers (unknown to the vocabulary).
        self.padded = np.concatenate([self.member, np.zeros((len(self.cells), 1), bool)], axis=1)

    def target_codes(self, values: pd.Series) -> np.ndarray:
        """Categorical codes of original values (unknown values get a code no cell covers)."""
        unknown = len(self.vocab) + 1
        raw, uniques = pd.factorize(values.astype(object), use_na_sentinel=True)
        lookup = np.array(
            [self.vocab.get(_key(u), unknown) if _key(u) is not None else len(self.vocab)
             for u in uniques] + [len(self.vocab)],
            dtype=np.int64,
        )  # fmt: skip
        return lookup[raw]

    def covers_codes(self, cell: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """Whether cells ``cell`` cover categorical codes ``codes`` (elementwise)."""
        return self.padded[cell, codes]


@dataclass(frozen=True)
class Condition:
    """One column's part of a singling-out predicate.

    ``kind`` is ``"in"`` (categorical: ``allowed`` over the vocabulary plus missing), ``"op"``
    (numeric: ``op`` applied to ``value``, Anonymeter's comparison operators), ``"range"``
    (numeric: inside ``[lo, hi]``, ``hi`` excluded when ``hi_open``), ``"notrange"`` or
    ``"isna"`` / ``"notna"``.
    """

    column: str
    kind: str
    allowed: np.ndarray | None = None
    op: str = ""
    value: float = 0.0
    lo: float = -math.inf
    hi: float = math.inf
    hi_open: bool = False


class ReleaseSpace:
    """A release's cells read as regions over the original values, for the attacks.

    Parameters
    ----------
    release : DataFrame
        The release (one row per released record; expand counted partitions first).
    originals : sequence of DataFrame
        Every original frame the attacks will target (the released records' split and the
        control split): their values form the categorical vocabularies.
    columns : sequence of str
        The attacked columns (present in the release and in every original frame).
    numeric : collection of str
        The columns read as numbers.
    hierarchies : mapping of str to Hierarchy, optional
        Public hierarchies whose labels a generalized release may hold.
    """

    def __init__(
        self,
        release: pd.DataFrame,
        originals: Sequence[pd.DataFrame],
        columns: Sequence[str],
        numeric: Sequence[str] = (),
        hierarchies: Mapping[str, Hierarchy] | None = None,
    ) -> None:
        hierarchies = dict(hierarchies or {})
        missing = [c for c in columns if c not in release.columns]
        for frame in originals:
            missing += [c for c in columns if c not in frame.columns]
        if missing:
            raise PolicyError(f"attacks: column(s) {sorted(set(missing))} are not in the release")
        self.columns = list(columns)
        self.n_rows = len(release)
        self._cols: dict[str, _Column] = {}
        self._combos: dict[tuple[str, ...], tuple] = {}
        for name in self.columns:
            values = [frame[name] for frame in originals]
            self._cols[name] = _build_column(
                name, release[name], values, name in set(numeric), hierarchies.get(name)
            )

    def column(self, name: str) -> _Column:
        return self._cols[name]

    # ------------------------------------------------------------------------------------------
    # Original records as arrays

    def encode(self, frame: pd.DataFrame) -> dict[str, np.ndarray]:
        """Original records as per-column arrays: categorical codes or floats (NaN: missing)."""
        out = {}
        for name in self.columns:
            col = self._cols[name]
            if col.numeric:
                out[name] = pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float)
            else:
                out[name] = col.target_codes(frame[name])
        return out

    # ------------------------------------------------------------------------------------------
    # Distance (nearest neighbours)

    def spans(self, targets: Mapping[str, np.ndarray], columns: Sequence[str]) -> dict:
        """Each numeric column's range over the targets and the release's finite bounds.

        Anonymeter scales numeric columns by their range over both frames so that any two
        values differ by at most 1.
        """
        spans = {}
        for name in columns:
            col = self._cols[name]
            if not col.numeric:
                continue
            bounds = np.concatenate([col.lo[col.row_cell], col.hi[col.row_cell], targets[name]])
            bounds = bounds[np.isfinite(bounds)]
            span = float(bounds.max() - bounds.min()) if bounds.size else 0.0
            spans[name] = span if span > 0 else 1.0
        return spans

    def distances(
        self, targets: Mapping[str, np.ndarray], index: int, columns: Sequence[str], spans: dict
    ) -> np.ndarray:
        """Distances from target ``index`` to every released row over ``columns``."""
        total = np.zeros(self.n_rows)
        for name, per_cell in zip(
            columns, self._cell_distances(targets, index, columns, spans), strict=True
        ):
            total += per_cell[self._cols[name].row_cell]
        return total

    def _cell_distances(
        self, targets: Mapping[str, np.ndarray], index: int, columns: Sequence[str], spans: dict
    ) -> list[np.ndarray]:
        """Per column, the distance from target ``index`` to each of the column's cells."""
        out = []
        for name in columns:
            col = self._cols[name]
            if col.numeric:
                x = targets[name][index]
                if math.isnan(x):
                    per_cell = np.where(col.missing_cell, 0.0, 1.0)
                else:
                    below = np.maximum(col.lo - x, 0.0)
                    above = np.maximum(x - col.hi, 0.0)
                    gap = np.where(np.isfinite(below), below, 0.0) + np.where(
                        np.isfinite(above), above, 0.0
                    )
                    per_cell = np.where(col.missing_cell, 1.0, gap / spans[name])
            else:
                per_cell = np.where(col.padded[:, targets[name][index]], 0.0, 1.0)
            out.append(per_cell)
        return out

    def nearest(
        self,
        targets: Mapping[str, np.ndarray],
        columns: Sequence[str],
        n_neighbors: int,
        rng: np.random.Generator,
    ) -> np.ndarray:
        """Indices of each target's ``n_neighbors`` nearest released rows.

        Ties are broken uniformly at random: an attacker has no reason to prefer one of several
        equally close rows, and a fixed order (Anonymeter's ``argsort``) would make two halves of
        a target "link" merely because both picked the first of a class of identical rows.

        Rows with the same cells over ``columns`` are at the same distance from any target, so
        the distances are summed once per distinct combination of cells (column by column in
        the order of ``columns``, the same additions as :meth:`distances`) and read back per
        row: the same distances, the same ties and the same draws as one pass over every row.
        """
        n_targets = len(next(iter(targets.values()))) if targets else 0
        k = min(n_neighbors, self.n_rows)
        spans = self.spans(targets, columns)
        out = np.empty((n_targets, k), dtype=np.int64)
        if self.n_rows == 0 or not columns:
            for i in range(n_targets):
                dist = self.distances(targets, i, columns, spans)
                out[i] = _pick(dist, k, self.n_rows, rng)
            return out
        combos, inverse, members = self._combinations(columns)
        for i in range(n_targets):
            total = np.zeros(len(combos))
            for j, per_cell in enumerate(self._cell_distances(targets, i, columns, spans)):
                total += per_cell[combos[:, j]]
            if k == 1:
                closest = np.flatnonzero(total == total.min())
                ties = members[closest[0]] if closest.size == 1 else _rows_of(members, closest)
                out[i, 0] = ties[0] if ties.size == 1 else ties[rng.integers(ties.size)]
            else:
                out[i] = _pick(total[inverse], k, self.n_rows, rng)
        return out

    def _combinations(self, columns: Sequence[str]) -> tuple:
        """The distinct cell combinations over ``columns`` (one row each), each released row's
        combination, and each combination's rows in ascending order."""
        key = tuple(columns)
        if key not in self._combos:  # the release does not change: once per column set
            cells = np.stack([self._cols[name].row_cell for name in columns], axis=1)
            keys = row_keys(cells)
            if keys is None:
                combos, inverse = np.unique(cells, axis=0, return_inverse=True)
            else:
                _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
                combos = cells[first]
            inverse = inverse.reshape(-1)
            order = np.argsort(inverse, kind="stable")
            bounds = np.cumsum(np.bincount(inverse, minlength=len(combos)))[:-1]
            self._combos[key] = (combos, inverse, np.split(order, bounds))
        return self._combos[key]

    # ------------------------------------------------------------------------------------------
    # Predicates (singling out)

    def holds_on_originals(self, cond: Condition, targets: Mapping[str, np.ndarray]) -> np.ndarray:
        """Where ``cond`` holds on original records."""
        col = self._cols[cond.column]
        x = targets[cond.column]
        if cond.kind == "in":
            padded = np.append(cond.allowed, False)  # unknown originals: not allowed
            return padded[x]
        if cond.kind == "isna":
            return np.isnan(x) if col.numeric else x == len(col.vocab)
        if cond.kind == "notna":
            return ~np.isnan(x) if col.numeric else x != len(col.vocab)
        with np.errstate(invalid="ignore"):
            if cond.kind == "op":
                return _apply_op(cond.op, x, cond.value) & ~np.isnan(x)
            inside = (x >= cond.lo) & ((x < cond.hi) if cond.hi_open else (x <= cond.hi))
            return inside if cond.kind == "range" else (~inside & ~np.isnan(x))

    def holds_on_cells(self, cond: Condition) -> np.ndarray:
        """Per distinct cell of the column: does every value of its region satisfy ``cond``?"""
        col = self._cols[cond.column]
        if cond.kind == "in":
            outside = col.member & ~cond.allowed[None, :]
            return ~outside.any(axis=1)
        if cond.kind in ("isna", "notna"):
            if col.numeric:
                return col.missing_cell if cond.kind == "isna" else ~col.missing_cell
            only_missing = col.member[:, -1] & ~col.member[:, :-1].any(axis=1)
            return only_missing if cond.kind == "isna" else ~col.member[:, -1]
        lo, hi, open_ = col.lo, col.hi, col.hi_open
        finite = ~col.missing_cell
        if cond.kind == "op":
            v = cond.value
            with np.errstate(invalid="ignore"):
                if cond.op == "==":
                    ok = (lo == v) & (hi == v) & ~open_
                elif cond.op == "!=":
                    ok = (hi < v) | ((hi == v) & open_) | (lo > v)
                elif cond.op == ">=":
                    ok = lo >= v
                elif cond.op == ">":
                    ok = lo > v
                elif cond.op == "<=":
                    ok = hi <= v
                else:  # "<"
                    ok = (hi < v) | ((hi == v) & open_)
            return ok & finite
        inside = (lo >= cond.lo) & (
            (hi < cond.hi) | ((hi == cond.hi) & (open_ | ~np.bool_(cond.hi_open)))
        )
        if cond.kind == "range":
            return inside & finite
        disjoint = (hi < cond.lo) | ((hi == cond.lo) & open_) | (lo > cond.hi)
        disjoint |= (lo == cond.hi) & np.bool_(cond.hi_open)
        return disjoint & finite

    def condition_from_cell(self, name: str, cell: int, median: float | None) -> Condition:
        """The condition an attacker writes from one released cell (Anonymeter's rules).

        Missing: ``isna``; a plain number: ``>= v`` above the column's median, else ``<= v``;
        a numeric region: inside it; a categorical cell: its covered values.
        """
        col = self._cols[name]
        if col.cells[cell] is None:
            return Condition(name, "isna")
        if col.numeric:
            if col.point[cell]:
                v = float(col.lo[cell])
                op = ">=" if median is not None and v > median else "<="
                return Condition(name, "op", op=op, value=v)
            return Condition(
                name, "range", lo=col.lo[cell], hi=col.hi[cell], hi_open=bool(col.hi_open[cell])
            )
        return Condition(name, "in", allowed=col.member[cell].copy())

    def equals_cell(self, name: str, cell: int, negate: bool = False) -> Condition:
        """``== cell`` (or ``!=``): a number as Anonymeter's operator, a region by coverage."""
        col = self._cols[name]
        if col.cells[cell] is None:
            return Condition(name, "notna" if negate else "isna")
        if col.numeric:
            if col.point[cell]:
                return Condition(name, "op", op="!=" if negate else "==", value=float(col.lo[cell]))
            return Condition(
                name,
                "notrange" if negate else "range",
                lo=col.lo[cell],
                hi=col.hi[cell],
                hi_open=bool(col.hi_open[cell]),
            )
        allowed = col.member[cell].copy()
        return Condition(name, "in", allowed=~allowed if negate else allowed)


def cell_keys(values: pd.Series) -> pd.Series:
    """Each value's key (:func:`value_key`; missing: NA), as an object Series.

    In a text or a (non-boolean) number column equal values are one value with one key, so the
    key is computed once per distinct value (an attack's release has tens of thousands of rows
    and a few hundred distinct cells). Elsewhere every value is keyed on its own: an ``object``
    or categorical column may mix types, a boolean's distinct values come back as numpy
    booleans, which print differently from the column's own, and a date column's missing value
    (``NaT``) is not missing to the key.
    """
    dtype = values.dtype
    api = pd.api.types
    distinct_first = not api.is_object_dtype(dtype) and (
        api.is_string_dtype(dtype) or (api.is_numeric_dtype(dtype) and not api.is_bool_dtype(dtype))
    )
    if not distinct_first or isinstance(dtype, pd.CategoricalDtype):
        return values.map(_key).astype(object)
    raw, uniques = pd.factorize(values, use_na_sentinel=True)
    keys = np.array([_key(u) for u in uniques] + [None], dtype=object)
    return pd.Series(keys[raw], index=values.index, dtype=object)


def row_keys(cells: np.ndarray) -> np.ndarray | None:
    """One int64 per row of non-negative codes ``cells`` (n, m), equal exactly when the rows
    are (mixed radix), or None when the codes' ranges do not fit in 63 bits.

    ``np.unique`` on these keys finds the same distinct rows as ``np.unique(cells, axis=0)``,
    an order of magnitude faster (no sort of rows as structured records).
    """
    n, m = cells.shape
    key = np.zeros(n, dtype=np.int64)
    room = 1
    for j in range(m):
        radix = int(cells[:, j].max()) + 1 if n else 1
        room *= radix
        if room >= 2**63:
            return None
        key = key * radix + cells[:, j]
    return key


def _pick(dist: np.ndarray, k: int, n_rows: int, rng: np.random.Generator) -> np.ndarray:
    """The ``k`` rows nearest by ``dist``, ties broken at random (see ``ReleaseSpace.nearest``)."""
    if k == 1:
        ties = np.flatnonzero(dist == dist.min())
        return ties[:1] if ties.size == 1 else ties[[rng.integers(ties.size)]]
    return np.lexsort((rng.random(n_rows), dist))[:k]


def _rows_of(members: list[np.ndarray], combos: np.ndarray) -> np.ndarray:
    """The rows of several combinations, in ascending order (as ``np.flatnonzero`` lists them)."""
    return np.sort(np.concatenate([members[c] for c in combos]))


def _apply_op(op: str, x: np.ndarray, v: float) -> np.ndarray:
    if op == "==":
        return x == v
    if op == "!=":
        return x != v
    if op == ">=":
        return x >= v
    if op == ">":
        return x > v
    if op == "<=":
        return x <= v
    if op == "<":
        return x < v
    raise ValueError(f"unknown operator {op!r}")


def _parse_numeric(label: str) -> tuple[float, float, bool] | None:
    """``(lo, hi, hi excluded)`` of a number or range label, or None."""
    try:
        number = float(label)
        if not math.isnan(number):
            return number, number, False
    except ValueError:
        pass
    for pattern, open_ in ((_RANGE, False), (_HALF_OPEN, True), (_CLOSED, False)):
        match = pattern.match(label)
        if match is not None:
            return float(match.group(1)), float(match.group(2)), open_
    return None


def _build_column(
    name: str,
    released: pd.Series,
    originals: Sequence[pd.Series],
    numeric: bool,
    hierarchy: Hierarchy | None,
) -> _Column:
    codes, uniques = pd.factorize(cell_keys(released), use_na_sentinel=True)
    cells: list[str | None] = [str(u) for u in uniques]
    if (codes < 0).any():
        codes = np.where(codes < 0, len(cells), codes)
        cells.append(None)
    originals_keys = sorted(
        {k for series in originals for k in (_key(v) for v in series.unique()) if k is not None}
    )
    vocab = {key: i for i, key in enumerate(originals_keys)}
    n = len(cells)
    member = np.zeros((n, len(vocab) + 1), dtype=bool)
    lo = np.full(n, -math.inf)
    hi = np.full(n, math.inf)
    hi_open = np.zeros(n, dtype=bool)
    point = np.zeros(n, dtype=bool)
    missing_cell = np.array([c is None for c in cells])
    labels: dict[str, set[str]] = {}
    if hierarchy is not None and originals_keys:
        try:
            table = hierarchy.generalize(originals_keys)
        except Exception as exc:  # an original value the public hierarchy does not cover
            raise PolicyError(f"attacks: column {name!r}: {exc}") from exc
        for level in range(1, table.shape[1]):
            for leaf, label in zip(originals_keys, table[:, level], strict=True):
                labels.setdefault(str(label), set()).add(leaf)
    for i, cell in enumerate(cells):
        if cell is None:
            member[i, -1] = True
            continue
        if cell == SUPPRESSED:
            member[i, :] = True
            continue
        if numeric:
            parsed = _parse_numeric(cell)
            if parsed is None and cell in labels:
                numbers = [float(v) for v in labels[cell]]
                parsed = (min(numbers), max(numbers), False)
            if parsed is None:
                raise PolicyError(
                    f"attacks: column {name!r}: released cell {cell!r} is neither a number, a "
                    "range 'lo-hi' or '[lo, hi)', nor a label of the column's hierarchy"
                )
            lo[i], hi[i], hi_open[i] = parsed
            point[i] = parsed[0] == parsed[1] and not parsed[2]
            continue
        covered = set(labels.get(cell, ()))
        if cell in vocab:
            covered.add(cell)
        for key in covered:
            member[i, vocab[key]] = True
    values = np.zeros(0)
    if numeric:
        numbers = pd.to_numeric(pd.Series(originals_keys, dtype=object), errors="coerce")
        values = np.unique(numbers.dropna().to_numpy(dtype=float))
        # Categorical membership is unused for numeric columns; missing cells cover missing.
        member = np.zeros((n, 1), dtype=bool)
        member[:, 0] = missing_cell
        vocab = {}
        lo = np.where(missing_cell, math.nan, lo)
        hi = np.where(missing_cell, math.nan, hi)
    return _Column(name, numeric, codes.astype(np.int64), cells, vocab, member, lo, hi, hi_open,
                   point, missing_cell, values)  # fmt: skip
