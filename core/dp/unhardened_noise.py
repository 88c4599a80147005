"""The one place where privgate draws differential-privacy noise *outside* OpenDP.

Every other mechanism in :mod:`core.dp` samples through OpenDP, whose samplers work on exact
(arbitrary-precision) arithmetic so that the released floating-point value does not leak the
secret through the pattern of representable numbers (Mironov 2012, "On significance of the least
significant bits for differential privacy"). OpenDP 0.16 has no sampler for the continuous
*L2-Laplace vector* (density proportional to ``exp(-||b||_2 / scale)`` in ``R^d``) that output
perturbation of a strongly convex learner needs (Chaudhuri, Monteleoni & Sarwate 2011, Alg. 1),
so FELP (:mod:`privgate.core.dp.felp`) draws it here with NumPy floating point.

.. warning::

   **NOT HARDENED AGAINST FLOATING-POINT ATTACKS.** The vector is computed with ordinary
   double-precision arithmetic (a Gamma draw times a normalised Gaussian direction). Its
   differential-privacy guarantee holds for the *idealised real-valued* mechanism only; an
   adversary who sees the exact bits of the output may learn more than epsilon allows, as
   Mironov showed for the naive Laplace mechanism. Use it for research and benchmarks, or accept
   the caveat explicitly; it is deliberately kept in this single, loudly named function so that a
   review or an audit finds every such draw with one search.
"""

from __future__ import annotations

import math
import secrets

import numpy as np

__all__ = ["sample_unhardened_l2_laplace_vector"]

#: Bits of operating-system entropy used to seed each draw's generator.
_SEED_BITS = 128


def sample_unhardened_l2_laplace_vector(d: int, scale: float) -> np.ndarray:
    """Draw ``b`` in ``R^d`` with density proportional to ``exp(-||b||_2 / scale)``.

    **UNHARDENED: plain NumPy floating point, not OpenDP.** This is the only function in
    privgate that draws privacy noise outside OpenDP, because OpenDP has no sampler for this
    continuous vector mechanism. It is *not* protected against floating-point attacks (Mironov
    2012) the way the OpenDP-backed mechanisms in :mod:`core.dp` are; see the module docstring.

    The density depends on ``b`` only through its norm, so ``b = r * u`` with a direction ``u``
    uniform on the unit sphere (a standard Gaussian vector divided by its norm) and an
    independent norm ``r`` whose density is proportional to ``r**(d-1) * exp(-r / scale)``
    (the surface of the sphere of radius ``r`` grows like ``r**(d-1)``): a Gamma distribution
    with shape ``d`` and scale ``scale``.

    Each call seeds a fresh generator from the operating system's secure randomness
    (:func:`secrets.randbits`, i.e. ``os.urandom``). It accepts **no seed on purpose**: privacy
    noise that a caller can reproduce is no noise against that caller.

    Parameters
    ----------
    d : int
        Dimension of the vector (>= 1).
    scale : float
        Scale of the Gamma-distributed norm (> 0, finite). For output perturbation with
        L2 sensitivity ``s`` and privacy loss ``epsilon`` it is ``s / epsilon``, e.g.
        ``2 / (n * lam * epsilon)`` for L2-regularised logistic regression.

    Returns
    -------
    numpy.ndarray
        A float64 array of shape ``(d,)``.

    Raises
    ------
    ValueError
        If ``d`` is not a positive integer or ``scale`` is not a finite positive number.
    """
    if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 1:
        raise ValueError(f"d (the noise dimension) must be an integer >= 1; got {d!r}")
    if isinstance(scale, bool) or not isinstance(scale, int | float | np.floating | np.integer):
        raise ValueError(f"scale must be a finite number > 0; got {scale!r}")
    if not math.isfinite(float(scale)) or float(scale) <= 0:
        raise ValueError(f"scale must be a finite number > 0; got {scale!r}")
    rng = np.random.default_rng(secrets.randbits(_SEED_BITS))
    direction = rng.standard_normal(int(d))
    length = float(np.linalg.norm(direction))
    while length == 0.0:  # probability zero in exact arithmetic; redraw rather than divide by 0
        direction = rng.standard_normal(int(d))
        length = float(np.linalg.norm(direction))
    radius = rng.gamma(shape=float(d), scale=float(scale))
    return radius * direction / length
