"""The result storage block is saved by every run at its start, also by two at once."""

from __future__ import annotations

import uuid
from datetime import date

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
    monkeypatch.setattr(results, "_saved", {})  # this process has saved nothing yet
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


def test_a_run_reads_no_storage_block_and_its_stages_hold_the_one_saved_here(
    make_case, monkeypatch
):
    """Each cached stage holds the block the run saved on its API (Prefect read it back by name
    from the API twice per stage run: 8 requests per Adult release run); a process that used
    another API before holds that API's block until a run starts here."""
    import httpx

    from privgate.core.policy import load_policy
    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.release import release_flow
    from privgate.tasks.anonymize import anonymize_task
    from privgate.tasks.ingest import ingest_task

    results.ensure_result_storage()  # saved on this API once per process (three requests)
    other = results.PrivateResultStorage()  # as saved on another API this process used
    other._block_document_id = uuid.uuid4()
    for task in (ingest_task, anonymize_task):
        monkeypatch.setattr(task, "result_storage", other)
    requests: list[str] = []
    send = httpx.Client.send

    def recording_send(self, request, **kwargs):
        requests.append(request.url.path)
        return send(self, request, **kwargs)

    async def recording_async_send(self, request, **kwargs):
        requests.append(request.url.path)
        return await async_send(self, request, **kwargs)

    async_send = httpx.AsyncClient.send
    monkeypatch.setattr(httpx.Client, "send", recording_send)
    monkeypatch.setattr(httpx.AsyncClient, "send", recording_async_send)
    case = make_case()
    outcome = release_flow(
        ReleaseParameters(
            policy_path=str(case.policy),
            release_date=date(2026, 11, 22),
            data_docs=False,  # the storage block's requests are checked here
        )
    )
    assert outcome["published"] and load_policy(case.policy).dataset == "toy"
    assert not [path for path in requests if "/block_documents/" in path], requests
    saved = Block.load(results.RESULT_STORAGE)
    for task in (ingest_task, anonymize_task):
        assert isinstance(task.result_storage, results.PrivateResultStorage)
        assert task.result_storage._block_document_id == saved._block_document_id
