"""privgate on tables larger than one machine's memory, on dask, and on codes in one process.

The table is never held whole: it is read in blocks (:func:`read_input`), each block is
summarized by its distinct (QI, sensitive) tuples with counts, and the summaries are summed
(:func:`histogram_of`) into the global frequency set the lattice search runs on, on one node
(:func:`frequency_set_from_histogram`). The chosen generalization is applied block by block
(:func:`generalize_frame`), written as partitioned Parquet, read back and verified block by
block (:func:`verify_parquet_release`) with the gate's own checks. :func:`anonymize_dask` runs
it end to end on the active dask scheduler; the same releases as the pandas path, up to row
order.

A table held whole as dictionary codes (``privgate anonymize``) takes the same steps in one
process (:func:`anonymize_codes`: :func:`histogram_from_codes`, the same frequency set and
plan, :func:`generalize_codes`). The names whose modules import dask or pandas (the
partitioned pipeline, its release folder and report) are imported on first use, so that path
starts without importing either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from privgate.core.lazy_names import lazy_names
from privgate.core.scale._apply import (
    GeneralizationPlan,
    generalize_codes,
    generalize_frame,
    generalize_partition,
    plan_generalization,
)
from privgate.core.scale._columnar import (
    CodedRelease,
    anonymize_codes,
    frequency_set_from_codes,
    reference_from_codes,
)
from privgate.core.scale._dictionary import frequency_set_from_histogram
from privgate.core.scale._histogram import (
    PartialHistogram,
    histogram_from_codes,
    merge_histograms,
    partition_histogram,
)
from privgate.core.scale._lines import (
    CodedTuples,
    LineRelease,
    release_lines,
    shuffled_rows,
    tuples_from_codes,
)

if TYPE_CHECKING:
    from privgate.core.scale._release import (
        RELEASE_PARTS,
        input_fingerprint,
        loss_utility,
        partitioned_report,
        parts_fingerprint,
        read_rows,
        release_loss,
        release_metrics,
        stage_folder,
        write_text_synced,
    )

#: Names whose modules import dask or pandas, by module (loaded by :func:`__getattr__` on first
#: use): ``privgate anonymize`` runs on the codes alone and imports neither.
_LAZY = {
    "privgate.core.scale._release": (
        "RELEASE_PARTS",
        "input_fingerprint",
        "loss_utility",
        "partitioned_report",
        "parts_fingerprint",
        "read_rows",
        "release_loss",
        "release_metrics",
        "stage_folder",
        "write_text_synced",
    ),
    "privgate.core.scale._frequency": ("frequency_set_of", "histogram_of", "read_input"),
    "privgate.core.scale._pipeline": (
        "ScaleRun",
        "anonymize_dask",
        "frequency_stage",
        "input_overrides",
        "publish_stage",
        "reference_stage",
        "scale_setup",
        "search_stage",
        "search_with_loss",
        "verify_stage",
        "write_stage",
    ),
    "privgate.core.scale._verify": (
        "class_stats_from_histogram",
        "reference_from_histogram",
        "verify_parquet_release",
    ),
}
__getattr__ = lazy_names(__name__, _LAZY)


__all__ = [
    "RELEASE_PARTS",
    "CodedRelease",
    "CodedTuples",
    "GeneralizationPlan",
    "LineRelease",
    "PartialHistogram",
    "ScaleRun",
    "anonymize_codes",
    "anonymize_dask",
    "class_stats_from_histogram",
    "frequency_set_from_codes",
    "frequency_set_from_histogram",
    "frequency_set_of",
    "frequency_stage",
    "generalize_codes",
    "generalize_frame",
    "generalize_partition",
    "histogram_from_codes",
    "histogram_of",
    "input_fingerprint",
    "input_overrides",
    "loss_utility",
    "merge_histograms",
    "partition_histogram",
    "partitioned_report",
    "parts_fingerprint",
    "plan_generalization",
    "publish_stage",
    "read_input",
    "read_rows",
    "reference_from_codes",
    "reference_stage",
    "release_loss",
    "release_lines",
    "release_metrics",
    "scale_setup",
    "search_stage",
    "search_with_loss",
    "shuffled_rows",
    "stage_folder",
    "tuples_from_codes",
    "verify_parquet_release",
    "verify_stage",
    "write_stage",
    "write_text_synced",
]
