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

The DP branch applies it (:func:`bound_persons`) to the whole input before the declared-domain
rule and before any mechanism, when the policy declares ``differential_privacy.person_key``.
The secret is the data owner's (:func:`bounding_secret`, a file in the privgate data
directory): the 1-stability above holds for any fixed secret, public or not; keeping it private
only hides *which* of a person's records was used.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from privgate.core.cell_text import cell_text
from privgate.core.locations import data_dir, ensure_private_dir, restrict_file

__all__ = [
    "BOUNDING_SECRET_FILE",
    "BoundedInput",
    "bound_persons",
    "bounding_secret",
    "keep_one_record_per_person",
    "privacy_unit",
    "record_digest",
]

#: The data owner's bounding secret, in the privgate data directory (0600).
BOUNDING_SECRET_FILE = "dp-person-bounding.key"


def record_digest(record: tuple[object, ...], secret: bytes) -> bytes:
    """The keyed hash of one record's content: the same record always gets the same digest.

    Each cell is written by :func:`~privgate.core.cell_text.cell_text`, not ``str``: a cell's
    ``str`` follows its column's dtype, which other persons' records decide (a Parquet integer
    column becomes float once one row is missing), and the choice must depend on this
    person's records only.
    """
    content = repr(tuple(cell_text(value, missing="<NA>") for value in record)).encode("utf-8")
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


def bounding_secret(folder: str | Path | None = None) -> bytes:
    """The data owner's bounding secret: 32 random bytes kept in ``folder`` (default: the
    privgate data directory), created on first use.

    Created as a private temporary file and then hard-linked into place, so two workers that
    start at once agree on one secret (the second link fails and that worker reads the first's).
    """
    folder = ensure_private_dir(folder if folder is not None else data_dir())
    path = folder / BOUNDING_SECRET_FILE
    if not path.exists():
        candidate = folder / f".{BOUNDING_SECRET_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
        candidate.write_text(secrets.token_hex(32) + "\n", encoding="ascii")
        restrict_file(candidate)
        try:
            os.link(candidate, path)
        except FileExistsError:
            pass
        finally:
            candidate.unlink()
    text = path.read_text(encoding="ascii").strip()
    try:
        secret = bytes.fromhex(text)
    except ValueError:
        secret = b""
    if len(secret) < 16:
        raise ValueError(
            f"{path}: the person-bounding secret must be at least 16 bytes written as hex; "
            "remove the file to have a new one made"
        )
    return secret


@dataclass(frozen=True)
class BoundedInput:
    """The table the DP mechanisms see, and owner-only facts about how it was made.

    ``owner`` (input rows, persons) is **not** differentially private: the data owner's log only.
    """

    frame: pd.DataFrame
    unit: str
    owner: dict


def privacy_unit(person_key: str | None) -> str:
    """The privacy unit in words, as the manifest and the report state it."""
    if person_key is None:
        return "one record (added or removed)"
    return (
        f"one person (added or removed, with all of their records; person key {person_key!r}): "
        "each person's records are bounded to one before any mechanism"
    )


def bound_persons(
    frame: pd.DataFrame, person_key: str | None, secret: bytes | None = None
) -> BoundedInput:
    """The DP input at the policy's privacy unit.

    Without a person key every record is its own person and the table is returned as is. With
    one, :func:`keep_one_record_per_person` keeps one record per person (under ``secret``,
    default :func:`bounding_secret`) and drops the key column, so every sensitivity stated for
    one record holds for one person. Records whose person key is missing are excluded (counted
    in the owner-only facts).
    """
    if person_key is None:
        return BoundedInput(frame, privacy_unit(None), {})
    if person_key not in frame:
        raise ValueError(f"person key column {person_key!r} is not in the table")
    # A record that names no person is excluded, whatever the rest of the table holds: a
    # record-wise rule, so adding such a record changes nothing the mechanisms see (refusing the
    # table instead would make publication an exact function of the private data).
    named = frame[person_key].notna()
    without_person = int((~named).sum())
    persons = int(frame.loc[named, person_key].nunique())
    bounded = keep_one_record_per_person(
        frame.loc[named], person_key, secret if secret is not None else bounding_secret()
    )
    owner = {"bounded_input_rows": len(frame), "bounded_persons": persons}
    if without_person:
        owner["excluded_without_person"] = without_person
    return BoundedInput(bounded, privacy_unit(person_key), owner)
