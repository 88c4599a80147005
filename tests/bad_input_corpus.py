"""Shared pieces of the bad-input corpus: the valid table, its policy, small helpers.

Imported by the corpus tests and by their ``conftest.py`` (a plain module with a unique name,
so that it never collides with another folder's ``conftest``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

HEADER = ["person_id", "age", "sex", "zip", "disease", "notes"]

#: 12 people: after generalization every class has at least 2 records.
GOOD_ROWS = [
    [f"P{i:03d}", str(30 + i % 4), "Male" if i % 2 else "Female", f"1234{i % 3}", d, "ok"]
    for i, d in zip(range(12), ["flu", "cold", "none"] * 4, strict=True)
]

POLICY_YAML = """\
dataset: toy
input:
  path: {data}
  delimiter: ","
  missing_values: [""]
columns:
  person_id: {{role: identifier, type: string}}
  age:
    role: quasi_identifier
    type: integer
    minimum: 0
    maximum: 120
    hierarchy: {{kind: interval, bands: [5, 10, 20]}}
  sex:
    role: quasi_identifier
    hierarchy: {{kind: taxonomy, tree: {{Person: [Male, Female]}}}}
  zip:
    role: quasi_identifier
    type: string
    hierarchy: {{kind: masking, length: 5}}
  disease: {{role: sensitive, categories: [flu, cold, none]}}
  notes: {{role: insensitive, type: string}}
privacy:
  k: {k}
  suppression_limit: 0.2
output:
  directory: {out}
"""


def csv_text(rows: list[list[str]], header: list[str] | None = None, sep: str = ",") -> str:
    header = HEADER if header is None else header
    return "".join(sep.join(r) + "\n" for r in [header, *rows])


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass
class Case:
    """A policy file and its input file in ``tmp_path``, with the output folder."""

    policy: Path
    data: Path
    out: Path

    def published(self) -> list[Path]:
        """Everything under the output folder (a refused run leaves it empty or absent)."""
        return sorted(self.out.rglob("*")) if self.out.exists() else []
