"""What every benchmark states around its numbers: where the data is, and the machine and load.

A figure measured on this shared 2-core machine means little without the load average it was
measured at, so every benchmark reports the same things the same way: the number of usable
cores, the CPU model, the kernel, the 1/5/15-minute load average before and after the
measurements, and the versions of the libraries it exercised. The real datasets are read in
place from ``../shared/data`` (next to the repository, never copied into it); ARX's Adult and
its hierarchies are loaded by one function so that every benchmark on it reads the same files.

Imported by the scripts in this folder as ``_environment`` (they run with the folder on
``sys.path``, as ``_markdown``).
"""

from __future__ import annotations

import os
import platform
from collections.abc import Iterable, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
#: The sibling ``shared`` checkout (data, tools); ``--shared`` options override it.
SHARED = REPO_ROOT / ".." / "shared"
#: The real public datasets: ``adult/``, ``arx/``, ``bank/``, ...
SHARED_DATA = SHARED / "data"
#: ARX's Adult (``adult.csv``, ``adult_subset.csv``) and its hierarchies.
ARX_DATA = SHARED_DATA / "arx"
BENCHMARKS_MD = REPO_ROOT / "benchmarks" / "BENCHMARKS.md"

LoadAverage = tuple[float, float, float]


def load_average() -> LoadAverage:
    """The 1-, 5- and 15-minute load averages (what other engineers' work adds to a figure)."""
    one, five, fifteen = os.getloadavg()
    return one, five, fifteen


def usable_cores() -> int:
    """Cores this process may run on (the affinity mask, not the host's count)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo``, else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def package_versions(packages: Iterable[str]) -> str:
    """``numpy 2.4.6, pandas 3.1.1, ...`` for the installed distributions named."""
    found = []
    for name in packages:
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            found.append(f"{name} not installed")
    return ", ".join(found)


def _loads(load: Sequence[float]) -> str:
    return "/".join(f"{value:.2f}" for value in load)


def machine(
    load_before: Sequence[float],
    load_after: Sequence[float],
    packages: Iterable[str] = ("numpy", "pandas"),
) -> str:
    """One line for a benchmark's section: cores, CPU, kernel, load before/after, versions."""
    return (
        f"nproc {usable_cores()}, {cpu_model()}, {platform.system()} {platform.release()}; "
        f"load average (1/5/15 min) {_loads(load_before)} before the measurements and "
        f"{_loads(load_after)} after (shared machine, other engineers running tests); Python "
        f"{platform.python_version()} ({platform.python_implementation()}), "
        f"{package_versions(packages)}"
    )


def arx_adult_hierarchies(quasi_identifiers: Iterable[str], arx_dir: Path = ARX_DATA) -> dict:
    """ARX's generalization hierarchy of each quasi-identifier (``adult_hierarchy_<qi>.csv``)."""
    from privgate.core.hierarchy import ARXHierarchy

    return {
        q: ARXHierarchy.from_csv(q, arx_dir / f"adult_hierarchy_{q}.csv") for q in quasi_identifiers
    }
