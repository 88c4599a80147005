"""What the partitioned release adds around the Dask steps: a validation sample, the release's
loss from the frequency set, its staging folder, fingerprints and a report.

Why: the partitioned path never holds the table, so the release flow's stages that read the
records (schema and expectation suites, utility) need a bounded form. The suites run on a
seeded sample of the input's rows (:func:`read_rows`: the rows
:func:`privgate.validations.expectations.expectation_sample` picks, read in one streamed pass);
the information loss is counted from the frequency set and the plan (:func:`release_loss`: each
distinct tuple's released labels weighted by its count, with
:func:`privgate.core.metrics.attribute_loss_from_counts`, the definitions the in-memory
utility stage uses on the records).
"""

from __future__ import annotations

import glob
import hashlib
import html
import json
import os
import shutil
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow as pa

from privgate.core.anonymize import SearchSetup, failing_tuples
from privgate.core.encoding import FrequencySet
from privgate.core.exceptions import IngestError, PublishError
from privgate.core.metrics import attribute_loss_from_counts, precision
from privgate.core.policy import InputSpec
from privgate.core.publish import StagedRelease, sha256_file, staging_owner, sweep_stale
from privgate.core.scale._apply import GeneralizationPlan

if TYPE_CHECKING:
    from privgate.core.utility import UtilityReport

__all__ = [
    "RELEASE_PARTS",
    "input_fingerprint",
    "loss_utility",
    "parts_fingerprint",
    "partitioned_report",
    "read_rows",
    "release_loss",
    "release_metrics",
    "stage_folder",
    "write_text_synced",
]

#: The folder of Parquet parts inside a published partitioned release.
RELEASE_PARTS = "release"


def _batches(spec: InputSpec, columns: Sequence[str]):
    """The input's record batches in file order, every cell as text or null."""
    path = Path(spec.path)
    if spec.format == "csv":
        import pyarrow.csv as pacsv

        encoding = (
            "utf8"
            if spec.encoding.lower().replace("_", "-") in ("utf-8", "utf8")
            else spec.encoding
        )
        reader = pacsv.open_csv(
            path,
            read_options=pacsv.ReadOptions(encoding=encoding, block_size=1 << 24),
            parse_options=pacsv.ParseOptions(delimiter=spec.delimiter),
            convert_options=pacsv.ConvertOptions(
                column_types=dict.fromkeys(columns, pa.string()),
                include_columns=list(columns),
                strings_can_be_null=True,
                quoted_strings_can_be_null=False,
                null_values=list(spec.missing_values),
            ),
        )
        yield from reader
    elif spec.format == "parquet":
        import pyarrow.dataset as ds

        yield from ds.dataset(str(path), format="parquet").to_batches(columns=list(columns))
    else:
        raise IngestError(
            f"input.format {spec.format!r}: the partitioned path reads csv and parquet"
        )


def read_rows(spec: InputSpec, columns: Sequence[str], positions: np.ndarray) -> pd.DataFrame:
    """The input's rows at ``positions`` (ascending, 0-based data rows) as text cells
    (``string`` dtype, missing markers as ``<NA>``), indexed by their positions, in one
    streamed pass (one batch held at a time).

    Raises
    ------
    IngestError
        The input cannot be read, or holds fewer rows than ``positions`` asks for.
    """
    positions = np.asarray(positions, dtype=np.int64)
    picked: list[pa.Table] = []
    offset = 0
    try:
        for batch in _batches(spec, columns):
            n = batch.num_rows
            lo, hi = np.searchsorted(positions, [offset, offset + n])
            if hi > lo:
                table = pa.Table.from_batches([batch]).take(pa.array(positions[lo:hi] - offset))
                picked.append(table.cast(pa.schema([(c, pa.string()) for c in table.column_names])))
            offset += n
            if hi == len(positions):
                break
    except (pa.ArrowInvalid, OSError, UnicodeDecodeError) as exc:
        raise IngestError(f"{spec.path}: cannot read the rows to validate: {exc}") from None
    taken = sum(t.num_rows for t in picked)
    if taken != len(positions):
        raise IngestError(f"{spec.path}: {taken} rows read, {len(positions)} expected")
    if picked:
        joined = pa.concat_tables(picked)
    else:
        joined = pa.table({c: pa.array([], pa.string()) for c in columns})
    frame = joined.to_pandas(types_mapper={pa.string(): pd.StringDtype()}.get)
    frame.index = pd.Index(positions, name=None)
    return frame[list(columns)]


