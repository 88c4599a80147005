"""`privgate run` on a large table with the path chosen by itself, beside `privgate anonymize`.

Issue 18: a nightly run of a 10M-row table must just work (<= 60 s, <= 3 GiB for the whole
pipeline with validation, utility, report and gate). Above ``PRIVGATE_PARTITIONED_MIN_ROWS``
(default 2,000,000 estimated rows) `privgate run` takes the partitioned path by itself; this
script runs it on a scaled Adult CSV (``../shared/tools/make_scaled_adult.py``, never in the
repository) against a running Prefect server, alternating with `privgate anonymize` on the same
file (the engine alone: read, search, generalize, write, verify, no Prefect, no validation,
utility or report) as the side-by-side baseline, so the load both saw is comparable.

Each run is a fresh process under GNU ``time``: wall seconds, the CPU seconds (user + system)
of the process and its waited-for children, the peak RSS of the process (GNU time) and of its
whole process tree (sampled every 0.2 s with psutil; a run is stopped above ``--max-rss-gib``).
The Prefect server is a separate process started once (its memory is not in the figures).

    .venv/bin/python benchmarks/run_auto_scale.py --input /tmp/adult_10m.csv --repeat 2 --write
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _markdown import upsert_section  # noqa: E402 (script dir)
from cli_run import _env, _last_run_phases, _start_server, _stop_server  # noqa: E402
from cli_run_compare import _tree_rss  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS_MD = REPO_ROOT / "benchmarks" / "BENCHMARKS.md"
POLICY = "policies/adult.yaml"
HEADING = "## `privgate run` on 10M rows: the partitioned path chosen by itself (issue 18)"
TIME = "/usr/bin/time"


def _one(command: list[str], env: dict[str, str], max_rss_gib: float) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as err, tempfile.TemporaryFile("w+") as out:
        process = subprocess.Popen(
            [TIME, "-f", "peak-kib %M", *command], cwd=REPO_ROOT, env=env,
            stdout=out, stderr=err, text=True, start_new_session=True,
        )  # fmt: skip
        watched, tree_peak, stopped = psutil.Process(process.pid), 0, False
        while process.poll() is None:
            tree_peak = max(tree_peak, _tree_rss(watched))
            if tree_peak > max_rss_gib * 2**30:
                os.killpg(process.pid, signal.SIGKILL)
                stopped = True
            time.sleep(0.2)
        wall = time.perf_counter() - started
        err.seek(0)
        out.seek(0)
        stderr, stdout = err.read(), out.read()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if stopped:
        return {"stopped": True, "cpu": cpu, "tree_gib": tree_peak / 2**30}
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({process.returncode}):\n{stderr[-3000:]}")
    peak = int(stderr.rsplit("peak-kib ", 1)[1].split()[0]) / 2**20
    return {
        "stopped": False,
        "wall": wall,
        "cpu": cpu,
        "peak_gib": peak,
        "tree_gib": tree_peak / 2**30,
        "stdout": stdout,
    }


def measure(data: Path, repeat: int, max_rss_gib: float, workdir: Path) -> dict:
    privgate = str(REPO_ROOT / ".venv" / "bin" / "privgate")
    server, api = _start_server(workdir)
    env = _env(workdir, api)
    runs: dict[str, list[dict]] = {"anonymize": [], "run": []}
    loads = [os.getloadavg()]
    phases: dict[str, float] = {}
    try:
        for i in range(repeat):
            for name in ("anonymize", "run") if i % 2 == 0 else ("run", "anonymize"):
                if name == "anonymize":
                    command = [privgate, "anonymize", POLICY, "--input", str(data),
                               "--output", str(workdir / f"anon-{i}.csv")]  # fmt: skip
                else:
                    command = [privgate, "run", POLICY, "--input", str(data),
                               "--output", str(workdir / f"releases-{i}"),
                               "--release-date", f"2026-11-{i + 1:02d}"]  # fmt: skip
                loads.append(os.getloadavg())
                result = _one(command, env, max_rss_gib)
                runs[name].append(result)
                if name == "run" and not result["stopped"]:
                    phases = _last_run_phases(api)
                print(name, {k: v for k, v in result.items() if k != "stdout"}, flush=True)
    finally:
        _stop_server(server)
    loads.append(os.getloadavg())
    return {"runs": runs, "loads": loads, "phases": phases}


def _median(runs: list[dict], key: str) -> float:
    values = [r[key] for r in runs if not r["stopped"]]
    return statistics.median(values) if values else float("nan")


def render(results: dict, data: Path, rows: int, command: str, niced: str) -> str:
    runs, loads = results["runs"], results["loads"]
    lines = [
        HEADING,
        "",
        f"Machine: {os.cpu_count()} cores, "
        f"{psutil.virtual_memory().total / 2**30:.0f} GiB, Linux {platform.release()}, Python "
        f"{platform.python_version()}; load average (1/5/15 min) "
        f"{'/'.join(f'{v:.1f}' for v in loads[0])} before, "
        f"{'/'.join(f'{v:.1f}' for v in loads[-1])} after, "
        f"{min(v[0] for v in loads):.1f}-{max(v[0] for v in loads):.1f} (1 min) at the start of "
        f"each run (shared with other engineers); {niced}. Input `{data}` ({rows:,} rows, "
        "`make_scaled_adult.py`), policy `policies/adult.yaml` (k = 5, 2 %), a running Prefect "
        "server (started once, not in the figures).",
        "",
        "```bash",
        command,
        "```",
        "",
        "| command | run | wall (s) | CPU (s) | peak RSS, process (GiB) | peak RSS, tree (GiB) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in ("anonymize", "run"):
        for i, r in enumerate(runs[name], 1):
            if r["stopped"]:
                lines.append(f"| privgate {name} | {i} | stopped | {r['cpu']:.1f} | - | "
                             f"> {r['tree_gib']:.2f} |")  # fmt: skip
            else:
                lines.append(f"| privgate {name} | {i} | {r['wall']:.1f} | {r['cpu']:.1f} | "
                             f"{r['peak_gib']:.2f} | {r['tree_gib']:.2f} |")  # fmt: skip
    ratio_wall = _median(runs["run"], "wall") / _median(runs["anonymize"], "wall")
    ratio_cpu = _median(runs["run"], "cpu") / _median(runs["anonymize"], "cpu")
    lines += [
        "",
        f"Medians: `privgate run` / `privgate anonymize` wall x{ratio_wall:.2f}, CPU "
        f"x{ratio_cpu:.2f}; `privgate run` median wall {_median(runs['run'], 'wall'):.1f} s, "
        f"CPU {_median(runs['run'], 'cpu'):.1f} s, peak tree RSS "
        f"{_median(runs['run'], 'tree_gib'):.2f} GiB.",
        "",
        "Stages of the last `privgate run`, seconds as the server recorded them: "
        + ", ".join(f"{k.removeprefix('stage ')} {v:.1f}" for k, v in results["phases"].items()),
        "",
        "First lines of the last `privgate run`:",
        "",
        "```",
        *[
            ln
            for ln in next(
                (r["stdout"] for r in reversed(runs["run"]) if not r["stopped"]), ""
            ).splitlines()
            if not ln.startswith(("seconds", "wrote"))
        ][:6],
        "```",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True, type=Path)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--max-rss-gib", type=float, default=5.0)
    parser.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    a = parser.parse_args()
    data = a.input.resolve()
    with open(data, "rb") as fh:
        rows = sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 24), b"")) - 1
    niced = f"nice {os.nice(0)}" if os.nice(0) else "not niced"
    with tempfile.TemporaryDirectory(prefix="run-auto-") as tmp:
        results = measure(data, a.repeat, a.max_rss_gib, Path(tmp))
    command = (f"nice -n {os.nice(0)} " if os.nice(0) else "") + " ".join(
        [".venv/bin/python", "benchmarks/run_auto_scale.py", "--input", str(data),
         "--repeat", str(a.repeat), "--max-rss-gib", str(a.max_rss_gib)] + ["--write"] * a.write
    )  # fmt: skip
    text = render(results, data, rows, command, niced)
    print(text)
    if a.write:
        upsert_section(BENCHMARKS_MD, HEADING, text)


if __name__ == "__main__":
    main()
