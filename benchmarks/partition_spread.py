"""The partitioned path's write with rows spread over random parts (review8 F4) vs without.

Usage (one run per process, alternate the two; the label only names the line printed):
    .venv/bin/python benchmarks/partition_spread.py spread INPUT_PARQUET_FOLDER
    ../base/.venv/bin/python benchmarks/partition_spread.py base INPUT_PARQUET_FOLDER

``../base`` is a checkout of 342888f (the commit before the spread, each part one input block)
with its own virtual environment, whose ``privgate`` the script then imports: the baseline is
the old code itself, not a patch of this one. Prints the gate, wall and CPU seconds of
:func:`privgate.core.scale.anonymize_dask` on ``policies/adult.yaml``; run under
``/usr/bin/time -f %M`` for the peak RSS.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

import dask

from privgate.core.policy import load_policy
from privgate.core.scale import anonymize_dask, input_overrides


def main() -> None:
    variant, source = sys.argv[1], sys.argv[2]
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
