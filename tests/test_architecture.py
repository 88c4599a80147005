"""The layering the README's architecture picture promises, checked on the source (AST only).

* ``core`` imports no other folder of the package and no orchestration or validation
  framework (Prefect, Great Expectations, pandera);
* ``validations`` imports only ``core``; ``tasks`` never imports ``flows`` or
  ``deployments``; ``flows`` never imports ``deployments`` (deployments use the flows);
* ``import privgate`` (and its Python API) imports no Prefect;
* no module imports another package's private module (``privgate.core.x._y`` from outside
  ``privgate.core.x``), and no benchmark does either;
* no code imports the folders by their bare names (``import core``, ``from tasks import``):
  installed, only ``privgate`` exists;
* no two modules import each other at import time (no cycle, type-only imports included).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("core", "tasks", "flows", "validations", "deployments")
FRAMEWORKS = ("prefect", "prefect_dask", "great_expectations", "pandera")

#: package folder -> the package folders and frameworks it must not import
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "core": ("tasks", "flows", "validations", "deployments", *FRAMEWORKS),
    "validations": ("tasks", "flows", "deployments", "prefect", "prefect_dask"),
    "tasks": ("flows", "deployments"),
    "flows": ("deployments",),
}


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (``privgate.core.stages``)."""
    found = {"privgate": REPO / "__init__.py", "privgate.api": REPO / "api.py"}
    for folder in FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(["privgate", *parts])] = path
    return found


MODULES = _modules()


def _targets(node: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, dotted target) of an import statement (``from a import b`` gives ``a.b`` when
    ``a.b`` is a module, else ``a``); nothing for any other statement."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield node.lineno, alias.name
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        for alias in node.names:
            full = f"{node.module}.{alias.name}"
            yield node.lineno, full if full in MODULES else node.module


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """Every import in a file, wherever it stands (functions included)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        yield from _targets(node)


def _top_level_imports(path: Path) -> Iterator[tuple[int, str]]:
    """Imports that run when the module is imported, ``if TYPE_CHECKING:`` blocks included
    (a cycle through type hints is still a cycle for a reader)."""
    stack = list(ast.parse(path.read_text(encoding="utf-8")).body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If | ast.Try):
            stack.extend(node.body + node.orelse + getattr(node, "finalbody", []))
        yield from _targets(node)


def _root(target: str) -> str:
    """The package folder or framework a dotted import lands in."""
    parts = target.split(".")
    if parts[0] == "privgate":
        return parts[1] if len(parts) > 1 else "privgate"
    return parts[0]


@pytest.mark.parametrize("folder", list(FORBIDDEN))
def test_layers_import_only_downwards(folder: str) -> None:
    wrong = [
        f"{path.relative_to(REPO)}:{line} imports {target}"
        for name, path in MODULES.items()
        if name.startswith(f"privgate.{folder}")
        for line, target in _imports(path)
        if _root(target) in FORBIDDEN[folder]
    ]
    assert not wrong, "\n".join(wrong)


def test_importing_privgate_imports_no_prefect() -> None:
    """``import privgate`` and its Python API, in a fresh interpreter, load no Prefect (and
    ``import privgate`` alone not even pandas: the command line starts fast)."""
    import subprocess
    import sys

    probe = (
        "import sys; import privgate; bare = set(sys.modules); privgate.anonymize; "
        "print('pandas' in bare, 'prefect' in bare, 'prefect' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == ["False", "False", "False"]


def _private_parts(target: str) -> int | None:
    """Index of the first private module in a dotted path (``_rfka`` in
    ``privgate.core.anonymize._rfka``), if any."""
    parts = target.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return i
    return None


def _private_import_violations(name: str, path: Path) -> list[str]:
    out = []
    for line, target in _imports(path):
        if not target.startswith("privgate."):
            continue
        at = _private_parts(target)
        if at is None:
            continue
        owner = ".".join(target.split(".")[:at])  # the package the private module belongs to
        if not (name == owner or name.startswith(owner + ".")):
            out.append(f"{path.relative_to(REPO)}:{line} imports private {target}")
    return out


def test_no_private_module_is_imported_across_packages() -> None:
    wrong = [v for name, path in MODULES.items() for v in _private_import_violations(name, path)]
    assert not wrong, "\n".join(wrong)


def test_benchmarks_use_public_names_only() -> None:
    wrong = [
        v
        for path in sorted((REPO / "benchmarks").glob("*.py"))
        for v in _private_import_violations("benchmarks", path)
    ]
    assert not wrong, "\n".join(wrong)


def test_no_bare_folder_imports() -> None:
    files = [*MODULES.values(), *REPO.glob("tests/**/*.py"), *REPO.glob("benchmarks/*.py")]
    wrong = [
        f"{path.relative_to(REPO)}:{line} imports {target}"
        for path in files
        for line, target in _imports(path)
        if target.split(".")[0] in FOLDERS
    ]
    assert not wrong, "\n".join(wrong)


def test_no_import_cycles() -> None:
    edges = {
        name: {t for _, t in _top_level_imports(path) if t in MODULES and t != name}
        for name, path in MODULES.items()
    }
    # A package's __init__ re-exporting its own modules is not a cycle of the design.
    for name in edges:
        edges[name] = {t for t in edges[name] if not name.startswith(t + ".")}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for succ in edges[node]:
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in edges:
        if node not in index:
            visit(node)
    assert not cycles, cycles


def test_package_folders_form_no_cycle() -> None:
    """Folder level: deployments -> flows -> tasks -> validations -> core, never back."""
    rank = {"core": 0, "validations": 1, "tasks": 2, "flows": 3, "deployments": 4}
    wrong = [
        f"{path.relative_to(REPO)}:{line} imports {target}"
        for name, path in MODULES.items()
        if name.count(".") >= 1 and _root(name) in rank
        for line, target in _imports(path)
        if _root(target) in rank and rank[_root(target)] > rank[_root(name)]
    ]
    assert not wrong, "\n".join(wrong)


_TASK_NAMES = frozenset({"task", "Task"})


def _task_aliases(tree: ast.Module) -> set[str]:
    """Local names that mean Prefect's ``task`` or ``Task``: the plain names, plus any alias
    (``from prefect import task as t``, ``from prefect.tasks import Task as T``, ``t = task``,
    ``t = prefect.task``), an alias of an alias included."""
    names = set(_TASK_NAMES)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "prefect":
            names.update(a.asname for a in node.names if a.name in _TASK_NAMES and a.asname)
    assignments = [n for n in ast.walk(tree) if isinstance(n, ast.Assign | ast.AnnAssign)]
    while True:  # until no assignment adds a name
        before = len(names)
        for node in assignments:
            value = node.value
            named = (isinstance(value, ast.Name) and value.id in names) or (
                isinstance(value, ast.Attribute) and value.attr in _TASK_NAMES
            )
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if named:
                names.update(t.id for t in targets if isinstance(t, ast.Name))
        if len(names) == before:
            return names


def _is_task(node: ast.expr, aliases: set[str]) -> bool:
    """``task``/``Task`` or an alias of either, ``prefect.task``/``prefect.Task``, or any of
    these called (``task(name=...)``)."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id in aliases
    return isinstance(node, ast.Attribute) and node.attr in _TASK_NAMES


