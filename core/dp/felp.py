"""FELP: differentially private feature selection by an ensemble of local learners.

Feature selection leaks: the chosen columns say which attributes separate the classes *in this
data*. FELP ranks features by averaged local-learning weights and releases them after output
perturbation, so the ranking costs a known epsilon.

The algorithm, for a table ``X`` (``n`` records, ``d`` features) with class labels ``y``:

1. **Scale.** Every feature is mapped to ``[0, 1]`` with its *declared* public bounds (values
   outside are clipped), so distances mix features fairly. The data's own range is never used.
2. **Subsets.** Draw ``k = n_subsets`` subsets of ``m = max(2, round(beta * n))`` records
   without replacement (``random_state`` seeds only this sampling).
3. **Margins.** In each subset, for every record ``x_i``: the nearest hit ``NH`` (closest other
   record of the same class) and nearest miss ``NM`` (closest record of another class), by L1
   distance. The margin vector ``z_i = |x_i - NM(x_i)| - |x_i - NH(x_i)|`` is rescaled to
   ``||z_i||_2 <= 1``. A record without a hit or a miss gets ``z_i = 0``.
4. **Local learning.** Minimise ``(1/m) sum_i log(1 + exp(-w . z_i)) + (lam/2) ||w||^2`` over
   ``w >= 0`` (Sun, Todorovic & Goodison 2010 keep relevances non-negative).
5. **Ensemble.** Average the ``k`` weight vectors, then project the average onto the L2 ball of
   radius ``1 / lam`` (a no-op for exact minimisers, see below; it makes the bound hold for the
   optimiser's actual output too).
6. **Privacy.** Add Laplace noise to every coordinate through OpenDP
   (:func:`~privgate.core.dp.mechanisms.laplace_values`) at L1 sensitivity ``2 sqrt(d) / lam``.
7. **Select** the ``n_keep`` features of largest noisy weight (post-processing).

Privacy analysis (the calibration, proven)
------------------------------------------
Privacy unit and relation: one record, added or removed (the ledger's relation). The bound
below holds for *any* two tables, so it holds for neighbours in particular.

* Every per-subset minimiser ``w*`` satisfies ``||w*||_2 <= 1 / lam``. The loss term is
  1-Lipschitz in ``w`` with ``||z_i||_2 <= 1``, so the average loss has a gradient ``g`` of norm
  at most 1. The optimality condition over the convex set ``w >= 0`` gives
  ``(g(w*) + lam w*) . (0 - w*) >= 0``, i.e. ``lam ||w*||^2 <= -g(w*) . w* <= ||w*||``.
* Their average lies in the same ball (it is convex), and step 5 forces that for the computed
  output as well. So for *any* two tables the released pre-noise vectors differ by at most
  ``2 / lam`` in L2, hence at most ``2 sqrt(d) / lam`` in L1.
* Laplace noise of scale ``2 sqrt(d) / (lam epsilon)`` per coordinate is then epsilon-DP
  (Dwork et al. 2006); OpenDP samples it exactly and accounts for floating-point rounding.

Why not the per-record bound ``2 / (n lam)`` of Chaudhuri, Monteleoni & Sarwate (2011)? It
assumes each loss term depends on one record only. Here a record is the nearest hit or miss of
others, so adding one record can change *every* margin of its subsets (and the subset sampling
itself): the per-record bound does not hold, and an audit on a small table refutes it (tests).
The honest bound does not shrink with ``n``, so FELP needs a large epsilon to beat a random
ranking; ``benchmarks/BENCHMARKS.md`` says where it does and does not.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize
from scipy.spatial.distance import cdist

from privgate.core.dp._accountant import Charger, check_epsilon
from privgate.core.dp.mechanisms import laplace_values
from privgate.core.exceptions import PolicyError

__all__ = [
    "FELPParameterError",
    "FELPResult",
    "clip_to_unit_norm",
    "felp_select",
    "felp_sensitivity",
    "local_learning_weights",
    "nearest_hit_miss_margins",
    "project_to_ball",
]

#: The step label of FELP's one noise draw (a Laplace vector through OpenDP).
_STEP = "felp weights"


class FELPParameterError(PolicyError, ValueError):
    """A FELP setting or input does not make sense (the message names it).

    A :class:`~core.exceptions.PolicyError` for the CLI and a :class:`ValueError` for callers.
    """


@dataclass(frozen=True)
class FELPResult:
    """What :func:`felp_select` chose, and under which settings.

    Attributes
    ----------
    weights : numpy.ndarray
        The averaged feature weights, shape ``(d,)``; noisy when ``noisy`` is true (and then
        possibly negative).
    selected : list of int
        The ``n_keep`` selected column indices, by decreasing weight.
    noisy : bool
        Whether noise was added (``epsilon`` given).
    epsilon : float or None
        The privacy loss paid, None for the non-private ensemble.
    n_subsets, beta, lam : int, float, float
        The ensemble settings.
    sensitivity : float or None
        The L1 sensitivity the noise was calibrated to, None for the non-private ensemble.
    seconds : float
        Wall time of the selection.
    """

    weights: np.ndarray
    selected: list[int]
    noisy: bool
    epsilon: float | None
    n_subsets: int
    beta: float
    lam: float
    sensitivity: float | None
    seconds: float

    def to_dict(self) -> dict:
        """Return a JSON-ready dict (``weights`` as a list of floats)."""
        return {
            "weights": [float(w) for w in self.weights],
            "selected": [int(j) for j in self.selected],
            "noisy": self.noisy,
            "epsilon": self.epsilon,
            "n_subsets": self.n_subsets,
            "beta": self.beta,
            "lam": self.lam,
            "sensitivity": self.sensitivity,
            "seconds": self.seconds,
        }


# --------------------------------------------------------------------------------------------
# Margins and the local learner
# --------------------------------------------------------------------------------------------


def nearest_hit_miss_margins(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Return the margin vectors ``z_i = |x_i - NM(x_i)| - |x_i - NH(x_i)|``, one row per record.

    The nearest hit ``NH`` is the closest *other* record of the same class and the nearest miss
    ``NM`` the closest record of any other class, by L1 distance on ``X`` as given (unweighted).
    Ties go to the lowest row index. A record without a hit or without a miss gets a zero row.

    Parameters
    ----------
    X : numpy.ndarray
        Features, shape ``(m, d)``, already scaled.
    y : numpy.ndarray
        Class labels, shape ``(m,)``.

    Returns
    -------
    numpy.ndarray
        Float array of shape ``(m, d)``.
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y)
    distances = cdist(X, X, metric="cityblock")
    np.fill_diagonal(distances, np.inf)
    same = y[:, None] == y[None, :]
    hit_distances = np.where(same, distances, np.inf)
    miss_distances = np.where(same, np.inf, distances)
    hits = np.argmin(hit_distances, axis=1)
    misses = np.argmin(miss_distances, axis=1)
    rows = np.arange(len(X))
    valid = np.isfinite(hit_distances[rows, hits]) & np.isfinite(miss_distances[rows, misses])
    margins = np.abs(X - X[misses]) - np.abs(X - X[hits])
    margins[~valid] = 0.0
    return margins


def clip_to_unit_norm(Z: np.ndarray) -> np.ndarray:
    """Scale every row with L2 norm above 1 down to norm 1; leave the others unchanged.

    The sensitivity bound needs ``||z_i||_2 <= 1``. With features in ``[0, 1]`` every margin
    coordinate lies in ``[-1, 1]``, so ``||z_i||_2 <= sqrt(d)``; dividing every margin by
    ``sqrt(d)`` would also do, but would shrink the typical (much shorter) margins for nothing.
    The rescaling is a function of the row alone, so it does not affect the sensitivity argument.
    """
    Z = np.asarray(Z, dtype=float)
    norms = np.linalg.norm(Z, axis=1, keepdims=True)
    return Z / np.maximum(norms, 1.0)


def local_learning_weights(Z: np.ndarray, lam: float) -> np.ndarray:
    """Minimise ``(1/m) sum_i log(1 + exp(-w . z_i)) + (lam/2) ||w||^2`` over ``w >= 0``.

    The objective is ``lam``-strongly convex, so its minimiser is unique; L-BFGS-B with the
    exact gradient and a tight tolerance finds it from ``w = 0``.

    Parameters
    ----------
    Z : numpy.ndarray
        Margin vectors, shape ``(m, d)`` (rows of norm <= 1 for the privacy bound).
    lam : float
        Regularisation strength (> 0).

    Returns
    -------
    numpy.ndarray
        The non-negative weights, shape ``(d,)``.
    """
    Z = np.asarray(Z, dtype=float)
    m, d = Z.shape

    def objective(w: np.ndarray) -> tuple[float, np.ndarray]:
        scores = Z @ w
        loss = np.logaddexp(0.0, -scores).mean() + 0.5 * lam * float(w @ w)
        # d/dw log(1 + exp(-s)) = -sigmoid(-s) * z; sigmoid(-s) = exp(-logaddexp(0, s)).
        pull = np.exp(-np.logaddexp(0.0, scores))
        gradient = -(Z.T @ pull) / m + lam * w
        return float(loss), gradient

    result = minimize(
        objective,
        np.zeros(d),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, None)] * d,
        options={"gtol": 1e-10, "ftol": 1e-15, "maxiter": 1000},
    )
    return np.maximum(result.x, 0.0)


# --------------------------------------------------------------------------------------------
# Sensitivity
# --------------------------------------------------------------------------------------------


def felp_sensitivity(d: int, lam: float) -> float:
    """L1 sensitivity of FELP's projected, averaged weights: ``2 sqrt(d) / lam``.

    Holds for any two tables (see the module's privacy analysis), so for add/remove neighbours.
    """
    return 2.0 * math.sqrt(d) / lam


def project_to_ball(weights: np.ndarray, radius: float) -> np.ndarray:
    """The nearest point of the L2 ball of ``radius`` (a no-op inside it)."""
    norm = float(np.linalg.norm(weights))
    return weights if norm <= radius else weights * (radius / norm)


def _subset_size(n: int, beta: float) -> int:
    """Records per subset: ``round(beta * n)``, at least 2 (a hit needs two records)."""
    return max(2, int(round(beta * n)))


# --------------------------------------------------------------------------------------------
# The public entry point
# --------------------------------------------------------------------------------------------


def felp_select(
    X: np.ndarray,
    y: np.ndarray,
    *,
    n_keep: int,
    epsilon: float | None,
    n_subsets: int = 20,
    beta: float = 0.9,
    lam: float = 1.0,
    bounds: tuple[ArrayLike, ArrayLike],
    random_state: int | None = None,
    accountant: Charger | None = None,
) -> FELPResult:
    """Select ``n_keep`` features by FELP; epsilon-DP unless ``epsilon`` is None.

    Parameters
    ----------
    X : numpy.ndarray
        Numeric features, shape ``(n, d)``; no missing values (impute or drop them first).
    y : numpy.ndarray
        Class labels, shape ``(n,)``, at least two classes.
    n_keep : int
        Number of features to select, ``1 <= n_keep <= d``.
    epsilon : float or None
        Privacy loss of the noisy weights (> 0); None gives the non-private ensemble (no noise,
        nothing charged).
    n_subsets : int, default=20
        Number of subsets ``k`` (>= 1).
    beta : float, default=0.9
        Sampling fraction of each subset, in ``(0, 1]``.
    lam : float, default=1.0
        Regularisation strength (> 0). Larger means less noise and flatter weights.
    bounds : tuple of array-like (lower, upper)
        Declared public per-feature bounds for the ``[0, 1]`` scaling (each a number or one per
        feature); values outside are clipped. Never taken from the data.
    random_state : int or None, default=None
        Seeds the subset sampling **only** (the bound holds for any subsets); the privacy noise
        is OpenDP's and cannot be seeded.
    accountant : Accountant or ParallelGroup, optional
        Pays for the Laplace draw (``step="felp weights"``) *before* it is made; a draw over the
        cap raises and draws nothing. A journaled accountant persists and replays it.

    Returns
    -------
    FELPResult

    Raises
    ------
    FELPParameterError
        If ``n_keep``, ``n_subsets``, ``beta``, ``lam``, ``bounds`` or the data are invalid (a
        NaN, one class only, fewer than 2 records).
    core.dp.PrivacyParameterError
        If ``epsilon`` is not a finite number > 0.
    core.exceptions.BudgetExceededError
        If ``accountant`` cannot afford ``epsilon``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 200)
    >>> X = np.column_stack([rng.random(200), y + 0.1 * rng.random(200), rng.random(200)])
    >>> felp_select(X, y, n_keep=1, epsilon=None, bounds=(0, 1.1), random_state=0).selected
    [1]
    """
    started = time.perf_counter()
    features, labels = _check_data(X, y)
    n, d = features.shape
    _check_settings(n_keep, d, n_subsets, beta, lam)
    if epsilon is not None:
        epsilon = check_epsilon(epsilon, "epsilon")
    scaled = _scale_to_unit(features, bounds)

    rng = np.random.default_rng(random_state)
    m = _subset_size(n, beta)
    total = np.zeros(d)
    for _ in range(n_subsets):
        rows = rng.choice(n, size=m, replace=False)
        margins = clip_to_unit_norm(nearest_hit_miss_margins(scaled[rows], labels[rows]))
        total += local_learning_weights(margins, lam)
    weights = project_to_ball(total / n_subsets, 1.0 / lam)

    sensitivity: float | None = None
    if epsilon is not None:
        sensitivity = felp_sensitivity(d, lam)
        weights = laplace_values(
            weights, epsilon, sensitivity=sensitivity, accountant=accountant, step=_STEP
        )

    order = np.argsort(-weights, kind="stable")
    return FELPResult(
        weights=weights,
        selected=[int(j) for j in order[:n_keep]],
        noisy=epsilon is not None,
        epsilon=epsilon,
        n_subsets=n_subsets,
        beta=float(beta),
        lam=float(lam),
        sensitivity=sensitivity,
        seconds=time.perf_counter() - started,
    )


def _check_data(X: ArrayLike, y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Return ``X`` as a float matrix and ``y`` as an array, or raise naming the problem."""
    try:
        features = np.asarray(X, dtype=float)
    except (TypeError, ValueError) as error:
        raise FELPParameterError(f"X must be numeric; {error}") from error
    labels = np.asarray(y)
    if features.ndim != 2:
        raise FELPParameterError(f"X must be 2-dimensional (n, d); got shape {features.shape}")
    if labels.shape != (features.shape[0],):
        raise FELPParameterError(
            f"y must have one label per row of X ({features.shape[0]}); got shape {labels.shape}"
        )
    if features.shape[0] < 2 or features.shape[1] < 1:
        raise FELPParameterError(
            f"X needs at least 2 records and 1 feature; got shape {features.shape}"
        )
    bad = ~np.isfinite(features)
    if bad.any():
        row, column = (int(i) for i in np.argwhere(bad)[0])
        raise FELPParameterError(
            f"X has a missing or infinite value (column {column}, row {row}); impute or drop "
            "missing values before FELP"
        )
    if len(np.unique(labels)) < 2:
        raise FELPParameterError("y has a single class; nearest misses need at least two")
    return features, labels


