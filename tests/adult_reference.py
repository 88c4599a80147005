"""The Adult release policy as the tests name it: one list of quasi-identifiers for every file.

Read from ``policies/adult.yaml`` (the file the flow, the CLI and the benchmarks use), so a test
never checks a release against a copy of the list that has drifted from the policy. Plain YAML
is read, not the validated policy: importing this module needs neither the shared data nor the
engine. Tests that need the validated policy or the table use the ``adult_policy`` and
``adult`` fixtures of ``tests/conftest.py``.
"""

from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
#: ARX's Adult with ARX's hierarchies, k = 5, 2 % suppression.
ADULT_POLICY = REPO / "policies" / "adult.yaml"


def _quasi_identifiers(path: Path) -> list[str]:
    columns = yaml.safe_load(path.read_text(encoding="utf-8"))["columns"]
    return [name for name, spec in columns.items() if spec.get("role") == "quasi_identifier"]


#: The policy's 8 quasi-identifiers in its order (sex, age, race, marital-status, education,
#: native-country, workclass, occupation). A list, as pandas indexes and groups by lists (a
#: tuple is one key); every test shares it, so none may modify it.
ADULT_QI: list[str] = _quasi_identifiers(ADULT_POLICY)
