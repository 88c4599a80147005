"""Which path ``privgate run`` takes: the in-memory release flow or the partitioned one.

Why: the release flow holds the validated table as pandas frames from ingest on (about
0.5 KB per row of Adult with its copies and cached stage results: 10M rows passed 5 GiB), while
the partitioned path (:mod:`privgate.core.scale`: frequency set, search, generalize + write,
verify, on dask partitions) holds the distinct tuples, not the rows. A nightly run of a table
that has grown past memory must not need a different command, so the run estimates the input's
rows before Prefect starts and takes the partitioned path above
:data:`PARTITIONED_MIN_ROWS_VARIABLE` (default :data:`DEFAULT_PARTITIONED_MIN_ROWS`).

The estimate is cheap and says how it was made: a Parquet input's rows are read from its
metadata (exact); a CSV file's are its size divided by the mean length of the lines in a few
samples spread over the file (an estimate: quoted line breaks and uneven lines move it). The
threshold compares with the estimate; the partitioned flow itself counts every row.

What the partitioned path cannot honour is refused, not downgraded (:func:`partitioned_blockers`):
an input other than CSV with a header line or Parquet,
differential privacy, a person key, attacks, a research subset, ranking, a release history,
algorithms other than a single full-domain search, privacy models other than k-anonymity,
l-diversity and t-closeness (the ones its gate is tested on), and utility measures that need the
records (classifiers, clustering, total variation). Above the threshold such a policy fails
before Prefect starts, naming the setting; ``--engine memory`` forces the in-memory path (which
may not fit in memory).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from privgate.core.exceptions import PolicyError
from privgate.core.policy import ReleasePolicy

__all__ = [
    "DEFAULT_PARTITIONED_MIN_ROWS",
    "PARTITIONED_MIN_ROWS_VARIABLE",
    "EngineChoice",
    "RowEstimate",
    "choose_engine",
    "estimate_rows",
    "partitioned_blockers",
    "partitioned_min_rows",
]

PARTITIONED_MIN_ROWS_VARIABLE = "PRIVGATE_PARTITIONED_MIN_ROWS"
DEFAULT_PARTITIONED_MIN_ROWS = 2_000_000

#: Bytes read per sample of a CSV file, and how many samples (spread evenly over the file).
_SAMPLE_BYTES = 1 << 18
_SAMPLES = 8

Engine = Literal["auto", "memory", "partitioned"]


@dataclass(frozen=True)
class RowEstimate:
    """The input's rows as pre-flight estimated them.

    Attributes
    ----------
    rows : int
    exact : bool
        Read from metadata (Parquet), not estimated.
    method : str
        How, in words (for the run's one line).
    """

    rows: int
    exact: bool
    method: str


@dataclass(frozen=True)
class EngineChoice:
    """The path a run takes and why (``reason`` is printed as one line)."""

    engine: Literal["memory", "partitioned"]
    reason: str
    estimate: RowEstimate | None
    threshold: int

    def facts(self) -> dict:
        """The manifest's ``engine`` section: the path, why, the threshold and the estimate."""
        estimate = self.estimate
        return {
            "path": self.engine,
            "reason": self.reason,
            "threshold_rows": self.threshold,
            "estimated_rows": None if estimate is None else estimate.rows,
            "estimate": None if estimate is None else estimate.method,
        }


def partitioned_min_rows() -> int:
    """The rows (estimated) from which ``privgate run`` takes the partitioned path.

    Raises
    ------
    PolicyError
        The setting is not an integer >= 1.
    """
    raw = os.environ.get(PARTITIONED_MIN_ROWS_VARIABLE, "").strip()
    if not raw:
        return DEFAULT_PARTITIONED_MIN_ROWS
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        value = 0
    if value < 1:
        raise PolicyError(f"{PARTITIONED_MIN_ROWS_VARIABLE} must be an integer >= 1, got {raw!r}")
    return value


def _parquet_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.suffix in (".parquet", ".pq"))
    return [path]