def _check_settings(n_keep: int, d: int, n_subsets: int, beta: float, lam: float) -> None:
    """Raise :class:`FELPParameterError` naming the first invalid setting."""
    if isinstance(n_keep, bool) or not isinstance(n_keep, int | np.integer):
        raise FELPParameterError(f"n_keep must be an integer; got {n_keep!r}")
    if not 1 <= n_keep <= d:
        raise FELPParameterError(
            f"n_keep must lie in [1, {d}] (the number of features); got {n_keep}"
        )
    if isinstance(n_subsets, bool) or not isinstance(n_subsets, int | np.integer) or n_subsets < 1:
        raise FELPParameterError(f"n_subsets must be an integer >= 1; got {n_subsets!r}")
    if not _is_real(beta) or not 0 < beta <= 1:
        raise FELPParameterError(f"beta (the sampling fraction) must lie in (0, 1]; got {beta!r}")
    if not _is_real(lam) or not math.isfinite(lam) or lam <= 0:
        raise FELPParameterError(
            f"lam (the regularisation) must be a finite number > 0; got {lam!r}"
        )


def _is_real(value: object) -> bool:
    """True for an int or float (not a bool); NaN passes here and fails the range checks."""
    return not isinstance(value, bool) and isinstance(value, int | float | np.integer | np.floating)


def _scale_to_unit(features: np.ndarray, bounds: tuple[ArrayLike, ArrayLike]) -> np.ndarray:
    """Map every column to ``[0, 1]`` with the declared ``bounds``, clipping outside values.

    A column with equal bounds maps to 0: it cannot separate anything.
    """
    d = features.shape[1]
    try:
        lower, upper = (np.broadcast_to(np.asarray(b, dtype=float), (d,)) for b in bounds)
    except (TypeError, ValueError) as error:
        raise FELPParameterError(
            f"bounds must be (lower, upper), each a number or {d} numbers; {error}"
        ) from error
    if not (np.isfinite(lower).all() and np.isfinite(upper).all()) or (upper < lower).any():
        raise FELPParameterError("bounds must be finite with lower <= upper for every feature")
    span = upper - lower
    safe = np.where(span > 0, span, 1.0)
    scaled = (np.clip(features, lower, upper) - lower) / safe
    scaled[:, span <= 0] = 0.0
    return scaled
