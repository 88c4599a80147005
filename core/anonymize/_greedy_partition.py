"""Greedy multidimensional partitioning: Mondrian's regions, cuts chosen by the loss they save.

Mondrian (:mod:`privgate.core.anonymize._mondrian`) cuts the widest dimension of a region at its
median. That choice keeps the partition tree balanced, but it ignores what the release is
scored by: the information loss of the labels (:func:`privgate.core.metrics.table_loss`, the
normalized certainty penalty of Xu et al., KDD 2006). This search uses the same regions, labels
and model checks as Mondrian and changes only *which* cut a region gets:

* every dimension is a candidate, not only the widest one;
* a numeric quasi-identifier may be cut between any two of its distinct values that leaves at
  least ``min_class_size`` records on each side (strict: regions never overlap), not only at the
  median;
* a categorical one is cut along its hierarchy as in Mondrian (one region per child present),
  and also *partially*: when some children hold fewer than ``min_class_size`` records (which
  forbids Mondrian's cut), the others are cut off and the small ones stay together under the
  parent node (if they hold too few records, the smallest cut-off child stays with them);
* among the candidates, the cut that lowers the region's loss the most (the records times the
  cost their label loses on the cut dimension) is tried first, then the next, until one is
  *allowable*: every resulting region satisfies every privacy model of the policy, checked by
  Mondrian's own check on the same model objects. A region with no allowable cut is final.

**Small regions are clustered when that loses less.** Cuts along one dimension at a time
cannot pair two records that are alike on every attribute but on opposite sides of an early
cut, and on a wide table most of the loss is made in the last regions. A region of at most
``cluster_below`` records is therefore split two ways: cut to the end as above, and grouped by
greedy k-member clustering (Byun et al., DASFAA 2007: a seed far from the last one, then the
record that adds least to the group's loss, until the group has ``min_class_size`` records;
the last few join the group they cost least). Each group is labelled like a region (the lowest
node its records share, the range of its values); the clustering is kept when every group
satisfies every model (the same check) and its loss is lower.

Regions wait in a queue ordered by the loss their best cut saves, so when the time budget
(``max_seconds``) runs out the regions still waiting are released as they are: every region in
the queue already satisfies every model (it was created by an allowable cut), so an interrupted
search is coarser, never weaker. Nothing is suppressed. Regions (or groups) whose labels are
equal form one class of the release; every class is checked against every model before the
result is returned (:func:`_check_classes`), and so is every model's whole-table condition
(average risk, the share of records at risk), which no region's check sees: a
partition failing one is refused, or replaced by the exact search's release when it runs.

**The exact search when the lattice is small.** When the full-domain lattice has fewer than
``exact_below`` nodes, the exact optimal search (:class:`OptimalLattice`, with the policy's
suppression limit) runs too, and the release of lower :func:`table_loss` (the benchmark's
measure, computed on the data with the policy's numeric columns as ranges; suppressed records
cost 1) is kept; the result's details state both losses and which was kept. Choosing between two
releases that each satisfy the models by their loss on the data is part of the k-anonymity
search (it is not a differentially private mechanism), and the gate re-checks the kept one.

Complexity: each region costs one pass per dimension over its records (a sort for a numeric
one) plus the model checks of the cuts tried; the tree has ``O(n / k)`` leaves. Clustering a
region of ``m`` records costs ``O(m^2 d)`` (one scan of the free records per member added).
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from privgate.core.anonymize._contract import SearchInput
from privgate.core.anonymize._mondrian import (
    Mondrian,
    _CategoricalDim,
    _check_classes,
    _NumericDim,
    _Space,
    _TableConditionFails,
)
from privgate.core.anonymize._optimal import OptimalLattice
from privgate.core.anonymize._result import AnonymizationResult
from privgate.core.anonymize._setup import SearchSetup
from privgate.core.encoding import EncodedTable
from privgate.core.metrics import table_loss
from privgate.core.privacy import PrivacyModel
from privgate.core.progress import Progress

__all__ = ["DEFAULT_MAX_SECONDS", "GreedyPartition"]

#: Seconds the partitioning may take before the waiting regions are released as they are.
DEFAULT_MAX_SECONDS = 600.0
#: Numeric cut points tried per dimension (best first) before moving to the next candidate.
_POINTS_PER_DIMENSION = 3

# A candidate cut: (loss saved, dimension index, numeric cut rank or -1 for a categorical cut).
_Candidate = tuple[float, int, int]


class GreedyPartition(Mondrian):
    """Multidimensional local recoding whose cuts are chosen by the loss they save.

    Parameters
    ----------
    models : sequence of PrivacyModel
        Every equivalence class of the release must satisfy all of them (monotone under
        generalization, as for :class:`Mondrian`).
    max_seconds : float, default=600
        Time budget of the partitioning; the regions still waiting when it runs out are
        released as they are (each already satisfies the models).
    exact_below : int, default=50000
        Below this many lattice nodes the exact full-domain search runs too and the release of
        lower loss is kept (0: never).
    suppression_limit : float, default=0
        The exact search's suppression limit (the partitioning suppresses nothing).
    cluster_below : int, default=1000
        Regions of at most this many records are also clustered (0: never).

    Notes
    -----
    See the module docstring for the cuts, the queue and the fallback.
    """

    name = "greedy_partition"

    def __init__(
        self,
        models: Sequence[PrivacyModel],
        max_seconds: float = DEFAULT_MAX_SECONDS,
        exact_below: int = 50_000,
        suppression_limit: float = 0.0,
        cluster_below: int = 1000,
    ) -> None:
        super().__init__(models, strict=True)
        if not max_seconds > 0:
            raise ValueError(f"The 'max_seconds' parameter must be > 0. Got {max_seconds!r}.")
        if exact_below < 0:
            raise ValueError(f"The 'exact_below' parameter must be >= 0. Got {exact_below}.")
        if not 0.0 <= suppression_limit <= 1.0:
            raise ValueError(
                f"The 'suppression_limit' parameter must be in [0, 1]. Got {suppression_limit}."
            )
        if cluster_below < 0:
            raise ValueError(f"The 'cluster_below' parameter must be >= 0. Got {cluster_below}.")
        self.max_seconds = float(max_seconds)
        self.exact_below = int(exact_below)
        self.suppression_limit = float(suppression_limit)
        self.cluster_below = int(cluster_below)

    @classmethod
    def from_setup(cls, setup: SearchSetup) -> GreedyPartition:
        return cls(
            setup.models,
            max_seconds=setup.max_seconds,
            suppression_limit=setup.suppression_limit,
        )

    def anonymize(self, data: SearchInput) -> AnonymizationResult:
        """Partition the prepared table; below ``exact_below`` lattice nodes, keep the exact
        full-domain optimum's release instead when its loss is lower (module notes)."""
        numeric = {q for q in data.covered if q in data.setup.numeric}
        nodes = math.prod(int(h) + 1 for h in data.encoded.heights)
        try:
            result, _ = self._partition(data.rows, data.encoded, data.covered, numeric)
        except _TableConditionFails as refused:
            if nodes >= self.exact_below:
                raise
            exact = OptimalLattice(self.models, self.suppression_limit).anonymize(data)
            why = (
                f"the partition's release fails {refused.failed}, a whole-table condition no "
                "region's check sees; the exact full-domain optimum, whose search checks it, "
                "is kept"
            )
            details = {**exact.details, "kept": "exact", "why": why}
            return replace(exact, algorithm=self.name, details=details)
        if nodes >= self.exact_below:
            result.details["kept"] = "partition"
            return result
        exact = OptimalLattice(self.models, self.suppression_limit).anonymize(data)
        losses = {
            "partition": _release_loss(data, result, numeric),
            "exact": _release_loss(data, exact, numeric),
        }
        kept = "exact" if losses["exact"] < losses["partition"] else "partition"
        details = {
            **(exact.details if kept == "exact" else result.details),
            "kept": kept,
            "why": (
                f"the lattice has {nodes} nodes, fewer than {self.exact_below}: the exact "
                f"full-domain optimum (table_loss {losses['exact']:.6f}) and the partition "
                f"(table_loss {losses['partition']:.6f}) were both made; the lower is kept"
            ),
            "partition_loss": losses["partition"],
            "exact_loss": losses["exact"],
        }
        return replace(exact if kept == "exact" else result, algorithm=self.name, details=details)

    # -- the partitioning -----------------------------------------------------------------------

    def _partition(
        self, rows: Mapping, encoded: EncodedTable, qis: Sequence[str], numeric: set[str]
    ) -> tuple[AnonymizationResult, np.ndarray]:
        started = time.perf_counter()
        space, top_levels = self._space(rows, encoded, qis, numeric)
        n_rows = len(rows[qis[0]])
        self._check_whole_table(space, n_rows)
        costs = _category_costs(space)
        progress = Progress("greedy partition", n_rows)

        deadline = started + self.max_seconds
        state = {"cuts": 0, "exhausted": False, "clustered": 0}
        final: list[tuple[np.ndarray, tuple]] = []

        def cut_down(region_rows, levels, small):
            """Greedy cuts from one region; regions of at most ``small`` records are handed
            to ``finish`` instead of being cut further (``small`` = 0: cut to the end)."""
            out, queue, seq = [], [], 0

            def push(part, part_levels):
                nonlocal seq
                if small and len(part) <= small:
                    out.extend(finish(part, part_levels))
                    return
                cut = None
                if len(part) >= 2 * space.min_size:
                    cut = _best_cut(space, costs, part, part_levels)
                if cut is None:
                    out.append((part, part_levels))
                    return
                heapq.heappush(queue, (-cut[0], seq, part, part_levels, cut[1]))
                seq += 1

            push(region_rows, levels)
            while queue:
                if time.perf_counter() > deadline:
                    state["exhausted"] = True
                    out.extend((r, lv) for _, _, r, lv, _ in queue)
                    break
                children = heapq.heappop(queue)[4]
                state["cuts"] += 1
                for part, child_levels in children:
                    push(part, self._descend_all(space, part, child_levels))
                if not small:
                    continue
                progress.update(
                    sum(len(r) for r, _ in out) + sum(len(r) for r, _ in final),
                    lambda: f"{len(out)} final regions, {len(queue)} waiting, {state['cuts']} cuts",
                )
            return out

        def finish(region_rows, levels):
            """The better of two ways to split a small region: cut it to the end, or cluster
            its records (k-member), if every cluster satisfies the models."""
            cut = cut_down(region_rows, levels, 0)
            if len(region_rows) < 2 * space.min_size or time.perf_counter() > deadline:
                return cut
            groups = _cluster(_Features(space, costs, region_rows, levels), space.min_size)
            n_groups = int(groups.max()) + 1
            if n_groups < 2 or not space.allowable(region_rows, groups, n_groups):
                return cut
            order = np.argsort(groups, kind="stable")
            bounds = np.cumsum(np.bincount(groups, minlength=n_groups))[:-1]
            clustered = [
                (part, self._descend_all(space, part, levels))
                for part in np.split(region_rows[order], bounds)
            ]
            if _loss(space, costs, clustered) < _loss(space, costs, cut):
                state["clustered"] += 1
                return clustered
            return cut

        all_rows = np.arange(n_rows, dtype=np.int64)
        final.extend(
            cut_down(all_rows, self._descend_all(space, all_rows, top_levels), self.cluster_below)
        )
        exhausted, cuts = state["exhausted"], state["cuts"]
        result, sizes = self._result(n_rows, space, final, tuple(qis))
        _check_classes(space, result, n_rows, "use algorithm 'mondrian' or 'optimal'")
        result.details.update(
            {
                "cuts": cuts,
                "clustered_regions": state["clustered"],
                "budget_exhausted": exhausted,
                "max_seconds": self.max_seconds,
                "seconds": round(time.perf_counter() - started, 6),
            }
        )
        return result, sizes


