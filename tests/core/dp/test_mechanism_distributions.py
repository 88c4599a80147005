"""Statistical tests of the DP guarantee: on neighbouring inputs, output probabilities stay
within a factor e^epsilon of each other.

Method (the same for every mechanism): draw ``n`` outputs on input ``a`` and ``n`` on its
neighbour ``b``; for every output value (or interval) hit at least ``MIN_HITS`` times in either
sample, estimate ``p_a`` and ``p_b`` and test ``p_a - e^eps * p_b <= 0`` in both directions.

Tolerance: an output is a violation when ``p_a - e^eps p_b`` exceeds ``SIGMAS = 5`` binomial
standard errors, ``sqrt(p_a (1 - p_a) / n + e^(2 eps) p_b (1 - p_b) / n)``. One-sided 5 sigma
is a 3e-7 event, so over the at most ~100 comparisons of a test a false alarm has probability
below 1e-4. In ratio terms the tolerance is about ``5 sqrt((1 + e^eps) / hits)``: 20% of e^eps
at ``MIN_HITS = 2000`` hits and eps = 1, a few percent for the outputs with most mass.

Each test also checks its power on the same draws: claiming half the epsilon must be flagged (an
excess above 5 standard errors), so a test cannot pass merely because its samples are too few to
see anything. For Laplace the pooled tail ratio must also equal e^eps within 5 standard errors:
the noise is not larger than claimed either.

The count and value mechanisms are vectorized: ``n`` copies of the same count in one call give
``n`` independent draws with the per-coordinate noise (the draws are independent by
construction); the selection tests need one call per trial, and the larger one is marked slow.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from privgate.core.dp import discrete_laplace_counts, exponential_select, laplace_values

MIN_HITS = 2_000
SIGMAS = 5.0
N_COUNT_DRAWS = 200_000
#: OpenDP samples floats exactly on a 2^k grid, about 10-20 us a draw: fewer draws suffice.
N_VALUE_DRAWS = 100_000


def largest_excess(hits_a: np.ndarray, hits_b: np.ndarray, n: int, epsilon: float) -> float:
    """The largest z-score of ``p_a - e^eps p_b`` (either direction) over well-sampled outputs.

    Parameters
    ----------
    hits_a, hits_b : numpy.ndarray of int
        How often each output (same index in both) was drawn on input ``a`` and on ``b``.
    n : int
        Trials per input.
    epsilon : float
        The privacy loss claimed.

    Returns
    -------
    float
        Below ``SIGMAS`` when the draws are consistent with epsilon-DP on this pair.
    """
    worst = -math.inf
    bound = math.exp(epsilon)
    for first, second in ((hits_a, hits_b), (hits_b, hits_a)):
        for h1, h2 in zip(first, second, strict=True):
            if max(h1, h2) < MIN_HITS:
                continue
            p1, p2 = h1 / n, h2 / n
            se = math.sqrt(p1 * (1 - p1) / n + bound**2 * p2 * (1 - p2) / n)
            worst = max(worst, (p1 - bound * p2) / se)
    assert worst > -math.inf, "no output was hit often enough to be compared"
    return worst


def histogram_pair(a: np.ndarray, b: np.ndarray, edges: np.ndarray) -> tuple[np.ndarray, ...]:
    """Counts of ``a`` and of ``b`` in the same bins (the outer bins catch the tails)."""
    return np.histogram(a, edges)[0], np.histogram(b, edges)[0]


def assert_tail_ratio_is_e_to_epsilon(a: np.ndarray, b: np.ndarray, cut: float, eps: float):
    """``P[X <= cut | a] / P[X <= cut | b]`` equals e^eps for Laplace noise when
    ``cut <= a < b = a + sensitivity``; the estimate must agree within 5 standard errors."""
    p_a, p_b = np.mean(a <= cut), np.mean(b <= cut)
    se_log = math.sqrt((1 - p_a) / (a.size * p_a) + (1 - p_b) / (b.size * p_b))
    assert abs(math.log(p_a / p_b) - eps) < SIGMAS * se_log


# --------------------------------------------------------------------------- discrete Laplace


@pytest.mark.parametrize(("epsilon", "sensitivity"), [(1.0, 1), (0.5, 2)])
def test_discrete_laplace_count_is_epsilon_dp_on_neighbours(epsilon: float, sensitivity: int):
    count = 40
    a = discrete_laplace_counts([count] * N_COUNT_DRAWS, epsilon, sensitivity=sensitivity)
    b = discrete_laplace_counts(
        [count + sensitivity] * N_COUNT_DRAWS, epsilon, sensitivity=sensitivity
    )
    edges = np.arange(a.min(), max(a.max(), b.max()) + 2) - 0.5  # one bin per integer
    hits_a, hits_b = histogram_pair(a, b, edges)

    assert largest_excess(hits_a, hits_b, N_COUNT_DRAWS, epsilon) < SIGMAS
    # Power: the same draws refute half the privacy loss.
    assert largest_excess(hits_a, hits_b, N_COUNT_DRAWS, epsilon / 2) > SIGMAS
    assert_tail_ratio_is_e_to_epsilon(a, b, count - 1, epsilon)


# --------------------------------------------------------------------------- Laplace


def test_laplace_value_is_epsilon_dp_on_intervals() -> None:
    epsilon, sensitivity, value, n = 1.0, 2.0, 10.0, N_VALUE_DRAWS
    a = laplace_values([value] * n, epsilon, sensitivity=sensitivity)
    b = laplace_values([value + sensitivity] * n, epsilon, sensitivity=sensitivity)
    inner = np.arange(value - 12.0, value + 14.0 + 1e-9, 0.5)
    edges = np.concatenate(([-np.inf], inner, [np.inf]))
    hits_a, hits_b = histogram_pair(a, b, edges)

    assert largest_excess(hits_a, hits_b, n, epsilon) < SIGMAS
    assert largest_excess(hits_a, hits_b, n, epsilon / 2) > SIGMAS
    assert_tail_ratio_is_e_to_epsilon(a, b, value, epsilon)


def test_laplace_vector_with_l1_sensitivity_splits_the_change() -> None:
    """A 2-vector whose neighbour moves both coordinates by 1 (L1 distance 2 = sensitivity):
    the joint output stays within e^eps on a grid of 2-d cells."""
    epsilon, n = 1.0, N_VALUE_DRAWS // 2
    a = laplace_values([0.0, 0.0] * n, epsilon, sensitivity=2.0).reshape(n, 2)
    b = laplace_values([1.0, 1.0] * n, epsilon, sensitivity=2.0).reshape(n, 2)
    edges = np.array([-np.inf, -2.0, -0.5, 0.5, 1.5, 3.0, np.inf])
    hits_a = np.histogram2d(a[:, 0], a[:, 1], [edges, edges])[0].astype(int).ravel()
    hits_b = np.histogram2d(b[:, 0], b[:, 1], [edges, edges])[0].astype(int).ravel()

    assert largest_excess(hits_a, hits_b, n, epsilon) < SIGMAS
    assert largest_excess(hits_a, hits_b, n, epsilon / 2) > SIGMAS


# --------------------------------------------------------------------------- selection


def _selection_hits(scores: list[float], epsilon: float, trials: int, **kwargs) -> np.ndarray:
    picks = [exponential_select(scores, epsilon, sensitivity=1.0, **kwargs) for _ in range(trials)]
    return np.bincount(picks, minlength=len(scores))


@pytest.mark.slow
def test_exponential_select_is_epsilon_dp_on_neighbouring_scores() -> None:
    """Scores (1, 0, 0, 0) and (0, 1, 1, 1) differ by 1 everywhere (sensitivity 1); index 0 is
    about e^0.97 times likelier on the first, close to the e^1 bound."""
    epsilon, trials = 1.0, 60_000
    hits_a = _selection_hits([1.0, 0.0, 0.0, 0.0], epsilon, trials)
    hits_b = _selection_hits([0.0, 1.0, 1.0, 1.0], epsilon, trials)

    assert largest_excess(hits_a, hits_b, trials, epsilon) < SIGMAS
    assert largest_excess(hits_a, hits_b, trials, epsilon / 2) > SIGMAS


def test_monotonic_exponential_select_is_epsilon_dp_on_monotone_neighbours() -> None:
    """With ``monotonic=True`` the noise is halved; neighbours whose scores all move up
    (0, 0, 0) -> (1, 1, 0) must still stay within e^eps, and half of it must be refuted."""
    epsilon, trials = 1.0, 30_000
    hits_a = _selection_hits([0.0, 0.0, 0.0], epsilon, trials, monotonic=True)
    hits_b = _selection_hits([1.0, 1.0, 0.0], epsilon, trials, monotonic=True)

    assert largest_excess(hits_a, hits_b, trials, epsilon) < SIGMAS
    assert largest_excess(hits_a, hits_b, trials, epsilon / 2) > SIGMAS


# --------------------------------------------------------------------------- the checker itself


def test_checker_flags_a_mechanism_with_too_little_noise() -> None:
    """The check must be able to fail: discrete Laplace noise calibrated for epsilon = 2 on a
    count, claimed as epsilon = 1, is refuted by the checker."""
    n = N_COUNT_DRAWS // 4
    a = discrete_laplace_counts([0] * n, 2.0)
    b = discrete_laplace_counts([1] * n, 2.0)
    edges = np.arange(min(a.min(), b.min()), max(a.max(), b.max()) + 2) - 0.5
    hits_a, hits_b = histogram_pair(a, b, edges)
    assert largest_excess(hits_a, hits_b, n, 1.0) > SIGMAS
