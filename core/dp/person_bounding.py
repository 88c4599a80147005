"""Bound each person's contribution to one record before any DP mechanism sees the data.

Why: every sensitivity in docs/PRIVACY.md is for record-level neighbours (add/remove one
record). A table with several records per person (visits, admissions) is protected per person
only if adding or removing one whole person changes the table a mechanism sees by at most one
record. :func:`keep_one_record_per_person` gives exactly that (it is 1-stable from person-level
to record-level neighbours): each person keeps the one record whose keyed hash (HMAC-SHA256 of
the record's content under the data owner's secret) is smallest. The choice depends only on that
person's own records and the secret, never on other people's data, so removing a person removes
exactly that person's kept record and leaves every other kept record as it was. The person key
column is dropped: it is never published.

This module is the bounding rule only; the DP branch does not call it yet (see the report of
issue 13): until it does, a DP policy with a person key is refused by the policy model.
"""

from __future__ import annotations

import hashlib
import hmac

import pandas as pd


def record_digest(record: tuple[object, ...], secret: bytes) -> bytes:
    """The keyed hash of one record's content: the same record always gets the same digest."""
    content = repr(tuple(str(value) for value in record)).encode("utf-8")
    return hmac.new(secret, content, hashlib.sha256).digest()


def keep_one_record_per_person(frame: pd.DataFrame, person_key: str, secret: bytes) -> pd.DataFrame:
    """One record per person (the smallest keyed hash of its content), without the key column.

    Records with the same content have the same digest; keeping either gives the same bounded
    table. Rows come out in the order of their digests, so the output does not depend on the
    input's row order either.
    """
    if person_key not in frame.columns:
        raise ValueError(f"person key column {person_key!r} is not in the table")
    if not secret:
        raise ValueError("the bounding secret must not be empty")
    content_columns = [column for column in frame.columns if column != person_key]
    digests = [
        record_digest(tuple(record), secret)
        for record in frame[[person_key, *content_columns]].itertuples(index=False, name=None)
    ]
    chosen: dict[object, tuple[bytes, int]] = {}
    for position, (person, digest) in enumerate(zip(frame[person_key], digests, strict=True)):
        best = chosen.get(person)
        if best is None or digest < best[0]:
            chosen[person] = (digest, position)
    positions = [position for _, position in sorted(chosen.values())]
    return frame.iloc[positions][content_columns].reset_index(drop=True)
