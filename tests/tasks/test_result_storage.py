"""The result storage block is saved by every run at its start, also by two at once."""

from __future__ import annotations

from prefect.blocks.core import Block
from prefect.client.orchestration import SyncPrefectClient
from prefect.exceptions import ObjectNotFound

from privgate.tasks import results


def test_a_run_that_loses_the_race_to_register_the_storage_block_still_starts(monkeypatch):
    """Two served runs started at once on a new server both register the storage block's type:
    each reads it, finds nothing and creates it, and the server refuses the second create
    (409: it exists). That run failed before its first stage (a served k-anonymous run,
    next to a DP run started with it, seen on the end-to-end server). Here the other run has
    already created the type when this one reads it as missing, so this run's create really is
    refused by the server; saving again finds the type and the run starts."""
    results.PrivateResultStorage().save("privgate-results", overwrite=True)  # the other run
    monkeypatch.setattr(results, "_saved", set())  # this process has saved nothing yet
    read = SyncPrefectClient.read_block_type_by_slug
    stale: list[str] = []

    def read_before_the_other_run_created_it(self, slug):
        if slug == results.PrivateResultStorage.get_block_type_slug() and not stale:
            stale.append(slug)
            raise ObjectNotFound(http_exc=Exception(slug))
        return read(self, slug)

    monkeypatch.setattr(
        SyncPrefectClient, "read_block_type_by_slug", read_before_the_other_run_created_it
    )
    results.ensure_result_storage()
    assert stale == [results.PrivateResultStorage.get_block_type_slug()]  # the race happened
    saved = Block.load(results.RESULT_STORAGE)  # as the cached stages find it
    assert isinstance(saved, results.PrivateResultStorage)
