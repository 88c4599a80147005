"""Differentially private noise mechanisms: every draw comes from OpenDP.

Why OpenDP and never ``numpy.random``: textbook samplers on floating-point numbers leak. Mironov
(CCS 2012) showed that the low bits of ``value + numpy_laplace(scale)`` reveal ``value``, so a
mechanism that is epsilon-DP on paper is not DP as implemented. OpenDP samples exactly (discrete
Laplace/Gaussian on integers, and on a fine 2^k grid for floats, from a cryptographic source) and
each measurement carries a privacy map, proven in its documentation, from the input distance to
the privacy loss. These functions build the measurement, read the cost back from that map,
charge it to the :class:`~privgate.core.dp.Accountant` *before* drawing, then draw.

Neighbouring datasets differ by adding or removing one record. ``sensitivity`` is how far such a
change can move the mechanism's input, in the metric each mechanism names.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import lru_cache, partial
from typing import Any

import numpy as np

from privgate.core.dp import _opendp as dp
from privgate.core.dp._accountant import (
    Charger,
    PrivacyParameterError,
    Spend,
    check_delta,
    check_epsilon,
    check_sensitivity,
)

dp.enable_features("contrib")

#: How many times a noise scale is widened by a relative 2^-50 until OpenDP's privacy map, which
#: rounds conservatively, reports a cost within the requested epsilon.
_MAX_SCALE_NUDGES = 64


def discrete_laplace_counts(
    counts: Sequence[int],
    epsilon: float,
    *,
    sensitivity: int = 1,
    accountant: Charger | None = None,
    step: str = "",
) -> np.ndarray:
    """Release integer counts with discrete Laplace (two-sided geometric) noise.

    The counts form a histogram over *disjoint* bins: adding or removing one record changes one
    bin by at most ``sensitivity``, so the whole vector has L1 sensitivity ``sensitivity`` and
    costs ``epsilon`` once (pure DP, delta = 0). Each count receives independent noise with
    ``P[noise = z]`` proportional to ``exp(-|z| / scale)``, ``scale = sensitivity / epsilon``
    (Ghosh, Roughgarden & Sundararajan 2012), sampled exactly on 64-bit integers by
    ``opendp.measurements.make_laplace``. Outputs can be negative; clamping or rounding them
    afterwards is post-processing and costs nothing.

    Parameters
    ----------
    counts : sequence of int
        The exact counts, one per disjoint bin (integer dtype or whole-valued floats).
    epsilon : float
        The privacy loss to spend (> 0).
    sensitivity : int, default=1
        The L1 sensitivity of the vector: how many counts in total one record can change.
    accountant : Accountant or ParallelGroup, optional
        Charged with the (epsilon, 0) that OpenDP's privacy map reports, before the draw.
    step : str, default=""
        What this release pays for, recorded in the accountant.

    Returns
    -------
    numpy.ndarray of int64
        The noisy counts, in the order given.

    Raises
    ------
    PrivacyParameterError
        If ``epsilon`` or ``sensitivity`` is invalid, or a count is not a whole number.
    BudgetExceededError
        If the accountant's cap would be overrun (nothing is drawn).
    """
    epsilon = check_epsilon(epsilon)
    if isinstance(sensitivity, bool) or not isinstance(sensitivity, int | np.integer):
        raise PrivacyParameterError(
            f"sensitivity of discrete_laplace_counts must be a positive integer; "
            f"got {sensitivity!r}"
        )
    sensitivity = int(sensitivity)
    if sensitivity < 1:
        raise PrivacyParameterError(
            f"sensitivity of discrete_laplace_counts must be a positive integer; got {sensitivity}"
        )
    exact = _as_int_vector(counts)
    measurement, spent, scale = _pure_measurement("discrete_laplace", epsilon, sensitivity)
    spend = Spend("discrete_laplace", spent, 0.0, sensitivity, step, scale)
    noisy = _draw(accountant, spend, lambda: measurement([int(v) for v in exact]), INT_VECTOR)
    return np.asarray(noisy, dtype=np.int64)


def laplace_values(
    values: Sequence[float],
    epsilon: float,
    *,
    sensitivity: float,
    accountant: Charger | None = None,
    step: str = "",
) -> np.ndarray:
    """Release real values with Laplace noise of scale ``sensitivity / epsilon``.

    Pure epsilon-DP (delta = 0) for a vector whose L1 sensitivity (the sum over coordinates of
    how far one added or removed record can move them) is ``sensitivity`` (Dwork et al. 2006).
    OpenDP draws the noise exactly on a 2^k grid (discretized Laplace) so that floating-point
    rounding cannot leak the input; its privacy map accounts for that rounding.

    Parameters
    ----------
    values : sequence of float
        The exact values (finite).
    epsilon : float
        The privacy loss to spend (> 0).
    sensitivity : float
        The L1 sensitivity of the whole vector (> 0).
    accountant : Accountant or ParallelGroup, optional
        Charged with the (epsilon, 0) that OpenDP's privacy map reports, before the draw.
    step : str, default=""
        What this release pays for, recorded in the accountant.

    Returns
    -------
    numpy.ndarray of float64
        The noisy values.

    Raises
    ------
    PrivacyParameterError
        If ``epsilon`` or ``sensitivity`` is invalid or a value is not finite.
    BudgetExceededError
        If the accountant's cap would be overrun (nothing is drawn).
    """
    epsilon = check_epsilon(epsilon)
    sensitivity = check_sensitivity(sensitivity)
    exact = _as_float_vector(values, "values")
    measurement, spent, scale = _pure_measurement("laplace", epsilon, sensitivity)
    spend = Spend("laplace", spent, 0.0, sensitivity, step, scale)
    noisy = _draw(accountant, spend, lambda: measurement(exact.tolist()), FLOAT_VECTOR)
    return np.asarray(noisy, dtype=np.float64)


def gaussian_values(
    values: Sequence[float],
    epsilon: float,
    delta: float,
    *,
    sensitivity: float,
    accountant: Charger | None = None,
    step: str = "",
) -> np.ndarray:
    """Release real values with Gaussian noise calibrated to (epsilon, delta)-DP.

    ``sensitivity`` is the L2 sensitivity of the vector (add/remove one record). The Gaussian
    mechanism is rho-zCDP with ``rho = (sensitivity / scale)^2 / 2`` (Bun & Steinke 2016);
    OpenDP converts that bound to (epsilon, delta) (Canonne, Kamath & Steinke 2020) and
    ``opendp.binary_search_param`` finds the smallest scale whose cost at ``delta`` is within
    ``epsilon``. Unlike the classic ``sqrt(2 ln(1.25/delta))`` calibration, this is valid for
    any epsilon, including epsilon > 1, and it needs less noise; going through zCDP costs about
    5-10% more noise than the exact analytic Gaussian calibration (Balle & Wang 2018).

    Parameters
    ----------
    values : sequence of float
        The exact values (finite).
    epsilon : float
        The privacy loss to spend (> 0).
    delta : float
        The failure probability to spend (``0 < delta < 1``).
    sensitivity : float
        The L2 sensitivity of the whole vector (> 0).
    accountant : Accountant or ParallelGroup, optional
        Charged with the (epsilon, delta) that OpenDP's privacy map reports, before the draw.
    step : str, default=""
        What this release pays for, recorded in the accountant.

    Returns
    -------
    numpy.ndarray of float64
        The noisy values.

    Raises
    ------
    PrivacyParameterError
        If ``epsilon``, ``delta`` or ``sensitivity`` is invalid or a value is not finite.
    BudgetExceededError
        If the accountant's cap would be overrun (nothing is drawn).
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    sensitivity = check_sensitivity(sensitivity)
    exact = _as_float_vector(values, "values")
    scale = _gaussian_scale(epsilon, delta, sensitivity)
    measurement = _gaussian_measurement(scale, delta)
    spent_epsilon, spent_delta = measurement.map(sensitivity)
    spend = Spend("gaussian", float(spent_epsilon), float(spent_delta), sensitivity, step, scale)
    noisy = _draw(accountant, spend, lambda: measurement(exact.tolist()), FLOAT_VECTOR)
    return np.asarray(noisy, dtype=np.float64)


