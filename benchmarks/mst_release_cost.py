"""What one MST release costs a fresh process, for two checkouts side by side (issue 15).

The release is the one of ``tests/core/dp/test_synthetic_mst_fidelity.py``: 9 columns of UCI
Adult (4,000 records), ε = 10, δ = 1e-6, through ``synthesize`` with a plain accountant. Each
round starts one child process per checkout, alternating, and reads its wall time and its CPU
time (user + system of the child: on this shared machine the CPU seconds move much less with
the load than the wall time). Every child uses the same JAX compilation cache directory (warm
after the first round), so what is compared is the code, not XLA's cache; ``--calibration``
gives the new checkout a calibration directory (``PRIVGATE_CALIBRATION_DIR``), empty at the
start, so its first round searches and the later ones find the kept search.

    .venv/bin/python benchmarks/mst_release_cost.py --baseline ../wt-base/.venv/bin/python \\
        --rounds 2 --calibration /tmp/calibration

Each checkout's own ``privgate`` is the one its interpreter imports. The child mode
(``--child``) prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _environment import SHARED_DATA, load_average  # noqa: E402

COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week",
    "native-country", "salary-class",
]  # fmt: skip


def _child(rows: int) -> dict:
    import pandas as pd

    sys.path.insert(0, str(HERE.parent / "tests" / "core" / "dp"))
    from test_synthetic_mst_fidelity import DELTA, DOMAINS, EPSILON

    from privgate.core.dp import Accountant
    from privgate.core.dp.synthetic import SyntheticConfig, synthesize

    frame = pd.read_csv(
        SHARED_DATA / "adult" / "adult.data",
        header=None,
        names=COLUMNS,
        skipinitialspace=True,
        na_values="?",
    ).iloc[:rows]
    cpu, wall = time.process_time(), time.perf_counter()
    result = synthesize(
        frame, DOMAINS, SyntheticConfig("mst", EPSILON, DELTA), Accountant((EPSILON, DELTA))
    )
    return {
        "release_wall": time.perf_counter() - wall,
        "release_cpu": time.process_time() - cpu,
        "epsilon": result.spend.epsilon,
        "rows": len(result.frame),
    }


def _run(python: str, rows: int, environment: dict) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = subprocess.run(
        [python, __file__, "--child", "--rows", str(rows)],
        capture_output=True, text=True, check=True, env=environment,
    )  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    line = json.loads(out.stdout.strip().splitlines()[-1])
    line["process_wall"] = time.perf_counter() - started
    line["process_cpu"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--rows", type=int, default=4000)
    parser.add_argument("--baseline", help="the baseline checkout's interpreter")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--calibration", help="the new checkout's calibration directory")
    parser.add_argument("--jax-cache", default="/tmp/privgate-bench-jax")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(args.rows)))
        return
    common = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    common |= {
        "JAX_COMPILATION_CACHE_DIR": args.jax_cache,
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
    }
    common.pop("PRIVGATE_CALIBRATION_DIR", None)
    new = dict(common)
    if args.calibration:
        new["PRIVGATE_CALIBRATION_DIR"] = args.calibration
    print(f"load before: {load_average()}")
    for round_ in range(1, args.rounds + 1):
        for name, python, environment in (
            ("baseline", args.baseline, common),
            ("new", sys.executable, new),
        ):
            line = _run(python, args.rows, environment)
            shown = ", ".join(
                f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in line.items()
            )
            print(f"round {round_} {name}: {shown}; load {load_average()[0]:.1f}", flush=True)
    print(f"load after: {load_average()}")


if __name__ == "__main__":
    main()
