"""DPHeter: differentially private top-down specialization for heterogeneous data.

The release is a generalized table with noisy counts, built DiffGen-style (N. Mohammed, R. Chen,
B. C. M. Fung, P. S. Yu, "Differentially private data release for data mining", KDD 2011) and
extended to a set-valued attribute the DiffPart way (R. Chen, N. Mohammed, B. C. M. Fung,
B. C. Desai, L. Xiong, "Publishing set-valued data via differential privacy", VLDB 2011):

1. **Most general cut.** Every categorical attribute at its taxonomy root, every numeric one as
   one interval over its public bounds, the set-valued attribute at ``{root}``.
2. **h rounds of specialization.** Every candidate (a non-leaf cut element; for the set-valued
   attribute a node of a set-value) is scored by its information gain on the class attribute
   (:mod:`core.dp._dpheter_scoring`); the exponential mechanism picks one, and only that cut
   changes. A numeric interval's split point is chosen with the exponential mechanism over the
   grid values inside it when the interval is created; a set-valued element's children are the
   non-empty subsets of the node's children, pruned when their noisy count falls below
   ``set_threshold`` (:mod:`privgate.core.dp._dpheter_setvalued`).
3. **Release.** Every leaf partition of the final cuts (their cross product, *empty ones
   included*: which partitions exist must not depend on the data) gets a discrete Laplace count.

For a clustering-oriented release (DPHeter, following B. C. M. Fung, K. Wang, L. Wang,
P. C. K. Hung, "Privacy-preserving data publishing for cluster analysis", DKE 2009) the class is
the cluster label the data owner computes on the original records
(:func:`cluster_class_labels`); the class itself is not released.

Budget (DiffGen, Algorithm 1)
-----------------------------
``count_share * epsilon`` (default ``epsilon / 2``) is reserved for the leaf counts; the rest,
``epsilon_sel``, is split evenly into ``|A_n| + 2h`` steps of ``epsilon' = epsilon_sel /
(|A_n| + 2h)`` (``|A_n|`` = numeric attributes with a split to choose): one step per initial
numeric split point, and two per round: the selection, plus one follow-up step (the split points
of the two new intervals, which hold disjoint records and so cost ``epsilon'`` together; or the
pruning counts of a set-valued specialization, one histogram over disjoint children). A round
that specializes a categorical value needs no follow-up, and rounds that cannot run (no
candidate left) need nothing: that unused share is added to the leaf counts, so the leaf counts
get at least ``count_share * epsilon`` and the accountant's total is exactly ``epsilon``. Every
step is charged to the :class:`~privgate.core.dp.Accountant` by the mechanism that spends it and
recorded in :attr:`DPHeterResult.budget`.

Score
-----
The default score is DiffGen's information gain, with sensitivity ``log2(number of classes)``
(DiffGen, Sec. 4.1): every entropy lies in ``[0, log2 |classes|]``, so one record moves the gain
by at most that. Its range does not grow with the table, so with the small ``epsilon'`` of one
step (``0.5 / 21 = 0.024`` at ``epsilon = 1``, ``h = 8``) the exponential mechanism's weights
``exp(epsilon' * score / (2 * sensitivity))`` differ by well under 1 % between the best and the
worst candidate: the selection is nearly uniform. ``score="max"`` uses DiffGen's other score,
the gain in majority-vote correct records (sensitivity 1, measured in records), which does
separate candidates on a table of thousands of records (:mod:`privgate.core.dp._dpheter_scoring`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from privgate.core.dp._accountant import Accountant, check_epsilon
from privgate.core.dp._dpheter_clustering import cluster_class_labels, cluster_release
from privgate.core.dp._dpheter_cuts import (
    Candidate,
    CategoricalDimension,
    Dimension,
    NumericDimension,
    Router,
    SelectionContext,
)
from privgate.core.dp._dpheter_scoring import SCORES, score_sensitivity
from privgate.core.dp._dpheter_setvalued import SetValuedDimension, covered_nodes
from privgate.core.dp._dpheter_taxonomy import NumericGrid, Taxonomy
from privgate.core.dp.mechanisms import discrete_laplace_counts, exponential_select
from privgate.core.exceptions import PolicyError, SchemaValidationError
from privgate.core.hierarchy import Hierarchy, value_key

__all__ = [
    "DPHeterConfig",
    "DPHeterResult",
    "cluster_class_labels",
    "cluster_release",
    "dpheter_release",
]

COUNT_COLUMN = "count"


@dataclass(frozen=True)
class DPHeterConfig:
    """Settings of one DPHeter release.

    Parameters
    ----------
    epsilon : float
        Total privacy budget of the release (> 0).
    rounds : int, default=8
        Number of specializations ``h`` (>= 0; 0 releases the single most general partition).
    count_share : float, default=0.5
        Share of ``epsilon`` reserved for the leaf counts, in ``(0, 1)`` (DiffGen: 1/2).
    set_threshold : float or None, default=None
        Noisy count below which a set-valued child is pruned; None means two standard
        deviations of the pruning noise, ``2 * sqrt(2) / epsilon'``, so an empty child survives
        with probability ``exp(-2 sqrt 2) / 2``, about 3 %.
    seed : int or None, default=None
        Recorded with the result for provenance only. The algorithm draws no randomness of its
        own: every random choice is an OpenDP draw, which is never seeded.
    max_partitions : int, default=1_000_000
        A specialization that could make the cross product of the cuts (the released partitions)
        larger than this is not offered; the limit depends on the cuts only, not on the data.
    max_split_cells : int, default=4096
        Grid cells of a numeric attribute (every integer when its range has at most this many).
    max_set_children : int, default=10
        Set-valued nodes with more children are not specialized (``2^m - 1`` subsets).
    score : {"info_gain", "max"}, default="info_gain"
        The specialization score: DiffGen's information gain (sensitivity ``log2 |classes|``)
        or its Max score as a gain in records (sensitivity 1); see the module docstring.

    Raises
    ------
    PolicyError
        If a setting is out of range (the message names it).
    """

    epsilon: float
    rounds: int = 8
    count_share: float = 0.5
    set_threshold: float | None = None
    seed: int | None = None
    max_partitions: int = 1_000_000
    max_split_cells: int = 4096
    max_set_children: int = 10
    score: str = "info_gain"

    def __post_init__(self) -> None:
        if self.score not in SCORES:
            raise PolicyError(
                f"DPHeterConfig.score must be one of {list(SCORES)}; got {self.score!r}"
            )
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, "DPHeterConfig.epsilon"))
        _check_int("rounds", self.rounds, 0)
        _check_int("max_partitions", self.max_partitions, 1)
        _check_int("max_split_cells", self.max_split_cells, 2)
        _check_int("max_set_children", self.max_set_children, 1)
        share = self.count_share
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share < 1:
            raise PolicyError(f"DPHeterConfig.count_share must lie in (0, 1); got {share!r}")
        threshold = self.set_threshold
        if threshold is not None and (
            isinstance(threshold, bool)
            or not isinstance(threshold, int | float)
            or not math.isfinite(threshold)
        ):
            raise PolicyError(
                f"DPHeterConfig.set_threshold must be a finite number or None; got {threshold!r}"
            )


def _check_int(name: str, value: object, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise PolicyError(f"DPHeterConfig.{name} must be an integer >= {low}; got {value!r}")


@dataclass(frozen=True)
class DPHeterResult:
    """A DPHeter release and how it was made.

    Attributes
    ----------
    table : DataFrame
        One row per leaf partition of the final cuts (their full cross product, in row-major
        order: the row label is the partition's index): the generalized value of every released
        attribute, then ``count``. Categorical cells hold a taxonomy label, numeric cells an
        interval label (``lo-hi`` both included, or ``[lo, hi)``), set-valued cells a
        ``frozenset`` of taxonomy labels. ``count`` is the discrete Laplace count with negative
        values raised to 0 (post-processing: it costs no privacy, and makes counts usable as
        record multiplicities; it biases near-empty partitions upward).
    cuts : dict
        The final cut of every attribute (JSON-ready), keyed by attribute.
    specializations : list of dict
        One entry per round: ``round``, ``attribute``, ``kind``, the specialized ``value``, its
        ``children``, ``candidates`` (how many were offered), ``score`` and kind-specific
        details (``split`` value, set-valued ``node``/``pruned``/``residual``). **``score`` is
        the exact information gain on the private data, for the data owner's audit: it is not
        differentially private and must not be published** (:meth:`to_dict` leaves it out).
    budget : dict
        The explicit split of epsilon: per step, per initial split point, per round (selection
        and follow-up), the leaf counts, what rolled over, the sensitivity and the threshold.
    accountant : Accountant
        Every charge of the release (the caller's accountant if one was given).
    seconds : float
        Wall time of the release.
    config : DPHeterConfig or None
    """

    table: pd.DataFrame
    cuts: dict
    specializations: list[dict]
    budget: dict
    accountant: Accountant
    seconds: float
    config: DPHeterConfig | None = None
    _routers: tuple[tuple[str, Router], ...] = field(default=(), repr=False, compare=False)

    @property
    def attributes(self) -> list[str]:
        """The released attributes, in table order."""
        return [name for name, _ in self._routers]

    def expand(self) -> pd.DataFrame:
        """One record per unit of ``count``: the release as microdata, for mining or clustering.

        The result has ``table["count"].sum()`` rows (noise included) and a fresh index.
        """
        counts = self.table[COUNT_COLUMN].to_numpy(dtype=np.int64)
        rows = np.repeat(np.arange(len(self.table)), counts)
        return self.table.drop(columns=COUNT_COLUMN).iloc[rows].reset_index(drop=True)

    def partition_index(self, frame: pd.DataFrame) -> np.ndarray:
        """The leaf partition (row of :attr:`table`) of every record of ``frame``.

        Each record falls in exactly one leaf partition: on every attribute, its value lies
        under exactly one element of the final cut. Meant for the data owner's evaluation of
        the release against the original records.

        Raises
        ------
        SchemaValidationError, HierarchyError
            A released attribute is missing, or a value is not in its domain.
        """
        absent = [name for name in self.attributes if name not in frame.columns]
        if absent:
            raise SchemaValidationError(f"partition_index: column(s) {absent} not in the table")
        sizes = tuple(len(self.cuts[name]["values"]) for name in self.attributes)
        positions = [router.positions(frame[name]) for name, router in self._routers]
        if not positions:
            return np.zeros(len(frame), dtype=np.int64)
        return np.ravel_multi_index(positions, sizes).astype(np.int64)

    def to_dict(self) -> dict:
        """The publishable description: cuts, specializations *without* scores, budget, spends."""
        return {
            "algorithm": "dpheter",
            "cuts": self.cuts,
            "specializations": [
                {k: v for k, v in s.items() if k != "score"} for s in self.specializations
            ],
            "budget": self.budget,
            "accountant": self.accountant.to_dict(),
            "partitions": len(self.table),
            "released_records": int(self.table[COUNT_COLUMN].sum()),
            "seconds": self.seconds,
        }


# ------------------------------------------------------------------------------------------
# The algorithm


def dpheter_release(
    frame: pd.DataFrame,
    *,
    class_column: str,
    class_domain: Sequence[object],
    categorical: Mapping[str, Hierarchy],
    numeric: Sequence[str],
    numeric_bounds: Mapping[str, tuple[float, float]],
    set_valued: Mapping[str, Hierarchy] | None = None,
    domains: Mapping[str, Sequence[object]] | None = None,
    config: DPHeterConfig,
    accountant: Accountant | None = None,
) -> DPHeterResult:
    """Release ``frame`` as an epsilon-DP generalized table with noisy counts (DPHeter).

    Parameters
    ----------
    frame : DataFrame
        The (heterogeneous) records; one record per row, no missing values in the used columns.
    class_column : str
        The class attribute the specializations are scored by (used for scoring only, not
        released). Each record's own value, so one added record moves a score by at most the
        score's sensitivity.
    class_domain : sequence
        The declared classes (at least two). The score's sensitivity (``log2 |classes|`` for
        information gain) is computed from this public list, never from the classes observed.
    categorical : mapping of str to Hierarchy
        Categorical attributes with their taxonomies.
    numeric : sequence of str
        Numeric attributes.
    numeric_bounds : mapping of str to (float, float)
        The public ``(low, high)`` of every numeric attribute (DiffGen assumes numeric domains
        are public). Values outside are clamped to the bounds, record by record (a
        data-independent rule: a neighbouring table still differs in one record).
    set_valued : mapping of str to Hierarchy, optional
        Set-valued attributes (cells are sets of leaf values) with their item taxonomies.
    domains : mapping of str to sequence, optional
        Declared domains of categorical or set-valued attributes whose hierarchy does not list
        its domain (masking). An attribute with neither is refused.
    config : DPHeterConfig
    accountant : Accountant, optional
        Charged with every step (a new uncapped one if None). Its cap is checked for the whole
        ``epsilon`` before anything is drawn.

    Returns
    -------
    DPHeterResult

    Raises
    ------
    PolicyError
        Unknown or overlapping columns, fewer than two declared classes, a numeric attribute
        without bounds, or no attribute to release.
    SchemaValidationError
        A used column has missing values, a class outside ``class_domain``, or a set-valued
        cell is empty (the pipeline applies its declared-domain rule before calling this).
    HierarchyError
        A value is outside its declared domain, a domain is not declared, or a hierarchy is
        not a tree.
    BudgetExceededError
        The accountant's cap cannot pay ``epsilon``; nothing is drawn.

    Examples
    --------
    >>> from privgate.core.hierarchy import taxonomy_hierarchy
    >>> df = pd.DataFrame({"sex": ["M", "F"] * 50, "age": list(range(20, 70)) * 2,
    ...                    "cls": [0, 1] * 50})
    >>> sex = taxonomy_hierarchy("sex", {"M": ["M"], "F": ["F"]})
    >>> result = dpheter_release(df, class_column="cls", class_domain=[0, 1],
    ...                          categorical={"sex": sex}, numeric=["age"],
    ...                          numeric_bounds={"age": (0, 100)},
    ...                          config=DPHeterConfig(epsilon=1.0, rounds=2))
    >>> round(result.accountant.total[0], 9)
    1.0
    """
    started = time.perf_counter()
    set_valued = dict(set_valued or {})
    numeric = list(numeric)
    bounds = dict(numeric_bounds)
    _check_columns(frame, class_column, categorical, numeric, set_valued, bounds)
    accountant = accountant if accountant is not None else Accountant()
    accountant.check_affordable(config.epsilon, 0.0, what="DPHeter release")
    start_epsilon = accountant.total[0]

    classes, n_classes = _class_codes(frame[class_column], class_domain, class_column)
    dimensions = _dimensions(
        frame, classes, n_classes, categorical, numeric, set_valued, bounds, domains, config
    )

    h = config.rounds
    selection_epsilon = config.epsilon * (1 - config.count_share)
    numeric_dims = [d for d in dimensions if isinstance(d, NumericDimension) and d.splittable(0)]
    slots = len(numeric_dims) + 2 * h if h else 0
    step_epsilon = selection_epsilon / slots if slots else 0.0
    sensitivity = score_sensitivity(config.score, n_classes)
    threshold = (
        config.set_threshold
        if config.set_threshold is not None
        else (2 * math.sqrt(2) / step_epsilon if step_epsilon else 0.0)
    )
    context = SelectionContext(
        accountant, step_epsilon, sensitivity, threshold, config.max_set_children, config.score
    )

    initial: dict[str, float] = {}
    if h:
        for dimension in numeric_dims:
            initial[dimension.name] = dimension.initial_steps(context)

    specializations: list[dict] = []
    round_budget: list[dict] = []
    for round_no in range(1, h + 1):
        candidates = _offered(dimensions, config.max_partitions)
        if not candidates:
            break
        step = f"round {round_no}"
        before = accountant.total[0]
        pick = exponential_select(
            [c.score for c in candidates],
            step_epsilon,
            sensitivity=sensitivity,
            accountant=accountant,
            step=f"{step} selection",
        )
        selection_spent = accountant.total[0] - before
        chosen = candidates[pick]
        detail = chosen.dimension.specialize(chosen, context, step)
        specializations.append(
            {
                "round": round_no,
                "attribute": chosen.dimension.name,
                "kind": chosen.dimension.kind,
                "candidates": len(candidates),
                "score": chosen.score,
                **{k: v for k, v in detail.items() if not k.startswith("follow_up")},
            }
        )
        round_budget.append(
            {
                "round": round_no,
                "selection": selection_spent,
                "follow_up": detail["follow_up_epsilon"],
                "follow_up_kind": detail["follow_up"],
            }
        )

    sizes = tuple(d.size for d in dimensions)
    n_partitions = math.prod(sizes)
    flat = np.ravel_multi_index([d.record_positions() for d in dimensions], sizes)
    exact = np.bincount(flat, minlength=n_partitions)
    spent_before_counts = accountant.total[0] - start_epsilon
    count_epsilon = config.epsilon - spent_before_counts
    noisy = discrete_laplace_counts(
        exact, count_epsilon, accountant=accountant, step="DPHeter leaf counts"
    )
    counts = np.maximum(noisy, 0)

    table = _table(dimensions, sizes, counts)
    budget = {
        "epsilon": config.epsilon,
        "count_share": config.count_share,
        "selection_epsilon": selection_epsilon,
        "step_epsilon": step_epsilon,
        "steps": slots,
        "numeric_attributes_with_split": len(numeric_dims),
        "rounds_requested": h,
        "rounds_run": len(specializations),
        "initial_split_points": initial,
        "rounds": round_budget,
        "selection_spent": spent_before_counts,
        "rolled_over_to_counts": count_epsilon - config.epsilon * config.count_share,
        "counts": accountant.total[0] - start_epsilon - spent_before_counts,
        "sensitivity": sensitivity,
        "score": config.score,
        "classes": n_classes,
        "set_threshold": threshold if set_valued else None,
        "partitions": n_partitions,
        "negative_counts": "raised to 0",
    }
    return DPHeterResult(
        table=table,
        cuts={d.name: d.cut() for d in dimensions},
        specializations=specializations,
        budget=budget,
        accountant=accountant,
        seconds=round(time.perf_counter() - started, 3),
        config=config,
        _routers=tuple((d.name, d.router()) for d in dimensions),
    )


def _offered(dimensions: Sequence[Dimension], max_partitions: int) -> list[Candidate]:
    """Every candidate whose specialization keeps the partitions within the limit."""
    total = math.prod(d.size for d in dimensions)
    out = []
    for dimension in dimensions:
        others = total // dimension.size
        out.extend(c for c in dimension.candidates() if others * c.grows_to <= max_partitions)
    return out


def _check_columns(
    frame: pd.DataFrame,
    class_column: str,
    categorical: Mapping[str, Hierarchy],
    numeric: Sequence[str],
    set_valued: Mapping[str, Hierarchy],
    bounds: Mapping[str, tuple[float, float]],
) -> None:
    names = [*categorical, *numeric, *set_valued]
    if not names:
        raise PolicyError("dpheter_release needs at least one attribute to release")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise PolicyError(f"attribute(s) {duplicates} declared under two kinds")
    if class_column in names:
        raise PolicyError(f"class column {class_column!r} cannot also be a released attribute")
    absent = [n for n in [class_column, *names] if n not in frame.columns]
    if absent:
        raise PolicyError(f"column(s) {absent} not in the table (columns: {list(frame.columns)})")
    stray = sorted(set(bounds) - set(numeric))
    if stray:
        raise PolicyError(f"numeric_bounds names column(s) {stray} that are not numeric")
    unbounded = [name for name in numeric if name not in bounds]
    if unbounded:
        raise PolicyError(
            f"numeric attribute(s) {unbounded} have no declared bounds: a differentially "
            "private release never takes a range from the data"
        )
    for name in [class_column, *categorical, *numeric]:
        missing = int(frame[name].isna().sum())
        if missing:
            raise SchemaValidationError(
                f"column {name!r} has {missing} missing value(s); DPHeter needs complete records"
            )
    if len(frame) == 0:
        raise SchemaValidationError("dpheter_release: the table has no records")


def _class_codes(
    column: pd.Series, class_domain: Sequence[object], name: str
) -> tuple[np.ndarray, int]:
    """Each record's class as its position in the declared class domain."""
    domain = [value_key(v) for v in class_domain]
    if len(set(domain)) != len(domain):
        raise PolicyError(f"class domain of {name!r} lists a class twice: {domain}")
    if len(domain) < 2:
        raise PolicyError(
            f"class column {name!r} declares {len(domain)} class(es); scoring needs at least 2"
        )
    lookup = {value: i for i, value in enumerate(domain)}
    keys = [value_key(v) for v in column.tolist()]
    outside = sum(1 for k in keys if k not in lookup)
    if outside:
        raise SchemaValidationError(
            f"class column {name!r}: {outside} record(s) hold a class outside its declared "
            "domain (apply the declared-domain rule first)"
        )
    return np.fromiter((lookup[k] for k in keys), dtype=np.int64, count=len(keys)), len(domain)


def _dimensions(
    frame: pd.DataFrame,
    classes: np.ndarray,
    n_classes: int,
    categorical: Mapping[str, Hierarchy],
    numeric: Sequence[str],
    set_valued: Mapping[str, Hierarchy],
    bounds: Mapping[str, tuple[float, float]],
    domains: Mapping[str, Sequence[object]] | None,
    config: DPHeterConfig,
) -> list[Dimension]:
    declared = dict(domains or {})
    dimensions: list[Dimension] = []
    for name, hierarchy in categorical.items():
        taxonomy = Taxonomy.from_hierarchy(hierarchy, declared.get(name))
        leaves = taxonomy.leaf_codes(frame[name].tolist())
        dimensions.append(
            CategoricalDimension(name, taxonomy, leaves, classes, n_classes, config.score)
        )
    for name in numeric:
        column = frame[name]
        try:
            values = column.to_numpy(dtype=float)
        except (TypeError, ValueError) as error:
            raise SchemaValidationError(f"numeric column {name!r} holds non-numbers") from error
        low, high = (float(b) for b in bounds[name])
        # Clamping is record by record: a neighbouring table still differs in one record.
        values = np.clip(values, low, high)
        integer = (
            low == round(low)
            and high == round(high)
            and (pd.api.types.is_integer_dtype(column.dtype))
        )
        grid = NumericGrid.build(name, low, high, integer, config.max_split_cells)
        dimensions.append(
            NumericDimension(name, grid, grid.cells(values), classes, n_classes, config.score)
        )
    for name, hierarchy in set_valued.items():
        taxonomy = Taxonomy.from_hierarchy(hierarchy, declared.get(name))
        covered = covered_nodes(taxonomy, frame[name].tolist(), name)
        dimensions.append(
            SetValuedDimension(
                name,
                taxonomy,
                covered,
                classes,
                n_classes,
                config.score,
                config.max_set_children,
            )
        )
    return dimensions


def _items(cell: Any) -> list:
    if isinstance(cell, str):
        return [cell]
    return list(cell) if hasattr(cell, "__iter__") else []


def _table(
    dimensions: Sequence[Dimension], sizes: tuple[int, ...], counts: np.ndarray
) -> pd.DataFrame:
    """The released table: every partition in row-major order, with its count."""
    columns: dict[str, Any] = {}
    if dimensions:
        grid = np.unravel_index(np.arange(len(counts)), sizes)
        for dimension, positions in zip(dimensions, grid, strict=True):
            labels = np.empty(dimension.size, dtype=object)
            labels[:] = dimension.labels()
            columns[dimension.name] = pd.Series(labels[positions], dtype=object)
    columns[COUNT_COLUMN] = pd.Series(counts.astype(np.int64))
    return pd.DataFrame(columns)
