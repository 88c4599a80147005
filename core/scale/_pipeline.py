"""The dask path end to end: read, frequency set, search, generalize + write, verify, publish."""

from __future__ import annotations

import glob
import os
import secrets
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
from dask.dataframe.utils import has_known_categories

from privgate.core.anonymize import (
    FullDomainAlgorithm,
    Generalization,
    SearchSetup,
    full_domain_setup,
    make_algorithm,
)
from privgate.core.encoding import FrequencySet
from privgate.core.exceptions import GateBlockedError
from privgate.core.gate import GateDecision
from privgate.core.policy import ReleasePolicy
from privgate.core.privacy import reference_columns
from privgate.core.publish import staging_owner, sweep_stale_files
from privgate.core.scale._apply import GeneralizationPlan, generalize_frame, plan_generalization
from privgate.core.scale._dictionary import frequency_set_from_histogram
from privgate.core.scale._frequency import histogram_of, read_input
from privgate.core.scale._release import release_loss
from privgate.core.scale._verify import reference_from_histogram, verify_parquet_release

__all__ = [
    "ScaleRun",
    "input_overrides",
    "anonymize_dask",
    "frequency_stage",
    "publish_stage",
    "reference_stage",
    "scale_setup",
    "search_stage",
    "search_with_loss",
    "verify_stage",
    "write_stage",
]


@dataclass(frozen=True)
class ScaleRun:
    """What a dask-path run produced: the gate's decision, the release folder, the facts."""

    decision: GateDecision
    output: Path
    levels: dict[str, int]
    summary: dict = field(default_factory=dict)


def input_overrides(path: str | Path) -> dict[str, str]:
    """Policy overrides that point the input at ``path``, as Parquet when it names Parquet.

    A folder (of part files), a ``.parquet`` file or a glob such as ``parts/*.parquet`` is
    read as Parquet (``input.format: parquet``: every partition as stored); anything else
    keeps the policy's format (its delimiter and missing-value markers apply to CSV only).
    Partitioned Parquet is the input a 100M-row table comes in: no text to parse, one
    partition per part file.
    """
    text = str(path)
    names_parquet = Path(text).is_dir() or text.endswith((".parquet", ".parquet/", ".pq"))
    if not names_parquet and glob.has_magic(text):
        names_parquet = any(m.endswith((".parquet", ".pq")) for m in glob.glob(text))
    changes = {"input.path": text}
    if names_parquet:
        changes["input.format"] = "parquet"
    return changes


def scale_setup(policy: ReleasePolicy) -> SearchSetup:
    """The policy's search setup, refused by name unless the Dask path can run it."""
    return full_domain_setup(policy, "the Dask path")


def _needed_columns(setup: SearchSetup) -> list[str]:
    wanted = [*setup.quasi_identifiers, *setup.sensitive, *setup.released_columns]
    return list(dict.fromkeys(wanted))


def frequency_stage(
    policy: ReleasePolicy, setup: SearchSetup, blocksize: str | int = "64MB"
) -> FrequencySet:
    """Read the input partition by partition and return its merged frequency set."""
    frame = read_input(policy.input, _needed_columns(setup), blocksize)
    histogram = histogram_of(frame, [*setup.quasi_identifiers, *setup.sensitive])
    freq = frequency_set_from_histogram(histogram, setup.hierarchies, setup.sensitive)
    setup.check_feasible(freq.table.n_rows)
    return freq


def reference_stage(
    policy: ReleasePolicy, setup: SearchSetup, blocksize: str | int = "64MB"
) -> dict[str, dict[str | None, int]] | None:
    """The reference: the input's count of each value of every column a model compares with
    the input's distribution (t-closeness, β-likeness, δ-disclosure), as text read the way
    the gate reads the release (``None`` without such a model).

    The search compares a class with the input's distribution, suppressed records included;
    the gate must compare with the same one (issue 16: with the released records' instead,
    the gate blocked the node the search chose). One more pass over the input's blocks.
    """
    columns = reference_columns(setup.models)  # t-closeness, β-likeness, δ-disclosure
    if not columns:
        return None
    frame = read_input(policy.input, _needed_columns(setup), blocksize)
    return reference_from_histogram(histogram_of(frame, columns, text=True))


