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


def test_every_marginal_up_to_three_columns_matches_mbi(model) -> None:
    reference = mbi.MarkovRandomField(
        potentials=model.potentials, marginals=model.marginals, total=model.total
    )
    queries = [q for r in (1, 2, 3) for q in itertools.combinations(SIZES, r)]
    for query in queries:
        ours = project(model, query)
        theirs = np.asarray(reference.project(query).values)
        assert ours.shape == theirs.shape, query
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-8, err_msg=str(query))
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
