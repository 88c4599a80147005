"""Marginals of a fitted Private-PGM model computed in numpy, for AIM's per-round scoring.

Why: every AIM round scores every marginal of its workload (129 for the 3-way workload on 9
columns) against the current model, and ``mbi`` 1.1.0 computes each marginal the model does not
hold by variable elimination in eager JAX. Each eager operation is compiled by XLA for its
shapes, and every round adds a clique, so the shapes are new each round: on Adult one round's
129 projections took 470 s the first time and 2.7 s once compiled (2 cores at load 13). AIM at
30 rounds never finished. The same sum-product in numpy needs no compilation.

Privacy: none of this touches the private data. The model is fitted to noisy marginals (DP
outputs); which marginal AIM measures next is chosen by OpenDP's report-noisy-max on scores
that use the model only as a public reference, and OpenDP's privacy map of the measurement
does not depend on the estimator or on how the model is queried (the estimator is OpenDP's
documented extension point, ``Algorithm.estimator``). The numbers are the ones ``mbi``
computes, up to floating-point rounding (``tests/core/dp/test_model_projection.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import chex
import numpy as np

__all__ = [
    "marginals_in_numpy",
    "mst_estimator",
    "numpy_projection_estimator",
    "project",
    "unfitted_model",
    "with_numpy_projection",
]


def _logsumexp(values: np.ndarray, axis: int) -> np.ndarray:
    peak = np.max(values, axis=axis, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.sum(np.exp(values - peak), axis=axis)) + np.squeeze(peak, axis=axis)


def _aligned(attrs: tuple[str, ...], values: np.ndarray, target: tuple[str, ...]) -> np.ndarray:
    """``values`` over ``attrs`` as an array broadcastable over ``target`` (same axis order)."""
    order = [attrs.index(a) for a in target if a in attrs]
    moved = np.transpose(values, order)
    shape = [values.shape[attrs.index(a)] if a in attrs else 1 for a in target]
    return moved.reshape(shape)


def _sum(factors: list[tuple[tuple[str, ...], np.ndarray]]) -> tuple[tuple[str, ...], np.ndarray]:
    """The log-space product of factors: their sum, broadcast over the union of attributes."""
    attrs: tuple[str, ...] = ()
    for names, _ in factors:
        attrs += tuple(a for a in names if a not in attrs)
    total = np.zeros([1] * len(attrs))
    for names, values in factors:
        total = total + _aligned(names, values, attrs)
    return attrs, total


def project(model: Any, clique: Sequence[str]) -> np.ndarray:
    """The model's marginal over ``clique`` (counts summing to ``model.total``), in numpy.

    From the marginals the model holds when one covers ``clique`` (a sum over the other
    axes); else by variable elimination over the log-space potentials in ``mbi``'s greedy
    order, as ``mbi.marginal_oracles.variable_elimination`` does.
    """
    from mbi import junction_tree

    clique = tuple(clique)
    for held in model.marginals.cliques:
        if set(clique) <= set(held):
            values = np.asarray(model.marginals[held].values, dtype=np.float64)
            names = tuple(model.marginals[held].domain.attributes)
            other = tuple(i for i, a in enumerate(names) if a not in clique)
            kept = tuple(a for a in names if a in clique)
            summed = values.sum(axis=other) if other else values
            return np.transpose(summed, [kept.index(a) for a in clique])
    potentials = model.potentials
    factors = {
        i: (tuple(f.domain.attributes), np.asarray(f.values, dtype=np.float64))
        for i, f in enumerate(potentials.arrays.values())
    }
    domain = potentials.active_domain
    cliques = [names for names, _ in factors.values()] + [clique]
    order, _ = junction_tree.greedy_order(domain, cliques, elim=domain.invert(clique))
    k = len(factors)
    for z in order:
        touching = [factors.pop(i) for i in list(factors) if z in factors[i][0]]
        attrs, values = _sum(touching)
        axis = attrs.index(z)
        factors[k] = (attrs[:axis] + attrs[axis + 1 :], _logsumexp(values, axis))
        k += 1
    attrs, values = _sum(list(factors.values()) or [((), np.zeros(()))])
    sizes = [model.domain[a] for a in clique]
    full = np.broadcast_to(_aligned(attrs, values, clique), sizes)
    full = full - _logsumexp(full.reshape(-1), 0)
    return np.exp(full) * float(model.total)


def _model_class():
    from mbi import Factor, MarkovRandomField

    @chex.dataclass(frozen=True, kw_only=False)
    class _Projected(MarkovRandomField):
        """A fitted model whose out-of-model marginals are computed in numpy."""

        def project(self, attrs):  # noqa: D102 - as MarkovRandomField.project
            attrs = (attrs,) if isinstance(attrs, str) else tuple(attrs)
            values = project(self, attrs)
            return Factor(self.domain.project(attrs), values)

    return _Projected


_PROJECTED = None


def with_numpy_projection(model: Any) -> Any:
    """The same fitted model (potentials, marginals, total), answering ``project`` in numpy."""
    global _PROJECTED
    if _PROJECTED is None:
        _PROJECTED = _model_class()
    return _PROJECTED(potentials=model.potentials, marginals=model.marginals, total=model.total)


def numpy_projection_estimator(domain, loss_fn, *, potentials=None):
    """OpenDP's default estimator (``mbi`` mirror descent), returning a numpy-projecting model.

    The fit is exactly ``opendp.extras.mbi.mirror_descent``; only how the fitted model answers
    ``project`` changes (:func:`project`).
    """
    import opendp.prelude as dp

    return with_numpy_projection(dp.mbi.mirror_descent(domain, loss_fn, potentials=potentials))


def unfitted_model(domain, loss_fn, *, potentials=None):
    """A model over the measured cliques that is *not* fitted: the warm start (or uniform) one.

    For measurements whose fitted model nobody reads, so mirror descent's 1,000 iterations (and
    its XLA compilation, new for every set of noisy values: they are constants of the program)
    would be spent for nothing: the budget rehearsal on an empty table
    (:func:`privgate.core.dp.synthetic._runs_at`) and MST's last fit inside the draw
    (:func:`mst_estimator`). What OpenDP measures and charges does not depend on the estimator
    (its documented extension point); only what a model answers does.
    """
    from mbi import CliqueVector, MarkovRandomField
    from mbi.estimation import minimum_variance_unbiased_total

    # Each clique once: AIM measures a clique again when its noisy selection picks it again,
    # and a list holding one twice made ``expand`` raise "Cliques must be unique" in the
    # budget rehearsal, now and then, as the rehearsal's selection is drawn on noise.
    cliques = list(dict.fromkeys(m.clique for m in loss_fn))
    total = minimum_variance_unbiased_total(loss_fn)  # what mirror descent would start from
    if potentials is None:
        potentials = CliqueVector.zeros(domain, cliques)
    if not all(potentials.supports(c) for c in cliques):
        potentials = potentials.expand(cliques)
    marginals = marginals_in_numpy(potentials, total)
    return with_numpy_projection(
        MarkovRandomField(potentials=potentials, marginals=marginals, total=total)
    )


def marginals_in_numpy(potentials: Any, total: float) -> Any:
    """The marginals of ``potentials`` over their own cliques, as ``mbi``'s message passing
    gives them (a ``CliqueVector`` summing to ``total``), computed in numpy by :func:`project`.

    Why: ``mbi.marginal_oracles.message_passing_fast`` is a JAX program compiled for each set
    of cliques, and the cliques of an unfitted model are a new tree every time (the rehearsal's
    tree is chosen on noise alone): 2-12 s of XLA compilation per call on 9 Adult columns, three
    calls per MST release, for models nobody fits. Same numbers up to floating-point rounding
    (``tests/core/dp/test_model_projection.py``).
    """
    from types import SimpleNamespace

    import jax.numpy as jnp
    from mbi import CliqueVector, Factor

    domain = potentials.domain
    # project() eliminates variables over the potentials when no held marginal covers the
    # clique: a model holding none.
    unmarginalized = SimpleNamespace(
        potentials=potentials,
        marginals=SimpleNamespace(cliques=[]),
        domain=domain,
        total=total,
    )
    arrays = {
        clique: Factor(domain.project(clique), jnp.asarray(project(unmarginalized, clique)))
        for clique in potentials.cliques
    }
    return CliqueVector(domain, list(potentials.cliques), arrays)


def mst_estimator(domain, loss_fn, *, potentials=None):
    """MST's estimator: OpenDP's fit where MST reads the model, none where nobody does.

    OpenDP's MST fits twice inside the draw: on the one-way marginals, the model whose
    two-way marginals score the candidate pairs for the tree (:func:`numpy_projection_estimator`:
    OpenDP's fit, queried in numpy), and once more on all of them, a model that
    :func:`privgate.core.dp.synthetic.synthesize` discards: the release is fitted from the
    journaled marginals (``fit_model``), so the first run and a replay fit the same one. That
    second fit is :func:`unfitted_model`. ``tests/core/dp/test_model_projection.py`` pins which
    fit MST asks for when.
    """
    if all(len(m.clique) <= 1 for m in loss_fn):
        return numpy_projection_estimator(domain, loss_fn, potentials=potentials)
    return unfitted_model(domain, loss_fn, potentials=potentials)