def _task_definitions(path: Path) -> list[int]:
    """Lines where a module defines a Prefect task: a function decorated with ``@task`` /
    ``@task(...)``, ``task(...)`` called on a function, or ``Task(...)`` built directly —
    under any name the module imports them as."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    aliases = _task_aliases(tree)
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines.update(d.lineno for d in node.decorator_list if _is_task(d, aliases))
        elif isinstance(node, ast.Call) and _is_task(node.func, aliases):
            lines.add(node.lineno)
    return sorted(lines)


def test_flows_define_no_tasks() -> None:
    """A flow strings tasks together; each task lives in ``tasks/`` (a thin wrapper of one
    ``core`` step with its caching and retries), where the reader of the caching rules finds
    every one of them."""
    wrong = [
        f"{path.relative_to(REPO)}:{line} defines a Prefect task"
        for name, path in MODULES.items()
        if name.startswith("privgate.flows")
        for line in _task_definitions(path)
    ]
    assert not wrong, "\n".join(wrong)


def test_the_task_guard_sees_every_form_of_definition(tmp_path: Path) -> None:
    """The guard above is not vacuous: each way of defining a task is found."""
    source = tmp_path / "flow.py"
    source.write_text(
        "import prefect\nfrom prefect import task\n\n"
        "@task\ndef a(): ...\n\n"
        "@task(name='b', retries=2)\ndef b(): ...\n\n"
        "@prefect.task(name='c')\ndef c(): ...\n\n"
        "def d(): ...\n\nd_task = task(d, name='d')\n\n"
        "def untouched(): ...\n",
        encoding="utf-8",
    )
    assert _task_definitions(source) == [4, 7, 10, 15]


def test_the_task_guard_sees_aliases_and_the_task_class(tmp_path: Path) -> None:
    """A renamed import or Prefect's ``Task`` class built directly is still a task definition."""
    source = tmp_path / "flow.py"
    source.write_text(
        "import prefect\nfrom prefect import task as t\nfrom prefect.tasks import Task as T\n\n"
        "@t\ndef a(): ...\n\n"
        "def b(): ...\n\nb_task = T(fn=b)\n\n"
        "c_task = prefect.Task(fn=b)\n\n"
        "def other(t): return t(1)\n\n"
        "my = prefect.task\nmine = my\n\n"
        "@mine(name='d')\ndef d(): ...\n",
        encoding="utf-8",
    )
    # line 14: ``t(1)`` calls a parameter named like the alias; the guard is by name, so it
    # is flagged too (a false alarm is the safe side for a layering guard).
    assert _task_definitions(source) == [5, 10, 12, 14, 19]
