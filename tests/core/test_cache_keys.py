"""Cache keys: a stage's cached result is reused only while everything it read is unchanged."""

from __future__ import annotations

from pathlib import Path

import yaml

from privgate.core.cache_keys import stage_tokens
from privgate.core.policy import load_policy


def _policy(tmp_path: Path):
    (tmp_path / "input.csv").write_text("sex,s\nF,x\nM,y\nF,y\n")
    (tmp_path / "population.csv").write_text("sex\nF\nM\nF\nM\n")
    policy = {
        "dataset": "census",
        "input": {"path": str(tmp_path / "input.csv")},
        "columns": {
            "sex": {"role": "quasi_identifier",
                    "hierarchy": {"kind": "taxonomy", "tree": {"Any": ["F", "M"]}}},
            "s": {"role": "sensitive"},
        },
        "privacy": {"k": 2, "k_map": {"k": 2},
                    "population": {"path": str(tmp_path / "population.csv")}},
        "output": {"directory": str(tmp_path / "releases")},
    }  # fmt: skip
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(policy))
    return load_policy(path)


def test_a_new_population_file_redoes_the_search_and_nothing_before_it(tmp_path):
    policy = _policy(tmp_path)
    before = stage_tokens(policy, "input-sha")
    assert stage_tokens(policy, "input-sha") == before
    (tmp_path / "population.csv").write_text("sex\nF\nM\nF\nM\nF\n")  # a new census extract
    after = stage_tokens(policy, "input-sha")
    assert after.anonymize != before.anonymize  # k-map is counted against the new one
    assert after.ingest == before.ingest and after.rank == before.rank  # they never read it


def test_partitioned_tokens_change_with_what_each_stage_reads(tmp_path):
    """The partitioned path's frequency set is redone for a new input or a new k (the
    privacy section names its sensitive columns and refuses a k above the table), not for a
    new utility limit; its validation also for other sampled rows; its search for a new
    algorithm setting."""
    from privgate.core.cache_keys import partitioned_tokens

    policy = _policy(tmp_path)
    tokens = partitioned_tokens(policy, "input-sha")
    assert partitioned_tokens(policy, "input-sha") == tokens
    assert partitioned_tokens(policy, "other-input").frequency != tokens.frequency
    more_k = partitioned_tokens(policy.with_overrides(**{"privacy.k": 3}), "input-sha")
    assert more_k.frequency != tokens.frequency and more_k.search != tokens.search
    limit = policy.with_overrides(**{"utility.thresholds.max_loss": 0.5})
    assert partitioned_tokens(limit, "input-sha") == tokens
    other_metric = partitioned_tokens(
        policy.with_overrides(**{"algorithm.metric": "precision"}), "input-sha"
    )
    assert other_metric.frequency == tokens.frequency and other_metric.search != tokens.search
    every_row = tokens.validate_sample("every row")
    assert tokens.validate_sample("{'rows': 10, 'of_rows': 20, 'seed': 0}") != every_row
    assert tokens.validate_sample("{'rows': 10, 'of_rows': 20, 'seed': 1}") != every_row
    assert tokens.validate_sample("every row") == every_row


def test_every_token_changes_with_privgate_code(tmp_path, monkeypatch):
    """A fix in core or validations redoes the stages: Prefect's TASK_SOURCE sees only the
    task wrapper's lines, so the code's digest is in every token (review9 F1)."""
    from privgate.core import cache_keys
    from privgate.core.cache_keys import partitioned_tokens, utility_token

    policy = _policy(tmp_path)
    before = (stage_tokens(policy, "sha"), partitioned_tokens(policy, "sha"))
    monkeypatch.setattr(cache_keys, "code_version", lambda: "another release of privgate")
    after = (stage_tokens(policy, "sha"), partitioned_tokens(policy, "sha"))
    for old, new in zip(before, after, strict=True):
        for name, value in vars(old).items():
            assert vars(new)[name] != value, name
    assert utility_token(after[0].anonymize, policy) != utility_token(before[0].anonymize, policy)


def test_the_code_digest_follows_the_engine_code_not_the_tests(tmp_path):
    from privgate.core.cache_keys import code_digest, code_version

    for name in ("core/a.py", "validations/b.py", "tasks/c.py", "flows/d.py", "tests/t.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    first = code_digest(tmp_path)
    assert code_digest(tmp_path) == first
    (tmp_path / "tests/t.py").write_text("x = 2\n")  # a test is not the code that computes
    assert code_digest(tmp_path) == first
    for name in ("core/a.py", "validations/b.py", "tasks/c.py", "flows/d.py"):
        (tmp_path / name).write_text("x = 3\n")
        assert code_digest(tmp_path) != first, name
        (tmp_path / name).write_text("x = 1\n")
    (tmp_path / "core/new.py").write_text("")
    assert code_digest(tmp_path) != first
    assert len(code_version()) == 64  # the installed package's own
