"""The release flow's anonymize stage runs on the columnar engine `privgate anonymize` runs
(issue 18): one call, :func:`privgate.core.scale.anonymize_codes`, makes both releases, and the
stage's result is the row engine's, record for record, on real Adult."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from privgate.core import stages
from privgate.core.anonymize import SearchInput, SearchSetup, make_algorithm, release_table
from privgate.core.policy import load_policy

REPO = Path(__file__).resolve().parents[2]


def _spy(monkeypatch) -> list[int]:
    """Count the calls of the columnar engine's one entry point (as the stage calls it)."""
    import privgate.core._columnar_stage as columnar_stage

    calls: list[int] = []
    real = columnar_stage.anonymize_codes

    def spy(columns, setup, *args, **kwargs):
        calls.append(len(next(iter(columns.values()))))
        return real(columns, setup, *args, **kwargs)

    monkeypatch.setattr(columnar_stage, "anonymize_codes", spy)
    return calls


@pytest.mark.parametrize(
    "overrides",
    [
        {"privacy.k": 5},
        {"privacy.k": 2, "privacy.suppression_limit": 0.0},
        {"privacy.k": 10, "privacy.l_diversity": [{"column": "salary-class", "l": 2}]},
        {"privacy.k": 50, "algorithm": {"name": "datafly"}},
    ],
    ids=["k5", "k2-no-suppression", "k10-l2", "datafly-k50"],
)
def test_stage_releases_what_the_row_engine_releases(shared_data, monkeypatch, overrides):
    shared_data("arx/adult.csv")
    policy = load_policy(REPO / "policies" / "adult.yaml").with_overrides(**overrides)
    ingested = stages.ingest(policy)
    setup = SearchSetup.from_policy(policy)
    calls = _spy(monkeypatch)
    (table,) = stages.anonymize(ingested.frame, setup)
    assert calls == [30162], "the stage must make its release on the columnar engine"

    data = SearchInput.prepare(ingested.frame, setup)
    row = make_algorithm(setup).anonymize(data)
    assert table.result.levels == row.levels
    assert np.array_equal(table.result.suppressed, row.suppressed)
    assert table.result.transformation == row.transformation
    assert table.result.steps == row.steps
    assert table.frame.equals(release_table(ingested.frame, row, setup.released_columns))
    assert table.metrics["suppressed"] == row.n_suppressed
    assert table.metrics["search_distinct_tuples"] == row.details["distinct_tuples"]


def test_algorithms_the_columnar_engine_cannot_make_stay_on_the_row_engine(
    shared_data, monkeypatch
):
    """Mondrian (local recoding of partitions) is no full-domain generalization: the stage
    makes it on the row engine, never through the columnar call."""
    shared_data("arx/adult.csv")
    policy = load_policy(REPO / "policies" / "adult.yaml").with_overrides(
        **{"algorithm": {"name": "mondrian"}}
    )
    ingested = stages.ingest(policy)
    calls = _spy(monkeypatch)
    (table,) = stages.anonymize(ingested.frame, SearchSetup.from_policy(policy))
    assert calls == []
    assert table.result.algorithm == "mondrian" and len(table.frame) > 0