def search_stage(
    freq: FrequencySet, setup: SearchSetup
) -> tuple[GeneralizationPlan, Generalization]:
    """The lattice search on the merged frequency set (one node), and the plan it implies."""
    algorithm = make_algorithm(setup)
    assert isinstance(algorithm, FullDomainAlgorithm)  # scale_setup checked it
    found = algorithm.search(freq)
    plan = plan_generalization(freq, found.levels, list(setup.models), setup.released_columns)
    return plan, found


def search_with_loss(
    freq: FrequencySet, setup: SearchSetup
) -> tuple[GeneralizationPlan, dict, dict]:
    """:func:`search_stage`, then the loss its plan implies (:func:`release_loss`, on the
    distinct tuples). Returns the plan, the search's facts (``algorithm``, its details,
    ``seconds``) and the loss."""
    started = time.perf_counter()
    plan, result = search_stage(freq, setup)
    loss = release_loss(freq, plan, setup)
    facts = {"algorithm": result.algorithm, **dict(result.details)}
    facts["seconds"] = round(time.perf_counter() - started, 4)
    return plan, facts, loss


def write_stage(
    plan: GeneralizationPlan,
    policy: ReleasePolicy,
    setup: SearchSetup,
    staging: str | Path,
    blocksize: str | int = "64MB",
    shuffle_seed: int | None = None,
) -> Path:
    """Generalize every partition (``map_partitions``) and write them as Parquet parts.

    Every row goes to a part drawn at random and each part is permuted (:func:`spread_rows`),
    so neither a part nor a position in it tells where the row was in the input
    (``shuffle_seed`` reproduces an order in a test; by default the draws come from the
    operating system's entropy).
    """
    frame = read_input(policy.input, _needed_columns(setup), blocksize)
    release = spread_rows(generalize_frame(frame, plan, shuffle_seed), shuffle_seed)
    staging = Path(staging)
    release.to_parquet(
        str(staging),
        write_index=False,
        write_metadata_file=False,
        write_statistics=False,  # min/max per column chunk: the gate reads every row anyway
        schema=_unknown_categories_schema(release),
    )
    return staging


_PART = "__privgate_part"


def spread_rows(release, shuffle_seed: int | None = None):
    """Every released row moved to a part drawn uniformly at random (so the parts are of about
    equal size), then each part permuted.

    Why: the in-memory path publishes its rows in a random order ("the order reveals nothing");
    generalizing partition by partition keeps each input block in one part, so a part's number
    told where in the input its rows were (an input sorted by age put a few years of ages in
    each part, finer than the released bands: review8 F4). Part numbers are drawn from the
    operating system's entropy unless ``shuffle_seed`` reproduces them (tests).
    """
    root = secrets.randbits(64) if shuffle_seed is None else shuffle_seed
    n = release.npartitions

    def tag(part: pd.DataFrame, partition_info=None) -> pd.DataFrame:
        number = partition_info["number"] if partition_info else 0
        # A 64-bit key per row, which the shuffle hashes onto the n parts: each row lands in a
        # uniformly random part, independently of the others. (Drawing the part number
        # itself, 0..n-1, and letting the shuffle hash it sent whole numbers to one part:
        # some parts empty, others doubled.)
        draw = np.random.default_rng([root, number, 1]).integers(
            np.iinfo(np.int64).min, np.iinfo(np.int64).max, len(part), dtype=np.int64
        )
        return part.assign(**{_PART: draw})

    def mix(part: pd.DataFrame, partition_info=None) -> pd.DataFrame:
        number = partition_info["number"] if partition_info else 0
        order = np.random.default_rng([root, number, 2]).permutation(len(part))
        return part.iloc[order].drop(columns=_PART).reset_index(drop=True)

    tagged = release.map_partitions(tag, meta=release._meta.assign(**{_PART: np.int64(0)}))
    spread = tagged.shuffle(_PART, npartitions=n)
    return spread.map_partitions(mix, meta=release._meta)


