"""OpenDP's noise-scale searches inside MST and AIM, found from the map's closed form instead.

Why: OpenDP 0.16's synthesizers find each noise scale with ``binary_search_param`` /
``binary_search_chain``, which bisect down to one ulp and rebuild the measurement for every
check: about 630 builds per search, each compiling a Polars plan per marginal. Those searches
were 45 of the 67 CPU s of ``tests/core/dp/test_synthetic_mst_fidelity.py`` (the one-way
marginals' scale when the measurement is built, MST's measured pairs' scale when it runs) and
most of every MST/AIM release's start (``benchmarks/BENCHMARKS.md``, issue 15, dp21 and dp22).

What is replaced, and only inside :func:`routed` (a context variable, so nothing changes for
any other caller of OpenDP in the process): the searches OpenDP's ``opendp.extras.mbi`` makes
for a float noise scale, namely ``_make_oneway_marginals`` (the one-way marginals' discrete
Gaussian), MST's tree selections (report-noisy-max) and measured pairs (discrete Gaussian),
AIM's selections and measurements. OpenDP offers no hook for them, so the names those modules
look up (``binary_search_param`` in ``_table``, ``binary_search_chain`` in ``_mst`` and
``_aim``) are replaced once by dispatchers that call OpenDP's own function outside
:func:`routed`, or when the module no longer holds OpenDP's function (another OpenDP version:
then nothing is replaced and OpenDP's searches run, slower and just as private).

**The argument.** Privacy unit and sensitivities are OpenDP's, never ours: each searched chain is
a stable transformation (the marginals' or the scores' sensitivity ``Δ``, derived by OpenDP from
the input metric at ``d_in``) followed by noise of scale ``s`` (or ``s / weight``), or a
composition of such. OpenDP's zero-concentrated maps of those noises are
``ρ = (Δ / s)² / 2`` for the (discrete) Gaussian (``rust/src/measurements/noise/distribution/
gaussian/mod.rs``) and ``ρ = (Δ' / s)² / 8`` for report-noisy-max (``noisy_top_k/mod.rs``,
``Δ' = 2Δ`` unless monotonic), and composition adds them. So, in exact arithmetic, the whole
map is ``ρ(s) = ρ(1) / s²``: :func:`_smallest_scale` reads ``ρ(1)`` from OpenDP's own map of
the chain built at ``s = 1`` (no sensitivity is assumed here) and solves
``s = sqrt(ρ(1) / d_out)``. That surrogate only proposes. OpenDP decides: the chain is built at
the proposal and kept only if OpenDP's ``check(d_in, d_out)`` accepts it (refused: the next
float up, never down) **and** refuses the float just below it. A monotone predicate accepted at
``s`` and refused just below ``s`` has its boundary at ``s``: that is exactly the scale OpenDP's
bisection returns (the smallest float its map accepts), found with three or four builds instead
of ~630. Whenever anything else happens (another measure than zCDP, a map that raises, a
proposal accepted one float lower, or none accepted within :data:`_STEPS`), OpenDP's own search
runs. The measurement returned is OpenDP's, built at that scale; its noise is drawn by OpenDP,
and what a release is charged remains OpenDP's privacy map of the whole measurement.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

__all__ = ["install", "routed"]

#: Floats tried upwards from the closed-form proposal before OpenDP's own search is used.
_STEPS = 16

_ROUTED: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "privgate_routed_scale_searches", default=False
)
_INSTALL_LOCK = threading.Lock()
_installed: list[str] = []


def _smallest_scale(make_chain: Callable[[float], Any], d_in: Any, d_out: Any):
    """``(scale, measurement)``: the smallest float scale OpenDP's map of ``make_chain(scale)``
    accepts at ``(d_in, d_out)`` and the measurement built at it, or None when the closed form
    does not apply (the caller then runs OpenDP's own search). See the module's argument."""
    import opendp.prelude as dp
    from opendp.mod import OpenDPException

    if not (type(d_out) is float or isinstance(d_out, np.floating)):
        return None
    d_out = float(d_out)
    if not (d_out > 0 and math.isfinite(d_out)):
        return None
    try:
        at_one = make_chain(1.0)
        if at_one.output_measure != dp.zero_concentrated_divergence():
            return None
        rho_at_one = float(at_one.map(d_in))
        if not (rho_at_one > 0 and math.isfinite(rho_at_one)):
            return None
        scale = math.sqrt(rho_at_one / d_out)
        for _ in range(_STEPS):
            measurement = make_chain(scale)
            if measurement.check(d_in, d_out):
                below = float(np.nextafter(scale, -np.inf))
                if make_chain(below).check(d_in, d_out):
                    return None  # the proposal overshot: not the smallest scale
                return scale, measurement
            scale = float(np.nextafter(scale, np.inf))
    except (OpenDPException, ValueError, TypeError, ArithmeticError):
        return None
    return None


def _param_dispatcher(original: Callable) -> Callable:
    """``binary_search_param`` as OpenDP's mbi calls it: routed, or OpenDP's own."""

    def binary_search_param(make_chain, d_in, d_out, bounds=(None, None), T=None):
        if _ROUTED.get() and bounds in (None, (None, None)) and T in (None, float):
            found = _smallest_scale(make_chain, d_in, d_out)
            if found is not None:
                return found[0]
        return original(make_chain, d_in, d_out, bounds, T)

    binary_search_param.__wrapped__ = original  # type: ignore[attr-defined]
    return binary_search_param


def _chain_dispatcher(original: Callable) -> Callable:
    """``binary_search_chain`` as OpenDP's mbi calls it: routed (the checked measurement is
    returned as built), or OpenDP's own."""

    def binary_search_chain(make_chain, d_in, d_out, bounds=(None, None), T=None):
        if _ROUTED.get() and bounds in (None, (None, None)) and T in (None, float):
            found = _smallest_scale(make_chain, d_in, d_out)
            if found is not None:
                return found[1]
        return original(make_chain, d_in, d_out, bounds, T)

    binary_search_chain.__wrapped__ = original  # type: ignore[attr-defined]
    return binary_search_chain


def install() -> list[str]:
    """Put the dispatchers in OpenDP's mbi modules (once); return the names replaced.

    A name is replaced only while it still is OpenDP's own ``opendp.mod`` function, so another
    OpenDP version that moved or changed it keeps its own search (``tests/core/dp/
    test_scale_search.py`` fails on the pinned version if nothing was replaced).
    """
    import opendp.extras.mbi._aim as aim  # OpenDP has no public hook for these searches
    import opendp.extras.mbi._mst as mst
    import opendp.extras.mbi._table as table
    import opendp.mod as mod

    with _INSTALL_LOCK:
        if _installed:
            return list(_installed)
        targets = [
            (table, "binary_search_param", mod.binary_search_param, _param_dispatcher),
            (mst, "binary_search_chain", mod.binary_search_chain, _chain_dispatcher),
            (aim, "binary_search_chain", mod.binary_search_chain, _chain_dispatcher),
        ]
        for module, name, original, dispatcher in targets:
            if getattr(module, name, None) is original:
                setattr(module, name, dispatcher(original))
                _installed.append(f"{module.__name__}.{name}")
        return list(_installed)


@contextlib.contextmanager
def routed() -> Iterator[None]:
    """Within: OpenDP's mbi scale searches in this context use :func:`_smallest_scale`."""
    install()
    token = _ROUTED.set(True)
    try:
        yield
    finally:
        _ROUTED.reset(token)
