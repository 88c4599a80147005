"""The release history inside a run: protection before staging, the gate on the written file.

On the hospital example (several admissions per patient, the patient as person and history
key): an earlier release that pins three patients to values the new release's classes do not
hold exposes them; :func:`protect_against_history` removes exactly their admissions (counted as
suppressed persons), and the gate's cross-release check on the *written* file then passes, and
blocks the unprotected table.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privgate.core import stages
from privgate.core.anonymize import SearchSetup
from privgate.core.history import (
    exposure,
    history_requirements,
    release_snapshot,
    searched_policy,
)
from privgate.core.hospital_data import generate_admissions
from privgate.core.policy import load_policy
from privgate.core.publish import discard

HOSPITAL = Path(__file__).resolve().parents[3] / "policies" / "hospital.yaml"


@pytest.fixture
def hospital(tmp_path):
    policy = load_policy(HOSPITAL).with_overrides(
        **{
            "history.check": True,
            "history.key": "subject_id",
            "output.directory": str(tmp_path / "releases"),
        }
    )
    frame = generate_admissions(400, seed=8)
    setup = SearchSetup.from_policy(policy)
    [table] = stages.anonymize(frame, setup)
    return policy, setup, frame, table


def _pinning_release(table, n: int = 3):
    """An earlier release that put ``n`` of the new release's patients in one class whose only
    published values the new release never shows: intersecting leaves them no value."""
    pinned = list(dict.fromkeys(table.history_keys.tolist()))[:n]
    return pinned, release_snapshot("earlier", pinned, [0] * n, {"diagnosis": ["Unheard-of"] * n})


def test_the_search_asks_for_a_margin_and_the_criterion_reads_the_policy(hospital):
    policy, *_ = hospital
    assert searched_policy(policy).privacy.k == 10  # k = 5, default margin 1.0
    assert history_requirements(policy) == (5, {"diagnosis": 2})
    assert searched_policy(policy.with_overrides(**{"history.margin": 0})).privacy.k == 5


def test_protection_removes_exactly_the_exposed_patients(hospital):
    policy, setup, frame, table = hospital
    pinned, earlier = _pinning_release(table)
    protected = stages.protect_against_history(table, policy, [earlier], "new")
    assert set(protected.history_keys.tolist()) == set(table.history_keys.tolist()) - set(pinned)
    removed_rows = int(np.isin(table.history_keys, pinned).sum())
    assert protected.metrics["removed_by_history"] == removed_rows
    assert len(protected.frame) == len(table.frame) - removed_rows
    assert protected.result.n_suppressed == table.result.n_suppressed + removed_rows
    assert "subject_id" not in protected.frame.columns

    # The gate on the written file: the protected release passes, the unprotected one not.
    staged, decision, entry = stages.stage_and_check(
        protected, setup, policy, "new", len(frame), past=[earlier]
    )
    discard(staged)
    assert decision.passed, decision.reasons
    assert decision.measurements["history"]["passed"] is True
    assert decision.measurements["history"]["past_releases"] == 1
    # The entry publishing records: every released patient, in the written file's classes.
    assert set(entry.snapshot.membership.index) == set(protected.history_keys.tolist())
    released = pd.Index(sorted(set(protected.history_keys.tolist())), dtype=object)
    attack = exposure([earlier, entry.snapshot], released, k=5, l_required={"diagnosis": 2})
    assert not attack.exposed

    staged, blocked, _ = stages.stage_and_check(
        table, setup, policy, "new", len(frame), past=[earlier]
    )
    discard(staged)
    assert not blocked.passed
    assert any("3 person(s) would be left with fewer than l" in r for r in blocked.reasons)


def test_beyond_the_suppression_limit_the_release_is_left_for_the_gate_to_block(hospital):
    policy, setup, frame, table = hospital
    tight = policy.with_overrides(**{"privacy.suppression_limit": 0.0})
    _, earlier = _pinning_release(table)
    kept = stages.protect_against_history(table, tight, [earlier], "new")
    assert kept.metrics["removed_by_history"] == 0 and len(kept.frame) == len(table.frame)
