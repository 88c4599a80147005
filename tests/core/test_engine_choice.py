"""Which path `privgate run` takes: the row estimate, the stated threshold, the refusals."""

from __future__ import annotations

import pytest
from adult_reference import ADULT_POLICY

from privgate.core.engine_choice import (
    DEFAULT_PARTITIONED_MIN_ROWS,
    PARTITIONED_MIN_ROWS_VARIABLE,
    choose_engine,
    estimate_rows,
    partitioned_blockers,
    partitioned_min_rows,
)
from privgate.core.exceptions import PolicyError
from privgate.core.policy import load_policy

REPO = ADULT_POLICY.parents[1]


@pytest.fixture
def adult_policy(shared_data):
    shared_data("arx/adult.csv")
    return load_policy(ADULT_POLICY)


def test_a_small_csv_is_counted_and_stays_in_memory(adult_policy, monkeypatch):
    monkeypatch.delenv(PARTITIONED_MIN_ROWS_VARIABLE, raising=False)
    estimate = estimate_rows(adult_policy)
    assert not estimate.exact and abs(estimate.rows - 30162) <= 300  # 2.5 MB, 8 samples
    choice = choose_engine(adult_policy)
    assert choice.engine == "memory"
    assert choice.threshold == DEFAULT_PARTITIONED_MIN_ROWS == 2_000_000
    assert (
        f"{estimate.rows:,} rows estimated" in choice.reason
        and "PRIVGATE_PARTITIONED_MIN_ROWS=2,000,000" in choice.reason
    )


def test_a_small_csv_is_counted_and_a_large_one_estimated(shared_data, tmp_path):
    """A file within one sample is counted line by line; Adult three times over (7.5 MB) is
    estimated from 8 samples of its lines within 2 %, without reading it whole."""
    source = shared_data("arx/adult.csv")
    lines = source.read_text(encoding="utf-8").splitlines()
    small = tmp_path / "adult_100.csv"
    small.write_text("\n".join(lines[:101]) + "\n", encoding="utf-8")
    counted = estimate_rows(load_policy(ADULT_POLICY).with_overrides(**{"input.path": str(small)}))
    assert (counted.rows, counted.exact, counted.method) == (100, True, "counted every line")
    path = tmp_path / "adult_x3.csv"
    body = lines[1:] * 3
    path.write_text("\n".join([lines[0], *body]) + "\n", encoding="utf-8")
    policy = load_policy(ADULT_POLICY).with_overrides(**{"input.path": str(path)})
    estimate = estimate_rows(policy)
    assert not estimate.exact and "bytes per line" in estimate.method
    assert abs(estimate.rows - len(body)) <= 0.02 * len(body)


def test_parquet_rows_come_from_the_metadata(shared_data, tmp_path):
    from privgate.core.scaled_adult import write_scaled_adult

    shared_data("arx/adult.csv")
    table = write_scaled_adult(25_000, tmp_path / "parts", rows_per_part=10_000)
    policy = load_policy(ADULT_POLICY).with_overrides(
        **{"input.path": str(table.folder), "input.format": "parquet"}
    )
    estimate = estimate_rows(policy)
    assert (estimate.rows, estimate.exact) == (25_000, True)
    assert "3 file(s)" in estimate.method


def test_the_threshold_setting_switches_to_the_partitioned_path(adult_policy, monkeypatch):
    monkeypatch.setenv(PARTITIONED_MIN_ROWS_VARIABLE, "30000")
    choice = choose_engine(adult_policy)
    assert choice.engine == "partitioned"
    assert "rows estimated" in choice.reason
    assert f"{PARTITIONED_MIN_ROWS_VARIABLE}=30,000" in choice.reason
    assert choose_engine(adult_policy, "memory").engine == "memory"  # forced


@pytest.mark.parametrize("raw", ["0", "-5", "many"])
def test_a_bad_threshold_setting_is_refused_by_name(monkeypatch, raw):
    monkeypatch.setenv(PARTITIONED_MIN_ROWS_VARIABLE, raw)
    with pytest.raises(PolicyError, match=PARTITIONED_MIN_ROWS_VARIABLE):
        partitioned_min_rows()


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"algorithm": {"name": "mondrian"}}, "algorithm.name mondrian"),
        (
            {"privacy.beta_likeness": [{"column": "salary-class", "beta": 1.0}]},
            "privacy.beta_likeness",
        ),
        ({"utility.target": "salary-class"}, "utility.target with utility.models"),
    ],
)
def test_what_the_partitioned_path_cannot_honour_is_refused_above_the_threshold(
    adult_policy, monkeypatch, overrides, named
):
    policy = adult_policy.with_overrides(**overrides)
    assert named in " ".join(partitioned_blockers(policy))
    monkeypatch.setenv(PARTITIONED_MIN_ROWS_VARIABLE, "1000")
    with pytest.raises(PolicyError) as refused:
        choose_engine(policy)
    assert named in str(refused.value)
    assert "--engine memory" in str(refused.value)
    with pytest.raises(PolicyError, match="--engine partitioned"):
        choose_engine(policy, "partitioned")
    monkeypatch.delenv(PARTITIONED_MIN_ROWS_VARIABLE)
    assert choose_engine(policy).engine == "memory"  # below the threshold: nothing changes


def test_a_dp_policy_is_refused_on_the_partitioned_path(shared_data, monkeypatch):
    shared_data("arx/adult.csv")
    policy = load_policy(REPO / "policies" / "adult-dp.yaml")
    assert partitioned_blockers(policy) == ["differential_privacy (the DP branch runs in memory)"]
    monkeypatch.setenv(PARTITIONED_MIN_ROWS_VARIABLE, "1000")
    with pytest.raises(PolicyError, match="differential_privacy"):
        choose_engine(policy)


def test_the_adult_policy_has_no_blocker(adult_policy):
    assert partitioned_blockers(adult_policy) == []
