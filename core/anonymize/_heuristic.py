"""A full-domain search for wide tables, whose lattice cannot be listed.

With 30 quasi-identifiers of three levels each the lattice has 3^30 (about 2 * 10^14) nodes:
the exact search (:class:`OptimalLattice`), which lists every node to order them by their
loss bound, cannot run. :class:`HeuristicLattice` visits a budget of nodes instead and returns
the best node it has *evaluated*: every node it returns was checked against the privacy models
by the same :class:`NodeChecker` as the exact search, so the guarantee is the same; only the
optimality is given up. When the lattice is small (fewer than ``exact_below`` nodes) it runs
the exact search and says so in the result's details.

The search runs in three phases:

1. **Greedy climbs**, which always complete. A Datafly climb (raise the quasi-identifier with
   the most distinct values until the models hold within the suppression limit, Sweeney's
   rule, so the result is never worse than Datafly's) and a cost-aware climb (raise the
   quasi-identifier that removes the most outlier records per unit of metric cost added).
2. **Local descent** from the best node found: try lowering one quasi-identifier, or lowering
   one while raising another, in order of the metric's lower bound, and move to any
   neighbour that still satisfies the models with a smaller metric value, until none does.
3. **Best-first search** from the bottom (in the spirit of ARX's Lightning, Prasser et al.
   2016): nodes by increasing lower bound; a node below a known failing node is not
   evaluated (it fails too, when the models are monotone), and each unresolved node is lifted
   along a chain of its cheapest generalizations whose highest failing node is found by
   binary search, pruning that node's whole down-set. Then a last descent from the best node.
4. **Perturbation** with the budget left (iterated local search): lower two attributes of the
   best node at once, repair the node with the cost-aware climb, descend from any better node.

``max_evaluations`` counts node evaluations after the climbs, so the descent always gets a
chance. Down-set pruning and chain lifting assume monotone satisfaction; with a model that is
not monotone (or not monotone with suppression, and a non-zero suppression limit), nothing is
pruned and every visited node is evaluated, as in :class:`OptimalLattice`. Every order in the
search is fixed (bound, level sum, levels), so a given input gives the same node every time.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Sequence

import numpy as np

from privgate.core.anonymize._datafly import failing_tuples
from privgate.core.anonymize._generalize import FullDomainAlgorithm
from privgate.core.anonymize._lattice import NodeChecker
from privgate.core.anonymize._optimal import OptimalLattice, _tied
from privgate.core.anonymize._result import Generalization
from privgate.core.anonymize._setup import SearchSetup
from privgate.core.encoding import FrequencySet
from privgate.core.exceptions import AnonymizationError
from privgate.core.metrics import LossMetric
from privgate.core.privacy import PrivacyModel
from privgate.core.progress import Progress

__all__ = ["DEFAULT_MAX_EVALUATIONS", "EXACT_BELOW", "HeuristicLattice"]

#: Node evaluations after the greedy climbs, unless the policy sets ``max_evaluations``.
DEFAULT_MAX_EVALUATIONS = 3000
#: Lattices with fewer nodes are searched exactly (the exact search lists them all).
EXACT_BELOW = 50_000
#: Nodes the best-first phase may take off its queue per allowed evaluation: nodes known to
#: fail are visited without an evaluation, and in a wide lattice their down-sets are huge
#: (30 successors each); this keeps the phase's time and queue bounded.
_VISITS_PER_EVALUATION = 2
Node = tuple[int, ...]


class HeuristicLattice(FullDomainAlgorithm):
    """Full-domain generalization with suppression by a budgeted search (see module notes).

    Parameters
    ----------
    models : sequence of PrivacyModel
        Every kept class must satisfy all of them.
    suppression_limit : float
        Largest fraction of records that may be suppressed.
    metric : str or LossMetric, default="loss"
        The objective, as for :class:`OptimalLattice`.
    max_evaluations : int, default=3000
        Node evaluations allowed after the greedy climbs.
    exact_below : int, default=50000
        Lattices with fewer nodes are searched exactly by :class:`OptimalLattice`.
    """

    name = "heuristic"

    def __init__(
        self,
        models: Sequence[PrivacyModel],
        suppression_limit: float = 0.0,
        metric: str | LossMetric = "loss",
        max_evaluations: int = DEFAULT_MAX_EVALUATIONS,
        exact_below: int = EXACT_BELOW,
    ) -> None:
        if not 0.0 <= suppression_limit <= 1.0:
            raise ValueError(
                f"The 'suppression_limit' parameter must be in [0, 1]. Got {suppression_limit}."
            )
        if isinstance(max_evaluations, bool) or not isinstance(max_evaluations, int):
            raise ValueError(
                f"The 'max_evaluations' parameter must be an int. Got {max_evaluations!r}."
            )
        if max_evaluations < 1:
            raise ValueError(
                f"The 'max_evaluations' parameter must be >= 1. Got {max_evaluations}."
            )
        if exact_below < 0:
            raise ValueError(f"The 'exact_below' parameter must be >= 0. Got {exact_below}.")
        self.models = list(models)
        self.suppression_limit = suppression_limit
        self.metric = metric
        self.max_evaluations = max_evaluations
        self.exact_below = exact_below

    @classmethod
    def from_setup(cls, setup: SearchSetup) -> HeuristicLattice:
        return cls(
            setup.models,
            setup.suppression_limit,
            metric=setup.search_metric(),
            max_evaluations=setup.max_evaluations,
        )

    def search(self, freq: FrequencySet) -> Generalization:
        """The best node found within the budget, and the records it suppresses.

        Raises
        ------
        AnonymizationError
            No node the search evaluated satisfies the models within the suppression limit
            (with monotone models: not even the fully generalized one).
        """
        size = math.prod(int(h) + 1 for h in freq.table.heights)
        if size < self.exact_below:
            found = OptimalLattice(self.models, self.suppression_limit, self.metric).search(freq)
            details = {
                "mode": "exact",
                "why": (
                    f"the lattice has {size} nodes, fewer than {self.exact_below}: searched "
                    "exactly by the optimal search"
                ),
                **found.details,
            }
            return Generalization(self.name, dict(found.levels), found.suppressed, [], details)
        return _Search(self, freq).run()


class _Search:
    """One heuristic search of one frequency set (the state the phases share)."""

    def __init__(self, algorithm: HeuristicLattice, freq: FrequencySet) -> None:
        self.started = time.perf_counter()
        self.freq = freq
        self.models = algorithm.models
        self.max_evaluations = algorithm.max_evaluations
        self.checker = NodeChecker(freq, self.models, algorithm.suppression_limit, remember=False)
        self.heights = np.asarray(freq.table.heights, dtype=np.int64)
        self.q = len(self.heights)
        self.size = math.prod(int(h) + 1 for h in self.heights)
        # The exact search's metric preparation and projection bounds (three attributes per
        # projection while there are few, else pairs: 30 QIs make 4,060 triples but 435 pairs).
        exact = OptimalLattice(self.models, algorithm.suppression_limit, algorithm.metric)
        exact.bounds_arity = 3 if math.comb(self.q, 3) <= 120 else 2
        self.metric = exact._prepared_metric(freq, self.checker.min_class_size)
        self.projection = exact._bounds(freq).for_size(self.checker.min_class_size)
        self.prune = all(m.monotonic for m in self.models) and (
            self.checker.allowance == 0 or all(m.monotonic_with_suppression for m in self.models)
        )
        self.verdicts: dict[Node, bool] = {}
        self.outliers: dict[Node, int] = {}
        self.failing = np.empty((0, self.q), dtype=np.int64)  # maximal known failing nodes
        self.best: Node | None = None
        self.best_loss = math.inf
        self.best_key: tuple = ()
        self.found_by = ""
        self.phase = "climbs"
        self.climb_evaluations = 0
        self.budget_exhausted = False
        self.best_first_stop = ""
        self.best_first_visits = 0
        self.progress = Progress("heuristic search", self.max_evaluations)

    # --- facts about nodes ----------------------------------------------------------------

    def bounds(self, nodes: np.ndarray) -> np.ndarray:
        """The metric's lower bound of each node (rows of ``nodes``)."""
        return self.metric.lower_bound(np.atleast_2d(nodes))

    def projected_fail(self, nodes: np.ndarray) -> np.ndarray:
        """Per node, whether its projection bound already suppresses beyond the limit."""
        return self.projection(nodes) > self.checker.allowance

    def dominated(self, node: Node) -> bool:
        """A node below a known failing node fails too (monotone models only)."""
        if not self.prune or not len(self.failing):
            return False
        return bool(np.any(np.all(np.asarray(node) <= self.failing, axis=1)))

    def beaten(self, node: Node, bound: float) -> bool:
        """The node cannot improve on the best one (bound, then the tie-break order)."""
        if self.best is None:
            return False
        if _tied(bound, self.best_loss):
            return (sum(node), node) >= self.best_key
        return bound > self.best_loss

    @property
    def spent(self) -> int:
        """Evaluations charged to the budget (those after the climbs)."""
        return self.checker.evaluations - self.climb_evaluations

    def exhausted(self) -> bool:
        if self.phase != "climbs" and self.spent >= self.max_evaluations:
            self.budget_exhausted = True
        return self.budget_exhausted

    # --- evaluation -------------------------------------------------------------------------

    def evaluate(self, node: Node) -> tuple[bool, int]:
        """Check ``node`` with the checker: whether it satisfies, and its outlier records."""
        if node in self.outliers:
            return self.verdicts[node], self.outliers[node]
        outcome = self.checker.evaluate(node)
        self.outliers[node] = outcome.outliers
        self._record(node, outcome.satisfied)
        if outcome.satisfied:
            table = outcome.table
            loss = self.metric.value(node, table.codes, table.sizes, outcome.failing)
            key = (sum(node), node)
            if self.best is None or (
                key < self.best_key if _tied(loss, self.best_loss) else loss < self.best_loss
            ):
                self.best, self.best_loss, self.best_key = node, loss, key
                self.found_by = self.phase
        self.progress.update(
            max(self.spent, 0) if self.phase != "climbs" else 0,
            lambda: (
                f"{self.phase}, {self.checker.evaluations} nodes evaluated, best loss "
                + (f"{self.best_loss:.4f}" if self.best is not None else "none yet")
            ),
        )
        return outcome.satisfied, outcome.outliers

    def _record(self, node: Node, satisfied: bool) -> None:
        self.verdicts[node] = satisfied
        if not satisfied and self.prune and not self.dominated(node):
            top = np.asarray(node, dtype=np.int64)
            keep = ~np.all(self.failing <= top, axis=1)
            self.failing = np.vstack([self.failing[keep], top[None, :]])

    def passes(self, node: Node) -> bool:
        """Whether ``node`` satisfies, decided without an evaluation when a bound or a known
        failing node above it already tells."""
        if node in self.verdicts:
            return self.verdicts[node]
        if self.dominated(node) or bool(self.projected_fail(np.asarray(node))[0]):
            self._record(node, False)
            return False
        return self.evaluate(node)[0]

    # --- phases -----------------------------------------------------------------------------

    def datafly_climb(self) -> Node | None:
        """Sweeney's rule: raise the attribute with the most distinct values (first in order
        on a tie) until the node satisfies; the first satisfying node, or ``None``."""
        columns = self.freq.table.columns
        levels = [0] * self.q
        while True:
            node = tuple(levels)
            if self.evaluate(node)[0]:
                return node
            candidates = [j for j in range(self.q) if levels[j] < self.heights[j]]
            if not candidates:
                return None
            chosen = max(candidates, key=lambda j: (columns[j].distinct_at(levels[j]), -j))
            levels[chosen] += 1

    def cost_climb(self, start: Node | None = None) -> Node | None:
        """Raise the attribute that removes the most outlier records per unit of lower bound
        added (ties: more records removed, then lower cost, then policy order), from the
        bottom or ``start``, until the node satisfies; the node, or ``None``.

        After the climbs phase, a climb stops as soon as its node cannot beat the best one
        (its bound is too high) or the budget is spent: it only repairs a perturbed node.
        """
        node = (0,) * self.q if start is None else start
        repairing = self.phase != "climbs"
        satisfied, outliers = self.evaluate(node)
        while not satisfied:
            here = float(self.bounds(np.asarray(node))[0])
            if repairing and (self.beaten(node, here) or self.exhausted()):
                return None
            choice: tuple | None = None
            for j in range(self.q):
                if node[j] >= self.heights[j]:
                    continue
                up = node[:j] + (node[j] + 1,) + node[j + 1 :]
                up_bound = float(self.bounds(np.asarray(up))[0])
                if repairing and (self.beaten(up, up_bound) or self.exhausted()):
                    continue
                up_satisfied, up_outliers = self.evaluate(up)
                cost = max(up_bound - here, 0.0)
                gain = outliers - up_outliers
                rank = (gain / max(cost, 1e-12), gain, -cost, -j)
                if choice is None or rank > choice[0]:
                    choice = (rank, up, up_satisfied, up_outliers)
            if choice is None:
                return None
            _, node, satisfied, outliers = choice
        return node

    def perturb(self) -> None:
        """Iterated local search with the budget left: lower two attributes of the best node
        at once (the pairs that lower its bound most first), repair the node by the
        cost-aware climb, and descend again from any better node found."""
        self.phase = "perturbation"
        tried: set[Node] = set()
        while self.best is not None and not self.exhausted():
            center = np.asarray(self.best, dtype=np.int64)
            raised = np.flatnonzero(center > 0)
            kicks = []
            for a, i in enumerate(raised):
                for j in raised[a + 1 :]:
                    kicked = center.copy()
                    kicked[[i, j]] -= 1
                    if tuple(int(v) for v in kicked) not in tried:
                        kicks.append(kicked)
            if not kicks:
                return
            kicks_array = np.array(kicks, dtype=np.int64)
            bounds = self.bounds(kicks_array)
            order = np.lexsort((*kicks_array.T[::-1], kicks_array.sum(axis=1), bounds))
            start = self.best
            for position in order:
                if self.exhausted():
                    return
                kicked = tuple(int(v) for v in kicks_array[position])
                tried.add(kicked)
                self.cost_climb(kicked)
                if self.best != start:
                    self.descend()
                    self.phase = "perturbation"
                    break
            else:
                return  # no kick of the best node leads anywhere better

    def neighbours(self, node: Node) -> np.ndarray:
        """Nodes one level lower in one attribute, or lower in one and higher in another."""
        out = []
        base = np.asarray(node, dtype=np.int64)
        for i in range(self.q):
            if base[i] == 0:
                continue
            lower = base.copy()
            lower[i] -= 1
            out.append(lower)
            for j in range(self.q):
                if j != i and base[j] < self.heights[j]:
                    swap = lower.copy()
                    swap[j] += 1
                    out.append(swap)
        return np.array(out, dtype=np.int64).reshape(-1, self.q)

    def descend(self) -> None:
        """First-improvement local search from the best node, cheapest neighbours first."""
        self.phase = "descent"
        while self.best is not None and not self.exhausted():
            candidates = self.neighbours(self.best)
            if not len(candidates):
                return
            bounds = self.bounds(candidates)
            sums = candidates.sum(axis=1)
            order = np.lexsort((*candidates.T[::-1], sums, bounds))
            start = self.best
            for position in order:
                node = tuple(int(v) for v in candidates[position])
                if self.beaten(node, float(bounds[position])):
                    continue
                if self.exhausted():
                    return
                self.passes(node)
                if self.best != start:
                    break
            else:
                return  # no neighbour improves: a local optimum

    def best_first(self) -> None:
        """Nodes by increasing lower bound from the bottom, with down-set pruning and chain
        lifting for monotone models (see module notes)."""
        self.phase = "best-first"
        bottom = (0,) * self.q
        queue = [(float(self.bounds(np.asarray(bottom))[0]), 0, bottom)]
        seen = {bottom}
        visits = 0
        while queue and not self.exhausted():
            visits += 1
            self.best_first_visits = visits
            if visits > _VISITS_PER_EVALUATION * self.max_evaluations:
                self.best_first_stop = "visit limit"
                return
            bound, _, node = heapq.heappop(queue)
            if self.beaten(node, bound):
                if not _tied(bound, self.best_loss):
                    self.best_first_stop = "bound"
                    return  # every queued node has a larger bound
                continue
            verdict = self.verdicts.get(node)
            if verdict is None:
                if self.dominated(node) or bool(self.projected_fail(np.asarray(node))[0]):
                    self._record(node, False)
                elif self.prune:
                    self.lift(node)
                else:
                    self.evaluate(node)
                verdict = self.verdicts.get(node)
            if verdict is None:
                break  # the budget ran out while lifting it
            if verdict:
                continue  # satisfied: its generalizations cost more
            self._push_successors(node, queue, seen)
        self.best_first_stop = "budget" if self.budget_exhausted else "queue empty"

    def _push_successors(self, node: Node, queue: list, seen: set[Node]) -> None:
        ups = []
        for j in range(self.q):
            if node[j] < self.heights[j]:
                up = node[:j] + (node[j] + 1,) + node[j + 1 :]
                if up not in seen:
                    seen.add(up)
                    ups.append(up)
        if not ups:
            return
        bounds = self.bounds(np.array(ups, dtype=np.int64))
        for up, b in zip(ups, bounds, strict=True):
            if not self.beaten(up, float(b)):
                heapq.heappush(queue, (float(b), sum(up), up))

    def lift(self, node: Node) -> None:
        """Lift ``node`` along its cheapest generalizations that could still beat the best
        node, then find the chain's highest failing node by binary search."""
        chain = [node]
        current = node
        while True:
            ups = [
                current[:j] + (current[j] + 1,) + current[j + 1 :]
                for j in range(self.q)
                if current[j] < self.heights[j]
            ]
            if not ups:
                break
            array = np.array(ups, dtype=np.int64)
            bounds = self.bounds(array)
            fails = self.projected_fail(array)
            step = None
            for up, b, fail in zip(ups, bounds, fails, strict=True):
                if fail or self.beaten(up, float(b)):
                    continue
                if step is None or b < step[1]:
                    step = (up, b)
            if step is None:
                break
            current = step[0]
            chain.append(current)
        low, high = -1, len(chain)  # chain[low] fails, chain[high] satisfies
        probe = len(chain) - 1
        while high - low > 1 and not self.exhausted():
            if self.passes(chain[probe]):
                high = probe
            else:
                low = probe
            probe = (low + high) // 2
        if high - low == 1 and low >= 0:
            for below in chain[:low]:  # below a failing node: they fail too
                self.verdicts.setdefault(below, False)

    # --- the whole search -------------------------------------------------------------------

    def run(self) -> Generalization:
        datafly = self.datafly_climb()
        datafly_loss = self.best_loss if datafly is not None else None
        cost = self.cost_climb()
        self.climb_evaluations = self.checker.evaluations
        after_climbs = self.best_loss
        self.descend()
        self.best_first()
        if self.best is not None and not _tied(self.best_loss, after_climbs):
            self.descend()
        self.perturb()
        if self.best is None:
            limit = f"{self.checker.allowance} of {self.checker.n_rows} records"
            if self.prune and self.verdicts.get(tuple(int(h) for h in self.heights)) is False:
                raise AnonymizationError(
                    f"{', '.join(str(m) for m in self.models)} cannot be reached by any "
                    f"generalization within the suppression limit ({limit})"
                )
            raise AnonymizationError(
                f"the heuristic search found no generalization meeting "
                f"{', '.join(str(m) for m in self.models)} within the suppression limit "
                f"({limit}) in {self.checker.evaluations} evaluations; raise "
                "algorithm.max_evaluations"
            )
        levels = [int(v) for v in self.best]
        suppressed = failing_tuples(self.freq, levels, self.models, self.checker.allowance)
        return Generalization(
            algorithm=HeuristicLattice.name,
            levels=dict(zip(self.freq.table.names, levels, strict=True)),
            suppressed=suppressed[self.freq.row_to_tuple],
            details={
                "mode": "heuristic",
                "why": (
                    f"the lattice has {self.size:,} nodes: searched by greedy climbs, local "
                    "descent, a best-first search and perturbations within the evaluation "
                    "budget, so the node is the best found, not proven optimal"
                ),
                "metric": self.metric.name,
                "loss": float(self.best_loss),
                "nodes": self.size,
                "evaluated": self.checker.evaluations,
                "climb_evaluations": self.climb_evaluations,
                "max_evaluations": self.max_evaluations,
                "budget_exhausted": self.budget_exhausted,
                "best_first_visits": self.best_first_visits,
                "best_first_stopped_by": self.best_first_stop,
                "datafly_climb_node": list(datafly) if datafly is not None else None,
                "datafly_climb_loss": datafly_loss,
                "cost_climb_node": list(cost) if cost is not None else None,
                "found_by": self.found_by,
                "pruned_by_monotonicity": self.prune,
                "seconds": round(time.perf_counter() - self.started, 6),
            },
        )
