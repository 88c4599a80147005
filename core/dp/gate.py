"""The privacy gate for a differentially private release: the ledger, not k, is the criterion.

Like the k-anonymity gate, it trusts nothing the algorithm reported. It re-reads the written
file (text cells, as a recipient sees them) and checks its shape: exactly the expected columns,
no direct identifier, every noisy count a non-negative integer. Then it reads the ledger back:

* the release holds a reservation of at most the policy's (ε, δ) (no noise is drawn unpaid);
* the draws the release says it used are in the journal, completed, and compose (sequentially,
  a parallel group counting once at its maximum) to at most the policy's (ε, δ): the *published
  release's* composition, not everything its runs ever drew, so a retry after a crash is never
  blocked by the draws the crash lost (those are charged to the account separately);
* the published counts are exactly the journaled leaf-count draw, negatives raised to 0: every
  number in the file is noise that was paid for.

Lost draws may take the account past its lifetime budget (they are facts, charged
unconditionally); that is reported in the measurements, and the next release's reservation is
refused, but it does not block this release, whose own reservation fitted.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

from privgate.core.dp._accountant import ROUNDING_TOLERANCE
from privgate.core.dp.ledger import LOST_DRAW, RESERVATION, BudgetLedger, DrawRecord
from privgate.core.exceptions import LedgerError, VerificationError
from privgate.core.gate import GateDecision, check_columns, read_release

__all__ = ["compose_draws", "verify_dp_microdata_release", "verify_dp_release"]


def _over(value: float, cap: float) -> bool:
    return value > cap * (1 + ROUNDING_TOLERANCE) + 1e-15


def compose_draws(draws: Sequence[DrawRecord]) -> tuple[float, float]:
    """(ε, δ) of a release's draws: sequential, each parallel group once at its maximum."""
    groups: dict[str, list[DrawRecord]] = {}
    singles: list[DrawRecord] = []
    for draw in draws:
        (groups.setdefault(draw.parallel_group, []) if draw.parallel_group else singles).append(
            draw
        )
    epsilons = [d.epsilon for d in singles] + [max(d.epsilon for d in g) for g in groups.values()]
    deltas = [d.delta for d in singles] + [max(d.delta for d in g) for g in groups.values()]
    return math.fsum(epsilons), math.fsum(deltas)


def verify_dp_release(
    path: str | Path,
    *,
    expected_columns: Sequence[str],
    forbidden_columns: Sequence[str],
    count_column: str,
    ledger: BudgetLedger,
    dataset: str,
    release_id: str,
    used_draws: Sequence[tuple[int, int]],
    count_draw: tuple[int, int] | None,
    epsilon: float,
    delta: float,
) -> GateDecision:
    """Verify the written DP release against the ledger's reservation and draw journal.

    Parameters
    ----------
    used_draws : sequence of (seq, attempt)
        The journaled draws the release says it was computed from.
    count_draw : (seq, attempt) or None
        The draw its published counts come from.
    epsilon, delta : float
        The policy's per-release (ε, δ).
    """
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
    published: list[int] | None = None
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
            published = [int(c) for c in counts]
            measurements["noisy_total"] = sum(published)
    reasons += _check_ledger(ledger, dataset, release_id, used_draws, epsilon, delta, measurements)
    try:
        by_key = {(d.seq, d.attempt): d for d in ledger.draws(dataset, release_id)}
    except LedgerError:
        return GateDecision(False, reasons, measurements)  # the ledger's error is a reason
    reasons += _check_counts(published, by_key.get(tuple(count_draw)) if count_draw else None)
    return GateDecision(not reasons, reasons, measurements)


def _check_counts(published: list[int] | None, draw: DrawRecord | None) -> list[str]:
    """The published counts must be the journaled leaf-count draw, negatives raised to 0."""
    if published is None:
        return []
    if draw is None or not draw.completed:
        return ["the release names no completed leaf-count draw for its counts"]
    expected = [max(int(v), 0) for v in json.loads(draw.value)]
    if expected != published:
        differ = next(
            (i for i, (a, b) in enumerate(zip(expected, published, strict=False)) if a != b),
            min(len(expected), len(published)),
        )
        return [
            f"the published counts are not the journaled noisy counts (draw {draw.seq}): "
            f"{len(published)} published, {len(expected)} drawn, first difference at row "
            f"{differ + 2}"
        ]
    return []


