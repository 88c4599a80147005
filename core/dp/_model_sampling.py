"""Synthetic records from a fitted Private-PGM model (post-processing of the DP marginals).

Why not ``MarkovRandomField.synthetic_data`` of ``mbi`` 1.1.0 (the version ``opendp[mbi]`` 0.16
pins)? Its vectorized sampler has two faults, fixed upstream after that release (mbi commit
a987d84, "Fix two regressions in MarkovRandomField.synthetic_data()", June 2026):

* it decides what a column is conditioned on from the *measured* cliques rather than the
  junction tree's maximal cliques, so a column whose dependence runs through a super-clique
  is generated as if independent;
* its randomized rounding gives each record inside a parent group a rank by row position, the
  same rank for every column generated under that group, so columns that the model makes
  conditionally independent come out rank-aligned: an association the data does not have,
  and the published records do not follow the model they were drawn from.

This module samples the same model by ancestral sampling over the junction tree: the columns
in reverse elimination order, each conditioned on the earlier columns it shares a maximal
clique with (a clique of the triangulated graph, so the model's marginal over them exists),
with randomized rounding inside each parent group and the group's values shuffled with the
seeded generator. Everything here is a function of the fitted model and the seed, both derived
from the journaled DP draw alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["sample_indices"]


def _rounded(weights: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` category indices whose frequencies follow ``weights``, in random order.

    Randomized rounding: each category gets the integer part of its expected count, the
    remaining records go to categories drawn without replacement by their fractional parts.
    """
    weights = np.clip(np.asarray(weights, dtype=float), 0.0, None)
    size = len(weights)
    total = weights.sum()
    if count == 0:
        return np.empty(0, dtype=np.int64)
    if not np.isfinite(total) or total <= 0:
        weights, total = np.ones(size), float(size)  # no mass in the model: uniform
    expected = weights * (count / total)
    whole = np.floor(expected).astype(np.int64)
    extra = count - int(whole.sum())
    if extra > 0:
        fraction = expected - whole
        candidates = np.flatnonzero(fraction > 0)
        if len(candidates) >= extra:
            p = fraction[candidates] / fraction[candidates].sum()
            whole[rng.choice(candidates, extra, replace=False, p=p)] += 1
        else:  # floating-point residue: spread the rest by weight
            whole += rng.multinomial(extra, weights / total)
    values = np.repeat(np.arange(size, dtype=np.int64), whole)
    rng.shuffle(values)
    return values


def sample_indices(model: Any, rows: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """``rows`` synthetic records from ``model`` as category indices per column.

    Parameters
    ----------
    model : mbi.MarkovRandomField
        The fitted graphical model.
    rows : int
        How many records.
    rng : numpy Generator
        The only source of randomness (seeded from the journaled draw by the caller).
    """
    from mbi import junction_tree, marginal_oracles

    domain = model.domain
    tree, elimination = junction_tree.make_junction_tree(domain, [tuple(c) for c in model.cliques])
    maximal = [set(c) for c in tree.nodes]
    potentials = model.potentials.expand(list(tree.nodes))
    marginals = marginal_oracles.message_passing_stable(potentials, model.total)
    data: dict[str, np.ndarray] = {}
    for column in elimination[::-1]:
        near = set().union(*(c for c in maximal if column in c)) - {column}
        parents = tuple(a for a in data if a in near)
        if not parents:
            counts = np.asarray(marginals.project((column,)).datavector(flatten=False))
            data[column] = _rounded(counts, rows, rng)
            continue
        joint = np.asarray(marginals.project(parents + (column,)).datavector(flatten=False))
        keys = np.stack([data[a] for a in parents], axis=-1)
        groups, inverse = np.unique(keys, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        order = np.argsort(inverse, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(np.bincount(inverse, minlength=len(groups)))])
        out = np.empty(rows, dtype=np.int64)
        for g, key in enumerate(groups):
            members = order[bounds[g] : bounds[g + 1]]
            out[members] = _rounded(joint[tuple(key)], len(members), rng)
        data[column] = out
    return data