def exponential_select(
    scores: Sequence[float],
    epsilon: float,
    *,
    sensitivity: float,
    monotonic: bool = False,
    accountant: Charger | None = None,
    step: str = "",
) -> int:
    """Select an index privately, favouring high scores (exponential mechanism as noisy max).

    ``sensitivity`` bounds how much any single score can change when one record is added or
    removed (the L-infinity distance between neighbouring score vectors). The selection is pure
    epsilon-DP, like the exponential mechanism (McSherry & Talwar 2007) with utility
    ``epsilon / (2 * sensitivity)``; ``monotonic=True`` (all scores move in the same direction,
    as counts do) halves the cost, so the same epsilon buys half the noise.

    OpenDP 0.16 implements pure-DP report-noisy-max (``make_noisy_max`` with ``MaxDivergence``)
    with *exponential* noise, which is the permute-and-flip mechanism (McKenna & Sheldon 2020):
    the same epsilon as the Gumbel-noise exponential mechanism, and never a worse expected
    score. (OpenDP's Gumbel variant is accounted only in zCDP, which this pure-DP accountant
    cannot charge exactly.)

    Parameters
    ----------
    scores : sequence of float
        One finite score per candidate; higher is more likely to be chosen.
    epsilon : float
        The privacy loss to spend (> 0).
    sensitivity : float
        The largest change of any score between neighbouring datasets (> 0).
    monotonic : bool, default=False
        Declare that between neighbours all scores change in the same direction.
    accountant : Accountant or ParallelGroup, optional
        Charged with the (epsilon, 0) that OpenDP's privacy map reports, before the draw.
    step : str, default=""
        What this selection pays for, recorded in the accountant.

    Returns
    -------
    int
        The index of the chosen candidate.

    Raises
    ------
    PrivacyParameterError
        If ``scores`` is empty or not finite, or ``epsilon``/``sensitivity`` is invalid.
    BudgetExceededError
        If the accountant's cap would be overrun (nothing is drawn).
    """
    epsilon = check_epsilon(epsilon)
    sensitivity = check_sensitivity(sensitivity)
    exact = _as_float_vector(scores, "scores")
    if exact.size == 0:
        raise PrivacyParameterError("exponential_select needs at least one score; got none")
    kind = "monotonic_noisy_max" if monotonic else "noisy_max"
    measurement, spent, scale = _pure_measurement(kind, epsilon, sensitivity)
    spend = Spend("exponential", spent, 0.0, sensitivity, step, scale)
    return int(_draw(accountant, spend, lambda: measurement(exact.tolist()), INDEX))


