"""How Prefect keeps privgate's stage results: sealed, owner-only, per dataset, for a while.

The Prefect side of :mod:`privgate.core.sealed` and :mod:`privgate.core.retention`:

* :class:`SealedSerializer` writes results in the sealed format (no pickle; encrypted when the
  data owner configures a key: ``PRIVGATE_CACHE_KEY``, or the name of a Prefect Secret block in
  ``PRIVGATE_CACHE_KEY_BLOCK``), checking integrity before anything is read;
* :class:`PrivateResultStorage` writes them under ``<data dir>/results/`` (resolved at each
  write, so moving ``PRIVGATE_DATA_DIR`` moves them) with folders 0700 and files 0600, written
  to a temporary file and renamed, so a crash never leaves half a result;
* :class:`DatasetScoped` prefixes every cache key with the dataset, so each dataset's results
  sit in their own folder (``privgate purge DATASET``).
"""

from __future__ import annotations

import base64
import os
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from prefect.cache_policies import CachePolicy
from prefect.filesystems import LocalFileSystem
from prefect.serializers import Serializer

from privgate.core.locations import PRIVATE_FILE_MODE, data_dir, ensure_private_dir
from privgate.core.retention import results_root
from privgate.core.sealed import CACHE_KEY_VARIABLE, cache_key_from_environment, check_key
from privgate.core.sealed import seal as seal_value
from privgate.core.sealed import unseal as unseal_value

__all__ = [
    "KEY_BLOCK_VARIABLE",
    "RESULT_STORAGE",
    "DatasetScoped",
    "PrivateResultStorage",
    "SealedSerializer",
    "ensure_result_storage",
    "stored_in_private_results",
]

#: Names a Prefect Secret block holding the cache key (instead of the key itself).
KEY_BLOCK_VARIABLE = "PRIVGATE_CACHE_KEY_BLOCK"

_key_lock = threading.Lock()


def cache_key() -> bytes | None:
    """The data owner's cache key: ``PRIVGATE_CACHE_KEY``, else the Prefect Secret block named
    by ``PRIVGATE_CACHE_KEY_BLOCK``, else None (results are stored unencrypted)."""
    key = cache_key_from_environment()
    if key is not None:
        return key
    block = os.environ.get(KEY_BLOCK_VARIABLE, "").strip()
    if not block:
        return None
    with _key_lock:
        from prefect.blocks.system import Secret

        return check_key(str(Secret.load(block).get()).encode())


class SealedSerializer(Serializer):
    """Prefect result serializer writing :mod:`privgate.core.sealed` bytes (never a pickle).

    Prefect embeds the bytes in a JSON result record, so they are base64 text (as Prefect's own
    pickle serializer does).
    """

    type: Literal["privgate-sealed"] = "privgate-sealed"

    def dumps(self, obj: Any) -> bytes:
        return base64.b64encode(seal_value(obj, cache_key()))

    def loads(self, blob: bytes) -> Any:
        return unseal_value(base64.b64decode(blob, validate=True), cache_key())


class PrivateResultStorage(LocalFileSystem):
    """Local result storage under the privgate data directory, owner-only, atomic writes."""

    _block_type_name = "privgate private results"
    _block_type_slug = "privgate-private-results"

    def _resolve_path(self, path: str) -> Path:
        base = results_root().resolve()
        target = Path(path).expanduser()
        if not target.is_absolute():
            target = base / target
        target = target.resolve()
        if base not in target.parents:
            raise ValueError(f"result path {target} is outside {base}")
        return target

    def _write(self, path: str, content: bytes) -> str:
        target = self._resolve_path(path)
        base = results_root().resolve()
        ensure_private_dir(data_dir())
        ensure_private_dir(base)
        for folder in reversed([p for p in target.parents if base in p.parents]):
            ensure_private_dir(folder)
        temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
        try:
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(content)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, target)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        return str(target)

    async def awrite_path(self, path: str, content: bytes) -> str:
        return self._write(path, content)

    def write_path(self, path: str, content: bytes, _sync: bool | None = None) -> str:  # type: ignore[override]
        """Synchronous write (``_sync`` is what Prefect passes to its dispatching methods)."""
        return self._write(path, content)


