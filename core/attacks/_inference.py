"""The attribute-inference attack (Anonymeter's ``InferenceEvaluator``, Giomi et al. 2023, §3.3).

The attacker knows some columns of a target (``aux_cols``) and guesses a ``secret`` column from
the nearest released record. A guess is right when it equals the secret, or, with
``regression=True`` (a numeric secret), lies within 5 % of it relative to the guess (Anonymeter
1.1's default is ``regression=False``: exact). A generalized guess is turned into one value as an
attacker would: one of the original values its region covers, drawn uniformly (a numeric region
covering none: its midpoint). Run on targets from the released records and from the held-out
control records; the baseline guesses the secret of random released records. (anonymeter 1.1.0
re-indexes its baseline guesses onto the targets, which leaves almost all of them missing; here
the baseline is what its documentation describes.)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from privgate.core.attacks._confidence import AttackOutcome
from privgate.core.attacks._space import ReleaseSpace

__all__ = ["inference_attack"]

#: Anonymeter's tolerance for a numeric secret: |guess - secret| / guess <= 5 %.
NUMERIC_TOLERANCE = 0.05


def _correct(space: ReleaseSpace, secret: str, guess_rows, targets, rng, regression) -> int:
    col = space.column(secret)
    cells = col.row_cell[guess_rows]
    truth = targets[secret]
    if col.numeric:
        guess = np.empty(len(cells))
        for i, cell in enumerate(cells):
            lo, hi = col.lo[cell], col.hi[cell]
            if col.point[cell] or col.missing_cell[cell]:
                guess[i] = lo
                continue
            inside = col.values[(col.values >= lo) & (col.values <= hi)]
            if col.hi_open[cell]:
                inside = inside[inside < hi]
            guess[i] = inside[rng.integers(inside.size)] if inside.size else (lo + hi) / 2
        with np.errstate(invalid="ignore", divide="ignore"):
            if regression:
                right = np.abs(guess - truth) / (guess + 1e-12) <= NUMERIC_TOLERANCE
            else:
                right = guess == truth
        return int(np.sum(right | (np.isnan(guess) & np.isnan(truth))))
    right = 0
    for cell, code in zip(cells, truth, strict=True):
        covered = np.flatnonzero(col.padded[cell])
        if covered.size == 0:
            continue
        guess = covered[0] if covered.size == 1 else covered[rng.integers(covered.size)]
        right += int(guess == code)
    return right


def _attack(space, frame, n, aux_cols, secret, rng, naive, regression) -> int:
    rows = rng.choice(len(frame), size=n, replace=False)
    targets = space.encode(frame.iloc[rows])
    if naive:
        guess_rows = rng.choice(space.n_rows, size=n, replace=False)
    else:
        guess_rows = space.nearest(targets, aux_cols, 1, rng)[:, 0]
    return _correct(space, secret, guess_rows, targets, rng, regression)


def inference_attack(
    space: ReleaseSpace,
    ori: pd.DataFrame,
    control: pd.DataFrame | None,
    aux_cols: Sequence[str],
    secret: str,
    *,
    n_attacks: int = 500,
    regression: bool = False,
    rng: np.random.Generator,
    confidence_level: float = 0.95,
) -> tuple[AttackOutcome, dict]:
    """Run the inference attack on one secret column; return its counts and what was done.

    As in anonymeter 1.1, each split is attacked ``min(n_attacks, its size)`` times and the
    baseline ``min(released rows, that)`` times.
    """
    aux_cols = list(aux_cols)
    if secret in aux_cols:
        raise ValueError(f"the secret {secret!r} cannot also be an auxiliary column")
    if not aux_cols:
        raise ValueError("inference needs at least one auxiliary column")
    n_ori = min(n_attacks, len(ori))
    n_baseline_attacks = min(space.n_rows, n_ori)
    n_control_attacks = None if control is None else min(n_attacks, len(control))
    n_baseline = _attack(space, ori, n_baseline_attacks, aux_cols, secret, rng, True, regression)
    n_success = _attack(space, ori, n_ori, aux_cols, secret, rng, False, regression)
    n_control = (
        None
        if control is None
        else _attack(space, control, n_control_attacks, aux_cols, secret, rng, False, regression)
    )
    details = {"secret": secret, "aux_cols": aux_cols, "regression": regression}
    outcome = AttackOutcome(
        n_ori, n_success, n_baseline, n_control, confidence_level,
        n_attacks_baseline=n_baseline_attacks, n_attacks_control=n_control_attacks,
    )  # fmt: skip
    return outcome, details