def release_loss(freq: FrequencySet, plan: GeneralizationPlan, setup: SearchSetup) -> dict:
    """:func:`privgate.core.metrics.table_loss` of the release ``plan`` makes from ``freq``,
    counted on the distinct tuples (no record is read): the same dict (``per_attribute``,
    ``total``, ``granularity``, ``n_original``, ``n_suppressed``)."""
    levels = [plan.levels[q] for q in plan.quasi_identifiers]
    kept = ~failing_tuples(freq, levels, list(setup.models))
    n_original = int(freq.counts.sum())
    n_released = int(freq.counts[kept].sum())
    per_attribute = {}
    for j, name in enumerate(plan.quasi_identifiers):
        values = plan.values[j]
        codes = freq.qi_codes[:, j]
        missing = np.array([v is None for v in values.tolist()], dtype=bool)
        original_counts = np.bincount(codes, weights=freq.counts, minlength=len(values))
        released = np.bincount(codes[kept], weights=freq.counts[kept], minlength=len(values))
        label_counts: dict[str | None, int] = {}
        for code in np.flatnonzero(released):
            label = plan.labels[j][plan.level_codes[j][code]]
            absent = label is None or (isinstance(label, float) and label != label)
            key = None if (absent and missing[code]) else ("*" if absent else str(label))
            label_counts[key] = label_counts.get(key, 0) + int(released[code])
        distinct = [v for v, m, c in zip(values.tolist(), missing, original_counts, strict=True)
                    if not m and c > 0]  # fmt: skip
        per_attribute[name] = attribute_loss_from_counts(
            name,
            distinct,
            n_original,
            bool(original_counts[missing].sum()),
            label_counts,
            n_released,
            setup.hierarchies[name],
            numeric=name in setup.numeric,
        )
    total = float(np.mean(list(per_attribute.values())))
    heights = {q: setup.hierarchies[q].height for q in plan.quasi_identifiers}
    return {
        "per_attribute": per_attribute,
        "total": total,
        "granularity": 1.0 - total,
        "n_original": n_original,
        "n_suppressed": n_original - n_released,
        "precision": precision(plan.levels, heights, n_original, n_original - n_released),
    }


def loss_utility(loss: Mapping[str, object]) -> UtilityReport:
    """The utility the partitioned path measures, as the utility gate reads it: the
    information loss and Sweeney's precision counted on the frequency set
    (:func:`release_loss`). No classifier, clustering or total variation: they need the
    records (:func:`privgate.core.engine_choice.partitioned_blockers` refuses policies that
    ask for them)."""
    from privgate.core.utility import UtilityReport

    return UtilityReport(
        loss={k: v for k, v in loss.items() if k != "precision"},
        metrics={"precision": loss["precision"]},
        distribution={},
        settings={"measured": "loss and precision on the frequency set (partitioned path)"},
    )


def release_metrics(
    facts: Mapping[str, object], loss: Mapping[str, object], plan: GeneralizationPlan, n_rows: int
) -> dict:
    """The manifest's ``metrics`` of a partitioned release: the in-memory release's names
    (algorithm, rows, suppression, loss, granularity, precision) and the search's facts as
    ``search_*``."""
    return {
        "algorithm": facts["algorithm"],
        "input_rows": n_rows,
        "precision": loss["precision"],
        "release_rows": n_rows - plan.suppressed,
        "suppressed": plan.suppressed,
        "loss": loss["total"],
        "granularity": loss["granularity"],
        "loss_per_attribute": loss["per_attribute"],
        **{f"search_{k}": v for k, v in facts.items() if k != "algorithm"},
    }


def input_fingerprint(path: str | Path) -> str:
    """sha256 of the input file, of a folder of parts (each part's name and sha256), or of
    the files a glob such as ``parts/*.parquet`` matches; "" when there is no such input (the
    stage that reads it names the problem).

    Why a glob is fingerprinted by its files: every cached stage and the release id are keyed
    by this digest, so two different sets of parts must never share one.
    """
    text = str(path)
    path = Path(path)
    if path.is_file():
        return sha256_file(path)
    if path.is_dir():
        return parts_fingerprint(path)
    matched = sorted(Path(m) for m in glob.glob(text)) if glob.has_magic(text) else []
    files = [m for m in matched if m.is_file()]
    if not files:
        return ""
    digest = hashlib.sha256()
    for part in files:
        digest.update(f"{part.as_posix()}:{sha256_file(part)}\n".encode())
    return digest.hexdigest()


