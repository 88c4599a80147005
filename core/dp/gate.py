"""The privacy gate for a differentially private release: the ledger, not k, is the criterion.

Like the k-anonymity gate, it trusts nothing the algorithm reported. It re-reads the written
file (text cells, as a recipient sees them) and checks its shape: exactly the expected columns,
no direct identifier, every noisy count a non-negative integer. Then it reads the ledger back:
this release must have recorded spends (noise that was never accounted for is blocked), this
run's spend must fit the policy's per-release ε/δ, and the dataset's lifetime account must not be
overdrawn. The measurements (spend, remaining budget) go into the manifest.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from privgate.core.dp._accountant import ROUNDING_TOLERANCE
from privgate.core.dp.ledger import BudgetLedger
from privgate.core.exceptions import LedgerError, VerificationError
from privgate.core.gate import GateDecision, check_columns, read_release

__all__ = ["verify_dp_release"]


def _over(value: float, cap: float) -> bool:
    return value > cap * (1 + ROUNDING_TOLERANCE) + 1e-15


def verify_dp_release(
    path: str | Path,
    *,
    expected_columns: Sequence[str],
    forbidden_columns: Sequence[str],
    count_column: str,
    ledger: BudgetLedger,
    dataset: str,
    release_id: str,
    run_id: str,
    epsilon: float,
    delta: float,
) -> GateDecision:
    """Verify the written DP release and the ledger entries that paid for it."""
    reasons: list[str] = []
    measurements: dict = {}
    try:
        cells = read_release(path)
    except VerificationError as exc:
        return GateDecision(False, [str(exc)], {})
    reasons += check_columns(
        list(cells), [], [], expected_columns=expected_columns, forbidden_columns=forbidden_columns
    )
    counts = cells.get(count_column)
    rows = len(next(iter(cells.values()))) if cells else 0
    measurements["rows"] = rows
    if rows == 0:
        reasons.append("the release has no rows")
    if counts is not None:
        bad = [i for i, c in enumerate(counts) if c is None or not str(c).isdigit()]
        if bad:
            reasons.append(
                f"column {count_column!r}: row {bad[0] + 2} holds {counts[bad[0]]!r}, not a "
                f"non-negative integer count ({len(bad)} such rows)"
            )
        else:
            measurements["noisy_total"] = int(sum(int(c) for c in counts))
    try:
        account = ledger.account(dataset)
    except LedgerError as exc:
        return GateDecision(False, [*reasons, str(exc)], measurements)
    entries = [e for e in account.entries if e.release_id == release_id]
    run_entries = [e for e in entries if e.run_id == run_id]
    release_eps = math.fsum(e.epsilon for e in entries)
    run_eps = math.fsum(e.epsilon for e in run_entries)
    run_delta = math.fsum(e.delta for e in run_entries)
    remaining = account.remaining
    measurements.update(
        release_epsilon=release_eps,
        run_epsilon=run_eps,
        run_delta=run_delta,
        ledger_entries=len(entries),
        budget_epsilon=account.budget_epsilon,
        budget_delta=account.budget_delta,
        spent_epsilon=account.spent_epsilon,
        spent_delta=account.spent_delta,
        remaining_epsilon=remaining[0],
        remaining_delta=remaining[1],
    )
    if not run_entries:
        reasons.append(
            f"the ledger holds no spend of run {run_id!r} for release {release_id}: noise that "
            "was not accounted for is never published"
        )
    if _over(run_eps, epsilon) or _over(run_delta, delta):
        reasons.append(
            f"this run spent (epsilon={run_eps:g}, delta={run_delta:g}), more than the policy's "
            f"(epsilon={epsilon:g}, delta={delta:g})"
        )
    if _over(account.spent_epsilon, account.budget_epsilon) or _over(
        account.spent_delta, account.budget_delta
    ):
        reasons.append(
            f"dataset {dataset!r} has spent (epsilon={account.spent_epsilon:g}, "
            f"delta={account.spent_delta:g}), over its lifetime budget "
            f"(epsilon={account.budget_epsilon:g}, delta={account.budget_delta:g})"
        )
    return GateDecision(not reasons, reasons, measurements)
