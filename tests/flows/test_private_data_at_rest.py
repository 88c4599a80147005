"""Private data at rest: canaries, sealed caches, retention, purge and file modes.

The canary test runs a release twice (the first blocked by a utility threshold, the second a
rerun that reuses the cached stages) on a table whose identifier and one quasi-identifier hold
unique canary strings that the policy drops or generalizes away. Then it reads every file the
runs created or changed — Prefect's database and result storage, the privgate data directory
(cached results, the ledger), the output folder (the release, staging, blocked reports) — and
finds the canaries nowhere in plaintext: only in the input and, encrypted, in the cache.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import stat
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privgate.core.exceptions import UtilityBlockedError
from privgate.core.retention import purge_results, results_root
from privgate.core.sealed import MAGIC, SealedResultError, new_cache_key, seal, unseal

CANARY_ID = "PIDCANARY"
CANARY_QI = "CNRYQ"


def _canary_table(folder: Path, rows: int = 300) -> Path:
    rng = np.random.default_rng(11)
    frame = pd.DataFrame(
        {
            "patient_id": [f"{CANARY_ID}{i:05d}" for i in range(rows)],
            "code": [f"{CANARY_QI}{i:03d}" for i in range(rows)],  # unique per record
            "sex": rng.choice(["F", "M"], rows),
            "age": rng.integers(20, 80, rows),
            "diagnosis": rng.choice(["flu", "cold", "asthma"], rows),
        }
    )
    path = folder / "canary.csv"
    frame.to_csv(path, index=False)
    return path


def _canary_policy(folder: Path, data: Path) -> Path:
    policy = folder / "canary.yaml"
    policy.write_text(
        f"""dataset: canary
input: {{path: {data}, format: csv}}
columns:
  patient_id: {{role: identifier}}
  code:
    role: quasi_identifier
    type: string
    hierarchy: {{kind: masking, length: 8}}
  sex:
    role: quasi_identifier
    hierarchy: {{kind: taxonomy, tree: {{person: [F, M]}}}}
  age:
    role: quasi_identifier
    type: integer
    minimum: 0
    maximum: 120
    hierarchy: {{kind: interval, bands: [10, 20, 40]}}
  diagnosis: {{role: sensitive}}
privacy: {{k: 5, suppression_limit: 0.02}}
utility:
  target: diagnosis
  models: [logistic_regression]
  sample_size: null
  clusters: []
  clustering: []
  thresholds: {{max_loss: 0.0001}}
