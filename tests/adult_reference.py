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


def write_resampled_adult(
    source: Path, path: Path, *, rows: int, seed: int, missing_salary: float = 0.0
) -> Path:
    """``rows`` records resampled from ARX's Adult (``source``) as
    ``../shared/tools/make_scaled_adult.py`` makes them: each record drawn with replacement,
    then each quasi-identifier cell replaced with probability 0.3 by the same column's cell of
    another random record (so a larger table has more distinct tuples, not only copies); with
    ``missing_salary``, that share of salary cells is set to the missing marker ``?``.
    Written to ``path`` in Adult's format (``;``, a header line)."""
    import numpy as np

    lines = source.read_text(encoding="utf-8").splitlines()
    header = lines[0].split(";")
    table = np.array([ln.split(";") for ln in lines[1:] if ln], dtype=object)
    rng = np.random.default_rng(seed)
    out = table[rng.integers(0, len(table), rows)]
    for col in ADULT_QI:
        j = header.index(col)
        swap = rng.random(len(out)) < 0.3
        out[swap, j] = table[rng.integers(0, len(table), int(swap.sum())), j]
    if missing_salary:
        out[rng.random(len(out)) < missing_salary, header.index("salary-class")] = "?"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(";".join(header) + "\n")
        fh.writelines(";".join(row) + "\n" for row in out)
    return path


def arx_t_closeness_spec(policy_document: dict) -> dict:
    """ARX's t-closeness test case as a policy document, from the Adult policy's
    (``ReleasePolicy.model_dump(mode="json", exclude_none=True)``): hierarchical 0.2-closeness
    on occupation, k = 5, 5 % suppression, every other Adult column a quasi-identifier (salary
    with ARX's hierarchy), non-uniform entropy. ARX's node suppresses 1,384 records."""
    spec = dict(policy_document)
    columns = {name: dict(column) for name, column in spec["columns"].items()}
    folder = Path(columns["occupation"]["hierarchy"]["path"]).parent
    columns["occupation"]["role"] = "sensitive"
    columns["salary-class"] = {
        "role": "quasi_identifier",
        "hierarchy": {"kind": "arx", "path": str(folder / "adult_hierarchy_salary-class.csv")},
    }
    spec["columns"] = columns
    spec["privacy"] = {
        **spec["privacy"],
        "k": 5,
        "suppression_limit": 0.05,
        "t_closeness": [{"column": "occupation", "t": 0.2, "distance": "hierarchical"}],
    }
    spec["algorithm"] = {**spec["algorithm"], "metric": "entropy"}
    return spec
