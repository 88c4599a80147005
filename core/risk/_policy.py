"""The risk analysis of a policy's input and, when one exists, of its latest release.

``privgate risk POLICY`` shows both: *before* (the input as the policy reads it, over the
policy's quasi-identifiers) tells the data owner what anonymization has to remove; *after*
(the newest published release of the policy's dataset, read as written, or a file named
with ``--release``) what an attacker faces. The population size for the uniqueness estimates
comes from ``privacy.risk.population_size`` unless given explicitly.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from privgate.core.exceptions import IngestError, PolicyError
from privgate.core.ingest import read_table
from privgate.core.policy import ReleasePolicy
from privgate.core.research_subset import select_research_subset
from privgate.core.risk._analysis import DEFAULT_THRESHOLD, RiskAnalysis, analyse
from privgate.core.textcsv import read_text_columns


def latest_release(policy: ReleasePolicy) -> Path | None:
    """The data file of the newest published release of the policy's dataset, or ``None``.

    Releases live in ``<output.directory>/<dataset>/<release-id>/`` with a ``manifest.json``
    written last (a folder without one was never published); the newest manifest wins.
    """
    root = Path(policy.output.directory) / policy.dataset
    if not root.is_dir():
        return None
    published = [m for m in root.glob("*/manifest.json") if m.is_file()]
    for manifest in sorted(published, key=lambda m: m.stat().st_mtime, reverse=True):
        for name in ("release.csv", "release.parquet"):
            if (manifest.parent / name).is_file():
                return manifest.parent / name
    return None


def read_release_frame(path: Path) -> pd.DataFrame:
    """A release as a recipient reads it: every cell text, an empty cell missing."""
    if not path.is_file():
        raise IngestError(f"release file not found: {path}")
    if path.suffix == ".parquet":
        return pd.read_parquet(path).astype("string")
    return pd.DataFrame(read_text_columns(path))


def analyse_policy(
    policy: ReleasePolicy,
    *,
    release: Path | None = None,
    population_size: int | None = None,
    threshold: float | None = None,
    drivers: bool = True,
) -> list[RiskAnalysis]:
    """The input's analysis, then the release's when ``release`` is given.

    Raises
    ------
    PolicyError
        The policy has no quasi-identifiers, or the population is smaller than the table.
    IngestError
        The input or the release cannot be read, or the release lacks a quasi-identifier.
    """
    qis = list(policy.quasi_identifiers)
    if not qis:
        raise PolicyError("the policy declares no quasi-identifiers: there is no risk to analyse")
    risk = policy.privacy.risk if policy.privacy is not None else None
    if population_size is None and risk is not None:
        population_size = risk.population_size
    if threshold is None:
        threshold = risk.highest if risk is not None and risk.highest else DEFAULT_THRESHOLD
    person_key = policy.person_key
    frame, label = read_table(policy.input), "input"
    subset = policy.privacy.research_subset if policy.privacy is not None else None
    if subset is not None:  # the records a release is made from: the research subset's
        frame, facts = select_research_subset(frame, subset)
        label = f"input (research subset: {facts.rows} of {facts.table_rows} records)"
    tables = [(label, frame, person_key)]
    if release is not None:
        frame = read_release_frame(release)
        absent = [q for q in qis if q not in frame]
        if absent:
            raise IngestError(f"release {release} has no quasi-identifier column(s) {absent}")
        # The person key is never written: a release is analysed in records.
        tables.append((f"release {release}", frame, None))
    out = []
    for label, frame, key in tables:
        try:
            out.append(
                analyse(frame, qis, label=label, threshold=threshold,
                        population_size=population_size, person_key=key, drivers=drivers)
            )  # fmt: skip
        except ValueError as exc:
            raise PolicyError(str(exc)) from None
    return out
