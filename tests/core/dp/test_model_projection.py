"""AIM's model queries in numpy give mbi's own marginals (issue 21: AIM did not finish on Adult).

Every AIM round scores each workload marginal against the model; mbi 1.1.0 computes them in
eager JAX, compiled anew for each round's shapes (470 s per round on Adult at load 13). The
numpy projection must return the same numbers, for marginals the model holds and for the ones
it must eliminate variables for, and the estimator must keep OpenDP's fit.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

mbi = pytest.importorskip("mbi")
jnp = pytest.importorskip("jax.numpy")

from privgate.core.dp._model_projection import numpy_projection_estimator, project  # noqa: E402

SIZES = {"a": 2, "b": 3, "c": 4, "d": 2, "e": 3}

#: mbi computes each marginal in eager JAX, compiled per query: about 40 s in all.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def measurements():
    rng = np.random.default_rng(7)
    cliques = [("a",), ("b",), ("c",), ("d",), ("e",), ("a", "b"), ("b", "c"), ("c", "d", "e")]
    out = []
    for clique in cliques:
        size = int(np.prod([SIZES[c] for c in clique]))
        out.append(mbi.LinearMeasurement(jnp.asarray(rng.random(size) * 50 + 1), clique, 1.0))
    return out


@pytest.fixture(scope="module")
def model(measurements):
    domain = mbi.Domain.fromdict(SIZES)
    return numpy_projection_estimator(domain, measurements)


def _joint(model) -> np.ndarray:
    """The model's distribution over all of SIZES by brute force: exp of the summed log
    potentials over the 144 cells, normalized, times the total (the definition, not an
    algorithm: no elimination order, no message passing)."""
    names = list(SIZES)
    log = np.zeros([SIZES[a] for a in names])
    for factor in model.potentials.arrays.values():
        attrs = list(factor.domain.attributes)
        values = np.transpose(
            np.asarray(factor.values), [attrs.index(a) for a in names if a in attrs]
        )
        log = log + values.reshape([SIZES[a] if a in attrs else 1 for a in names])
    weights = np.exp(log - log.max())
    return weights / weights.sum() * float(model.total)


def test_every_marginal_up_to_three_columns_matches_the_model_and_mbi(model) -> None:
    """All 25 marginals of up to three columns equal the brute-force joint's; mbi's own
    variable elimination (eager JAX, compiled per shape: about 1.5 s a query on a cold cache) is
    compared on a held pair and on a triple no clique covers."""
    joint = _joint(model)
    names = list(SIZES)
    queries = [q for r in (1, 2, 3) for q in itertools.combinations(SIZES, r)]
    for query in queries:
        ours = project(model, query)
        other = tuple(i for i, a in enumerate(names) if a not in query)
        kept = [a for a in names if a in query]
        truth = np.transpose(joint.sum(axis=other), [kept.index(a) for a in query])
        assert ours.shape == truth.shape, query
        np.testing.assert_allclose(ours, truth, rtol=1e-6, atol=1e-8, err_msg=str(query))
    reference = mbi.MarkovRandomField(
        potentials=model.potentials, marginals=model.marginals, total=model.total
    )
    for query in [("b", "a"), ("a", "c", "e")]:
        theirs = np.asarray(reference.project(query).values)
        np.testing.assert_allclose(project(model, query), theirs, rtol=1e-6, atol=1e-8)
    # An unsupported triple really goes through elimination, and its total is the model's.
    assert not any({"a", "c", "e"} <= set(held) for held in model.marginals.cliques)
    assert project(model, ("a", "c", "e")).sum() == pytest.approx(float(model.total))


def test_the_estimator_keeps_opendps_fit_and_answers_project_in_numpy(model, measurements) -> None:
    import opendp.prelude as dp

    dp.enable_features("contrib")
    plain = dp.mbi.mirror_descent(mbi.Domain.fromdict(SIZES), measurements)
    assert isinstance(model, mbi.MarkovRandomField)
    for clique in plain.marginals.cliques:
        np.testing.assert_allclose(
            np.asarray(model.marginals[clique].values),
            np.asarray(plain.marginals[clique].values),
            rtol=1e-9,
        )
    factor = model.project(("e", "a"))
    assert tuple(factor.domain.attributes) == ("e", "a")
    assert isinstance(factor.values, np.ndarray)
    np.testing.assert_allclose(
        factor.values, np.asarray(plain.project(("e", "a")).values), rtol=1e-6
    )


def test_mst_fits_where_it_reads_the_model_and_not_where_nobody_does(measurements) -> None:
    """MST's one-way fit (it scores the pairs) is OpenDP's; its last fit is not made.

    The last fit inside the draw is discarded (the release is fitted from the journaled
    marginals), so :func:`mst_estimator` returns the warm start there: its potentials unchanged,
    its marginals those of the warm start, its total the measurements'. Which call MST makes
    with which marginals, on real records: ``tests/core/dp/test_synthetic.py``.
    """
    from mbi.estimation import minimum_variance_unbiased_total

    from privgate.core.dp._model_projection import mst_estimator, unfitted_model

    domain = mbi.Domain.fromdict(SIZES)
    oneway = [m for m in measurements if len(m.clique) == 1]
    fitted = mst_estimator(domain, oneway)
    reference = numpy_projection_estimator(domain, oneway)
    for clique in reference.marginals.cliques:
        np.testing.assert_allclose(
            np.asarray(fitted.marginals[clique].values),
            np.asarray(reference.marginals[clique].values),
            rtol=1e-9,
        )
    last = mst_estimator(domain, measurements, potentials=fitted.potentials)
    assert float(last.total) == pytest.approx(minimum_variance_unbiased_total(measurements))
    for clique in fitted.potentials.cliques:  # the warm start, not moved by any iteration
        np.testing.assert_array_equal(
            np.asarray(last.potentials[clique].values), np.asarray(fitted.potentials[clique].values)
        )
    assert {tuple(c) for c in last.marginals.cliques} >= {m.clique for m in measurements[5:]}
    uniform = unfitted_model(domain, measurements)
    value = np.asarray(uniform.marginals[("a", "b")].values)
    np.testing.assert_allclose(value, np.full_like(value, float(uniform.total) / value.size))


def test_an_unfitted_model_takes_a_clique_measured_twice(measurements) -> None:
    """AIM measures a clique again when its noisy selection picks it again. The unfitted model
    (the budget rehearsal's) listed every measurement's clique, so ``expand`` raised "Cliques
    must be unique" inside the rehearsal whenever the selection on noise repeated one (the
    intermittent AIM fixture error in CI). It holds each measured clique once."""
    from privgate.core.dp._model_projection import unfitted_model

    domain = mbi.Domain.fromdict(SIZES)
    again = [*measurements, measurements[5], measurements[7]]  # ("a","b"), ("c","d","e")
    for warm in (None, unfitted_model(domain, measurements[:5]).potentials):
        model = unfitted_model(domain, again, potentials=warm)
        once = unfitted_model(domain, measurements, potentials=warm)
        assert list(model.potentials.cliques) == list(once.potentials.cliques)
        assert float(model.total) == pytest.approx(float(once.total), rel=0.2)
        value = np.asarray(model.project(("c", "d")).values)
        np.testing.assert_allclose(value, np.full_like(value, float(model.total) / value.size))


def test_unfitted_models_hold_the_marginals_mbis_message_passing_gives(model) -> None:
    """The marginals an unfitted model holds are computed in numpy (no XLA program per tree):
    the same as ``mbi``'s compiled message passing on the same potentials, for the fitted
    potentials of the fixture's model (cliques of one to three columns) and for a warm start
    expanded to new cliques, and equal to the brute-force joint."""
    from mbi import marginal_oracles

    from privgate.core.dp._model_projection import marginals_in_numpy

    total = float(model.total)
    warm = model.potentials.expand([("a", "e"), ("b", "d")])
    for potentials in (model.potentials, warm):
        ours = marginals_in_numpy(potentials, total)
        theirs = marginal_oracles.message_passing_fast(potentials, total)
        assert list(ours.cliques) == list(potentials.cliques)
        for clique in potentials.cliques:
            assert tuple(ours[clique].domain.attributes) == tuple(clique)
            np.testing.assert_allclose(
                np.asarray(ours[clique].values),
                np.asarray(theirs[clique].values),
                rtol=1e-9,
                atol=1e-9,
                err_msg=str(clique),
            )
    joint = _joint(model)
    names = list(SIZES)
    held = marginals_in_numpy(model.potentials, total)[("c", "d", "e")].values
    np.testing.assert_allclose(
        np.asarray(held), joint.sum(axis=tuple(names.index(a) for a in "ab")), rtol=1e-9
    )
