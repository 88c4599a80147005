"""Private intermediate results on disk: where they live, how long, and how they are removed.

A run's cached stage results (the ingested table, the validated table, the anonymized table
before it is published, the utility measurements) let a failed run be retried without redoing
what succeeded. They are private: the first of them *is* the input. They live under the
privgate data directory, one folder per dataset (``<data dir>/results/<dataset>/``; folders
0700, files 0600), never next to the releases, sealed by :mod:`privgate.core.sealed`.

They are kept only as long as a retry needs them:

* after a successful publish, the dataset's cached results are removed (unless the policy sets
  ``output.keep_stage_results: true``);
* every run first removes cached results older than the retention period
  (``PRIVGATE_RESULTS_RETENTION_DAYS``, default 3: long enough to retry a failed nightly run the
  next working day), and a cached result older than that is not reused either;
* ``privgate purge [DATASET] [--older-than DAYS]`` removes them on demand
  (``--attack-evidence`` also removes the owner-side attack evidence of DP releases, which is
  otherwise kept as the owner's audit trail).
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from privgate.core.exceptions import PolicyError
from privgate.core.locations import data_dir

__all__ = [
    "RETENTION_VARIABLE",
    "PurgeReport",
    "attack_evidence_root",
    "dataset_results_dir",
    "purge_attack_evidence",
    "purge_results",
    "results_root",
    "retention_days",
]

#: How many days cached private results are kept at most (environment variable).
RETENTION_VARIABLE = "PRIVGATE_RESULTS_RETENTION_DAYS"
_DEFAULT_DAYS = 3.0


def results_root() -> Path:
    """``<privgate data directory>/results``: every dataset's cached private results."""
    return data_dir() / "results"


def dataset_results_dir(dataset: str) -> Path:
    """The folder of one dataset's cached private results."""
    return results_root() / dataset


def retention_days() -> float:
    """The retention period in days (``PRIVGATE_RESULTS_RETENTION_DAYS``, default 3).

    Raises
    ------
    PolicyError
        If the variable is not a number >= 0 (a typo must not keep private data forever).
    """
    text = os.environ.get(RETENTION_VARIABLE, "").strip()
    if not text:
        return _DEFAULT_DAYS
    try:
        days = float(text)
    except ValueError:
        days = -1.0
    if not days >= 0 or days == float("inf"):
        raise PolicyError(f"{RETENTION_VARIABLE}={text!r} is not a number of days >= 0")
    return days


@dataclass(frozen=True)
class PurgeReport:
    """What a purge removed."""

    files: int
    bytes: int
    datasets: tuple[str, ...]

    def describe(self) -> str:
        scope = ", ".join(self.datasets) if self.datasets else "no dataset"
        return f"removed {self.files} cached result file(s), {self.bytes:,} bytes ({scope})"


def purge_results(dataset: str | None = None, older_than_days: float | None = None) -> PurgeReport:
    """Remove cached private results: of one dataset or all, all of them or the old ones.

    Parameters
    ----------
    dataset : str, optional
        Only this dataset's results (default: every dataset's).
    older_than_days : float, optional
        Only files last written more than this many days ago (default: all files).
    """
    return _purge_tree(results_root(), dataset, older_than_days)


def attack_evidence_root() -> Path:
    """``<privgate data directory>/attacks``: owner-side attack evidence of DP releases."""
    return data_dir() / "attacks"


def purge_attack_evidence(
    dataset: str | None = None, older_than_days: float | None = None
) -> PurgeReport:
    """Remove the owner-side attack evidence of DP releases (``privgate purge --attack-evidence``).

    The evidence is kept by default as the owner's audit trail of what each release risked;
    it is an exact function of the input, so an owner who must erase the input's traces
    needs a way to remove it too. Same arguments as :func:`purge_results`.
    """
    return _purge_tree(attack_evidence_root(), dataset, older_than_days)


def _purge_tree(root: Path, dataset: str | None, older_than_days: float | None) -> PurgeReport:
    if not root.is_dir():
        return PurgeReport(0, 0, ())
    folders = [root / dataset] if dataset is not None else sorted(p for p in root.iterdir())
    cutoff = None if older_than_days is None else time.time() - older_than_days * 86400
    files = size = 0
    touched = []
    for folder in folders:
        if not folder.is_dir():
            continue
        removed_here = 0
        for path in sorted(folder.rglob("*")):
            if not path.is_file():
                continue
            stat = path.stat()
            if cutoff is not None and stat.st_mtime >= cutoff:
                continue
            path.unlink(missing_ok=True)
            files += 1
            size += stat.st_size
            removed_here += 1
        if removed_here:
            touched.append(folder.name)
        if cutoff is None or not any(folder.rglob("*")):
            shutil.rmtree(folder, ignore_errors=True)
    return PurgeReport(files, size, tuple(touched))