output: {{directory: {folder / "releases"}}}
"""
    )
    return policy


#: A whole canary value, never its generalization (CNRYQ0** is what the release may show).
WHOLE_CANARY = re.compile(rb"(" + CANARY_ID.encode() + rb"\d{5}|" + CANARY_QI.encode() + rb"\d{3})")


def _plaintext_canary(content: bytes) -> bytes | None:
    """A whole canary readable in ``content``: as bytes, as UTF-16, or inside the base64
    payload of a Prefect result record (where an unencrypted cache would show it)."""
    candidates = [content, content.replace(b"\x00", b"")]
    with contextlib.suppress(ValueError, KeyError, TypeError):
        candidates.append(base64.b64decode(json.loads(content)["result"]))
    for candidate in candidates:
        found = WHOLE_CANARY.search(candidate)
        if found:
            return found.group()
    return None


def _files(*roots: Path) -> list[Path]:
    found = []
    for root in roots:
        if root.is_file():
            found.append(root)
        elif root.is_dir():
            found += [p for p in root.rglob("*") if p.is_file()]
    return found


def test_a_blocked_run_and_its_retry_leave_no_private_data_in_the_clear(
    task_run_records, tmp_path, _private_data_dir, monkeypatch
):
    from prefect.settings import PREFECT_API_DATABASE_CONNECTION_URL, PREFECT_LOCAL_STORAGE_PATH

    from privgate.flows.cli import main
    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.release import release_flow

    key = new_cache_key()
    monkeypatch.setenv("PRIVGATE_CACHE_KEY", key)
    data = _canary_table(tmp_path)
    policy = _canary_policy(tmp_path, data)
    run = {"policy_path": str(policy), "release_date": date(2026, 12, 3)}
    with pytest.raises(UtilityBlockedError):
        release_flow(ReleaseParameters(**run))

    # Between the blocked run and its retry: the cached results are sealed, encrypted,
    # owner-only, under the data directory.
    folder = results_root() / "canary"
    records = [p for p in folder.iterdir() if p.is_file()]
    assert len(records) >= 3  # ingest, validate, anonymize (at least)
    for path in [_private_data_dir, results_root(), folder]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o700
    readable_without_key = 0
    for record in records:
        assert stat.S_IMODE(record.stat().st_mode) == 0o600
        payload = base64.b64decode(json.loads(record.read_bytes())["result"])
        assert payload.startswith(MAGIC + b"E")  # encrypted, not a pickle
        assert _plaintext_canary(record.read_bytes()) is None
        with pytest.raises(SealedResultError, match="encrypted"):
            unseal(payload)
        value = unseal(payload, key.encode())  # the owner can read it back
        plain = json.dumps({"result": base64.b64encode(seal(value)).decode()}).encode()
        readable_without_key += _plaintext_canary(plain) is not None
    # The scan has power: unencrypted, the ingested and validated tables would show canaries.
    assert readable_without_key >= 2
    assert main(["purge", "canary", "--older-than", "1"]) == 0  # too young: kept
    assert len([p for p in folder.iterdir() if p.is_file()]) == len(records)

    # The retry after the fix reuses the cached stages and publishes; the cache is then removed.
    fixed = ReleaseParameters(**run, overrides={"utility.thresholds.max_loss": 1.0})
    assert release_flow(fixed)["published"]
    assert not [p for p in results_root().rglob("*") if p.is_file()]

    database = Path(PREFECT_API_DATABASE_CONNECTION_URL.value().split("///", 1)[1])
    storage = Path(PREFECT_LOCAL_STORAGE_PATH.value())
    scanned = _files(database.parent, storage, _private_data_dir, tmp_path / "releases")
    assert any(p.name == "release.csv" for p in scanned)
    assert any(p.suffix == ".db" for p in scanned)
    assert _plaintext_canary(data.read_bytes())  # the scan finds them where they are
    for path in scanned:
        found = _plaintext_canary(path.read_bytes())
        assert found is None, f"{found!r} in plaintext in {path}"


def test_purge_removes_one_dataset_or_everything(tmp_path):
    for dataset in ("a", "b"):
        folder = results_root() / dataset
        folder.mkdir(parents=True)
        (folder / "record").write_bytes(b"x" * 10)
    report = purge_results("a")
    assert (report.files, report.datasets) == (1, ("a",))
    assert not (results_root() / "a").exists() and (results_root() / "b").exists()
    assert purge_results().files == 1


def test_purge_removes_attack_evidence_only_when_asked(tmp_path, capsys):
    from privgate.core.attacks import owner_evidence_path
    from privgate.flows.cli import main

    evidence = [owner_evidence_path(d, "2026-11-26-abc") for d in ("a", "b")]
    for path in evidence:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    assert main(["purge", "a"]) == 0
    assert all(p.exists() for p in evidence)  # the owner's audit trail is kept by default
    assert main(["purge", "a", "--attack-evidence"]) == 0
    assert "removed 1 attack evidence file(s)" in capsys.readouterr().out
    assert not evidence[0].exists() and evidence[1].exists()
    assert main(["purge", "--attack-evidence", "--older-than", "1"]) == 0
    assert evidence[1].exists()  # too young
    assert main(["purge", "--attack-evidence"]) == 0
    assert not evidence[1].exists()


def test_published_files_share_the_operator_mode(prefect_harness, tmp_path):
    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.release import release_flow

    policy = _canary_policy(tmp_path, _canary_table(tmp_path))
    outcome = release_flow(
        ReleaseParameters(
            policy_path=str(policy),
            release_date=date(2026, 12, 5),
            overrides={"output.file_mode": "0640", "utility.thresholds.max_loss": 1.0},
        )
    )
    folder = Path(outcome["path"])
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert {"release.csv", "manifest.json", "report.html"} <= {p.name for p in files}
    assert {stat.S_IMODE(p.stat().st_mode) for p in files} == {0o640}
    folders = [folder, *(p for p in folder.rglob("*") if p.is_dir())]
    assert {stat.S_IMODE(p.stat().st_mode) for p in folders} == {0o750}


def test_storage_stays_bounded_over_nightly_runs(prefect_harness, tmp_path, monkeypatch):
    """Nightly runs: after each publish nothing private is left in the cache, and an expired
    result from a dead run is swept by the next run (benchmarks/BENCHMARKS.md: 30 nights)."""
    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.release import release_flow

    policy = _canary_policy(tmp_path, _canary_table(tmp_path))
    stale = results_root() / "other-dataset" / "stale-record"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"x" * 1000)
    old = stale.stat().st_mtime - 10 * 86400
    os.utime(stale, (old, old))
    for night in range(1, 3):
        release_flow(
            ReleaseParameters(
                policy_path=str(policy),
                release_date=date(2026, 12, night),
                overrides={"utility.thresholds.max_loss": 1.0},
                data_docs=False,  # the cache is checked here, not the HTML pages
            )
        )
        assert not [p for p in results_root().rglob("*") if p.is_file()]
    assert purge_results().files == 0


def test_the_cache_key_can_come_from_a_prefect_secret_block(prefect_harness, monkeypatch):
    from prefect.blocks.system import Secret

    from privgate.tasks.results import cache_key

    key = new_cache_key()
    Secret(value=key).save("privgate-cache-key-test", overwrite=True)
    monkeypatch.delenv("PRIVGATE_CACHE_KEY", raising=False)
    monkeypatch.setenv("PRIVGATE_CACHE_KEY_BLOCK", "privgate-cache-key-test")
    assert cache_key() == key.encode()
    Secret(value="not-a-key").save("privgate-cache-key-test", overwrite=True)
    with pytest.raises(SealedResultError, match="not a valid key"):
        cache_key()
