"""The tables of the privacy-budget ledger (SQLAlchemy Core, any backend).

Every table is append-only: the ledger inserts rows and never updates or deletes them, so the
database itself is the audit trail. Amounts of epsilon and delta are stored as exact decimal
strings (``"0.1"``, ``"1E-6"``), not floats, so that sums and budget comparisons are exact on
every backend (see :mod:`privgate.core.dp.ledger`).

Tables
------
``privgate_ledger_accounts``
    One row per dataset: its current lifetime budget. It is the only row ever rewritten (by
    :meth:`~privgate.core.dp.ledger.BudgetLedger.set_budget`), and each rewrite is logged in
``privgate_ledger_budget_changes``
    The budget's history: the opening budget and every explicit change, with its reason.
``privgate_ledger_entries``
    One row per charged spend (release, run, step, mechanism, epsilon, delta, time); the spends
    of one charge share a ``charge_id`` and are committed together.
``privgate_ledger_publications``
    Publish and withdraw events of releases; the latest event of a release says whether (and
    where) it is published.
``privgate_ledger_draws``
    The draw journal: one row per attempt at one noise draw of a release (its sequence number,
    step, mechanism and cost), inserted *before* the noise is drawn and completed with the
    drawn value (a differentially private output, never private data) right after. A retry
    replays completed draws instead of drawing again; an attempt left without a value was lost
    in a crash and is charged to the account as such (see :mod:`privgate.core.dp.journal`).
    Completing an attempt is the one update this table sees.
``privgate_ledger_release_inputs``
    One row per release that has drawn noise: a fingerprint (SHA-256) of the table its
    mechanism read, recorded in the transaction of its first draw. A retry on another table is
    refused: the journaled draws describe the first table, and replaying them over another one
    would publish records no noise was charged for. Owner-side, like the journal.
"""

from __future__ import annotations

from sqlalchemy import (
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

__all__ = [
    "METADATA",
    "accounts",
    "budget_changes",
    "draws",
    "entries",
    "publications",
    "release_inputs",
]

#: Every ledger table; ``METADATA.create_all`` creates the missing ones.
METADATA = MetaData()

_DATASET = 255
_IDENTIFIER = 255

accounts = Table(
    "privgate_ledger_accounts",
    METADATA,
    Column("dataset", String(_DATASET), primary_key=True),
    Column("budget_epsilon", Text, nullable=False),
    Column("budget_delta", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

budget_changes = Table(
    "privgate_ledger_budget_changes",
    METADATA,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("dataset", String(_DATASET), ForeignKey(accounts.c.dataset), nullable=False, index=True),
    Column("epsilon", Text, nullable=False),
    Column("delta", Text, nullable=False),
    Column("previous_epsilon", Text, nullable=True),
    Column("previous_delta", Text, nullable=True),
    Column("reason", Text, nullable=False),
    Column("changed_at", DateTime(timezone=True), nullable=False),
    sqlite_autoincrement=True,
)

entries = Table(
    "privgate_ledger_entries",
    METADATA,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("charge_id", String(32), nullable=False, index=True),
    Column("dataset", String(_DATASET), ForeignKey(accounts.c.dataset), nullable=False),
    Column("release_id", String(_IDENTIFIER), nullable=False),
    Column("run_id", String(_IDENTIFIER), nullable=False),
    Column("step", Text, nullable=False),
    Column("mechanism", String(_IDENTIFIER), nullable=False),
    Column("epsilon", Text, nullable=False),
    Column("delta", Text, nullable=False),
    Column("recorded_at", DateTime(timezone=True), nullable=False),
    Index("ix_privgate_ledger_entries_dataset_release", "dataset", "release_id"),
    sqlite_autoincrement=True,
)

publications = Table(
    "privgate_ledger_publications",
    METADATA,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("dataset", String(_DATASET), ForeignKey(accounts.c.dataset), nullable=False),
    Column("release_id", String(_IDENTIFIER), nullable=False),
    Column("event", String(16), nullable=False),
    Column("path", Text, nullable=True),
    Column("run_id", String(_IDENTIFIER), nullable=False),
    Column("recorded_at", DateTime(timezone=True), nullable=False),
    Index("ix_privgate_ledger_publications_dataset_release", "dataset", "release_id"),
    sqlite_autoincrement=True,
)

draws = Table(
    "privgate_ledger_draws",
    METADATA,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("dataset", String(_DATASET), ForeignKey(accounts.c.dataset), nullable=False),
    Column("release_id", String(_IDENTIFIER), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("run_id", String(_IDENTIFIER), nullable=False),
    Column("step", Text, nullable=False),
    Column("mechanism", String(_IDENTIFIER), nullable=False),
    Column("epsilon", Text, nullable=False),
    Column("delta", Text, nullable=False),
    #: Draws of one parallel group (disjoint partitions) share it; "" for a sequential draw.
    Column("parallel_group", String(_IDENTIFIER), nullable=False),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("completed_at", DateTime(timezone=True), nullable=True),
    #: The drawn value as JSON; NULL while the draw is in flight (or was lost).
    Column("value", Text, nullable=True),
    UniqueConstraint("dataset", "release_id", "seq", "attempt"),
    sqlite_autoincrement=True,
)

release_inputs = Table(
    "privgate_ledger_release_inputs",
    METADATA,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("dataset", String(_DATASET), ForeignKey(accounts.c.dataset), nullable=False),
    Column("release_id", String(_IDENTIFIER), nullable=False),
    Column("input_sha256", String(64), nullable=False),
    Column("run_id", String(_IDENTIFIER), nullable=False),
    Column("recorded_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("dataset", "release_id"),
    sqlite_autoincrement=True,
)
