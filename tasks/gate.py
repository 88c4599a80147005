"""Gate task: stage the release, re-read it, and verify every criterion (never cached).

A blocked release fails the task itself (red in the UI, the gate's reasons as its state
message), so the stage that stopped the run is the one that shows it. The flow catches the
:class:`~privgate.core.exceptions.GateBlockedError`, takes the decision it carries for the
report, and raises it again.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from prefect import task
from prefect.logging import get_run_logger

from privgate.core import stages
from privgate.core.anonymize import SearchSetup
from privgate.core.attacks import ControlSplit
from privgate.core.exceptions import GateBlockedError
from privgate.core.gate import GateDecision
from privgate.core.history import CrossReleaseState, HistoryEntry, PastRelease
from privgate.core.policy import ReleasePolicy
from privgate.core.publish import StagedRelease, discard


@task(name="verify-and-gate", timeout_seconds=1800)
def gate_task(
    table: stages.AnonymizedTable,
    setup: SearchSetup,
    policy: ReleasePolicy,
    release_id: str,
    input_rows: int,
    split: ControlSplit | None = None,
    past: Sequence[PastRelease] | CrossReleaseState | None = None,
) -> tuple[StagedRelease, GateDecision, HistoryEntry | None]:
    """Write to staging and verify the file as written, over the quasi-identifiers the run
    planned the release to cover (and, with the policy's ``attacks``, attack it against the
    run's held-out control ``split``; with the release history's ``past`` releases, check the
    combination).

    Returns the staged release, the decision and the history entry publishing would record
    (None without a history) when it passes; when it is blocked, the staging folder is
    removed and :class:`GateBlockedError` (holding the decision) is raised.
    """
    started = time.perf_counter()
    staged, decision, entry = stages.stage_and_check(
        table, setup, policy, release_id, input_rows, split, past
    )
    log = get_run_logger()
    (log.info if decision.passed else log.error)(
        "gate: %s (%.2fs)", decision.summary, time.perf_counter() - started
    )
    for flag in decision.flags if decision.passed else []:
        log.warning("gate flag: %s", flag)
    if not decision.passed:
        discard(staged)
        raise GateBlockedError(f"gate blocked release {release_id}: {decision.summary}", decision)
    return staged, decision, entry
