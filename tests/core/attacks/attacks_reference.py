"""The attacks' inner loops as privgate computed them before they were made fast (27831ac).

Kept as the reference that ``test_attacks_unchanged.py`` holds the faster implementations to:
with the same generator both must find the same predicates, count the same successes, pick the
same nearest rows and leave the generator in the same state.

* the singling-out attack: a verbatim copy of ``core/attacks/_singling_out.py`` (one predicate
  at a time: ``rng.integers`` and ``rng.choice`` per attempt, one boolean mask per condition,
  one ``np.count_nonzero`` per query); only the imports differ (public names; the integral is
  privgate's);
* :func:`nearest`: ``ReleaseSpace.nearest`` and ``ReleaseSpace.distances`` (one pass over
  every released row per target), written as functions of the space.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from privgate.core.attacks import (
    AttackOutcome,
    Condition,
    ReleaseSpace,
    singling_out_probability_integral,
)

_log = logging.getLogger(__name__)

Query = tuple[Condition, ...]


class _Evaluator:
    """Counts, for each query, the matching records of one original frame."""

    def __init__(self, space: ReleaseSpace, frame: pd.DataFrame) -> None:
        self.n = len(frame)
        self.targets = space.encode(frame)
        self.space = space

    def matches(self, query: Query, rows: np.ndarray | None = None) -> int:
        mask = None
        for cond in query:
            holds = self.space.holds_on_originals(cond, self.targets)
            if rows is not None:
                holds = holds[rows]
            mask = holds if mask is None else mask & holds
            if not mask.any():
                return 0
        return int(mask.sum()) if mask is not None else 0

    def singling_out(self, queries: Sequence[Query], rows: np.ndarray | None = None) -> int:
        return sum(1 for q in queries if self.matches(q, rows) == 1)


class _ReleaseMatcher:
    """Which de-duplicated released rows certainly satisfy a query."""

    def __init__(self, space: ReleaseSpace, release_rows: np.ndarray) -> None:
        self.space = space
        self.rows = release_rows  # the de-duplicated released rows
        self._cells = {c: space.column(c).row_cell[release_rows] for c in space.columns}
        self._cache: dict[tuple, np.ndarray] = {}

    def count(self, query: Query) -> int:
        mask = None
        for cond in query:
            key = _cond_key(cond)
            per_cell = self._cache.get(key)
            if per_cell is None:
                per_cell = self._cache[key] = self.space.holds_on_cells(cond)
            holds = per_cell[self._cells[cond.column]]
            mask = holds if mask is None else mask & holds
        return int(np.count_nonzero(mask)) if mask is not None else 0


def _dedup_rows(space: ReleaseSpace, columns: Sequence[str]) -> np.ndarray:
    """Indices of the first of each set of identical released rows (``drop_duplicates``)."""
    keys = np.stack([space.column(c).row_cell for c in columns], axis=1)
    _, first = np.unique(keys, axis=0, return_index=True)
    return np.sort(first)


def _numeric_medians(space: ReleaseSpace, rows: np.ndarray, columns: Sequence[str]) -> dict:
    """Median of each plain-number column over the de-duplicated release (Anonymeter's rule)."""
    medians: dict[str, float | None] = {}
    for name in columns:
        col = space.column(name)
        if not col.numeric:
            continue
        cells = col.row_cell[rows]
        values = col.lo[cells][col.point[cells]]
        medians[name] = float(np.median(values)) if values.size else None
    return medians


def _cond_key(c: Condition) -> tuple:
    allowed = None if c.allowed is None else c.allowed.tobytes()
    return (c.column, c.kind, allowed, c.op, c.value, c.lo, c.hi, c.hi_open)


def _key(query: Query) -> tuple:
    return tuple(sorted((_cond_key(c) for c in query), key=repr))


def _univariate_queries(space, rows, columns, n_queries, rng, matcher) -> list[Query]:
    candidates: list[Query] = []
    for name in sorted(columns):
        col = space.column(name)
        cells = col.row_cell[rows]
        if col.cells and (np.array([col.cells[c] is None for c in cells])).sum() == 1:
            candidates.append((Condition(name, "isna"),))
        if col.numeric:
            present = cells[~col.missing_cell[cells]]
            if present.size:
                low_cell = present[np.argmin(col.lo[present])]
                high_cell = present[np.argmax(col.hi[present])]
                candidates.append((Condition(name, "op", op="<=", value=col.hi[low_cell]),))
                candidates.append((Condition(name, "op", op=">=", value=col.lo[high_cell]),))
        counts = np.bincount(cells, minlength=len(col.cells))
        for cell in np.flatnonzero(counts == 1):
            if col.cells[cell] is not None:
                candidates.append((space.equals_cell(name, int(cell)),))
    order = rng.permutation(len(candidates))
    seen: set = set()
    queries: list[Query] = []
    for i in order:
        query = candidates[i]
        key = _key(query)
        if key in seen:
            continue
        if matcher.count(query) == 1:
            seen.add(key)
            queries.append(query)
            if len(queries) == n_queries:
                break
    return queries


def _multivariate_queries(
    space, rows, columns, n_queries, n_cols, max_attempts, rng, matcher
) -> list[Query]:
    medians = _numeric_medians(space, rows, columns)
    seen: set = set()
    queries: list[Query] = []
    attempts = 0
    while len(queries) < n_queries and (max_attempts is None or attempts < max_attempts):
        attempts += 1
        row = rows[rng.integers(len(rows))]
        chosen = rng.choice(len(columns), size=n_cols, replace=False)
        query = tuple(
            space.condition_from_cell(
                columns[j], int(space.column(columns[j]).row_cell[row]), medians.get(columns[j])
            )
            for j in sorted(chosen, key=lambda j: columns[j])
        )
        key = _key(query)
        if key in seen:
            continue
        if matcher.count(query) == 1:
            seen.add(key)
            queries.append(query)
    if len(queries) < n_queries:
        _log.warning(
            "singling out: %d of %d predicates found in %d attempts; the risk may be "
            "underestimated",
            len(queries),
            n_queries,
            attempts,
        )
    return queries


def _random_queries(space, rows, columns, n_queries, n_cols, rng) -> list[Query]:
    """The baseline attacker's predicates: random columns, released values and operators."""
    queries = []
    for _ in range(n_queries):
        picked = rng.choice(len(columns), size=n_cols, replace=False)
        chosen = sorted(picked, key=lambda j: columns[j])
        query = []
        for j in chosen:
            name = columns[j]
            col = space.column(name)
            distinct = np.unique(col.row_cell[rows])
            cell = int(distinct[rng.integers(len(distinct))])
            if col.numeric and col.point[cell]:
                op = str(rng.choice(["==", "!=", ">", "<", ">=", "<="]))
                query.append(Condition(name, "op", op=op, value=float(col.lo[cell])))
            else:
                query.append(space.equals_cell(name, cell, negate=bool(rng.integers(2))))
        queries.append(tuple(query))
    return queries


def _correction(control: _Evaluator, queries: Sequence[Query], n_target: int, rng) -> float:
    """Anonymeter's control-size correction: ``model(n_target) / model(n_control)``.

    The model is fitted to the predicates' successes on random subsets of the control of 10
    sizes from 1,000 records up to all of it (Anonymeter). With a control of at most 1,000
    records Anonymeter fits all subsets at the one full size, where the model's two parameters
    are not identified and the fit is arbitrary (a correction of 0.36 where the singling-out
    model predicts 1.5 was seen); the sizes then start at a quarter of the control instead.
    """
    n = control.n
    smallest = 1000 if n > 1000 else max(n // 4, 2)
    sizes, successes = [], []
    for size in np.linspace(smallest, n, 10).astype(int):
        for _ in range(5):
            rows = rng.choice(n, size=size, replace=False)
            successes.append(control.singling_out(queries, rows))
            sizes.append(size)
    sizes_a, successes_a = np.array(sizes, float), np.array(successes, float)

    def model(x, w_eff, scale):
        return scale * singling_out_probability_integral(x, 0.0, w_eff)

    w_guess = 1.0 / sizes_a.max()
    scale_guess = 1.0 / singling_out_probability_integral(sizes_a.max(), 0.0, w_guess)
    from scipy.optimize import curve_fit  # here: most runs have no attack to measure

    popt, _ = curve_fit(
        model, sizes_a, successes_a, bounds=(0, (1, np.inf)), p0=(w_guess, scale_guess)
    )
    at_control = model(float(n), *popt)
    if at_control <= 0:
        return 1.0
    return float(model(float(n_target), *popt) / at_control)


def singling_out_attack(
    space: ReleaseSpace,
    ori: pd.DataFrame,
    control: pd.DataFrame | None,
    columns: Sequence[str],
    *,
    n_attacks: int = 500,
    mode: str = "multivariate",
    n_cols: int = 3,
    max_attempts: int | None = 100_000,
    rng: np.random.Generator,
    confidence_level: float = 0.95,
) -> tuple[AttackOutcome, dict]:
    """Run the singling-out attack; return its counts and what was done.

    ``ori`` and ``control`` are de-duplicated on ``columns`` first (as Anonymeter does), and so
    is the release.

    Returns
    -------
    (AttackOutcome, dict)
        The counts, and details: predicates found, the control-size correction applied.
    """
    if mode not in ("univariate", "multivariate"):
        raise ValueError(f"mode must be 'univariate' or 'multivariate'; got {mode!r}")
    columns = list(columns)
    width = 1 if mode == "univariate" else min(n_cols, len(columns))
    rows = _dedup_rows(space, columns)
    matcher = _ReleaseMatcher(space, rows)
    ori_eval = _Evaluator(space, ori[columns].drop_duplicates())
    baseline = _random_queries(space, rows, columns, n_attacks, width, rng)
    n_baseline = ori_eval.singling_out(baseline)
    if mode == "univariate":
        queries = _univariate_queries(space, rows, columns, n_attacks, rng, matcher)
    else:
        queries = _multivariate_queries(
            space, rows, columns, n_attacks, width, max_attempts, rng, matcher
        )
    n_success = ori_eval.singling_out(queries)
    n_control: float | None = None
    correction = None
    if control is not None:
        control_eval = _Evaluator(space, control[columns].drop_duplicates())
        n_control = float(control_eval.singling_out(queries))
        if control_eval.n != ori_eval.n and queries:
            try:
                correction = _correction(control_eval, queries, ori_eval.n, rng)
            except (RuntimeError, ValueError) as exc:  # the fit did not converge
                _log.warning("singling out: control-size correction failed (%s); none applied", exc)
            if correction is not None:
                n_control *= correction
    details = {
        "mode": mode,
        "n_cols": width,
        "queries": len(queries),
        "control_size_correction": correction,
    }
    outcome = AttackOutcome(n_attacks, n_success, n_baseline, n_control, confidence_level)
    return outcome, details


# ----------------------------------------------------------------------------------------------
# ReleaseSpace.distances and ReleaseSpace.nearest at 27831ac


def distances(
    space: ReleaseSpace,
    targets: Mapping[str, np.ndarray],
    index: int,
    columns: Sequence[str],
    spans: dict,
) -> np.ndarray:
    """Distances from target ``index`` to every released row over ``columns``."""
    total = np.zeros(space.n_rows)
    for name in columns:
        col = space.column(name)
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
        total += per_cell[col.row_cell]
    return total


def nearest(
    space: ReleaseSpace,
    targets: Mapping[str, np.ndarray],
    columns: Sequence[str],
    n_neighbors: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Indices of each target's ``n_neighbors`` nearest released rows (ties at random)."""
    n_targets = len(next(iter(targets.values()))) if targets else 0
    k = min(n_neighbors, space.n_rows)
    spans = space.spans(targets, columns)
    out = np.empty((n_targets, k), dtype=np.int64)
    for i in range(n_targets):
        dist = distances(space, targets, i, columns, spans)
        if k == 1:
            ties = np.flatnonzero(dist == dist.min())
            out[i, 0] = ties[0] if ties.size == 1 else ties[rng.integers(ties.size)]
        else:
            out[i] = np.lexsort((rng.random(space.n_rows), dist))[:k]
    return out
