"""Owner-side attacks on a published differentially private release (policy ``attacks``).

Attack results are exact functions of the private records, so for a DP release they may
neither decide publication nor appear in the release folder (docs/PRIVACY.md): this task runs
only after the release is published, writes the evidence to the data owner's private data
directory (:func:`privgate.core.attacks.write_owner_evidence`) and its log, and a failure of
its own is logged, never turned into a failed release.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from prefect import task
from prefect.logging import get_run_logger

from privgate.core.attacks import ControlSplit, attack_release, write_owner_evidence
from privgate.core.gate import read_release
from privgate.core.hierarchy import Hierarchy
from privgate.core.policy import ReleasePolicy


@task(name="owner-attacks", timeout_seconds=1800)
def owner_attacks_task(
    release_file: Path,
    split: ControlSplit,
    policy: ReleasePolicy,
    hierarchies: dict[str, Hierarchy],
    release_id: str,
) -> Path | None:
    """Attack the published release file; return where the owner's evidence was written."""
    log = get_run_logger()
    try:
        frame = pd.DataFrame(read_release(release_file))
        evidence = attack_release(frame, split, policy, hierarchies)
        path = write_owner_evidence(evidence, policy.dataset, release_id)
    except Exception as exc:  # evidence for the owner; the publication stands either way
        log.error("owner-side attacks on %s not measured: %s", release_id, exc)
        return None
    for measure, risk in evidence.risks().items():
        if risk is not None:
            log.info(
                "owner-side attack evidence (not published): %s risk %.4f, 95 %% interval "
                "[%.4f, %.4f]",
                measure.replace("_", " "),
                risk.value,
                risk.low,
                risk.high,
            )
    log.info("owner-side attack evidence written to %s (owner-only)", path)
    return path