#: The name under which the storage block is saved, and the reference tasks use. Prefect needs
#: a result storage block saved on the server; the block holds no path (it resolves the data
#: directory at each write), so one saved document serves every machine and setting.
_BLOCK_NAME = "privgate-results"
RESULT_STORAGE = f"{PrivateResultStorage._block_type_slug}/{_BLOCK_NAME}"

#: The block saved on each Prefect API this process used (by API URL).
_saved: dict[str, PrivateResultStorage] = {}

#: The cached stage tasks (``tasks._caching.stage_task``): each run points their result
#: storage at the block saved on its API.
_STAGE_TASKS: list[Any] = []


def stored_in_private_results(task: Any) -> Any:
    """Register a cached stage task, whose storage :func:`ensure_result_storage` points at the
    saved block; returns the task."""
    _STAGE_TASKS.append(task)
    return task


#: Saves of the storage block tried before a conflict is raised (see ensure_result_storage).
_SAVE_ATTEMPTS = 3


def ensure_result_storage() -> None:
    """Save the storage block on the current Prefect API once per process (idempotent), and
    point the cached stage tasks at it.

    A task naming its storage by ``RESULT_STORAGE`` makes Prefect read the block from the API
    twice per task run (an API request each: 8 per Adult release run, about 20 ms of the
    server's CPU each at a load of 10); the saved block itself is what that request returns, so
    the tasks hold it instead and a run makes none. Pointed again at each run's start: a
    process that used another API before holds that API's block (its id means nothing here).

    Two runs starting at once on a server that has never seen the block (two deployments
    served on a new server, a run created while another starts) both register its type:
    Prefect reads it, finds nothing and creates it, so the later create is refused with a
    conflict (``ObjectAlreadyExists``) and that run failed before its first stage. The type
    exists by then, so saving again finds it; a conflict that persists is raised.
    """
    from prefect.exceptions import ObjectAlreadyExists
    from prefect.settings import PREFECT_API_URL

    where = str(PREFECT_API_URL.value() or "ephemeral")
    block = _saved.get(where)
    if block is None:
        block = PrivateResultStorage()
        for attempt in range(1, _SAVE_ATTEMPTS + 1):
            try:
                block.save(_BLOCK_NAME, overwrite=True)
                break
            except ObjectAlreadyExists:
                if attempt == _SAVE_ATTEMPTS:
                    raise
        _saved[where] = block
    for task in _STAGE_TASKS:
        task.result_storage = block


@dataclass
class DatasetScoped(CachePolicy):
    """A cache policy whose keys start with the task's ``policy.dataset`` (its own folder)."""

    base: CachePolicy | None = None

    def compute_key(
        self, task_ctx: Any, inputs: dict[str, Any], flow_parameters: dict[str, Any], **kwargs: Any
    ) -> str | None:
        if self.base is None:
            return None
        key = self.base.compute_key(task_ctx, inputs, flow_parameters, **kwargs)
        dataset = getattr(inputs.get("policy"), "dataset", None)
        return f"{dataset}/{key}" if key is not None and dataset else key


def describe_protection() -> str:
    """One sentence for logs: where results go and whether they are encrypted."""
    encrypted = os.environ.get(CACHE_KEY_VARIABLE) or os.environ.get(KEY_BLOCK_VARIABLE)
    state = "encrypted" if encrypted else "NOT encrypted (set PRIVGATE_CACHE_KEY)"
    return f"cached stage results: {results_root()} (owner-only), {state}"


def prepare_private_results(policy: Any) -> str:
    """At the start of a run: save the storage block, sweep results past the retention period.

    Returns a sentence for the run log (where results go, whether they are encrypted, what the
    sweep removed).
    """
    from privgate.core.retention import purge_results, retention_days

    ensure_result_storage()
    cache_key()  # a configured but unusable key fails the run here, before any stage
    swept = purge_results(older_than_days=retention_days())
    note = f"; swept {swept.describe()}" if swept.files else ""
    return describe_protection() + note


def discard_private_results(policy: Any) -> str | None:
    """After a successful publish: remove the dataset's cached private results, unless the
    policy keeps them (``output.keep_stage_results``). Returns a sentence for the log."""
    from privgate.core.retention import purge_results

    if policy.output.keep_stage_results:
        return None
    return purge_results(policy.dataset).describe()