def _release_loss(data: SearchInput, result: AnonymizationResult, numeric: set[str]) -> float:
    """:func:`table_loss` of a result's release over the covered quasi-identifiers."""
    covered = list(data.covered)
    original = pd.DataFrame({q: np.asarray(data.rows[q]) for q in covered})
    kept = np.flatnonzero(~result.suppressed)
    released = pd.DataFrame(
        {q: np.asarray(result.labels[q], dtype=object) for q in covered}, index=kept
    )
    hierarchies = {q: data.setup.hierarchies[q] for q in covered}
    return float(table_loss(original, released, hierarchies, numeric)["total"])


def _loss(space: _Space, costs, regions) -> float:
    """The loss of regions: per record, the sum over dimensions of its label's cost."""
    total = 0.0
    for rows, levels in regions:
        per_record = 0.0
        for j, dim in enumerate(space.dims):
            if isinstance(dim, _NumericDim):
                if dim.span > 0:
                    r = dim.ranks[rows]
                    per_record += float(dim.values[r.max()] - dim.values[r.min()]) / dim.span
            else:
                level = levels[dim.slot]
                per_record += float(costs[j][level][dim.level_maps[level][dim.leaves[rows[0]]]])
        total += len(rows) * per_record
    return total


def _category_costs(space: _Space) -> dict[int, list[np.ndarray]]:
    """Per categorical dimension and level, each node's label cost: (leaves - 1) / (domain -
    1), the leaves being the data's distinct values it covers (as ``table_loss`` scores it)."""
    out = {}
    for j, dim in enumerate(space.dims):
        if isinstance(dim, _CategoricalDim):
            denom = max(dim.n_leaves - 1, 1)
            out[j] = [
                (np.bincount(m, minlength=len(lab)) - 1).clip(min=0) / denom
                for m, lab in zip(dim.level_maps, dim.labels, strict=True)
            ]
    return out