@lru_cache(maxsize=256)
def _pure_measurement(
    kind: str, epsilon: float, sensitivity: float
) -> tuple[dp.Measurement, float, float]:
    """Build the pure-DP measurement ``kind`` for (``epsilon``, ``sensitivity``).

    Returns ``(measurement, epsilon spent, scale)``. Cached: a measurement is immutable and
    data-independent, and algorithms call the same mechanism many times (one selection per
    round, one count per node), so the build and scale fit run once per setting.
    """
    float_vector = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    if kind == "discrete_laplace":
        space = (dp.vector_domain(dp.atom_domain(T="i64")), dp.l1_distance(T="i64"))
        d_in, factor = int(sensitivity), 1.0
        make = partial(dp.m.make_laplace, *space)
    elif kind == "laplace":
        space = (float_vector, dp.l1_distance(T=float))
        d_in, factor = sensitivity, 1.0
        make = partial(dp.m.make_laplace, *space)
    else:
        monotonic = kind == "monotonic_noisy_max"
        space = (float_vector, dp.linf_distance(T=float, monotonic=monotonic))
        d_in, factor = sensitivity, 1.0 if monotonic else 2.0
        make = partial(dp.m.make_noisy_max, *space, dp.max_divergence())
    return _fit_pure_scale(make, d_in, epsilon, factor * sensitivity / epsilon)


