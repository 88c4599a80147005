"""The gate's re-reading of a written CSV release: this checkout vs a baseline, side by side.

The gate of every entry point (``privgate run``'s verify-and-gate task, ``privgate
anonymize``, ``privgate verify``) reads the written file back and groups it into classes. This
times exactly that call, :func:`privgate.core.gate.verify_release` with the policy's models and
limits, in a fresh process per run, alternating this checkout and the baseline checkout
(``--baseline DIR``, e.g. a worktree of the commit before a change) for ``--rounds`` rounds on
the same release file; peak = the child's resident memory high-water mark (``ru_maxrss``).

Usage (from the repository root; RELEASE is a file ``privgate anonymize`` wrote)::

    .venv/bin/python benchmarks/gate_reread.py RELEASE --baseline /tmp/base --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POLICY = ROOT / "policies" / "adult.yaml"

CHILD = """
import json, resource, sys, time
from privgate.core.anonymize import SearchSetup
from privgate.core.gate import verify_release
from privgate.core.policy import load_policy
setup = SearchSetup.from_policy(load_policy(sys.argv[1]))
rows = int(sys.argv[3])
start = time.perf_counter()
decision = verify_release(
    sys.argv[2], list(setup.quasi_identifiers), list(setup.models), **setup.gate_limits(rows)
)
seconds = time.perf_counter() - start
print(json.dumps({
    "seconds": seconds,
    "peak_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    "summary": decision.summary,
}))
"""


def run(release: Path, input_rows: int, baseline: Path | None) -> dict:
    env = dict(os.environ)
    if baseline is not None:
        shim = Path(tempfile.mkdtemp(prefix="privgate-baseline-"))
        (shim / "privgate").symlink_to(baseline.resolve())
        env["PYTHONPATH"] = str(shim)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(POLICY), str(release), str(input_rows)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("release", type=Path)
    ap.add_argument("--baseline", type=Path, required=True)
    ap.add_argument("--input-rows", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args(argv)
    before = os.getloadavg()
    found: dict[str, list[dict]] = {"this checkout": [], "baseline": []}
    for _ in range(a.rounds):
        found["this checkout"].append(run(a.release, a.input_rows, None))
        found["baseline"].append(run(a.release, a.input_rows, a.baseline))
    after = os.getloadavg()
    print(f"load before {before}, after {after}")
    for name, runs in found.items():
        seconds = statistics.median(r["seconds"] for r in runs)
        peak = max(r["peak_gib"] for r in runs)
        each = ", ".join(f"{r['seconds']:.2f}" for r in runs)
        print(
            f"{name}: median {seconds:.2f} s over {len(runs)} runs ({each}), "
            f"peak {peak:.2f} GiB; "
            f"{runs[0]['summary']}"
        )
    new = statistics.median(r["seconds"] for r in found["this checkout"])
    old = statistics.median(r["seconds"] for r in found["baseline"])
    print(f"ratio baseline / this checkout: x{old / new:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
