"""First contact on a busy machine: `make demo` (and `make test`) on a fresh clone beside CPU load
(issue 17).

A new user's first command once failed on this 2-core machine at a load average of 5–6:
Prefect's temporary server got 20 s to start. This script reproduces that situation and checks
the README's commands, unchanged:

1. clones the repository's committed HEAD next to it (so ``../shared/data`` resolves as in the
   real checkout) into a fresh folder, with a fresh ``PREFECT_HOME`` and privgate data
   directory and no ``PREFECT_API_URL``: the first run starts a temporary server in a new home,
   the slowest case;
2. starts ``--load`` CPU-bound processes (busy loops, default 4) and keeps them running;
3. runs ``make demo`` (which installs the virtual environment first), then, with ``--test``,
   ``make test``; records exit code, wall time, the load average and whether any traceback was
   printed;
4. stops the load, removes the clone, prints the section (``--write`` updates BENCHMARKS.md).

Run from the repository root::

    .venv/bin/python benchmarks/first_contact_under_load.py --write
    .venv/bin/python benchmarks/first_contact_under_load.py --test --write   # about 20 min
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from _markdown import upsert_section  # noqa: E402 (script dir)

BENCHMARKS_MD = REPO_ROOT / "benchmarks" / "BENCHMARKS.md"
SECTION_HEADING = "## First contact under load: make demo and make test beside 4 busy processes"


class _LoadAverage:
    """The highest 1-minute load average seen while a command runs (sampled every 5 s)."""

    def __init__(self) -> None:
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(5):
            self.peak = max(self.peak, os.getloadavg()[0])

    def __enter__(self) -> _LoadAverage:
        self.peak = os.getloadavg()[0]
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def _run(target: str, clone: Path, env: dict[str, str], log: Path) -> dict:
    with _LoadAverage() as load, open(log, "w") as out:
        started = time.perf_counter()
        done = subprocess.run(
            ["make", target], cwd=clone, env=env, stdout=out, stderr=subprocess.STDOUT
        )
        seconds = time.perf_counter() - started
    text = log.read_text(errors="replace")
    if target == "test":  # pytest prints tracebacks of failed tests; count the failures
        summary = [ln for ln in text.splitlines() if " passed" in ln or " failed" in ln]
        note = summary[-1].strip("= ") if summary else "no pytest summary"
    else:
        errors = [ln for ln in text.splitlines() if ln.startswith("privgate: ")]
        note = errors[-1] if errors else "no error line"
        if "Traceback" in text:
            note += "; a traceback was printed"
    return {
        "target": target,
        "exit": done.returncode,
        "seconds": seconds,
        "peak_load": load.peak,
        "note": note,
        "tail": text[-3000:],
    }


def measure(load: int, with_test: bool) -> tuple[list[dict], str]:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True
    ).stdout.strip()
    # The clone sits directly next to the repository, as a real checkout does: the tests read
    # ../shared/data from the repository root and the policies ../../shared from policies/.
    # (A clone one folder deeper found no data: every test that reads it failed under CI=true.)
    # Prefect's home, the data directory and the logs go to a temporary folder of their own.
    clone = Path(tempfile.mkdtemp(prefix="privgate-first-contact-", dir=REPO_ROOT.parent))
    workdir = Path(tempfile.mkdtemp(prefix="privgate-first-contact-"))
    subprocess.run(["git", "clone", "--quiet", str(REPO_ROOT), str(clone)], check=True)
    env = dict(
        os.environ,
        PREFECT_HOME=str(workdir / "prefect-home"),
        PRIVGATE_DATA_DIR=str(workdir / "privgate-data"),
    )
    for name in ("PREFECT_API_URL", "VIRTUAL_ENV", "PREFECT_LOCAL_STORAGE_PATH"):
        env.pop(name, None)
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(load)]
    results = []
    try:
        time.sleep(10)  # let the load average climb before the first command
        for target in ["demo"] + (["test"] if with_test else []):
            results.append(_run(target, clone, env, workdir / f"{target}.log"))
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
        shutil.rmtree(workdir, ignore_errors=True)
        shutil.rmtree(clone, ignore_errors=True)
    return results, commit


def render(results: list[dict], load: int, commit: str) -> str:
    lines = [
        SECTION_HEADING,
        "",
        f"A fresh clone of commit `{commit}` on this {os.cpu_count()}-core machine, a fresh "
        "Prefect home (the temporary server's slowest start) and no `PREFECT_API_URL`, with "
        f"{load} CPU-bound busy loops running beside it. The README's commands, unchanged:",
        "",
        "```bash",
        f".venv/bin/python benchmarks/first_contact_under_load.py --load {load}"
        + (" --test" if len(results) > 1 else "")
        + " --write",
        "```",
        "",
        "| command | exit | wall (s) | peak load average | last line |",
        "|---|---:|---:|---:|---|",
    ]
    for r in results:
        note = r["note"].replace("|", "\\|")
        lines.append(
            f"| `make {r['target']}` | {r['exit']} | {r['seconds']:.0f} | "
            f"{r['peak_load']:.1f} | {note} |"
        )
    lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--load", type=int, default=4, help="busy processes (default 4)")
    parser.add_argument("--test", action="store_true", help="also run make test (long)")
    parser.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    args = parser.parse_args()
    results, commit = measure(args.load, args.test)
    text = render(results, args.load, commit)
    print(text)
    for r in results:
        if r["exit"]:
            print(f"\n--- make {r['target']} (exit {r['exit']}), last output ---\n{r['tail']}")
    if args.write:
        upsert_section(BENCHMARKS_MD, SECTION_HEADING, text)
    sys.exit(max(r["exit"] for r in results))


if __name__ == "__main__":
    main()
