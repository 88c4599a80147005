"""FELP: differentially private feature selection by an ensemble of local learners (issue #6).

Feature selection leaks: the chosen columns say which attributes separate the classes *in this
data*. FELP ranks features by averaged local-learning weights and releases them after output
perturbation, so the ranking costs a known epsilon.

The algorithm, for a table ``X`` (``n`` records, ``d`` features) with class labels ``y``:

1. **Scale.** Every feature is mapped to ``[0, 1]`` (min-max with the data's range, or with
   public ``bounds`` if given, values clipped to them), so distances mix features fairly.
2. **Subsets.** Draw ``k = n_subsets`` subsets of ``m = max(2, round(beta * n))`` records,
   each *without* replacement (with replacement, a record's copy would be its own nearest hit).
   ``random_state`` seeds only this sampling.
3. **Margins.** In each subset, for every record ``x_i``: the nearest hit ``NH`` (closest other
   record of the same class) and nearest miss ``NM`` (closest record of any other class), by L1
   distance in the *plain* scaled space (not the weighted space Sun et al. iterate on: one pass,
   so the margins are a fixed function of the data). The margin vector is
   ``z_i = |x_i - NM(x_i)| - |x_i - NH(x_i)|`` (element-wise), rescaled to ``||z_i||_2 <= 1``
   (see :func:`clip_to_unit_norm`). A record without a hit (alone in its class) or without a
   miss (the subset has one class) gets ``z_i = 0``: it carries no evidence.
4. **Local learning.** Minimise ``(1/m) sum_i log(1 + exp(-w . z_i)) + (lam/2) ||w||^2`` over
   ``w >= 0`` (Sun, Todorovic & Goodison 2010 keep feature weights non-negative; a negative
   weight has no meaning as a relevance). This is the issue's "logistic loss plus ``lam ||w||^2``"
   normalised the way Chaudhuri, Monteleoni & Sarwate (2011) do, which is what makes the
   stated sensitivity ``2/(n lam)`` hold (with the un-normalised sum, it would be ``1/lam``).
5. **Ensemble.** Average the ``k`` weight vectors.
6. **Privacy.** Add ``b`` with density proportional to ``exp(-||b||_2 / scale)``,
   ``scale = sensitivity / epsilon``, drawn by
   :func:`core.dp.unhardened_noise.sample_unhardened_l2_laplace_vector` (**not hardened against
   floating-point attacks**: OpenDP has no sampler for this vector mechanism).
7. **Select** the ``n_keep`` features of largest (noisy) weight.

The sensitivity, and what it assumes
------------------------------------
The issue specifies ``sensitivity = 2 / (n lam)``; ``calibration="issue"`` (the default) uses
exactly that, with ``n`` the size of the **full** data. The bound comes from Chaudhuri et al.
(2011, Cor. 8): for a ``lam``-strongly convex regularised ERM with a 1-Lipschitz loss and
``||z_i|| <= 1``, replacing *one loss term* moves the minimiser (also a minimiser over a convex
set such as ``w >= 0``) by at most ``2 / (m lam)`` in L2, ``m`` the number of terms. Three
honest remarks:

* **Averaging overlapping subsets is fine; the subset size is not.** A record lies in many of
  the ``k`` subsets (each with probability ``beta``), possibly in all of them. Each subset's
  weight vector moves by at most ``2 / (m lam)``, so by the triangle inequality their *average*
  moves by at most ``2 / (m lam)`` too: overlap does not add up (it would for a sum). But each
  learner is normalised by its subset size ``m = beta n``, not ``n``, so the issue's value is
  optimistic by the factor ``1 / beta``. ``calibration="subset"`` uses ``2 / (m lam)``.
* **Margins are not per-record.** A record is the nearest hit or miss of other records, so
  replacing it changes their margins too: up to all ``m`` loss terms in the worst case, which
  gives the bound ``2 m / (m lam) = 2 / lam``. ``calibration="worst_case"`` uses that; it is the
  only one of the three that is a proof for arbitrary data, and it is independent of ``n``.
  Both smaller values follow the issue's (and the FELP paper's) per-record model of margins.
* **Idealised arithmetic and exact optimisation.** The bound is for the exact minimiser;
  L-BFGS-B stops at a tolerance. The min-max range of step 1 is read from the data unless
  ``bounds`` gives public ones, and that step is not accounted for. Neighbouring data sets
  differ by *replacing* one record (bounded DP), as in Chaudhuri et al.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize
from scipy.spatial.distance import cdist

from privgate.core.dp import Charger, Spend
from privgate.core.dp._accountant import check_epsilon
from privgate.core.dp.unhardened_noise import sample_unhardened_l2_laplace_vector
from privgate.core.exceptions import PolicyError

__all__ = [
    "FELP_MECHANISM",
    "FELPParameterError",
    "FELPResult",
    "clip_to_unit_norm",
    "felp_select",
    "felp_sensitivity",
    "local_learning_weights",
    "nearest_hit_miss_margins",
]

#: The mechanism name charged to the accountant.
FELP_MECHANISM = "felp_l2_laplace_vector"
_STEP = "felp weights"

Calibration = Literal["issue", "subset", "worst_case"]
_CALIBRATIONS = ("issue", "subset", "worst_case")


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
        The L2 sensitivity the noise was calibrated to, None for the non-private ensemble.
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


def felp_sensitivity(
    n: int, lam: float, *, beta: float = 1.0, calibration: Calibration = "issue"
) -> float:
    """L2 sensitivity of FELP's averaged weights under ``calibration`` (see the module notes).

    Parameters
    ----------
    n : int
        Number of records in the full data.
    lam : float
        Regularisation strength.
    beta : float, default=1.0
        Sampling fraction; the subset size is ``max(2, round(beta * n))``.
    calibration : {"issue", "subset", "worst_case"}, default="issue"
        ``"issue"``: ``2 / (n lam)`` as issue #6 specifies (``n`` the full data size);
        ``"subset"``: ``2 / (m lam)``, ``m`` the subset size, the per-record bound for each
        learner, kept by averaging; ``"worst_case"``: ``2 / lam``, allowing one record to change
        every margin of its subsets through the nearest hit/miss relation.

    Returns
    -------
    float
    """
    if calibration == "issue":
        return 2.0 / (n * lam)
    if calibration == "subset":
        return 2.0 / (_subset_size(n, beta) * lam)
    if calibration == "worst_case":
        return 2.0 / lam
    raise FELPParameterError(
        f"calibration must be one of {', '.join(map(repr, _CALIBRATIONS))}; got {calibration!r}"
    )


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
    random_state: int | None = None,
    accountant: Charger | None = None,
    calibration: Calibration = "issue",
    bounds: tuple[ArrayLike, ArrayLike] | None = None,
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
    random_state : int or None, default=None
        Seeds the subset sampling **only**; the privacy noise always comes from the operating
        system's randomness and cannot be seeded.
    accountant : Accountant or ParallelGroup, optional
        Charged ``Spend("felp_l2_laplace_vector", epsilon, sensitivity=..., step="felp weights")``
        *before* the noise is drawn; a charge over the cap raises and draws nothing.
    calibration : {"issue", "subset", "worst_case"}, default="issue"
        Which sensitivity to calibrate the noise to (:func:`felp_sensitivity`).
    bounds : tuple of array-like (lower, upper), optional
        Public per-feature bounds for the ``[0, 1]`` scaling; by default the data's min and max
        (a data-dependent step that is not accounted for).

    Returns
    -------
    FELPResult

    Raises
    ------
    FELPParameterError
        If ``n_keep``, ``n_subsets``, ``beta``, ``lam``, ``calibration``, ``bounds`` or the data
        are invalid (a NaN, one class only, fewer than 2 records).
    core.dp.PrivacyParameterError
        If ``epsilon`` is not a finite number > 0.
    core.exceptions.BudgetExceededError
        If ``accountant`` cannot afford ``epsilon``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 200)
    >>> X = np.column_stack([rng.random(200), y + 0.1 * rng.random(200), rng.random(200)])
    >>> felp_select(X, y, n_keep=1, epsilon=None, random_state=0).selected
    [1]
    """
    started = time.perf_counter()
    features, labels = _check_data(X, y)
    n, d = features.shape
    _check_settings(n_keep, d, n_subsets, beta, lam, calibration)
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
    weights = total / n_subsets

    sensitivity: float | None = None
    if epsilon is not None:
        sensitivity = felp_sensitivity(n, lam, beta=beta, calibration=calibration)
        scale = sensitivity / epsilon
        if accountant is not None:
            accountant.charge(
                Spend(
                    mechanism=FELP_MECHANISM,
                    epsilon=epsilon,
                    delta=0.0,
                    sensitivity=sensitivity,
                    step=_STEP,
                    scale=scale,
                )
            )
        weights = weights + sample_unhardened_l2_laplace_vector(d, scale)

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


def _check_settings(
    n_keep: int, d: int, n_subsets: int, beta: float, lam: float, calibration: str
) -> None:
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
    if calibration not in _CALIBRATIONS:
        raise FELPParameterError(
            f"calibration must be one of {', '.join(map(repr, _CALIBRATIONS))}; got {calibration!r}"
        )


def _is_real(value: object) -> bool:
    """True for an int or float (not a bool); NaN passes here and fails the range checks."""
    return not isinstance(value, bool) and isinstance(value, int | float | np.integer | np.floating)


def _scale_to_unit(features: np.ndarray, bounds: tuple[ArrayLike, ArrayLike] | None) -> np.ndarray:
    """Map every column to ``[0, 1]`` with ``bounds`` (clipping) or the data's min and max.

    A constant column (or equal bounds) maps to 0: it cannot separate anything.
    """
    d = features.shape[1]
    if bounds is None:
        lower, upper = features.min(axis=0), features.max(axis=0)
    else:
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