def _unknown_categories_schema(release) -> dict:
    """Arrow types for the released columns dask cannot type from its metadata.

    A categorical column read from Parquet (a dictionary column passed through unchanged, e.g.
    the sensitive one) has categories known only per partition (dask's metadata lists none);
    dask would type it as a dictionary of nulls and refuse the first partition holding a
    value. Such a column is written as a dictionary of text, which every partition casts to.
    """
    out = {}
    for name, dtype in release.dtypes.items():
        if isinstance(dtype, pd.CategoricalDtype) and (
            not has_known_categories(release[name]) or len(dtype.categories) == 0
        ):
            out[name] = pa.dictionary(pa.int32(), pa.large_string())
    return out


def verify_stage(
    staging: str | Path,
    setup: SearchSetup,
    input_rows: int,
    reference: dict[str, dict[str | None, int]] | None = None,
    expected_rows: int | None = None,
) -> GateDecision:
    """The gate on the written parts, computed partition by partition (t-closeness against
    ``reference``, :func:`reference_stage`; the plan's row count ``expected_rows``)."""
    return verify_parquet_release(
        staging,
        list(setup.quasi_identifiers),
        list(setup.models),
        reference=reference,
        expected_rows=expected_rows,
        **setup.gate_limits(input_rows),
    )


def publish_stage(staging: str | Path, output: str | Path, decision: GateDecision) -> Path:
    """Rename the verified folder into place, or remove it and raise if the gate blocked."""
    staging, output = Path(staging), Path(output)
    if not decision.passed:
        shutil.rmtree(staging, ignore_errors=True)
        raise GateBlockedError(f"gate blocked {output}: {decision.summary}", decision)
    os.rename(staging, output)  # atomic on one file system; fails if output exists
    return output


def anonymize_dask(
    policy: ReleasePolicy,
    output: str | Path,
    *,
    blocksize: str | int = "64MB",
    shuffle_seed: int | None = None,
) -> ScaleRun:
    """Anonymize the policy's input into a partitioned Parquet release folder ``output``.

    Runs on the active dask scheduler (enter a ``distributed.Client`` to use a cluster). The
    input is read twice, block by block (frequency set, then generalization); the release is
    written to a staging folder next to ``output``, verified there, and renamed into place
    only if the gate passes.

    Raises
    ------
    FileExistsError
        ``output`` already exists.
    IngestError, HierarchyError, AnonymizationError
        Bad input or an unreachable privacy model.
    GateBlockedError
        The written release failed verification (the staging folder is removed).
    """
    output = Path(output)
    if output.exists():
        raise FileExistsError(f"release folder already exists: {output}")
    output.parent.mkdir(parents=True, exist_ok=True)
    # named after its owner: one a killed run left is removed by the next (sweep_stale_files)
    staging = output.with_name(f".{output.name}.{staging_owner()}.tmp")
    sweep_stale_files(output.parent, f".{output.name}.", ".tmp")
    timings: dict[str, float] = {}
    setup = scale_setup(policy)

    mark = time.perf_counter()
    freq = frequency_stage(policy, setup, blocksize)
    reference = reference_stage(policy, setup, blocksize)
    timings["ingest_frequency"] = time.perf_counter() - mark

    mark = time.perf_counter()
    plan, result = search_stage(freq, setup)
    timings["search"] = time.perf_counter() - mark

    mark = time.perf_counter()
    write_stage(plan, policy, setup, staging, blocksize, shuffle_seed)
    timings["generalize_write"] = time.perf_counter() - mark

    mark = time.perf_counter()
    n_rows = freq.table.n_rows
    decision = verify_stage(staging, setup, n_rows, reference, n_rows - plan.suppressed)
    timings["verify"] = time.perf_counter() - mark

    publish_stage(staging, output, decision)
    summary = {
        "algorithm": result.algorithm,
        "levels": plan.levels,
        "input_rows": n_rows,
        "distinct_tuples": int(len(freq.counts)),
        "suppressed": plan.suppressed,
        **{f"search_{key}": value for key, value in result.details.items()},
        "seconds": {key: round(value, 4) for key, value in timings.items()},
    }
    return ScaleRun(decision, output, plan.levels, summary)
