"""How stage results are kept for reruns.

A stage's result is persisted (Prefect's local result storage by default; set
``PREFECT_LOCAL_STORAGE_PATH`` or a result storage block to move it) and keyed by the task's
source and its light inputs: a ``cache_token`` (data fingerprint + the policy sections the
stage reads + hierarchy files, see :func:`core.stages.cache_token`) and small values such as
the shuffle seed. Heavy or derived inputs (the table, the policy object, the hierarchies, the
ranking) are excluded from the key; the token already stands for them. So is the flow run id a
DP stage records in the ledger: a rerun of the same release must find the noisy result the
first run drew (and paid for), not draw again. Retrying a failed flow run then
re-executes only the failed stage and what follows it: earlier stages show ``Cached``.
"""

from __future__ import annotations

from prefect.cache_policies import INPUTS, TASK_SOURCE

#: The task's code plus its inputs, minus those that never enter a key (the token covers them).
CACHE_BY_TOKEN = TASK_SOURCE + (
    INPUTS - "frame" - "policy" - "hierarchies" - "table" - "ranking" - "run_id"
)

#: Keyword arguments of every cached stage task.
CACHED_STAGE = {"persist_result": True, "cache_policy": CACHE_BY_TOKEN}


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
