"""The partitioning algorithms (``mondrian``, ``greedy_partition``) through the release flow.

Their searches are tested in ``tests/core/anonymize``, and through ``core.stages``; until
e4a356f the release suite refused every local-recoding range of ``policies/adult.yaml``'s
age (an integer column with a label hierarchy), so no such release could be published, and no
test ran one through the flow. This one does: the policy's own Adult, published when the gate
passes on the written file, which is counted again here (pycanon, a direct group-by).
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pandas as pd
import pytest
from adult_reference import ADULT_POLICY, ADULT_QI
from pycanon import anonymity

#: pycanon groups by a one-element list, which pandas 3 warns about on every call.
pytestmark = pytest.mark.filterwarnings("ignore:In a future version, the keys of `groups`")


@pytest.mark.slow  # one Adult release flow run each (greedy_partition: its search ~10 s)
@pytest.mark.parametrize("algorithm", ["mondrian", "greedy_partition"])
def test_a_partitioned_adult_release_is_published_and_k_anonymous(
    prefect_harness, shared_data, tmp_path, algorithm
):
    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.release import release_flow

    shared_data("arx/adult.csv")
    outcome = release_flow(
        ReleaseParameters(
            policy_path=str(ADULT_POLICY),
            release_date=date(2026, 11, 27),
            overrides={
                "output.directory": str(tmp_path / "releases"),
                "algorithm": {"name": algorithm},
            },
            data_docs=False,  # the release and its manifest are checked, not the HTML pages
        )
    )
    assert outcome["published"], outcome
    folder = Path(outcome["path"])
    release = pd.read_csv(folder / "release.csv", dtype=str, keep_default_na=False)
    assert len(release) == 30162  # neither algorithm suppresses (the partition is kept below)
    assert anonymity.k_anonymity(release, ADULT_QI) >= 5
    assert release.groupby(list(ADULT_QI)).size().min() >= 5
    assert release["age"].str.fullmatch(r"\d+-\d+").any()  # local recoding's own ranges
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["gate"]["passed"] is True
    assert manifest["gate"]["measurements"]["min_class_size"] >= 5
    metrics = manifest["metrics"]
    assert metrics["algorithm"] == algorithm and metrics["suppressed"] == 0
    if algorithm == "greedy_partition":  # the 6,480-node lattice: the exact search made too
        assert metrics["search_kept"] == "partition"
        assert metrics["search_partition_loss"] < metrics["search_exact_loss"]
