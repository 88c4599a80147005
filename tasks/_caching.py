"""How stage results are kept for reruns.

A stage's result is persisted and keyed by the task's source and its light inputs: a
``cache_token`` (data fingerprint + the policy sections the stage reads + hierarchy files +
the digest of privgate's own code, see :mod:`privgate.core.cache_keys`). Heavy or derived
inputs (the table, the policy object, the search setup, the hierarchies, the ranking, the
partitioned path's frequency set and sample) are excluded from the key; the token already
stands for them. Retrying a failed flow run then re-executes only the failed stage and what
follows it: earlier stages show ``Cached``.

The results are private (the ingest stage's result *is* the input), so they are kept the way
:mod:`privgate.tasks.results` describes: sealed (no pickle; encrypted when the data owner
configures a key), under the privgate data directory in one owner-only folder per dataset, and
for at most the retention period (:mod:`privgate.core.retention`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from prefect import task
from prefect.cache_policies import INPUTS, TASK_SOURCE

from privgate.core.retention import retention_days
from privgate.tasks.results import (
    RESULT_STORAGE,
    DatasetScoped,
    SealedSerializer,
    stored_in_private_results,
)


@dataclass
class TokenKeyed(DatasetScoped):
    """:class:`DatasetScoped`, and no key at all (nothing reused) when the call's
    ``cache_token`` is ``None``: the key leaves out the table, the policy and the setup because
    the token stands for them, so without a token two different inputs would share one key
    (review9 F2: ``frequency_task`` and ``search_task`` accept ``cache_token=None``)."""

    def compute_key(
        self, task_ctx: Any, inputs: dict[str, Any], flow_parameters: dict[str, Any], **kwargs: Any
    ) -> str | None:
        if inputs.get("cache_token") is None:
            return None
        return super().compute_key(task_ctx, inputs, flow_parameters, **kwargs)


#: The task's code plus its inputs, minus those that never enter a key (the token covers them),
#: prefixed with the dataset so that each dataset's results sit in their own folder; no key
#: without a token.
CACHE_BY_TOKEN = TokenKeyed(
    base=TASK_SOURCE
    + (
        INPUTS
        - "frame"
        - "policy"
        - "setup"
        - "hierarchies"
        - "table"
        - "ranking"
        - "run_id"
        - "freq"
        - "sample"
    )
)

#: Keyword arguments of every cached stage task.
CACHED_STAGE = {
    "persist_result": True,
    "cache_policy": CACHE_BY_TOKEN,
    "result_storage": RESULT_STORAGE,  # saved by ensure_result_storage() when a flow starts
    "result_serializer": SealedSerializer(),
    "cache_expiration": timedelta(days=retention_days()),
}


def stage_task(**options: Any) -> Any:
    """``@task(**options)`` with :data:`CACHED_STAGE`: a cached stage, whose result storage
    each run points at the block it saved
    (:func:`~privgate.tasks.results.ensure_result_storage`)."""

    def decorate(fn: Any) -> Any:
        return stored_in_private_results(task(**options, **CACHED_STAGE)(fn))

    return decorate


def retry_transient(task, task_run, state) -> bool:
    """Retry I/O failures, never a refusal: a malformed file fails the same way every time."""
    from privgate.core.exceptions import PrivgateError

    try:
        state.result()
    except PrivgateError:
        return False
    except Exception:
        return True
    return True
