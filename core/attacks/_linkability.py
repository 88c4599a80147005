"""The linkability attack (Anonymeter's ``LinkabilityEvaluator``, Giomi et al. 2023, §3.2).

The attacker holds two datasets about the same people, each with some of the release's columns
(``aux_cols[0]`` and ``aux_cols[1]``), and wants to know which records belong together. For a
target record split vertically in two, the attacker looks up each half's nearest released
records (Gower-like distance over that half's columns, :class:`ReleaseSpace`); the target is
*linked* when the two halves share one of their ``n_neighbors`` nearest released records. Run on
targets drawn from the released records and from the held-out control records; the baseline
links random released records.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from privgate.core.attacks._confidence import AttackOutcome
from privgate.core.attacks._space import ReleaseSpace

__all__ = ["count_links", "linkability_attack"]


def count_links(idx_0: np.ndarray, idx_1: np.ndarray, n_neighbors: int) -> int:
    """Targets whose two halves share one of their first ``n_neighbors`` neighbours."""
    k = min(n_neighbors, idx_0.shape[1])
    pairs = zip(idx_0[:, :k].tolist(), idx_1[:, :k].tolist(), strict=True)
    return sum(1 for a, b in pairs if set(a) & set(b))


def _attack(space, frame, n_attacks, aux_cols, n_neighbors, rng) -> int:
    rows = rng.choice(len(frame), size=n_attacks, replace=False)
    targets = space.encode(frame.iloc[rows])
    idx_0 = space.nearest(targets, aux_cols[0], n_neighbors, rng)
    idx_1 = space.nearest(targets, aux_cols[1], n_neighbors, rng)
    return count_links(idx_0, idx_1, n_neighbors)


def linkability_attack(
    space: ReleaseSpace,
    ori: pd.DataFrame,
    control: pd.DataFrame | None,
    aux_cols: tuple[Sequence[str], Sequence[str]],
    *,
    n_attacks: int = 500,
    n_neighbors: int = 1,
    rng: np.random.Generator,
    confidence_level: float = 0.95,
) -> tuple[AttackOutcome, dict]:
    """Run the linkability attack; return its counts and what was done.

    ``n_attacks`` is capped at the size of the smaller original split (each target is attacked
    once); the effective number is in the outcome.
    """
    if n_neighbors < 1:
        raise ValueError(f"n_neighbors must be >= 1; got {n_neighbors}")
    if not aux_cols[0] or not aux_cols[1]:
        raise ValueError("linkability needs two non-empty sets of auxiliary columns")
    n = min(n_attacks, len(ori), len(control) if control is not None else len(ori))
    if n < 1:
        raise ValueError("linkability needs at least one target record")
    n_success = _attack(space, ori, n, aux_cols, n_neighbors, rng)
    n_control = None if control is None else _attack(space, control, n, aux_cols, n_neighbors, rng)
    k = min(n_neighbors, space.n_rows)
    baseline_0 = np.array([rng.choice(space.n_rows, size=k, replace=False) for _ in range(n)])
    baseline_1 = np.array([rng.choice(space.n_rows, size=k, replace=False) for _ in range(n)])
    n_baseline = count_links(baseline_0, baseline_1, k)
    details = {
        "aux_cols": [list(aux_cols[0]), list(aux_cols[1])],
        "n_neighbors": n_neighbors,
    }
    return AttackOutcome(n, n_success, n_baseline, n_control, confidence_level), details
