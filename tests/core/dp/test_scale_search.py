"""OpenDP's MST/AIM noise-scale searches, found from the map's closed form: OpenDP's exact scales.

The routed search (:mod:`privgate.core.dp._scale_search`) must return, for every search OpenDP's
MST and AIM make while a measurement is built and rehearsed, the very scale OpenDP's own
bisection returns (the smallest float OpenDP's privacy map accepts), and must leave OpenDP's own
search in place outside :func:`routed` and wherever the closed form does not hold.
"""

from __future__ import annotations

import opendp.extras.mbi._mst as mst
import opendp.extras.mbi._table as table
import opendp.mod as mod
import opendp.prelude as dp
import pytest

from privgate.core.dp import _scale_search, synthetic
from privgate.core.dp.synthetic import SyntheticConfig

dp.enable_features("contrib")

COLUMNS = ["sex", "salary-class"]
KEYS = {"sex": ["Female", "Male"], "salary-class": ["<=50K", ">50K"]}


def _gaussian(scale: float):
    space = (dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float))
    return dp.m.make_gaussian(*space, scale=scale)


def _laplace(scale: float):
    space = (dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float))
    return dp.m.make_laplace(*space, scale=scale)


def test_the_three_searches_are_replaced_on_the_pinned_opendp() -> None:
    assert set(_scale_search.install()) == {
        "opendp.extras.mbi._table.binary_search_param",
        "opendp.extras.mbi._mst.binary_search_chain",
        "opendp.extras.mbi._aim.binary_search_chain",
    }


def _recorded(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """Every routed search: ``(make_chain, d_in, d_out, found)``; ``found`` None: OpenDP's own
    search ran instead."""
    seen: list[tuple] = []
    closed_form = _scale_search._smallest_scale

    def recorded(make_chain, d_in, d_out):
        found = closed_form(make_chain, d_in, d_out)
        seen.append((make_chain, d_in, d_out, found))
        return found

    monkeypatch.setattr(_scale_search, "_smallest_scale", recorded)
    return seen


@pytest.mark.slow  # builds and rehearses OpenDP MST and AIM measurements (about 5 CPU s)
@pytest.mark.parametrize(
    "config",
    [
        SyntheticConfig("mst", 1.0, 1e-6),
        SyntheticConfig("aim", 1.0, 1e-6, aim_degree=2, aim_rounds=2),
    ],
    ids=["mst", "aim"],
)
def test_every_search_of_a_build_and_rehearsal_is_opendps_own_scale(config, monkeypatch) -> None:
    """Each routed scale is the one OpenDP's bisection finds between bounds just around it
    (OpenDP raises when its boundary is not inside them), and none fell back to OpenDP."""
    seen = _recorded(monkeypatch)
    _, _, epsilon, delta, _ = synthetic._search_budget(COLUMNS, KEYS, config)
    assert epsilon <= config.epsilon and delta <= config.delta
    kinds = {type(d_in).__name__ for _, d_in, _, _ in seen}
    assert len(seen) >= 3 and len(kinds) >= 2  # the one-way search and the marginals' searches
    for make_chain, d_in, d_out, found in seen:
        assert found is not None  # answered by the closed form, not by OpenDP's bisection
        scale, built = found
        assert built.check(d_in, d_out)
        bounds = (scale * (1 - 2.0**-20), scale * (1 + 2.0**-20))
        assert mod.binary_search_param(make_chain, d_in, d_out, bounds=bounds, T=float) == scale


def test_outside_routed_opendps_own_search_runs(monkeypatch) -> None:
    def refuse(*args):
        raise AssertionError("the closed form ran outside routed()")

    _scale_search.install()
    monkeypatch.setattr(_scale_search, "_smallest_scale", refuse)
    own = mod.binary_search_param(_gaussian, d_in=1.0, d_out=0.5, T=float)
    assert table.binary_search_param(_gaussian, 1.0, 0.5, T=float) == own
    assert mst.binary_search_chain(_gaussian, 1.0, 0.5, T=float).map(1.0) == _gaussian(own).map(1.0)


@pytest.mark.parametrize(
    ("make_chain", "d_out", "answered"),
    [
        (_gaussian, 0.5, True),  # rho = 1 / (2 s^2): the closed form holds
        (lambda s: _gaussian(s + 1.0), 0.02, False),  # not rho(1) / s^2: proposal refused
        (lambda s: _gaussian(s * s), 0.03125, False),  # not rho(1) / s^2: proposal too large
        (_laplace, 0.5, False),  # pure DP: not a zCDP map
    ],
    ids=["gaussian", "shifted-scale", "squared-scale", "laplace"],
)
def test_routed_scales_equal_opendps_search_or_fall_back_to_it(make_chain, d_out, answered) -> None:
    own = mod.binary_search_param(make_chain, d_in=1.0, d_out=d_out, T=float)
    assert (_scale_search._smallest_scale(make_chain, 1.0, d_out) is not None) == answered
    with _scale_search.routed():
        assert table.binary_search_param(make_chain, 1.0, d_out, T=float) == own
        chain = mst.binary_search_chain(make_chain, 1.0, d_out, T=float)
    assert chain.map(1.0) == make_chain(own).map(1.0)