def _check_ledger(
    ledger: BudgetLedger,
    dataset: str,
    release_id: str,
    used_draws: Sequence[tuple[int, int]],
    epsilon: float,
    delta: float,
    measurements: dict,
) -> list[str]:
    """The release's reservation and journaled draws, read back from the ledger."""
    try:
        account = ledger.account(dataset)
        journal = ledger.draws(dataset, release_id)
    except LedgerError as exc:
        return [str(exc)]
    reasons: list[str] = []
    reservation = [
        e for e in account.entries if e.release_id == release_id and e.mechanism == RESERVATION
    ]
    lost = [e for e in account.entries if e.mechanism == LOST_DRAW]
    by_key = {(d.seq, d.attempt): d for d in journal}
    used = [by_key.get(tuple(key)) for key in used_draws]
    missing = [key for key, draw in zip(used_draws, used, strict=True) if draw is None]
    unfinished = [d for d in used if d is not None and not d.completed]
    release_eps, release_delta = compose_draws([d for d in used if d is not None])
    remaining = account.remaining
    measurements.update(
        release_epsilon=release_eps,
        release_delta=release_delta,
        draws=len(used),
        reserved_epsilon=reservation[0].epsilon if reservation else None,
        budget_epsilon=account.budget_epsilon,
        budget_delta=account.budget_delta,
        spent_epsilon=account.spent_epsilon,
        spent_delta=account.spent_delta,
        remaining_epsilon=remaining[0],
        remaining_delta=remaining[1],
        remaining_exact=list(account.exact_remaining_text),
        lost_draws_epsilon=math.fsum(e.epsilon for e in lost),
    )
    if not reservation:
        reasons.append(
            f"the ledger holds no reservation for release {release_id}: noise that was not "
            "paid for is never published"
        )
    elif _over(reservation[0].epsilon, epsilon) or _over(reservation[0].delta, delta):
        reasons.append(
            f"release {release_id} reserved (epsilon={reservation[0].epsilon:g}, delta="
            f"{reservation[0].delta:g}), more than the policy's (epsilon={epsilon:g}, "
            f"delta={delta:g})"
        )
    if not used_draws:
        reasons.append(f"release {release_id} names no journaled draw it was computed from")
    if missing:
        reasons.append(
            f"draw(s) {missing[:5]} of release {release_id} are not in the ledger's journal"
        )
    if unfinished:
        reasons.append(
            f"draw(s) {[d.seq for d in unfinished][:5]} of release {release_id} were never "
            "completed in the journal"
        )
    if _over(release_eps, epsilon) or _over(release_delta, delta):
        reasons.append(
            f"the release's draws compose to (epsilon={release_eps:g}, delta={release_delta:g}), "
            f"more than the policy's (epsilon={epsilon:g}, delta={delta:g})"
        )
    return reasons


def verify_dp_microdata_release(
    path: str | Path,
    *,
    expected_columns: Sequence[str],
    forbidden_columns: Sequence[str],
    allowed: dict[str, set[str] | tuple],
    ledger: BudgetLedger,
    dataset: str,
    release_id: str,
    used_draws: Sequence[tuple[int, int]],
    epsilon: float,
    delta: float,
    expected_rows: Sequence[Sequence[str]] | None = None,
    min_class_size: int | None = None,
    expected_count: int | None = None,
) -> GateDecision:
    """Verify a written record-level DP release (MST, AIM, SafePub) against the ledger.

    Shape: exactly ``expected_columns``, no identifier, every cell inside its declared domain
    (``allowed``: a set of texts, or ``(minimum, maximum, integer)`` for numbers). Ledger: as
    for every DP release (reservation, journaled draws within the policy's ``(ε, δ)``).
    ``expected_rows``: the records re-derived from the journaled draw alone (synthetic data):
    the file must hold exactly them, in any order. ``min_class_size``: SafePub's k: every
    released tuple must occur at least that often. ``expected_count``: the rows of the release
    that was written (a DP output): a file holding another number is blocked (a writer that
    lost a whole SafePub class leaves a file that still passes every other check). Every check
    reads the file and the ledger only, or that DP output; none reads the private input, so
    the decision is a function of DP outputs.
    """
    reasons: list[str] = []
    measurements: dict = {}
    try:
        cells = read_release(path)
    except VerificationError as exc:
        return GateDecision(False, [str(exc)], {})
    reasons += check_columns(
        list(cells), [], [], expected_columns=expected_columns, forbidden_columns=forbidden_columns
    )
    rows = len(next(iter(cells.values()))) if cells else 0
    measurements["rows"] = rows
    if rows == 0:
        reasons.append("the release has no rows")
    if expected_count is not None and rows != expected_count:
        reasons.append(
            f"the written release has {rows} rows, the release made has {expected_count}"
        )
    for name, rule in allowed.items():
        values = cells.get(name)
        if values is None:
            continue
        bad = [i for i, v in enumerate(values) if not _inside(v, rule)]
        if bad:
            reasons.append(
                f"column {name!r}: row {bad[0] + 2} holds {values[bad[0]]!r}, outside the "
                f"declared domain ({len(bad)} such rows)"
            )
    if expected_rows is not None and cells and not reasons:
        columns = list(expected_columns)
        numeric = [isinstance(allowed.get(c), tuple) for c in columns]

        def normal(row) -> tuple:
            return tuple(
                f"{float(v):.9g}" if is_number else str(v)
                for v, is_number in zip(row, numeric, strict=True)
            )

        written = sorted(normal(r) for r in zip(*(cells[c] for c in columns), strict=True))
        if written != sorted(normal(r) for r in expected_rows):
            reasons.append(
                "the published records are not the ones the journaled draw yields (re-derived "
                "from the ledger's noisy marginals)"
            )
    if min_class_size is not None and cells and rows:
        sizes: dict[tuple, int] = {}
        for row in zip(*(cells[c] for c in expected_columns), strict=True):
            sizes[row] = sizes.get(row, 0) + 1
        smallest = min(sizes.values())
        measurements["smallest_class"] = smallest
        if smallest < min_class_size:
            reasons.append(
                f"a released record occurs {smallest} times, fewer than SafePub's k = "
                f"{min_class_size}"
            )
    reasons += _check_ledger(ledger, dataset, release_id, used_draws, epsilon, delta, measurements)
    return GateDecision(not reasons, reasons, measurements)


def _inside(value: str | None, rule: set[str] | tuple) -> bool:
    if value is None:
        return False
    if isinstance(rule, set):
        return value in rule
    low, high, integer = rule
    try:
        number = float(value)
    except ValueError:
        return False
    if integer and not number.is_integer():
        return False
    return low <= number <= high
