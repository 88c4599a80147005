"""Data Docs compile Great Expectations' templates once per process, and render the same pages."""

from __future__ import annotations

import re
from pathlib import Path

import jinja2
import pandas as pd

from privgate.core import stages
from privgate.core.policy import ReleasePolicy
from privgate.validations.expectations import validate_input_expectations, write_data_docs
from privgate.validations.schema import validate_input

POLICY = ReleasePolicy.model_validate(
    {
        "dataset": "toy",
        "input": {"path": "toy.csv"},
        "columns": {
            "age": {
                "role": "quasi_identifier",
                "type": "integer",
                "minimum": 0,
                "maximum": 120,
                "hierarchy": {"kind": "interval", "bands": [10, 20]},
            },
            "disease": {"role": "sensitive", "categories": ["flu", "cold"]},
        },
        "privacy": {"k": 2, "suppression_limit": 0.25},
    }
)
# What differs between two renderings of the same result: element ids and "rendered at" times.
_VOLATILE = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\d{8}T\d{6}\.\d{6}Z"
)


def _summaries() -> list[dict]:
    hierarchies = stages.load_hierarchies(POLICY)
    text = pd.DataFrame(
        {
            "age": pd.array(["31", "35", "52", "55", "57", "130"], dtype="string"),
            "disease": pd.array(["flu", "cold", "flu", "cold", "flu", "flu"], dtype="string"),
        }
    )
    frame = validate_input(text.iloc[:5], POLICY, hierarchies)
    passing = validate_input_expectations(frame, POLICY, hierarchies)
    failing = validate_input_expectations(
        text.assign(age=pd.array([31, 35, 52, 55, 57, 130], dtype="Int64")), POLICY, hierarchies
    )
    assert passing["success"] and not failing["success"]
    return [passing, {**failing, "kind": "release"}]


def _pages(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): _VOLATILE.sub("X", p.read_text(encoding="utf-8"))
        for p in sorted(folder.rglob("*.html"))
    }


def test_second_data_docs_compile_no_template_and_render_the_same_pages(tmp_path, monkeypatch):
    summaries = _summaries()
    write_data_docs(summaries, tmp_path / "first")
    compiled: list[str | None] = []
    compile_template = jinja2.Environment.compile

    def counting(self, source, name=None, *args, **kwargs):
        compiled.append(name)
        return compile_template(self, source, name, *args, **kwargs)

    monkeypatch.setattr(jinja2.Environment, "compile", counting)
    write_data_docs(summaries, tmp_path / "second")
    assert compiled == []  # every template came from the process's bytecode cache
    first, second = _pages(tmp_path / "first"), _pages(tmp_path / "second")
    assert len(first) >= 6 and first == second  # index, suite and validation page per site
    failed = next(v for k, v in second.items() if k.startswith("release/validations/"))
    assert "130" in failed  # the failing value is on the validation page
