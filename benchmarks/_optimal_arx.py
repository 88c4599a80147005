"""ARX's Flash measured in the same run as privgate's search (issue 18): the figures every ratio
of the optimal-vs-ARX benchmark is taken against, when ARX can run on this machine.

``ArxFlashAdult.java`` (beside this file) times ``ARXAnonymizer.anonymize`` per cell; this
module compiles it against ARX's classes, runs it in a JVM as a child process and reads its
lines. The benchmark runs it once before and once after privgate's cells (the same load
around both), and each cell's ARX figure is the median of both runs' timed rounds.

ARX is not on the package registries this machine reaches. It was built from its public source
repository (``arx-deidentifier/arx``, version 3.9.2, commit ``aacd487f``) into a scratch folder
outside the repository, roughly::

    find src/main -name '*.java' > sources.txt
    javac -nowarn -encoding UTF-8 -d classes \\
        -cp "<lib/ant jars but SWT's>:pdfbox2.jar:fontbox2.jar:<stub>" @sources.txt

with Debian's ``libpdfbox2-java`` for ARX's certificate package (the repository's pdfbox jar
was not in the snapshot) and a compile-only ``org.apache.hadoop.io.Writable`` interface for
the classification code (hadoop-core was not in the snapshot either; nothing the harness runs
reaches it). ``--arx-classpath`` is then ``classes`` plus ARX's ``lib/ant`` jars. Without it,
the ARX figures quoted in issue 18 are used and the section says so.

Part of ``benchmarks/optimal_vs_arx.py`` (run that script).
"""

from __future__ import annotations

import statistics
import subprocess
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

HARNESS = Path(__file__).with_name("ArxFlashAdult.java")


@dataclass
class ArxRuns:
    """ARX's timed runs per cell (k, limit) and its optimum per cell."""

    times_ms: dict[tuple[int, float], list[float]] = field(
        default_factory=lambda: defaultdict(list)
    )
    optimum: dict[tuple[int, float], tuple[tuple[int, ...], int]] = field(default_factory=dict)
    runs: int = 0  # JVM runs
    java: str = ""

    def median_ms(self, cell: tuple[int, float]) -> float:
        return statistics.median(self.times_ms[cell])


def _java_version() -> str:
    proc = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False)
    return (proc.stderr or proc.stdout).splitlines()[0] if proc.returncode == 0 else "unknown"


def run_arx(classpath: str, data_dir: Path, rounds: int, into: ArxRuns | None = None) -> ArxRuns:
    """Compile the harness (in a temporary folder) and run it once; add its lines to ``into``.

    Raises
    ------
    RuntimeError
        javac or the JVM failed (the message holds their output).
    """
    out = into if into is not None else ArxRuns()
    with tempfile.TemporaryDirectory(prefix="privgate-arx-") as tmp:
        compiled = subprocess.run(
            ["javac", "-nowarn", "-d", tmp, "-cp", classpath, str(HARNESS)],
            capture_output=True,
            text=True,
            check=False,
        )
        if compiled.returncode != 0:
            raise RuntimeError(f"javac failed on {HARNESS.name}:\n{compiled.stderr}")
        proc = subprocess.run(
            ["java", "-cp", f"{tmp}:{classpath}", "ArxFlashAdult", str(data_dir), str(rounds)],
            capture_output=True,
            text=True,
            check=False,
        )
    if proc.returncode != 0:
        raise RuntimeError(f"ARX harness failed:\n{proc.stderr[-4000:]}")
    for line in proc.stdout.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "run":
            out.times_ms[int(parts[1]), float(parts[2])].append(float(parts[3]))
        elif parts[0] == "optimum":
            levels = tuple(int(v) for v in parts[3].split("/"))
            out.optimum[int(parts[1]), float(parts[2])] = (levels, int(parts[4]))
    out.runs += 1
    out.java = out.java or _java_version()
    return out
