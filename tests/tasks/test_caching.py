"""The cached stages' key: the token stands for the data and the policy, so no token, no key."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from privgate.core.policy import load_policy
from privgate.tasks._caching import CACHE_BY_TOKEN
from privgate.tasks.scale import frequency_task, search_task

DEMO = Path(__file__).resolve().parents[2] / "policies" / "demo.yaml"


def _key(task, policy, token):
    inputs = {"policy": policy, "setup": object(), "blocksize": "64MB", "cluster": False}
    if task is search_task:
        inputs = {"freq": object(), "policy": policy, "setup": object()}
    return CACHE_BY_TOKEN.compute_key(
        SimpleNamespace(task=task), {**inputs, "cache_token": token}, {}
    )


def test_a_cached_stage_called_without_a_token_is_never_reused(tmp_path):
    """``frequency_task`` and ``search_task`` accept ``cache_token=None`` (the Dask flow's
    uncached copies pass none); the key leaves out the policy and the table, so two inputs of
    one dataset shared one key (review9 F2). Without a token there is no key now; with one the
    key is the dataset's and follows the token."""
    policy = load_policy(DEMO)
    other = policy.with_overrides(**{"input.path": str(tmp_path / "another.csv")})
    for task in (frequency_task, search_task):
        assert _key(task, policy, None) is None and _key(task, other, None) is None
        one, two = _key(task, policy, "token-1"), _key(task, policy, "token-2")
        assert one.startswith(f"{policy.dataset}/") and one != two
        assert _key(task, policy, "token-1") == one
