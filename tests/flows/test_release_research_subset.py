"""The release flow with ``privacy.research_subset``: only the cohort is released, the manifest
says which cohort, and another cohort of the same table is another release."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd
import yaml


def _write_case(tmp_path: Path) -> tuple[Path, Path, pd.DataFrame]:
    rng = np.random.default_rng(7)
    n = 60
    frame = pd.DataFrame({
        "rid": [f"r{i}" for i in range(n)],
        "sex": rng.choice(["F", "M"], size=n),
        "band": rng.choice(["b0", "b1", "b2", "b3"], size=n),
        "s": rng.choice(["x", "y"], size=n),
    })  # fmt: skip
    frame.to_csv(tmp_path / "input.csv", index=False)
    keys = tmp_path / "cohort.csv"
    policy = {
        "dataset": "cohort",
        "input": {"path": str(tmp_path / "input.csv")},
        "columns": {
            "rid": {"role": "identifier", "type": "string"},
            "sex": {"role": "quasi_identifier",
                    "hierarchy": {"kind": "taxonomy", "tree": {"Any": ["F", "M"]}}},
            "band": {"role": "quasi_identifier", "hierarchy": {
                "kind": "taxonomy", "tree": {"Any": {"L": ["b0", "b1"], "H": ["b2", "b3"]}}}},
            "s": {"role": "sensitive"},
        },
        "privacy": {"k": 3, "suppression_limit": 0.1,
                    "research_subset": {"path": str(keys), "key": "rid"}},
        "output": {"directory": str(tmp_path / "releases")},
    }  # fmt: skip
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(policy))
    return path, keys, frame


def _run(policy_path: Path) -> dict:
    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.release import release_flow

    return release_flow(
        ReleaseParameters(
            policy_path=str(policy_path),
            release_date=date(2026, 11, 22),
            data_docs=False,  # the release, not its HTML pages, is checked here
        )
    )


def test_release_flow_releases_the_cohort_only(tmp_path) -> None:
    policy_path, keys, frame = _write_case(tmp_path)
    cohorts = [frame["rid"].iloc[:30], frame["rid"].iloc[20:50]]
    ids = []
    for cohort in cohorts:
        pd.DataFrame({"rid": cohort}).to_csv(keys, index=False)
        outcome = _run(policy_path)
        assert outcome["published"] and outcome["gate"]["passed"]
        folder = Path(outcome["path"])
        manifest = json.loads((folder / "manifest.json").read_text())
        release = pd.read_csv(folder / "release.csv", dtype=str)
        assert "rid" not in release.columns
        assert manifest["input"]["rows"] == 30 and len(release) <= 30
        assert manifest["input"]["research_subset"]["rows"] == 30
        assert manifest["input"]["research_subset"]["table_rows"] == 60
        assert manifest["gate"]["measurements"]["input_rows"] == 30
        # the released sensitive values are the cohort's (suppressed records aside)
        cohort_s = frame.set_index("rid").loc[list(cohort), "s"].value_counts()
        assert (release["s"].value_counts() <= cohort_s).all()
        ids.append(outcome["release_id"])
    assert ids[0] != ids[1]  # another cohort of the same table, same date: another release
