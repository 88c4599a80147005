"""The partitioned path's write with rows spread over random parts (review8 F4) vs without.

Usage (one run per process, alternate the two):
    .venv/bin/python benchmarks/partition_spread.py spread|base INPUT_PARQUET_FOLDER

``base`` replaces :func:`privgate.core.scale._pipeline.spread_rows` by the identity (each part
one input block, the behaviour before); ``spread`` is the code as it is. Prints the gate, wall
and CPU seconds of :func:`privgate.core.scale.anonymize_dask` on ``policies/adult.yaml``; run
under ``/usr/bin/time -f %M`` for the peak RSS.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

import dask

import privgate.core.scale._pipeline as pipeline
from privgate.core.policy import load_policy
from privgate.core.scale import anonymize_dask, input_overrides


def main() -> None:
    variant, source = sys.argv[1], sys.argv[2]
    if variant == "base":
        pipeline.spread_rows = lambda release, seed=None: release
    policy = Path(__file__).resolve().parents[1] / "policies" / "adult.yaml"
    policy = load_policy(policy).with_overrides(**input_overrides(source))
    out = Path(tempfile.mkdtemp(prefix="spread-")) / "release"
    wall, cpu = time.perf_counter(), time.process_time()
    with dask.config.set(scheduler="threads"):
        run = anonymize_dask(policy, out)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"{variant}: gate {run.decision.passed}, wall {wall:.1f} s, CPU {cpu:.1f} s")
    shutil.rmtree(out.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
