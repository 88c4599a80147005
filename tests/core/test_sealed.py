"""The sealed result format: round trips, no code on reading, integrity and encryption."""

from __future__ import annotations

import base64
import datetime as dt
import json
import struct
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privgate.core.policy import Algorithm
from privgate.core.sealed import (
    MAGIC,
    SealedResultError,
    cache_key_from_environment,
    new_cache_key,
    seal,
    unseal,
)
from privgate.core.stages import IngestedTable


def _frame() -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "age": pd.array([30, None, 41], dtype="Int64"),
            "sex": pd.array(["F", "M", None], dtype="string"),
            "score": [0.5, float("nan"), 2.0],
        },
        index=[10, 11, 12],
    )
    return frame


@pytest.mark.parametrize("key", [None, new_cache_key().encode()], ids=["default", "given"])
def test_values_round_trip_with_their_types(key):
    value = {
        "table": IngestedTable(_frame(), "ab" * 32, "/data/input.csv"),
        "mask": np.array([True, False, True]),
        "levels": {"age": 2, ("a", 1): frozenset({"x", "y"})},
        "when": (dt.date(2026, 11, 24), dt.datetime(2026, 11, 24, 6, 0)),
        "money": Decimal("0.1"),
        "where": Path("/tmp/x"),
        "algorithm": Algorithm.OPTIMAL,
        "floats": [1e-300, float("inf")],
        "sets": pd.DataFrame({"items": [frozenset({"a"}), frozenset({"b", "c"})]}),
    }
    back = unseal(seal(value, key), key)
    assert back["table"].frame.equals(value["table"].frame)
    assert back["table"].frame.dtypes.equals(value["table"].frame.dtypes)
    assert list(back["table"].frame.index) == [10, 11, 12]
    assert back["table"].sha256 == value["table"].sha256
    assert np.array_equal(back["mask"], value["mask"])
    assert back["levels"] == value["levels"] and back["when"] == value["when"]
    assert back["money"] == Decimal("0.1") and back["where"] == Path("/tmp/x")
    assert back["algorithm"] is Algorithm.OPTIMAL and back["floats"] == value["floats"]
    assert back["sets"]["items"].tolist() == value["sets"]["items"].tolist()


def test_reading_rebuilds_only_privgate_classes():
    """A doctored payload naming another module's class is refused, nothing is imported."""
    blob = seal({"x": 1})
    payload = blob[len(MAGIC) + 1 + 32 :]
    (size,) = struct.unpack(">Q", payload[:8])
    document = json.dumps({"__dataclass__": "os:system", "fields": {}}).encode()
    forged = payload[: 8 + size] + struct.pack(">Q", len(document)) + document
    import hashlib

    doctored = MAGIC + b"P" + hashlib.sha256(forged).digest() + forged
    with pytest.raises(SealedResultError, match="only privgate classes"):
        unseal(doctored)


def test_a_pickle_or_foreign_bytes_are_never_deserialized():
    import pickle

    with pytest.raises(SealedResultError, match="not a privgate sealed result"):
        unseal(pickle.dumps({"x": 1}))
    with pytest.raises(TypeError, match="cannot seal"):
        seal(object())


def test_integrity_is_checked_before_anything_is_parsed():
    key = new_cache_key().encode()
    plain, locked = bytearray(seal(_frame())), bytearray(seal(_frame(), key))
    plain[-5] ^= 1
    locked[-5] ^= 1
    with pytest.raises(SealedResultError, match="corrupted"):
        unseal(bytes(plain))
    with pytest.raises(SealedResultError, match="does not verify"):
        unseal(bytes(locked), key)
    with pytest.raises(SealedResultError, match="does not verify"):
        unseal(seal(_frame(), key), new_cache_key().encode())
    with pytest.raises(SealedResultError, match="PRIVGATE_CACHE_KEY is not set"):
        unseal(seal(_frame(), key))


def test_encrypted_bytes_hold_no_plaintext():
    frame = pd.DataFrame({"name": ["CANARY-ALICE", "CANARY-BOB"]})
    key = new_cache_key().encode()
    assert b"CANARY-ALICE" in seal({"csv": frame.to_csv()})  # unencrypted: readable
    assert b"CANARY" not in seal({"csv": frame.to_csv()}, key)
    assert b"CANARY" not in base64.b64decode(base64.b64encode(seal(frame, key)))


def test_a_malformed_key_in_the_environment_is_an_error_not_no_encryption(monkeypatch):
    monkeypatch.setenv("PRIVGATE_CACHE_KEY", "not-a-key")
    with pytest.raises(SealedResultError, match="PRIVGATE_CACHE_KEY is not a valid key"):
        cache_key_from_environment()
    monkeypatch.setenv("PRIVGATE_CACHE_KEY", new_cache_key())
    assert cache_key_from_environment() is not None
    monkeypatch.delenv("PRIVGATE_CACHE_KEY")
    assert cache_key_from_environment() is None


def test_object_arrays_round_trip_strings_and_mixed_values_alike():
    """A release's labels (object arrays of strings) take the strings-only path; an array that
    mixes strings with other values, or holds a string ending in NUL, still keeps every value
    and its type."""
    labels = np.array(["[20, 40[", "", "x\x00", "Female"], dtype=object)
    mixed = np.array(["a", 1, None, 2.5, dt.date(2026, 11, 26)], dtype=object)
    back = unseal(seal({"labels": labels, "mixed": mixed}))
    assert back["labels"].dtype == object and back["labels"].tolist() == labels.tolist()
    assert all(type(v) is str for v in back["labels"])
    assert back["mixed"].dtype == object and back["mixed"].tolist() == mixed.tolist()
    assert [type(v) for v in back["mixed"]] == [type(v) for v in mixed]
