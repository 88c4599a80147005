"""Anonymize a CSV file in one short process: read, search, write, verify.

The release flow (ingest, pandera validation, Prefect tasks, atomic publish with a manifest) is
what a data owner schedules. This path is for quick, interactive work on a CSV file, such as
trying a k or comparing algorithms: it runs the same search setup, algorithm contract and gate
without Prefect or pandera, so a whole process on Adult takes well under a second. It
checks less at ingest (declared columns present, no undeclared ones; values are checked by the
hierarchies) and it never publishes: the output file appears only once the gate has passed on
it.

It runs on the engine's columnar path (issue 18): the CSV is read as dictionary codes
(:func:`privgate.core.columnar.read_coded_csv`), grouped once into its distinct tuples
(:func:`privgate.core.scale.tuples_from_codes`: the search's frequency set, and each row's
tuple), searched with the Dask path's own steps, and released as distinct lines and each row's
line (:func:`privgate.core.scale.release_lines`: the rows generalizing every row gives, byte for
byte, with one integer gather per row instead of a gather per column, in an order of their own
drawn uniformly at random). The gate re-reads the written file as codes, independently of the
search's in-memory result.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from privgate.core.anonymize import full_domain_setup
from privgate.core.columnar import (
    TextCodes,
    read_coded_csv,
    release_freed_memory,
    write_coded_csv,
)
from privgate.core.encoding import PARALLEL_ROWS
from privgate.core.exceptions import GateBlockedError, IngestError
from privgate.core.gate import GateDecision, verify_release
from privgate.core.marginals import generalized_texts, text_counts
from privgate.core.policy import ReleasePolicy
from privgate.core.publish import staging_owner, sweep_stale_files, sync_to_disk
from privgate.core.scale import (
    reference_from_codes,
    release_lines,
    shuffled_rows,
    tuples_from_codes,
)

__all__ = ["anonymize_csv"]


def _read(policy: ReleasePolicy) -> dict[str, TextCodes]:
    spec = policy.input
    if spec.format != "csv":
        raise IngestError(
            f"input.format is {spec.format!r}: `privgate anonymize` reads CSV only; use "
            "`privgate run` for other formats"
        )
    columns = read_coded_csv(
        spec.path, spec.delimiter, spec.encoding, spec.header, spec.missing_values
    )
    missing = [c for c in policy.columns if c not in columns]
    extra = [c for c in columns if c not in policy.columns]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing column(s) {missing} (declared in the policy)")
        if extra:
            parts.append(f"unexpected column(s) {extra} (not declared in the policy)")
        raise IngestError(f"{spec.path}: " + "; ".join(parts))
    if not len(next(iter(columns.values()))):
        raise IngestError(f"{spec.path}: no data rows (only a header)")
    return columns


def anonymize_csv(
    policy: ReleasePolicy, output: str | Path, shuffle_seed: int | None = None
) -> tuple[GateDecision, dict]:
    """Anonymize the policy's CSV input into ``output`` and verify it there.

    Parameters
    ----------
    policy : ReleasePolicy
        Its algorithm must be a full-domain one (optimal, datafly, multi_attribute_datafly).
    output : path
        The release file (CSV). Written to a temporary name first and renamed once verified.
    shuffle_seed : int, optional
        Seed of the row permutation, to reproduce an order in a test. By default the
        permutation is drawn from the operating system's entropy, so that nothing published
        lets anyone recompute it (and with it the input's order).

    Returns
    -------
    decision : GateDecision
    summary : dict
        Levels chosen, suppressed records, loss and the time of each phase.

    Raises
    ------
    IngestError, HierarchyError, AnonymizationError
        Bad input or an unreachable privacy model.
    GateBlockedError
        The written file failed verification (it is removed).
    """
    setup = full_domain_setup(policy, "`privgate anonymize`")
    timings: dict[str, float] = {}
    started = time.perf_counter()
    columns = _read(policy)
    n_rows = len(next(iter(columns.values())))
    timings["read"] = time.perf_counter() - started

    mark = time.perf_counter()
    setup.check_feasible(n_rows)
    # The published order depends on the row count alone: from PARALLEL_ROWS rows it is drawn
    # on the other core while the rows are grouped (a pass that runs mostly on one), not
    # beside the search. Below, it is drawn beside the search, as the order held from the
    # grouping on raised the peak at 1M rows by 15 MiB (issue 18's target there is 0.23 GiB).
    with ThreadPoolExecutor(1) as pool:
        drawn = None
        if n_rows >= PARALLEL_ROWS:
            drawn = pool.submit(shuffled_rows, n_rows, shuffle_seed)
        coded = tuples_from_codes(columns, setup)  # the rows' distinct tuples: all the rest
        reference = reference_from_codes(columns, setup)
        # What each released column may hold, for the gate's check that the written file is a
        # release of the input: a quasi-identifier's distinct texts (labelled once the plan is
        # known), another column's count of each text (one pass over its codes).
        qi_texts = {q: columns[q].values for q in setup.quasi_identifiers}
        marginals = {
            name: text_counts(columns[name].codes, columns[name].values)
            for name in setup.released_columns
            if name not in qi_texts
        }
        del columns  # the input's codes (1-4 bytes a cell), before the search allocates
        release_freed_memory()
        row_order = None if drawn is None else drawn.result()
    distinct_tuples = int(len(coded.freq.counts))
    timings["encode"] = time.perf_counter() - mark

    mark = time.perf_counter()
    release = release_lines(coded, setup, shuffle_seed, row_order=row_order)
    del row_order
    del coded  # with it the frequency set and the search's caches (bounds, class tables)
    release_freed_memory()  # the tuples and the search's arrays, before the release's text
    facts = (release.algorithm, release.plan.levels, release.details)
    label_sets = {
        q: generalized_texts(texts, setup.hierarchies[q], release.plan.levels[q])
        for q, texts in qi_texts.items()
    }
    del qi_texts
    timings["search"] = time.perf_counter() - mark

    mark = time.perf_counter()
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    # Named after its owner: a process killed before the rename leaves it, and the next run
    # to the same output removes it once that owner is gone.
    staging = output.with_name(f".{output.name}.{staging_owner()}.tmp")
    sweep_stale_files(output.parent, f".{output.name}.", ".tmp")
    expected_rows = n_rows - release.plan.suppressed
    try:  # a failed write or gate leaves no partial file (a release as large as the table)
        write_coded_csv(staging, release.lines, release.ids)
        n_released = len(release.ids)
        del release  # the gate re-reads the written file, nothing of the search's result
        release_freed_memory()  # before the gate reads the file as large as the input
        timings["write"] = time.perf_counter() - mark

        mark = time.perf_counter()
        # The written bytes go to disk (fsync waits on the device, not the CPU) while the gate
        # reads them back; both are done before the name says "release".
        with ThreadPoolExecutor(1) as pool:
            synced = pool.submit(sync_to_disk, staging)
            decision = verify_release(
                staging,
                list(setup.quasi_identifiers),
                list(setup.models),
                reference=reference,
                marginals=marginals,
                label_sets=label_sets,
                expected_rows=expected_rows,  # the plan's rows: a writer losing rows is blocked
                **setup.gate_limits(n_rows),
            )
            synced.result()
        timings["verify"] = time.perf_counter() - mark
        if not decision.passed:
            raise GateBlockedError(f"gate blocked {output}: {decision.summary}", decision)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise
    os.replace(staging, output)
    sync_to_disk(output.parent)
    algorithm, levels, details = facts
    summary = {
        "algorithm": algorithm,
        "levels": levels,
        "input_rows": n_rows,
        "distinct_tuples": distinct_tuples,
        "suppressed": n_rows - n_released,
        **{f"search_{key}": value for key, value in details.items()},
        "seconds": {key: round(value, 4) for key, value in timings.items()},
    }
    return decision, summary