def _estimate_csv(path: Path, header: bool) -> RowEstimate:
    size = path.stat().st_size
    with open(path, "rb") as fh:
        head = fh.read(_SAMPLE_BYTES)
        first_end = head.find(b"\n") + 1 if header else 0
        if size <= _SAMPLE_BYTES:  # the whole file was read: count its lines
            body = head[first_end:]
            rows = body.count(b"\n") + int(bool(body) and not body.endswith(b"\n"))
            return RowEstimate(rows, True, "counted every line")
        lines = bytes_read = 0
        for i in range(_SAMPLES):
            fh.seek(first_end + (size - first_end - _SAMPLE_BYTES) * i // (_SAMPLES - 1))
            chunk = fh.read(_SAMPLE_BYTES)
            start = chunk.find(b"\n") + 1 if i else 0  # a sample starts mid-line
            end = chunk.rfind(b"\n") + 1
            if end > start:
                lines += chunk.count(b"\n", start, end)
                bytes_read += end - start
    if not lines:
        return RowEstimate(1, False, "no line break in the samples")
    rows = round((size - first_end) / (bytes_read / lines))
    return RowEstimate(
        rows,
        False,
        f"{size:,} bytes / {bytes_read / lines:.1f} bytes per line in {_SAMPLES} samples",
    )


def estimate_rows(policy: ReleasePolicy) -> RowEstimate | None:
    """The input's rows, cheaply: Parquet metadata, or a CSV file's size over its sampled line
    length; ``None`` for a public dataset's own loader (small tables) or a missing input."""
    try:
        return _estimate(policy)
    except Exception:  # noqa: BLE001 - unreadable: pre-flight and ingest name the problem
        return None


def _estimate(policy: ReleasePolicy) -> RowEstimate | None:
    spec = policy.input
    path = Path(spec.path)
    if not path.exists():
        return None
    if spec.format == "parquet":
        import pyarrow.parquet as pq

        files = _parquet_files(path)
        rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
        return RowEstimate(rows, True, f"Parquet metadata of {len(files)} file(s)")
    if spec.format == "csv" and path.is_file():
        return _estimate_csv(path, spec.header)
    return None


def partitioned_blockers(policy: ReleasePolicy) -> list[str]:
    """The policy's settings the partitioned path cannot honour, each named (empty: none)."""
    found = []
    spec = policy.input
    if spec.format not in ("csv", "parquet"):  # checked here, not when the flow reads it
        found.append(f"input.format {spec.format} (the partitioned path reads csv and parquet)")
    elif spec.format == "csv" and not spec.header:
        found.append("input.header false (the partitioned path reads CSV with a header line)")
    if policy.is_differentially_private:
        return [*found, "differential_privacy (the DP branch runs in memory)"]
    privacy = policy.privacy
    if privacy is not None:
        named = {
            "privacy.person_key": privacy.person_key,
            "privacy.research_subset": privacy.research_subset,
            "privacy.risk": privacy.risk,
            "privacy.population": privacy.population,
            "privacy.k_map": privacy.k_map,
            "privacy.delta_presence": privacy.delta_presence,
            "privacy.beta_likeness": privacy.beta_likeness,
            "privacy.delta_disclosure": privacy.delta_disclosure,
        }
        found += [name for name, value in named.items() if value]
    if policy.attacks is not None:
        found.append("attacks")
    if policy.ranking is not None:
        found.append("ranking")
    if policy.history_key is not None:
        found.append("history (the release history)")
    from privgate.core.anonymize import is_single_full_domain

    if not is_single_full_domain(policy.algorithm.name):
        found.append(f"algorithm.name {policy.algorithm.name.value} (full-domain search only)")
    utility = policy.utility
    if utility is not None:
        if utility.target is not None and utility.models:
            found.append("utility.target with utility.models (classifiers need the records)")
        if utility.clusters and utility.clustering:
            found.append("utility.clusters (clustering needs the records)")
        asked = {k for k, v in utility.thresholds.model_dump().items() if v is not None}
        beyond = sorted(asked - {"max_loss", "max_attribute_loss"})
        if beyond:
            found.append(f"utility.thresholds {beyond} (measured on the records)")
    return found


def choose_engine(policy: ReleasePolicy, requested: Engine = "auto") -> EngineChoice:
    """The path a run of ``policy`` takes.

    ``auto`` takes the partitioned path when the estimated rows reach
    :func:`partitioned_min_rows`; ``memory`` and ``partitioned`` force one.

    Raises
    ------
    PolicyError
        The partitioned path is chosen (forced, or by size) for a policy it cannot honour:
        the message names the settings and the way to force the in-memory path.
    """
    threshold = partitioned_min_rows()
    estimate = estimate_rows(policy)
    if requested == "memory":
        return EngineChoice("memory", "in-memory path (--engine memory)", estimate, threshold)
    size = "size unknown" if estimate is None else _describe(estimate)
    if requested == "partitioned":
        why = f"--engine partitioned; {size}"
    elif estimate is not None and estimate.rows >= threshold:
        why = f"{size} >= {PARTITIONED_MIN_ROWS_VARIABLE}={threshold:,}"
    else:
        below = (
            f"the size of input.format {policy.input.format} is not estimated"
            if estimate is None
            else f"{size} < {PARTITIONED_MIN_ROWS_VARIABLE}={threshold:,}"
        )
        return EngineChoice("memory", f"in-memory path ({below})", estimate, threshold)
    blockers = partitioned_blockers(policy)
    if blockers:
        raise PolicyError(
            f"the partitioned path ({why}) cannot honour {', '.join(blockers)}: remove "
            "the setting, or run the in-memory path with --engine memory (it holds the whole "
            f"table in memory), or raise {PARTITIONED_MIN_ROWS_VARIABLE}"
        )
    return EngineChoice(
        "partitioned",
        f"partitioned path ({why}; the release is written as Parquet parts)",
        estimate,
        threshold,
    )


def _describe(estimate: RowEstimate) -> str:
    kind = "rows" if estimate.exact else "rows estimated"
    return f"{estimate.rows:,} {kind} ({estimate.method})"
