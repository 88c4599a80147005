"""privgate on tables larger than one machine's memory, on dask.

The table is never held whole: it is read in blocks (:func:`read_input`), each block is
summarized by its distinct (QI, sensitive) tuples with counts, and the summaries are summed
(:func:`histogram_of`) into the global frequency set the lattice search runs on, on one node
(:func:`frequency_set_from_histogram`). The chosen generalization is applied block by block
(:func:`generalize_frame`), written as partitioned Parquet, read back and verified block by
block (:func:`verify_parquet_release`) with the gate's own checks. :func:`anonymize_dask` runs
it end to end on the active dask scheduler; the same releases as the pandas path, up to row
order.
"""

from privgate.core.scale._apply import (
    GeneralizationPlan,
    generalize_frame,
    generalize_partition,
    plan_generalization,
)
from privgate.core.scale._dictionary import frequency_set_from_histogram
from privgate.core.scale._frequency import frequency_set_of, histogram_of, read_input
from privgate.core.scale._histogram import PartialHistogram, merge_histograms, partition_histogram
from privgate.core.scale._pipeline import (
    ScaleRun,
    anonymize_dask,
    frequency_stage,
    publish_stage,
    reference_stage,
    scale_setup,
    search_stage,
    verify_stage,
    write_stage,
)
from privgate.core.scale._verify import (
    class_stats_from_histogram,
    reference_from_histogram,
    verify_parquet_release,
)

__all__ = [
    "GeneralizationPlan",
    "PartialHistogram",
    "ScaleRun",
    "anonymize_dask",
    "class_stats_from_histogram",
    "frequency_set_from_histogram",
    "frequency_set_of",
    "frequency_stage",
    "generalize_frame",
    "generalize_partition",
    "histogram_of",
    "merge_histograms",
    "partition_histogram",
    "plan_generalization",
    "publish_stage",
    "read_input",
    "reference_from_histogram",
    "reference_stage",
    "scale_setup",
    "search_stage",
    "verify_parquet_release",
    "verify_stage",
    "write_stage",
]