def _fit_pure_scale(
    make: Callable[[float], dp.Measurement], d_in: float, epsilon: float, scale: float
) -> tuple[dp.Measurement, float, float]:
    """Return ``(measurement, epsilon spent, scale)`` for the smallest scale near ``scale``
    whose privacy map at ``d_in`` is within ``epsilon``.

    The analytic scale is tried first; OpenDP's map rounds up, so the scale is widened by a
    relative 2^-50 at a time, falling back to ``opendp.binary_search_param``.
    """
    for _ in range(_MAX_SCALE_NUDGES):
        measurement = make(scale)
        spent = float(measurement.map(d_in))
        if spent <= epsilon:
            return measurement, spent, scale
        scale *= 1 + 2.0**-50
    scale = float(dp.binary_search_param(make, d_in=d_in, d_out=epsilon))
    measurement = make(scale)
    return measurement, float(measurement.map(d_in)), scale


def _gaussian_measurement(scale: float, delta: float) -> dp.Measurement:
    """The vector Gaussian mechanism at ``scale``, its zCDP cost read as (epsilon, ``delta``)."""
    space = (dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float))
    zcdp = dp.m.make_gaussian(*space, scale=scale)
    return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(zcdp), delta=delta)


@lru_cache(maxsize=256)
def _gaussian_scale(epsilon: float, delta: float, sensitivity: float) -> float:
    """Smallest Gaussian scale that is (epsilon, delta)-DP at L2 sensitivity ``sensitivity``.

    Cached: the binary search builds ~60 measurements, and algorithms reuse a few settings.
    """
    return float(
        dp.binary_search_param(
            lambda s: _gaussian_measurement(s, delta),
            d_in=sensitivity,
            d_out=(epsilon, delta),
            T=float,
        )
    )


class _JSONCodec:
    """A drawn value as JSON text, read back with a conversion (see :class:`Codec`)."""

    def __init__(self, convert: Callable[[Any], Any]) -> None:
        self._convert = convert

    def encode(self, value: Any) -> str:
        return json.dumps(self._convert(value))

    def decode(self, text: str) -> Any:
        return self._convert(json.loads(text))


def _ints(values: Any) -> list[int]:
    return [int(v) for v in values]


def _floats(values: Any) -> list[float]:
    # repr of a float round-trips through JSON exactly.
    return [float(v) for v in values]


#: Codecs of the values the mechanisms draw: a selected index, integer and real vectors.
INDEX = _JSONCodec(int)
INT_VECTOR = _JSONCodec(_ints)
FLOAT_VECTOR = _JSONCodec(_floats)


def _draw(
    accountant: Charger | None, spend: Spend, sample: Callable[[], Any], codec: _JSONCodec
) -> Any:
    """Draw through the accountant (checked before sampling; journaled if it journals), or
    draw directly when there is no accountant."""
    if accountant is None:
        return sample()
    return accountant.draw(spend, sample, codec)


def _as_int_vector(counts: Sequence[int]) -> np.ndarray:
    """Return ``counts`` as a 1-d int64 array, or raise naming the first non-whole entry."""
    array = np.asarray(counts)
    if array.ndim != 1:
        raise PrivacyParameterError(f"counts must be one-dimensional; got shape {array.shape}")
    if array.size == 0:
        return array.astype(np.int64)
    if array.dtype.kind in "iu":
        return array.astype(np.int64)
    if array.dtype.kind == "f":
        bad = ~np.isfinite(array) | (array != np.round(array))
        if not bad.any():
            return array.astype(np.int64)
        index = int(np.flatnonzero(bad)[0])
        value = float(array[index])
        raise PrivacyParameterError(f"counts must be whole numbers; counts[{index}] = {value!r}")
    raise PrivacyParameterError(f"counts must be integers; got dtype {array.dtype}")


def _as_float_vector(values: Sequence[float], name: str) -> np.ndarray:
    """Return ``values`` as a 1-d float64 array, or raise naming the first non-finite entry."""
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise PrivacyParameterError(f"{name} must be numbers: {error}") from error
    if array.ndim != 1:
        raise PrivacyParameterError(f"{name} must be one-dimensional; got shape {array.shape}")
    bad = ~np.isfinite(array)
    if bad.any():
        index = int(np.flatnonzero(bad)[0])
        value = float(array[index])
        raise PrivacyParameterError(f"{name} must be finite; {name}[{index}] = {value!r}")
    return array