def _numeric_candidates(space: _Space, dim: _NumericDim, rows: np.ndarray, j: int) -> list:
    """The best strict cut points of a numeric dimension (both sides >= min_size records)."""
    r = dim.ranks[rows]
    distinct, counts = np.unique(r, return_counts=True)
    if len(distinct) < 2 or dim.span <= 0:
        return []
    values = dim.values[distinct].astype(float)
    m = len(r)
    left_n = np.cumsum(counts)[:-1]
    right_n = m - left_n
    ok = (left_n >= space.min_size) & (right_n >= space.min_size)
    if not ok.any():
        return []
    whole = values[-1] - values[0]
    left_w = values[:-1] - values[0]
    right_w = values[-1] - values[1:]
    gain = (m * whole - left_n * left_w - right_n * right_w) / dim.span
    idx = np.flatnonzero(ok)
    best = idx[np.argsort(-gain[idx], kind="stable")[:_POINTS_PER_DIMENSION]]
    return [(float(gain[i]), j, int(distinct[i])) for i in best]


def _categorical_cut(space: _Space, costs: list[np.ndarray], dim, rows: np.ndarray, level: int):
    """A cut along the hierarchy: one region per child node holding >= min_size records, the
    other records (if any) kept together under the parent node. Returns (loss saved, region
    ids, regions, split-off children), or ``None`` when not even one child can be split off."""
    below = dim.level_maps[level - 1][dim.leaves[rows]]
    nodes, inverse, counts = np.unique(below, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    if len(nodes) < 2:
        return None
    order = np.argsort(-counts, kind="stable")
    big = [int(c) for c in order if counts[c] >= space.min_size]
    rest = int(counts.sum() - counts[big].sum()) if big else int(counts.sum())
    while big and 0 < rest < space.min_size:
        rest += int(counts[big.pop()])  # too few left over: keep the smallest child with them
    if not big or (rest == 0 and len(big) < 2):
        return None
    part_of = np.full(len(nodes), len(big), dtype=np.int64)  # the rest share the last id
    part_of[big] = np.arange(len(big))
    ids = part_of[inverse]
    n_parts = len(big) + (rest > 0)
    parent = dim.level_maps[level][dim.leaves[rows[0]]]
    kept = counts[big]
    gain = float(kept.sum() * costs[level][parent] - kept @ costs[level - 1][nodes[big]])
    return gain, ids, n_parts, len(big)


def _best_cut(space: _Space, costs, rows: np.ndarray, levels: tuple):
    """(loss saved, children) of the allowable cut saving the most loss, or ``None``."""
    candidates: list[_Candidate] = []
    cat_ids: dict[int, tuple[np.ndarray, int]] = {}
    for j, dim in enumerate(space.dims):
        if isinstance(dim, _NumericDim):
            candidates.extend(_numeric_candidates(space, dim, rows, j))
            continue
        level = levels[dim.slot]
        if level == 0:
            continue
        cut = _categorical_cut(space, costs[j], dim, rows, level)
        if cut is not None:
            gain, ids, n_parts, n_split = cut
            cat_ids[j] = (ids, n_parts, n_split)
            candidates.append((gain, j, -1))
    candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
    for gain, j, point in candidates:
        dim = space.dims[j]
        if point < 0:
            ids, n_parts, n_split = cat_ids[j]
        else:
            ids, n_parts, n_split = (dim.ranks[rows] > point).astype(np.int64), 2, 2
        if not space.allowable(rows, ids, n_parts):
            continue
        order = np.argsort(ids, kind="stable")
        bounds = np.cumsum(np.bincount(ids, minlength=n_parts))[:-1]
        children = []
        for part_id, part in enumerate(np.split(rows[order], bounds)):
            child_levels = list(levels)
            if isinstance(dim, _CategoricalDim) and part_id < n_split:
                child_levels[dim.slot] -= 1  # a split-off child; the rest keeps the parent
            children.append((part, tuple(child_levels)))
        return gain, children
    return None


# ------------------------------------------------------------------------------------------------
# Clustering a small region (k-member clustering, Byun et al., DASFAA 2007)


class _Features:
    """A region's records as ancestor codes per categorical dimension and scaled values per
    numeric one, for the cost of a group of them: its label is the lowest node the group shares
    (categorical) or its range (numeric), as the region labels are.

    ``anc[r, c, l]`` is record ``r``'s node at level ``l`` of categorical dimension ``c``,
    offset so that codes of different levels never compare equal, and ``cost[code]`` that
    node's label cost; above the region's own level every record has the region's node.
    """

    def __init__(self, space: _Space, costs, rows: np.ndarray, levels: tuple) -> None:
        cats = [(j, d) for j, d in enumerate(space.dims) if isinstance(d, _CategoricalDim)]
        nums = [d for d in space.dims if isinstance(d, _NumericDim)]
        top = max((levels[d.slot] for _, d in cats), default=0)
        m = len(rows)
        self.anc = np.zeros((m, len(cats), top + 1), dtype=np.int64)
        flat, base = [], 0
        for c, (j, d) in enumerate(cats):
            for level in range(top + 1):
                used = min(level, levels[d.slot])
                self.anc[:, c, level] = d.level_maps[used][d.leaves[rows]] + base
                flat.append(costs[j][used])
                base += len(costs[j][used])
        self.cost = np.concatenate(flat) if flat else np.zeros(0)
        scaled = [
            d.values[d.ranks[rows]].astype(float) / d.span if d.span > 0 else np.zeros(m)
            for d in nums
        ]
        self.values = np.stack(scaled, axis=1) if scaled else np.zeros((m, 0))

    def added_costs(self, cand: np.ndarray, node: np.ndarray, lo: np.ndarray, hi: np.ndarray):
        """Per candidate record, the per-record cost of the group with it added, given the
        group's node at every level (``node``, shape (cats, levels); below the group's lowest
        shared level a code that matches nothing) and its numeric range ``lo``-``hi``."""
        anc = self.anc[cand]  # (m', cats, levels)
        first = np.argmax(anc == node[None], axis=2)  # lowest level it shares with the group
        # Each (record, category)'s code at that level: one gather on the flattened rows
        # (``np.take_along_axis`` builds broadcast index arrays on every call).
        levels = anc.shape[2]
        cells = np.arange(first.size, dtype=np.int64) * levels + first.reshape(-1)
        picked = anc.reshape(-1)[cells].reshape(first.shape)
        per_cat = self.cost[picked].sum(axis=1) if picked.size else np.zeros(len(cand))
        vals = self.values[cand]
        per_num = (np.maximum(hi, vals) - np.minimum(lo, vals)).sum(axis=1)
        return per_cat + per_num


def _cluster(feat: _Features, k: int) -> np.ndarray:
    """Group ids (0..g-1) of the region's records: greedy k-member clustering."""
    m = len(feat.anc)
    group = np.full(m, -1, dtype=np.int64)
    free = np.ones(m, dtype=bool)
    seed = 0
    g = 0
    centers: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    while free.sum() >= k:
        cand = np.flatnonzero(free)
        # the next seed: the free record farthest from the last seed
        node0 = feat.anc[seed]
        far = feat.added_costs(cand, node0, feat.values[seed], feat.values[seed])
        seed = int(cand[np.argmax(far)])
        members = [seed]
        free[seed] = False
        node = feat.anc[seed].copy()
        lo = feat.values[seed].copy()
        hi = lo.copy()
        while len(members) < k:
            cand = np.flatnonzero(free)
            best = int(cand[np.argmin(feat.added_costs(cand, node, lo, hi))])
            members.append(best)
            free[best] = False
            node = _shared(feat.anc[members])
            lo = np.minimum(lo, feat.values[best])
            hi = np.maximum(hi, feat.values[best])
        group[members] = g
        centers.append((node, lo, hi))
        g += 1
    for r in np.flatnonzero(free):  # fewer than k left: each joins the group it costs least
        increase = [feat.added_costs(np.array([r]), node, lo, hi)[0] for node, lo, hi in centers]
        group[r] = int(np.argmin(increase))
    return group


def _shared(anc: np.ndarray) -> np.ndarray:
    """The group's node at every level: the lowest shared node, repeated below it."""
    same = (anc == anc[:1]).all(axis=0)
    first = np.argmax(same, axis=1)
    node = anc[0].copy()
    levels = np.arange(anc.shape[2])[None, :]
    lowest = anc[0, np.arange(anc.shape[1]), first]
    return np.where(levels < first[:, None], lowest[:, None], node)
