"""The release history: who went into which published class, release after release.

Private to the data owner, like the ε ledger and stored the same way
(:class:`~privgate.core.sqlstore.SQLStore`): ``PRIVGATE_HISTORY_URL`` (any SQLAlchemy URL) or a
SQLite file in the privgate data directory, never a release folder. For every published
k-anonymous release of a dataset it keeps, by the policy's record or person key, the published
class each person went into, and each class's published sensitive values: exactly what an
attacker who downloads every release and knows people's quasi-identifiers can combine
(:mod:`privgate.core.history._criterion`).

Recording is idempotent by release id (a rerun or retry records nothing twice), and a recorded
release is forgotten only with ``force=True``: the history is what makes the next release safe.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pandas as pd
from sqlalchemy import (
    Column,
    DateTime,
    ForeignKeyConstraint,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    delete,
    insert,
    select,
)

from privgate.core.exceptions import HistoryError
from privgate.core.sqlstore import SQLStore, sqlite_file_exists, sqlite_url_in

__all__ = [
    "HISTORY_FILENAME",
    "HISTORY_URL_VARIABLE",
    "PastRelease",
    "RecordedRelease",
    "ReleaseHistory",
    "configured_history_url",
    "history_exists",
]

HISTORY_FILENAME = "release-history.sqlite"
#: The environment variable naming the history (a SQLAlchemy URL).
HISTORY_URL_VARIABLE = "PRIVGATE_HISTORY_URL"

_DATASET = 255
_ID = 255

METADATA = MetaData()

releases = Table(
    "privgate_history_releases",
    METADATA,
    Column("dataset", String(_DATASET), primary_key=True),
    Column("release_id", String(_ID), primary_key=True),
    Column("recorded_at", DateTime(timezone=True), nullable=False),
    Column("path", Text, nullable=True),
    Column("key", String(_ID), nullable=False),
    Column("sensitive", Text, nullable=False),  # JSON list of the sensitive columns
    Column("checks", Text, nullable=False),  # JSON: the cross-release measurements
)

members = Table(
    "privgate_history_members",
    METADATA,
    Column("dataset", String(_DATASET), nullable=False),
    Column("release_id", String(_ID), nullable=False),
    Column("person", Text, nullable=False),
    Column("class_id", Integer, nullable=False),
    ForeignKeyConstraint(
        ["dataset", "release_id"], [releases.c.dataset, releases.c.release_id], ondelete="CASCADE"
    ),
    Index("ix_privgate_history_members_release", "dataset", "release_id"),
)

classes = Table(
    "privgate_history_classes",
    METADATA,
    Column("dataset", String(_DATASET), nullable=False),
    Column("release_id", String(_ID), nullable=False),
    Column("class_id", Integer, nullable=False),
    Column("label", Text, nullable=False),  # JSON: the generalized quasi-identifier values
    Column("sensitive", Text, nullable=False),  # JSON: [[value, ..., count], ...] per record
    ForeignKeyConstraint(
        ["dataset", "release_id"], [releases.c.dataset, releases.c.release_id], ondelete="CASCADE"
    ),
    Index("ix_privgate_history_classes_release", "dataset", "release_id"),
)


#: Who published which values in which class: one row per person, class and published value
#: tuple, so a past release counts its candidates in people (k counts persons) as the release
#: being checked does. Private like the rest of the history; releases recorded before this
#: table existed have no rows in it and are counted in records.
owner_rows = Table(
    "privgate_history_owners",
    METADATA,
    Column("dataset", String(_DATASET), nullable=False),
    Column("release_id", String(_ID), nullable=False),
    Column("class_id", Integer, nullable=False),
    Column("person", Text, nullable=False),
    Column("sensitive", Text, nullable=False),  # JSON: the published value tuple
    ForeignKeyConstraint(
        ["dataset", "release_id"], [releases.c.dataset, releases.c.release_id], ondelete="CASCADE"
    ),
    Index("ix_privgate_history_owners_release", "dataset", "release_id"),
)


def configured_history_url() -> str:
    """``PRIVGATE_HISTORY_URL`` or ``<privgate data directory>/release-history.sqlite``."""
    from privgate.core.locations import data_dir

    configured = os.environ.get(HISTORY_URL_VARIABLE, "").strip()
    return configured or sqlite_url_in(data_dir(), HISTORY_FILENAME)


def history_exists(url: str | None = None) -> bool:
    """Whether the history at ``url`` (default: the configured one) exists."""
    return sqlite_file_exists(url or configured_history_url())


@dataclass(frozen=True)
class PastRelease:
    """One release, as the cross-release criterion reads it.

    Attributes
    ----------
    release_id : str
    membership : Series
        Person key (index, as text) -> class id in that release (a person with several rows
        appears once per row).
    columns : tuple of str
        The protected sensitive columns, in the order of the value tuples below.
    records : dict
        Class id -> Counter of the published value tuples of its records.
    owners : dict or None
        Class id -> value tuple -> the people whose rows published it, for a release made in
        this run (:func:`~privgate.core.history.release_snapshot`) and for one read back from
        the history (recorded with it). The criterion counts candidates in people with it (a
        person with three admissions in a class is one candidate, as k counts persons); None
        only for a release recorded before the history kept it, counted in records.
    """

    release_id: str
    membership: pd.Series
    columns: tuple[str, ...] = ()
    records: dict[int, Counter] = field(default_factory=dict)
    owners: dict[int, dict[tuple, set]] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class RecordedRelease:
    """A release as ``privgate history`` lists it."""

    dataset: str
    release_id: str
    recorded_at: datetime
    path: str | None
    key: str
    people: int
    classes: int
    checks: dict

    def describe(self) -> str:
        checks = self.checks or {}
        summary = ", ".join(f"{k} {v}" for k, v in checks.items() if not isinstance(v, dict))
        return (
            f"{self.release_id}  recorded {self.recorded_at:%Y-%m-%d %H:%M}Z  "
            f"{self.people} people in {self.classes} classes (key {self.key!r})"
            + (f"; checks: {summary}" if summary else "")
            + (f"\n    {self.path}" if self.path else "")
        )


class ReleaseHistory(SQLStore):
    """The release history on any SQLAlchemy URL (see the module docstring)."""

    def __init__(self, url: str | None = None, *, create: bool = True) -> None:
        super().__init__(
            url or configured_history_url(),
            METADATA,
            what="release history",
            error=HistoryError,
            create=create,
        )

    def record(
        self,
        dataset: str,
        release: PastRelease,
        *,
        key: str,
        class_labels: Mapping[int, Sequence[str]],
        checks: Mapping,
        path: str | None = None,
    ) -> bool:
        """Record a published release; return False if it was already recorded (idempotent).

        Parameters
        ----------
        release : PastRelease
            Who went into which class, and each class's published protected values
            (:func:`~privgate.core.history.release_snapshot`).
        key : str
            The column the people are identified by (the policy's record or person key).
        class_labels : mapping
            Per class id, the generalized quasi-identifier values (for the owner's audit).
        checks : mapping
            The cross-release measurements the gate made (listed by ``privgate history``).
        """
        rows = (
            release.membership.rename("class_id")
            .rename_axis("person")
            .reset_index()
            .drop_duplicates()
        )
        with self._transaction(write=True) as connection:
            known = connection.execute(
                select(releases.c.release_id).where(
                    releases.c.dataset == dataset, releases.c.release_id == release.release_id
                )
            ).first()
            if known is not None:
                return False
            connection.execute(
                insert(releases).values(
                    dataset=dataset,
                    release_id=release.release_id,
                    recorded_at=datetime.now(UTC),
                    path=path,
                    key=key,
                    sensitive=json.dumps(list(release.columns)),
                    checks=json.dumps(dict(checks), default=str),
                )
            )
            if len(rows):
                connection.execute(
                    insert(members),
                    [
                        {
                            "dataset": dataset,
                            "release_id": release.release_id,
                            "person": str(person),
                            "class_id": int(class_id),
                        }
                        for person, class_id in rows.itertuples(index=False)
                    ],
                )
            if release.owners:
                connection.execute(
                    insert(owner_rows),
                    [
                        {
                            "dataset": dataset,
                            "release_id": release.release_id,
                            "class_id": int(class_id),
                            "person": str(person),
                            "sensitive": json.dumps(list(values)),
                        }
                        for class_id, by_values in release.owners.items()
                        for values, people in by_values.items()
                        for person in sorted(people, key=str)
                    ],
                )
            ids = sorted(set(release.records) | set(class_labels))
            if ids:
                connection.execute(
                    insert(classes),
                    [
                        {
                            "dataset": dataset,
                            "release_id": release.release_id,
                            "class_id": int(class_id),
                            "label": json.dumps([str(v) for v in class_labels.get(class_id, ())]),
                            "sensitive": json.dumps(
                                [
                                    [*values, count]
                                    for values, count in release.records.get(class_id, {}).items()
                                ]
                            ),
                        }
                        for class_id in ids
                    ],
                )
        return True

    def past_releases(self, dataset: str, *, excluding: str | None = None) -> list[PastRelease]:
        """Every recorded release of ``dataset`` (oldest first), for the criterion."""
        with self._transaction(write=False) as connection:
            recorded = [
                row
                for row in connection.execute(
                    select(releases.c.release_id, releases.c.sensitive)
                    .where(releases.c.dataset == dataset)
                    .order_by(releases.c.recorded_at, releases.c.release_id)
                )
                if row.release_id != excluding
            ]
            past = []
            for release_id, columns in recorded:
                people = connection.execute(
                    select(members.c.person, members.c.class_id).where(
                        members.c.dataset == dataset, members.c.release_id == release_id
                    )
                ).all()
                table = connection.execute(
                    select(classes.c.class_id, classes.c.sensitive).where(
                        classes.c.dataset == dataset, classes.c.release_id == release_id
                    )
                ).all()
                membership = pd.Series(
                    [row.class_id for row in people],
                    index=pd.Index([row.person for row in people], dtype=object),
                    dtype="int64",
                )
                records = {
                    row.class_id: Counter(
                        {tuple(item[:-1]): int(item[-1]) for item in json.loads(row.sensitive)}
                    )
                    for row in table
                }
                known = connection.execute(
                    select(
                        owner_rows.c.class_id, owner_rows.c.sensitive, owner_rows.c.person
                    ).where(owner_rows.c.dataset == dataset, owner_rows.c.release_id == release_id)
                ).all()
                by_class: dict[int, dict[tuple, set]] | None = None
                if known or not people:
                    by_class = {}
                    for class_id, values, person in known:
                        by_class.setdefault(class_id, {}).setdefault(
                            tuple(json.loads(values)), set()
                        ).add(person)
                past.append(
                    PastRelease(
                        release_id, membership, tuple(json.loads(columns)), records, by_class
                    )
                )
        return past

    def releases(self, dataset: str) -> list[RecordedRelease]:
        """The recorded releases of ``dataset``, oldest first."""
        with self._transaction(write=False) as connection:
            rows = connection.execute(
                select(releases)
                .where(releases.c.dataset == dataset)
                .order_by(releases.c.recorded_at, releases.c.release_id)
            ).all()
            out = []
            for row in rows:
                people = connection.execute(
                    select(members.c.person)
                    .where(members.c.dataset == dataset, members.c.release_id == row.release_id)
                    .distinct()
                ).all()
                n_classes = connection.execute(
                    select(classes.c.class_id).where(
                        classes.c.dataset == dataset, classes.c.release_id == row.release_id
                    )
                ).all()
                recorded = row.recorded_at
                if recorded.tzinfo is None:
                    recorded = recorded.replace(tzinfo=UTC)
                out.append(
                    RecordedRelease(
                        dataset,
                        row.release_id,
                        recorded,
                        row.path,
                        row.key,
                        len(people),
                        len(n_classes),
                        json.loads(row.checks),
                    )
                )
        return out

    def datasets(self) -> list[str]:
        """The datasets with at least one recorded release."""
        with self._transaction(write=False) as connection:
            return sorted({row.dataset for row in connection.execute(select(releases.c.dataset))})

    def forget(self, dataset: str, release_id: str, *, force: bool = False) -> None:
        """Remove a recorded release. Refused without ``force``: the next release's safety is
        checked against the history, so forgetting a release that was published hides what
        an attacker may still hold.

        Raises
        ------
        HistoryError
            Without ``force``, or if the release is not recorded.
        """
        if not force:
            raise HistoryError(
                f"release {release_id} of {dataset!r} stays in the release history: releases "
                "already published are what the next release is checked against; forget it "
                "only with --force (e.g. a release withdrawn before anyone downloaded it)"
            )
        with self._transaction(write=True) as connection:
            for table in (owner_rows, members, classes, releases):
                done = connection.execute(
                    delete(table).where(
                        table.c.dataset == dataset, table.c.release_id == release_id
                    )
                )
            if done.rowcount == 0:
                raise HistoryError(f"release {release_id} of {dataset!r} is not in the history")