def parts_fingerprint(folder: str | Path) -> str:
    """sha256 over a folder's files: each relative name and its sha256, in name order."""
    folder = Path(folder)
    digest = hashlib.sha256()
    for part in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(f"{part.relative_to(folder).as_posix()}:{sha256_file(part)}\n".encode())
    return digest.hexdigest()


def stage_folder(root: Path, dataset: str, release_id: str, file_mode: int) -> StagedRelease:
    """A fresh staging folder next to the release's final place; the parts go into its
    ``release/`` folder (:data:`RELEASE_PARTS`), written by the caller."""
    dataset_dir = Path(root) / dataset
    staging = dataset_dir / f".staging-{release_id}-{staging_owner()}-{uuid.uuid4().hex[:8]}"
    try:
        dataset_dir.mkdir(parents=True, exist_ok=True)
        sweep_stale(dataset_dir)
        staging.mkdir()
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise PublishError(f"cannot write the release into {dataset_dir}: {exc}") from None
    return StagedRelease(staging, dataset_dir / release_id, staging / RELEASE_PARTS, file_mode)


def _rows_html(rows: Mapping[str, object]) -> str:
    return "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
        for k, v in rows.items()
    )


def partitioned_report(manifest: Mapping[str, object], status: str) -> str:
    """A self-contained HTML report of a partitioned release, from its manifest: the path taken
    and why, the validation sample, the gate, the levels, the loss, and what this path does not
    measure."""
    gate = manifest["gate"]
    utility_gate = manifest["utility_gate"]
    metrics = manifest["metrics"]
    expectations = manifest.get("expectations", {}).get("input", {})
    sample = expectations.get("sample")
    validated = (
        f"a seeded random sample of {sample['rows']:,} of {sample['of_rows']:,} rows "
        f"(seed {sample['seed']})"
        if sample
        else "every row"
    )
    engine = manifest["engine"]
    sections = [
        f"<h1>Release {html.escape(str(manifest['release_id']))}: {html.escape(status)}</h1>",
        f"<p>Dataset {html.escape(str(manifest['dataset']))}, {manifest['release_date']}. "
        f"Path: {html.escape(engine['reason'])}.</p>",
        "<h2>Privacy gate (on the written parts, every row)</h2>",
        f"<p>{'PASSED' if gate['passed'] else 'BLOCKED'}: "
        f"{html.escape('; '.join(gate['reasons']) or 'every criterion holds')}</p>",
        "<table>"
        + _rows_html(
            {k: v for k, v in gate["measurements"].items() if not isinstance(v, dict | list)}
        )
        + "</table>",  # fmt: skip
        "<h2>Utility gate (loss limits, on the frequency set)</h2>",
        f"<p>{'PASSED' if utility_gate['passed'] else 'BLOCKED'}: "
        f"{html.escape('; '.join(utility_gate['reasons']) or 'every limit holds')}</p>",
        "<h2>Input validation</h2>",
        f"<p>Schema (pandera) and the input suite ({html.escape(str(expectations.get('suite')))}"
        f"): {expectations.get('evaluated')} expectations, {expectations.get('failed')} failed, "
        f"on {validated}. Row counts and class sizes are checked on every row by the search "
        "and the gate; a value only outside the sample is not seen by the suites.</p>",
        "<h2>Generalization and loss</h2>",
        "<table>" + _rows_html(manifest["transformation"]) + "</table>",
        "<table>"
        + _rows_html(
            {
                "loss (mean over quasi-identifiers)": f"{metrics['loss']:.4f}",
                "granularity": f"{metrics['granularity']:.4f}",
                "precision (Sweeney)": f"{metrics['precision']:.4f}",
                "records suppressed": metrics["suppressed"],
                **{f"loss {q}": f"{v:.4f}" for q, v in metrics["loss_per_attribute"].items()},
            }
        )  # fmt: skip
        + "</table>",
        "<h2>Not measured on this path</h2>",
        "<p>Classification and clustering utility, total variation, the release suite of "
        "Great Expectations and the re-identification risk section need the records; the "
        "partitioned path refuses policies that ask for them and does not measure them "
        "otherwise.</p>",
        "<h2>Manifest</h2>",
        f"<pre>{html.escape(json.dumps(manifest, indent=2, default=str))}</pre>",
    ]
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>privgate release "
        f"{html.escape(str(manifest['release_id']))}</title></head><body>"
        + "\n".join(sections)
        + "</body></html>\n"
    )


def write_text_synced(path: Path, text: str) -> Path:
    """Write ``text`` and flush it to disk (a file published by a rename)."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    return path
