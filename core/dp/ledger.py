"""The ε ledger: each dataset's lifetime privacy budget and every spend charged against it.

Differential privacy composes: every release drawn from a dataset leaks a little more about it,
and the leaks add up (sequential composition, Dwork & Roth 2014, Thm. 3.16). A per-release cap
therefore protects nobody once the same table is released again and again. The ledger keeps one
*account* per dataset with a lifetime budget (epsilon, delta) and an append-only list of every
spend ever charged to it. An account's spent total is the sum of its entries.

Write-ahead charging
--------------------
A DP stage calls :meth:`BudgetLedger.charge` *before* it draws noise. The charge is committed in
its own transaction, which also checks the budget under a lock, and it is never rolled back. So
a crash after the noise was drawn has already been paid for, and a charge that would overrun
the budget raises :class:`~core.exceptions.BudgetExceededError`, records nothing and says how
much is left. A rerun that reuses a persisted noisy result does not charge again (the ledger
cannot know that noise exists unless it was charged, so the caller must not draw without
charging). :meth:`BudgetLedger.mark_published` then records which release the spends produced.

Storage
-------
Any SQLAlchemy URL: a SQLite file by default (:func:`default_ledger_url`), PostgreSQL for a
team. Writers serialize per database (SQLite: ``BEGIN IMMEDIATE``) or per account (other
backends: ``SELECT ... FOR UPDATE`` on the account row), so concurrent processes never lose or
double-count a spend.

Exact arithmetic
----------------
Amounts are stored and summed as exact decimals: a float ``x`` is recorded as the shortest
decimal that reads back as ``x`` (``repr(x)``), i.e. the number written in the policy. So ten
charges of 0.1 spend exactly 1, and a budget check has no rounding to forgive: charging exactly
the remaining budget succeeds and charging 1e-9 more fails. The one concession to floats: a
request that *as a float* equals the remaining budget *as a float* (the nearest double, which is
what :attr:`Account.remaining` returns) fits, and is recorded as exactly the remaining amount,
so "spend what is left" works and the spent total still never exceeds the budget.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Context, Decimal, Inexact, InvalidOperation, Overflow, Rounded
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import Select, func, insert, select, update
from sqlalchemy.engine import URL, Connection
from sqlalchemy.exc import IntegrityError

from privgate.core.dp._accountant import PrivacyParameterError
from privgate.core.dp._ledger_schema import (
    METADATA,
    accounts,
    budget_changes,
    draws,
    entries,
    publications,
    release_inputs,
)
from privgate.core.exceptions import BudgetExceededError, LedgerError
from privgate.core.sqlstore import SQLStore, sqlite_file_exists, sqlite_url_in

__all__ = [
    "LEDGER_FILENAME",
    "LEDGER_URL_VARIABLE",
    "LOST_DRAW",
    "RESERVATION",
    "Account",
    "BudgetChange",
    "BudgetLedger",
    "DrawRecord",
    "LedgerEntry",
    "SpendLike",
    "configured_ledger_url",
    "default_ledger_url",
    "ledger_exists",
]

#: File name of the default SQLite ledger inside the privgate data directory.
LEDGER_FILENAME = "privacy-ledger.sqlite"

#: The environment variable naming the ledger (a SQLAlchemy URL). The data owner's
#: configuration, never a policy setting or a command-line option: whoever can edit or copy a
#: policy, or choose an output folder, must not be able to point a release at an empty ledger.
LEDGER_URL_VARIABLE = "PRIVGATE_LEDGER_URL"

#: Mechanism name of the entry that reserves a release's whole (epsilon, delta) up front.
RESERVATION = "reservation"
#: Mechanism name of the entry that charges a draw lost in a crash (it may have been drawn).
LOST_DRAW = "lost-draw"

#: Exact decimal arithmetic: enough digits for any sum of float-born amounts, and any rounding
#: raises instead of silently changing a spend.
_EXACT = Context(prec=2000, traps=[Inexact, Rounded, InvalidOperation, Overflow])

_PUBLISHED = "published"
_WITHDRAWN = "withdrawn"


class SpendLike(Protocol):
    """What :meth:`BudgetLedger.charge` reads from a spend (:class:`core.dp.Spend` fits)."""

    mechanism: str
    epsilon: float
    delta: float
    step: str


def default_ledger_url(directory: str | Path) -> str:
    """Return the URL of a SQLite ledger file in ``directory``.

    The path is made absolute, so the URL names the same file whatever the working directory of
    the process that opens it (Prefect workers need not share the caller's).

    Parameters
    ----------
    directory : str or Path
        A private folder of the data owner (by default the privgate data directory, see
        :func:`configured_ledger_url`); never a release folder.

    Returns
    -------
    str
        ``sqlite:///<absolute directory>/privacy-ledger.sqlite``.
    """
    return sqlite_url_in(directory, LEDGER_FILENAME)


def configured_ledger_url() -> str:
    """The one ledger every DP release of this installation charges.

    ``PRIVGATE_LEDGER_URL`` (any SQLAlchemy URL, e.g. a shared PostgreSQL database for a team
    whose nightly releases run on several workers) if set, else a SQLite file in the privgate
    data directory (:func:`privgate.core.locations.data_dir`, a ``0700`` folder). It depends
    on nothing a policy or a run's options can change, so copying a policy, choosing another
    ``--output`` folder or deleting the releases cannot reach a fresh budget.
    """
    import os

    from privgate.core.locations import data_dir

    configured = os.environ.get(LEDGER_URL_VARIABLE, "").strip()
    return configured or default_ledger_url(data_dir())


def ledger_exists(url: str) -> bool:
    """Whether the ledger at ``url`` has been created (SQLite: its file exists).

    Lets read-only callers (a dry run, ``privgate budget``) report a fresh budget without
    creating a database. A server URL is assumed to exist (its tables are created on first use).
    """
    return sqlite_file_exists(url)


@dataclass(frozen=True)
class LedgerEntry:
    """One spend charged to a dataset's account (a row of the ledger; never edited).

    Attributes
    ----------
    id : int
        Increasing row number: the order in which spends were committed.
    dataset, release_id, run_id : str
        Whose budget paid, for which release, in which (flow) run.
    step, mechanism : str
        What the spend paid for and with which noise mechanism.
    epsilon, delta : float
        The amounts (exact in the database; the nearest floats here).
    recorded_at : datetime
        When the charge was committed (UTC).
    charge_id : str
        Shared by the spends committed together by one :meth:`BudgetLedger.charge`.
    """

    id: int
    dataset: str
    release_id: str
    run_id: str
    step: str
    mechanism: str
    epsilon: float
    delta: float
    recorded_at: datetime
    charge_id: str = ""

    def to_dict(self) -> dict:
        """Return a JSON-ready dict (``recorded_at`` in ISO 8601)."""
        return {
            "id": self.id,
            "dataset": self.dataset,
            "release_id": self.release_id,
            "run_id": self.run_id,
            "step": self.step,
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "recorded_at": self.recorded_at.isoformat(),
            "charge_id": self.charge_id,
        }


@dataclass(frozen=True)
class BudgetChange:
    """The opening budget of an account or an explicit change of it, with its reason."""

    dataset: str
    epsilon: float
    delta: float
    previous_epsilon: float | None
    previous_delta: float | None
    reason: str
    changed_at: datetime

    def to_dict(self) -> dict:
        """Return a JSON-ready dict (``changed_at`` in ISO 8601)."""
        return {
            "dataset": self.dataset,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "previous_epsilon": self.previous_epsilon,
            "previous_delta": self.previous_delta,
            "reason": self.reason,
            "changed_at": self.changed_at.isoformat(),
        }


@dataclass(frozen=True)
class DrawRecord:
    """One attempt at one noise draw of a release, as the draw journal holds it.

    Attributes
    ----------
    seq : int
        The draw's position in the release (1, 2, ...): a deterministic algorithm replayed on
        the same release asks for the same draws in the same order.
    attempt : int
        1 for the first attempt; a later attempt exists only when an earlier one was lost.
    step, mechanism : str
        What the draw paid for, with which mechanism.
    epsilon, delta : float
        Its cost (the exact decimal is in the database).
    parallel_group : str
        Draws on disjoint partitions share a group (their cost is the maximum); "" otherwise.
    value : str or None
        The drawn value as JSON (a DP output); None while in flight or if lost.
    run_id : str
        The run that made the attempt.
    """

    seq: int
    attempt: int
    step: str
    mechanism: str
    epsilon: float
    delta: float
    parallel_group: str
    value: str | None
    run_id: str
    started_at: datetime
    completed_at: datetime | None = None

    @property
    def completed(self) -> bool:
        return self.value is not None

    def to_dict(self) -> dict:
        """JSON-ready (without the value, which can be large)."""
        return {
            "seq": self.seq,
            "attempt": self.attempt,
            "step": self.step,
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "parallel_group": self.parallel_group,
            "run_id": self.run_id,
        }


@dataclass(frozen=True)
class Account:
    """A snapshot of one dataset's account: budget, spends, what is left, what was published.

    Read in one transaction, so ``spent_*`` is exactly the sum of ``entries``.

    Attributes
    ----------
    dataset : str
        The dataset the budget protects.
    budget_epsilon, budget_delta : float
        The lifetime budget.
    spent_epsilon, spent_delta : float
        The sequential composition (sum) of every entry, computed exactly.
    entries : tuple of LedgerEntry
        Every spend, in commit order.
    published : dict
        Release id -> path of each release currently marked published.
    history : tuple of BudgetChange
        The opening budget and every change of it, oldest first.
    """

    dataset: str
    budget_epsilon: float
    budget_delta: float
    spent_epsilon: float
    spent_delta: float
    entries: tuple[LedgerEntry, ...] = ()
    published: dict[str, str] = field(default_factory=dict)
    history: tuple[BudgetChange, ...] = ()
    #: The exact remaining (epsilon, delta) when read from a ledger; None for a hand-made value.
    exact_remaining: tuple[Decimal, Decimal] | None = field(default=None, repr=False)

    @property
    def exact_remaining_text(self) -> tuple[str, str]:
        """``(epsilon, delta)`` still available as exact decimal text (``"1.5"``, ``"0"``).

        What ``privgate budget`` prints: a sum of decimals is exact, so no ``8.74e-16`` can
        appear where the budget is used up.
        """
        if self.exact_remaining is None:
            return tuple(_decimal_text(Decimal(repr(v))) for v in self.remaining)  # type: ignore[return-value]
        return tuple(_decimal_text(max(v, Decimal(0))) for v in self.exact_remaining)  # type: ignore[return-value]

    @property
    def remaining(self) -> tuple[float, float]:
        """``(epsilon, delta)`` still available (never negative), as the nearest floats.

        Charging exactly this amount succeeds (see the module notes on exact arithmetic).
        """
        if self.exact_remaining is not None:
            epsilon, delta = self.exact_remaining
            return float(max(epsilon, Decimal(0))), float(max(delta, Decimal(0)))
        return (
            max(self.budget_epsilon - self.spent_epsilon, 0.0),
            max(self.budget_delta - self.spent_delta, 0.0),
        )

    def releases(self) -> dict[str, tuple[LedgerEntry, ...]]:
        """The entries grouped by release, releases in the order of their first spend."""
        grouped: dict[str, list[LedgerEntry]] = {}
        for entry in self.entries:
            grouped.setdefault(entry.release_id, []).append(entry)
        return {release: tuple(items) for release, items in grouped.items()}

    def describe(self) -> str:
        """A human-readable account, one line per spend under its release (``privgate budget``).

        Examples
        --------
        >>> print(Account("adult", 1.0, 0.0, 0.25, 0.0).describe())
        privacy budget of dataset 'adult'
          budget:    (epsilon=1.0, delta=0.0)
          spent:     (epsilon=0.25, delta=0.0) in 0 spends over 0 releases
          remaining: (epsilon=0.75, delta=0.0)
        """
        left = self.exact_remaining_text
        releases = self.releases()
        lines = [
            f"privacy budget of dataset {self.dataset!r}",
            f"  budget:    {_pair(self.budget_epsilon, self.budget_delta)}",
            f"  spent:     {_pair(self.spent_epsilon, self.spent_delta)} in "
            f"{len(self.entries)} spends over {len(releases)} releases",
            f"  remaining: (epsilon={left[0]}, delta={left[1]})",
        ]
        for release, items in releases.items():
            epsilon, delta = _exact_sum_floats(items)
            where = self.published.get(release)
            status = (
                f"published at {where}"
                if where is not None
                else "not published (spent all the same)"
            )
            lines.append(f"  release {release}: {_pair(epsilon, delta)}, {status}")
            for entry in items:
                lines.append(
                    f"    {_when(entry.recorded_at)}  run {entry.run_id or '-'}  "
                    f"{entry.mechanism}  {_pair(entry.epsilon, entry.delta)}"
                    + (f"  {entry.step}" if entry.step else "")
                )
        if self.history:
            lines.append("  budget history:")
            for change in self.history:
                if change.previous_epsilon is None:
                    what = f"opened with {_pair(change.epsilon, change.delta)}"
                else:
                    what = (
                        f"set to {_pair(change.epsilon, change.delta)} (was "
                        f"{_pair(change.previous_epsilon, change.previous_delta)}): "
                        f"{change.reason}"
                    )
                lines.append(f"    {_when(change.changed_at)}  {what}")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """Return a JSON-ready dict: budget, spent, remaining, releases, entries and history."""
        remaining = self.remaining
        return {
            "dataset": self.dataset,
            "budget": {"epsilon": self.budget_epsilon, "delta": self.budget_delta},
            "spent": {"epsilon": self.spent_epsilon, "delta": self.spent_delta},
            "remaining": {"epsilon": remaining[0], "delta": remaining[1]},
            "published": dict(self.published),
            "entries": [entry.to_dict() for entry in self.entries],
            "history": [change.to_dict() for change in self.history],
        }


class BudgetLedger(SQLStore):
    """Lifetime privacy budgets of datasets and every spend charged to them, in a database.

    Parameters
    ----------
    url : str or sqlalchemy.engine.URL
        Any SQLAlchemy database URL. ``sqlite:///path`` (the default, see
        :func:`default_ledger_url`) creates the file and its folder if missing; an in-memory
        SQLite URL (``sqlite://``) gives a ledger private to this object, shared by its threads.
        ``postgresql://...`` suits a team; the driver must be installed.

    Raises
    ------
    LedgerError
        If the URL is malformed, its driver is missing, or the database cannot be reached or
        its tables created; the message names the URL (password hidden).

    Notes
    -----
    Every public method runs in its own transaction and returns plain values, so one ledger
    object may be shared by threads, and many processes may open the same database. Use it as a
    context manager, or call :meth:`close`, to release its connections.

    Examples
    --------
    >>> ledger = BudgetLedger("sqlite://")
    >>> _ = ledger.open_account("adult", epsilon=1.0)
    >>> class Laplace:
    ...     mechanism, epsilon, delta, step = "laplace", 0.4, 0.0, "counts"
    >>> [entry.epsilon for entry in ledger.charge(
    ...     "adult", release_id="r1", run_id="run-1", spends=[Laplace()])]
    [0.4]
    >>> ledger.account("adult").remaining
    (0.6, 0.0)
    """

    def __init__(self, url: str | URL) -> None:
        super().__init__(url, METADATA, what="privacy ledger", error=LedgerError)

    # ------------------------------------------------------------------------------------------
    # Accounts

    def open_account(self, dataset: str, epsilon: float, delta: float = 0.0) -> Account:
        """Return the dataset's account, creating it with this lifetime budget if missing.

        Parameters
        ----------
        dataset : str
            The dataset's name (as in the policy).
        epsilon : float
            The lifetime epsilon (>= 0).
        delta : float, default=0.0
            The lifetime delta (in [0, 1)).

        Returns
        -------
        Account
            The account as it is now.

        Raises
        ------
        LedgerError
            If the account exists with a different budget: a lifetime budget only changes
            through :meth:`set_budget`, with a reason.
        PrivacyParameterError
            If epsilon or delta is not a valid budget.
        """
        name = _check_name(dataset, "dataset")
        budget = (_amount(epsilon, "budget epsilon"), _amount(delta, "budget delta", delta=True))
        for attempt in range(2):
            try:
                with self._transaction(write=True) as connection:
                    row = connection.execute(_account_for_update(name)).one_or_none()
                    if row is None:
                        now = _now()
                        connection.execute(
                            insert(accounts).values(
                                dataset=name,
                                budget_epsilon=str(budget[0]),
                                budget_delta=str(budget[1]),
                                created_at=now,
                            )
                        )
                        connection.execute(
                            insert(budget_changes).values(
                                dataset=name,
                                epsilon=str(budget[0]),
                                delta=str(budget[1]),
                                previous_epsilon=None,
                                previous_delta=None,
                                reason="account opened",
                                changed_at=now,
                            )
                        )
                    else:
                        current = (Decimal(row.budget_epsilon), Decimal(row.budget_delta))
                        if current != budget:
                            raise LedgerError(
                                f"dataset {name!r} already has a lifetime budget of "
                                f"{_pair(*current)} in the privacy ledger at {self._shown}, "
                                f"not {_pair(*budget)}; change it explicitly with "
                                f"BudgetLedger.set_budget(dataset, epsilon, delta, reason)"
                            )
                    return self._read_account(connection, name)
            except LedgerError as error:
                # A concurrent opener on a backend without a database-wide write lock may have
                # inserted the same account first: read it and compare once more.
                if attempt == 0 and isinstance(error.__cause__, IntegrityError):
                    continue
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    def set_budget(self, dataset: str, epsilon: float, delta: float, reason: str) -> Account:
        """Change a dataset's lifetime budget, recording the change and its reason.

        Raises
        ------
        LedgerError
            If the account is missing, the reason is empty, or the new budget is below what has
            already been spent (spent privacy cannot be given back).
        PrivacyParameterError
            If epsilon or delta is not a valid budget.
        """
        name = _check_name(dataset, "dataset")
        if not isinstance(reason, str) or not reason.strip():
            raise LedgerError(f"changing the budget of {name!r} needs a reason; got {reason!r}")
        budget = (_amount(epsilon, "budget epsilon"), _amount(delta, "budget delta", delta=True))
        with self._transaction(write=True) as connection:
            row = self._locked_account(connection, name)
            spent = _spent(connection, name)
            if budget[0] < spent[0] or budget[1] < spent[1]:
                raise LedgerError(
                    f"cannot set the lifetime budget of {name!r} to {_pair(*budget)}: "
                    f"{_pair(*spent)} is already spent"
                )
            connection.execute(
                update(accounts)
                .where(accounts.c.dataset == name)
                .values(budget_epsilon=str(budget[0]), budget_delta=str(budget[1]))
            )
            connection.execute(
                insert(budget_changes).values(
                    dataset=name,
                    epsilon=str(budget[0]),
                    delta=str(budget[1]),
                    previous_epsilon=row.budget_epsilon,
                    previous_delta=row.budget_delta,
                    reason=reason.strip(),
                    changed_at=_now(),
                )
            )
            return self._read_account(connection, name)

    def account(self, dataset: str) -> Account:
        """Return a consistent snapshot of the dataset's account.

        Raises
        ------
        LedgerError
            If the dataset has no account (the message lists the accounts there are).
        """
        name = _check_name(dataset, "dataset")
        with self._transaction(write=False) as connection:
            return self._read_account(connection, name)

    def datasets(self) -> list[str]:
        """The datasets that have an account, sorted."""
        with self._transaction(write=False) as connection:
            return list(connection.scalars(select(accounts.c.dataset).order_by("dataset")))

    # ------------------------------------------------------------------------------------------
    # Spending

    def check(self, dataset: str, epsilon: float, delta: float = 0.0) -> tuple[float, float]:
        """Return the ``(epsilon, delta)`` that would remain after such a spend; record nothing.

        Use it to refuse a whole run before any noise exists; the binding check is the one
        :meth:`charge` makes under the lock.

        Raises
        ------
        BudgetExceededError
            If the spend would not fit; ``remaining`` holds what is left now.
        LedgerError
            If the dataset has no account.
        """
        name = _check_name(dataset, "dataset")
        asked = (_amount(epsilon, "epsilon"), _amount(delta, "delta", delta=True))
        with self._transaction(write=False) as connection:
            budget = _budget(self._account_row(connection, name))
            spent = _spent(connection, name)
        recorded = _fit(name, f"a spend of {_pair(*asked)}", budget, spent, [asked])
        after = (
            _EXACT.subtract(_EXACT.subtract(budget[0], spent[0]), recorded[0][0]),
            _EXACT.subtract(_EXACT.subtract(budget[1], spent[1]), recorded[0][1]),
        )
        return float(max(after[0], Decimal(0))), float(max(after[1], Decimal(0)))

    def charge(
        self, dataset: str, *, release_id: str, run_id: str, spends: Sequence[SpendLike]
    ) -> list[LedgerEntry]:
        """Record spends against the dataset's budget, all or nothing, before noise is drawn.

        One transaction locks the account, checks that the spends fit what is left, inserts
        one entry per spend and commits. The entries are never rolled back: call this *before*
        drawing the noise the spends pay for, and a crash afterwards is still counted.

        Parameters
        ----------
        dataset : str
            The account to charge.
        release_id : str
            The release the spends pay for.
        run_id : str
            The run drawing the noise (e.g. the Prefect flow run id).
        spends : sequence of SpendLike
            Objects with ``mechanism``, ``epsilon``, ``delta`` and ``step`` attributes, such as
            :class:`privgate.core.dp.Spend`; they compose sequentially (their sum is charged).

        Returns
        -------
        list of LedgerEntry
            The committed entries, in order.

        Raises
        ------
        BudgetExceededError
            If the spends do not fit the remaining budget; nothing is recorded, ``remaining``
            holds what is left and the message says how much was asked.
        LedgerError
            If the dataset has no account or the database fails (nothing is recorded).
        PrivacyParameterError
            If there is no spend or a spend's epsilon, delta or mechanism is invalid.
        """
        name = _check_name(dataset, "dataset")
        release = _check_name(release_id, "release_id")
        if not isinstance(run_id, str):
            raise LedgerError(f"run_id must be a string; got {run_id!r}")
        rows = _spend_rows(spends)
        asked = (
            _exact_sum(row["epsilon"] for row in rows),
            _exact_sum(row["delta"] for row in rows),
        )
        charge_id = uuid.uuid4().hex
        with self._transaction(write=True) as connection:
            budget = _budget(self._locked_account(connection, name))
            spent = _spent(connection, name)
            what = f"release {release!r} asks for {_pair(*asked)}, which"
            amounts = _fit(
                name, what, budget, spent, [(row["epsilon"], row["delta"]) for row in rows]
            )
            now = _now()
            for row, (epsilon, delta) in zip(rows, amounts, strict=True):
                self._insert_entry(
                    connection,
                    {
                        "charge_id": charge_id,
                        "dataset": name,
                        "release_id": release,
                        "run_id": run_id,
                        "step": row["step"],
                        "mechanism": row["mechanism"],
                        "epsilon": str(epsilon),
                        "delta": str(delta),
                        "recorded_at": now,
                    },
                )
            stored = connection.execute(
                select(entries).where(entries.c.charge_id == charge_id).order_by(entries.c.id)
            ).all()
        return [_entry(row) for row in stored]

    def _insert_entry(self, connection: Connection, values: dict[str, Any]) -> None:
        """Insert one entry (inside :meth:`charge`'s transaction; one spend per statement)."""
        connection.execute(insert(entries).values(**values))

    def entries(self, dataset: str, release_id: str | None = None) -> list[LedgerEntry]:
        """The dataset's entries in commit order, optionally only those of one release.

        Raises
        ------
        LedgerError
            If the dataset has no account.
        """
        name = _check_name(dataset, "dataset")
        with self._transaction(write=False) as connection:
            self._account_row(connection, name)
            query = select(entries).where(entries.c.dataset == name)
            if release_id is not None:
                query = query.where(entries.c.release_id == release_id)
            return [_entry(row) for row in connection.execute(query.order_by(entries.c.id))]

    # ------------------------------------------------------------------------------------------
    # Reservations and the draw journal

    def reserve(
        self, dataset: str, *, release_id: str, run_id: str, epsilon: float, delta: float = 0.0
    ) -> LedgerEntry:
        """Reserve a release's whole ``(epsilon, delta)`` before any of its noise is drawn.

        Atomic under the account's writer lock: concurrent releases cannot both take the last
        of a budget, so a run that cannot be paid for in full is refused before it draws
        anything. Idempotent per release: a retry, or a duplicate run of the same release,
        finds the reservation and is charged nothing more.

        Raises
        ------
        BudgetExceededError
            If the reservation does not fit what is left; nothing is recorded.
        LedgerError
            If the release was reserved with another amount, the account is missing, or the
            database fails.
        """
        name = _check_name(dataset, "dataset")
        release = _check_name(release_id, "release_id")
        asked = (_amount(epsilon, "epsilon"), _amount(delta, "delta", delta=True))
        with self._transaction(write=True) as connection:
            budget = _budget(self._locked_account(connection, name))
            return self._reserve(connection, name, release, str(run_id), asked, budget)

    def _reserve(
        self,
        connection: Connection,
        name: str,
        release: str,
        run_id: str,
        asked: tuple[Decimal, Decimal],
        budget: tuple[Decimal, Decimal],
    ) -> LedgerEntry:
        existing = _reservation_row(connection, name, release)
        if existing is not None:
            held = (Decimal(existing.epsilon), Decimal(existing.delta))
            if held != asked:
                raise LedgerError(
                    f"release {release!r} of {name!r} is reserved with {_pair(*held)} in the "
                    f"privacy ledger at {self._shown}, not {_pair(*asked)}: a release's "
                    "settings cannot change once its budget is reserved"
                )
            return _entry(existing)
        spent = _spent(connection, name)
        what = f"release {release!r} reserves {_pair(*asked)}, which"
        (amount,) = _fit(name, what, budget, spent, [asked])
        charge_id = uuid.uuid4().hex
        self._insert_entry(
            connection,
            {
                "charge_id": charge_id,
                "dataset": name,
                "release_id": release,
                "run_id": run_id,
                "step": f"release {release}",
                "mechanism": RESERVATION,
                "epsilon": str(amount[0]),
                "delta": str(amount[1]),
                "recorded_at": _now(),
            },
        )
        return _entry(_reservation_row(connection, name, release))

    def reservation(self, dataset: str, release_id: str) -> LedgerEntry | None:
        """The reservation of a release, or None (never reserved; or no account)."""
        name = _check_name(dataset, "dataset")
        release = _check_name(release_id, "release_id")
        with self._transaction(write=False) as connection:
            row = _reservation_row(connection, name, release)
        return None if row is None else _entry(row)

    def begin_draw(
        self,
        dataset: str,
        *,
        release_id: str,
        run_id: str,
        seq: int,
        spend: SpendLike,
        parallel_group: str = "",
        reserve: tuple[float, float] | None = None,
        input_sha256: str | None = None,
    ) -> DrawRecord:
        """Return the completed draw ``seq`` of a release to replay, or start a new attempt.

        In one locked transaction: if an attempt of ``seq`` has a value, it is returned and
        nothing is recorded (the caller reuses it instead of drawing). Otherwise the release's
        reservation is taken if missing (``reserve``; refused with
        :class:`~privgate.core.exceptions.BudgetExceededError` before anything is drawn), an
        earlier attempt left without a value is charged to the account as a lost draw (it may
        have been drawn before a crash: the ledger counts every draw that may exist,
        unconditionally, because it happened), and a new attempt is recorded *before* the
        caller draws. Complete it with :meth:`complete_draw`.

        ``input_sha256`` (a fingerprint of the table the mechanism reads) binds the release to
        its input in the same transaction as its first draw; a later draw of the release on a
        table with another fingerprint is refused, replayed or not, and so are a draw of a bound
        release that names no fingerprint and a fingerprint for a release that drew unbound.

        Raises
        ------
        LedgerError
            If the release has no reservation and ``reserve`` is None; or the recorded draw
            ``seq`` paid for another step, mechanism or amount (the release cannot be replayed:
            its settings or code changed); or the release's draws were made on another input.
        BudgetExceededError
            If the reservation does not fit.
        """
        name = _check_name(dataset, "dataset")
        release = _check_name(release_id, "release_id")
        row = _spend_rows([spend])[0]
        with self._transaction(write=True) as connection:
            budget = _budget(self._locked_account(connection, name))
            attempts = connection.execute(
                select(draws)
                .where(draws.c.dataset == name, draws.c.release_id == release, draws.c.seq == seq)
                .order_by(draws.c.attempt)
            ).all()
            for attempt in attempts:
                self._check_replay(release, seq, attempt, row)
            if input_sha256 is not None:
                self._bind_input(connection, name, release, str(run_id), input_sha256)
            elif _bound_input(connection, name, release) is not None:
                raise LedgerError(
                    f"release {release!r} of {name!r} is bound to the table its noise was "
                    "drawn from: a draw of it must name the table it reads (input_sha256)"
                )
            done = [a for a in attempts if a.value is not None]
            if done:
                return _draw_record(done[0])
            if _reservation_row(connection, name, release) is None:
                if reserve is None:
                    raise LedgerError(
                        f"release {release!r} of {name!r} has no reservation in the privacy "
                        f"ledger at {self._shown}: reserve its budget before drawing noise"
                    )
                asked = (_amount(reserve[0], "epsilon"), _amount(reserve[1], "delta", delta=True))
                self._reserve(connection, name, release, str(run_id), asked, budget)
            now = _now()
            if attempts:
                lost = attempts[-1]
                self._insert_entry(
                    connection,
                    {
                        "charge_id": uuid.uuid4().hex,
                        "dataset": name,
                        "release_id": release,
                        "run_id": lost.run_id,
                        "step": f"draw {seq} attempt {lost.attempt} lost: {lost.step}",
                        "mechanism": LOST_DRAW,
                        "epsilon": lost.epsilon,
                        "delta": lost.delta,
                        "recorded_at": now,
                    },
                )
            connection.execute(
                insert(draws).values(
                    dataset=name,
                    release_id=release,
                    seq=seq,
                    attempt=len(attempts) + 1,
                    run_id=str(run_id),
                    step=row["step"],
                    mechanism=row["mechanism"],
                    epsilon=str(row["epsilon"]),
                    delta=str(row["delta"]),
                    parallel_group=parallel_group,
                    started_at=now,
                )
            )
            stored = connection.execute(
                select(draws).where(
                    draws.c.dataset == name,
                    draws.c.release_id == release,
                    draws.c.seq == seq,
                    draws.c.attempt == len(attempts) + 1,
                )
            ).one()
        return _draw_record(stored)

    def _bind_input(
        self, connection: Connection, dataset: str, release: str, run_id: str, sha256: str
    ) -> None:
        """Record the release's input on its first draw; refuse a draw on another input.

        Without it a retry after the input changed would replay the first input's draws over
        the new table: DPHeter would republish the old counts, MST the old synthetic table, and
        SafePub would publish the *new* table's records through filters decided on the old
        one's noise — records no noise was charged for.
        """
        bound = _bound_input(connection, dataset, release)
        if bound is None:
            # Bound in the transaction of the release's first draw, so a release that has draws
            # and no binding drew them unbound (a ledger written before releases were bound, or
            # a caller that named no input): which table they describe is unknown, and binding
            # it to this run's table would replay them over whatever this run reads.
            drawn = connection.execute(
                select(draws.c.id)
                .where(draws.c.dataset == dataset, draws.c.release_id == release)
                .limit(1)
            ).first()
            if drawn is not None:
                raise LedgerError(
                    f"release {release!r} of {dataset!r} drew noise before its input was bound "
                    "to it (by an earlier privgate, or without a fingerprint): whether this "
                    "run reads the same table cannot be checked, so its draws are not replayed "
                    "over it. Make a new release (another --release-date or changed DP "
                    "settings), which reserves new epsilon; this release keeps what it spent"
                )
            connection.execute(
                insert(release_inputs).values(
                    dataset=dataset,
                    release_id=release,
                    input_sha256=sha256,
                    run_id=run_id,
                    recorded_at=_now(),
                )
            )
        elif bound != sha256:
            raise LedgerError(
                f"release {release!r} of {dataset!r} drew its noise from another input table "
                f"or hierarchy file (fingerprint {bound[:12]}…, this run's {sha256[:12]}…): "
                "its journaled draws describe that input, and replaying them over this one "
                "would publish records no noise was charged for, or noisy counts under other "
                "labels. Restore the input and hierarchy files the release began with to "
                "finish it, or make a new release (another --release-date or changed DP "
                "settings), "
                "which reserves new epsilon; this release keeps what it spent"
            )

    def release_input(self, dataset: str, release_id: str) -> str | None:
        """The fingerprint of the input a release drew its noise from (``None``: no draw yet)."""
        name = _check_name(dataset, "dataset")
        release = _check_name(release_id, "release_id")
        with self._transaction(write=False) as connection:
            return _bound_input(connection, name, release)

    def _check_replay(self, release: str, seq: int, attempt: Any, row: dict[str, Any]) -> None:
        recorded = (attempt.step, attempt.mechanism, Decimal(attempt.epsilon))
        asked = (row["step"], row["mechanism"], row["epsilon"])
        if recorded != asked or Decimal(attempt.delta) != row["delta"]:
            raise LedgerError(
                f"release {release!r}: draw {seq} is recorded as {attempt.mechanism} for "
                f"{attempt.step!r} at epsilon={attempt.epsilon}, but the run asks for "
                f"{row['mechanism']} for {row['step']!r} at epsilon={row['epsilon']}: the "
                "release cannot be replayed (its settings or the algorithm changed); it "
                "keeps what it spent, and a new release needs a new release id"
            )

    def complete_draw(
        self, dataset: str, *, release_id: str, seq: int, attempt: int, value: str
    ) -> DrawRecord:
        """Record the value drawn by an attempt started with :meth:`begin_draw`.

        Must be called before the value is used, so that nothing derived from a draw exists
        that a retry could not reproduce.

        Raises
        ------
        LedgerError
            If the attempt does not exist or already has a value.
        """
        name = _check_name(dataset, "dataset")
        release = _check_name(release_id, "release_id")
        with self._transaction(write=True) as connection:
            self._locked_account(connection, name)
            done = connection.execute(
                update(draws)
                .where(
                    draws.c.dataset == name,
                    draws.c.release_id == release,
                    draws.c.seq == seq,
                    draws.c.attempt == attempt,
                    draws.c.value.is_(None),
                )
                .values(value=value, completed_at=_now())
            )
            if done.rowcount != 1:
                raise LedgerError(
                    f"release {release!r}: draw {seq} attempt {attempt} is not in flight in the "
                    f"privacy ledger at {self._shown}"
                )
            stored = connection.execute(
                select(draws).where(
                    draws.c.dataset == name,
                    draws.c.release_id == release,
                    draws.c.seq == seq,
                    draws.c.attempt == attempt,
                )
            ).one()
        return _draw_record(stored)

    def draws(self, dataset: str, release_id: str) -> list[DrawRecord]:
        """Every recorded attempt of a release's draws, by (seq, attempt)."""
        name = _check_name(dataset, "dataset")
        release = _check_name(release_id, "release_id")
        with self._transaction(write=False) as connection:
            rows = connection.execute(
                select(draws)
                .where(draws.c.dataset == name, draws.c.release_id == release)
                .order_by(draws.c.seq, draws.c.attempt)
            ).all()
        return [_draw_record(row) for row in rows]

    # ------------------------------------------------------------------------------------------
    # Publishing

    def mark_published(self, dataset: str, release_id: str, path: str, run_id: str) -> None:
        """Record that the spends of ``release_id`` produced the release published at ``path``.

        Idempotent: marking a release already published at the same path records nothing.

        Raises
        ------
        LedgerError
            If the dataset has no account, or the ledger holds no spend for this release (noise
            that was never charged must not be published as if it had been).
        """
        name = _check_name(dataset, "dataset")
        release = _check_name(release_id, "release_id")
        with self._transaction(write=True) as connection:
            self._locked_account(connection, name)
            spends = connection.scalar(
                select(func.count())
                .select_from(entries)
                .where(entries.c.dataset == name, entries.c.release_id == release)
            )
            if not spends:
                raise LedgerError(
                    f"cannot mark release {release!r} of {name!r} published: the privacy ledger "
                    f"at {self._shown} holds no spend for it"
                )
            latest = _latest_publication(connection, name, release)
            if latest is not None and latest.event == _PUBLISHED and latest.path == str(path):
                return
            connection.execute(
                insert(publications).values(
                    dataset=name,
                    release_id=release,
                    event=_PUBLISHED,
                    path=str(path),
                    run_id=str(run_id),
                    recorded_at=_now(),
                )
            )

    def unmark_published(self, dataset: str, release_id: str) -> None:
        """Withdraw the publish mark of a release (a rolled-back publication).

        The spends stay: the noise was drawn. Records nothing if the release is not marked, so
        a rollback hook may call it safely more than once.

        Raises
        ------
        LedgerError
            If the dataset has no account.
        """
        name = _check_name(dataset, "dataset")
        release = _check_name(release_id, "release_id")
        with self._transaction(write=True) as connection:
            self._locked_account(connection, name)
            latest = _latest_publication(connection, name, release)
            if latest is None or latest.event != _PUBLISHED:
                return
            connection.execute(
                insert(publications).values(
                    dataset=name,
                    release_id=release,
                    event=_WITHDRAWN,
                    path=None,
                    run_id=latest.run_id,
                    recorded_at=_now(),
                )
            )

    # ------------------------------------------------------------------------------------------
    # Reading

    def _account_row(self, connection: Connection, dataset: str) -> Any:
        """The account row, or LedgerError listing the accounts there are."""
        row = connection.execute(
            select(accounts).where(accounts.c.dataset == dataset)
        ).one_or_none()
        if row is None:
            self._raise_missing(connection, dataset)
        return row

    def _locked_account(self, connection: Connection, dataset: str) -> Any:
        """The account row, locked until the transaction ends (writers serialize on it)."""
        row = connection.execute(_account_for_update(dataset)).one_or_none()
        if row is None:
            self._raise_missing(connection, dataset)
        return row

    def _raise_missing(self, connection: Connection, dataset: str) -> None:
        known = list(connection.scalars(select(accounts.c.dataset).order_by("dataset")))
        listed = ", ".join(repr(name) for name in known) if known else "none"
        raise LedgerError(
            f"the privacy ledger at {self._shown} has no account for dataset {dataset!r} "
            f"(accounts: {listed}); open one with a lifetime budget first"
        )

    def _read_account(self, connection: Connection, dataset: str) -> Account:
        """Build the account snapshot from the rows visible to ``connection``."""
        row = self._account_row(connection, dataset)
        budget = _budget(row)
        stored = connection.execute(
            select(entries).where(entries.c.dataset == dataset).order_by(entries.c.id)
        ).all()
        spent = (
            _exact_sum(Decimal(item.epsilon) for item in stored),
            _exact_sum(Decimal(item.delta) for item in stored),
        )
        events = connection.execute(
            select(publications)
            .where(publications.c.dataset == dataset)
            .order_by(publications.c.id)
        ).all()
        published: dict[str, str] = {}
        for item in events:
            if item.event == _PUBLISHED:
                published[item.release_id] = item.path
            else:
                published.pop(item.release_id, None)
        changes = connection.execute(
            select(budget_changes)
            .where(budget_changes.c.dataset == dataset)
            .order_by(budget_changes.c.id)
        ).all()
        history = tuple(
            BudgetChange(
                dataset=dataset,
                epsilon=float(change.epsilon),
                delta=float(change.delta),
                previous_epsilon=_optional_float(change.previous_epsilon),
                previous_delta=_optional_float(change.previous_delta),
                reason=change.reason,
                changed_at=_utc(change.changed_at),
            )
            for change in changes
        )
        return Account(
            dataset=dataset,
            budget_epsilon=float(budget[0]),
            budget_delta=float(budget[1]),
            spent_epsilon=float(spent[0]),
            spent_delta=float(spent[1]),
            entries=tuple(_entry(item) for item in stored),
            published=published,
            history=history,
            exact_remaining=(
                _EXACT.subtract(budget[0], spent[0]),
                _EXACT.subtract(budget[1], spent[1]),
            ),
        )


# ----------------------------------------------------------------------------------------------
# SQL helpers


def _account_for_update(dataset: str) -> Select:
    """``SELECT`` of the account row ``FOR UPDATE``: the per-account writer lock.

    PostgreSQL (and other backends with row locks) render ``FOR UPDATE``; SQLite renders no
    lock clause, and the ledger's ``BEGIN IMMEDIATE`` holds the database write lock instead.
    """
    return select(accounts).where(accounts.c.dataset == dataset).with_for_update()


def _spent(connection: Connection, dataset: str) -> tuple[Decimal, Decimal]:
    """The exact sum of the dataset's entries, as visible to ``connection``."""
    rows = connection.execute(
        select(entries.c.epsilon, entries.c.delta).where(entries.c.dataset == dataset)
    ).all()
    return (
        _exact_sum(Decimal(row.epsilon) for row in rows),
        _exact_sum(Decimal(row.delta) for row in rows),
    )


def _latest_publication(connection: Connection, dataset: str, release: str) -> Any:
    return connection.execute(
        select(publications)
        .where(publications.c.dataset == dataset, publications.c.release_id == release)
        .order_by(publications.c.id.desc())
        .limit(1)
    ).one_or_none()


def _reservation_row(connection: Connection, dataset: str, release: str) -> Any:
    return connection.execute(
        select(entries).where(
            entries.c.dataset == dataset,
            entries.c.release_id == release,
            entries.c.mechanism == RESERVATION,
        )
    ).one_or_none()


def _bound_input(connection: Connection, dataset: str, release: str) -> str | None:
    """The fingerprint a release is bound to, or None."""
    return connection.execute(
        select(release_inputs.c.input_sha256).where(
            release_inputs.c.dataset == dataset, release_inputs.c.release_id == release
        )
    ).scalar_one_or_none()


def _draw_record(row: Any) -> DrawRecord:
    return DrawRecord(
        seq=row.seq,
        attempt=row.attempt,
        step=row.step,
        mechanism=row.mechanism,
        epsilon=float(row.epsilon),
        delta=float(row.delta),
        parallel_group=row.parallel_group,
        value=row.value,
        run_id=row.run_id,
        started_at=_utc(row.started_at),
        completed_at=None if row.completed_at is None else _utc(row.completed_at),
    )


def _budget(row: Any) -> tuple[Decimal, Decimal]:
    return Decimal(row.budget_epsilon), Decimal(row.budget_delta)


def _entry(row: Any) -> LedgerEntry:
    return LedgerEntry(
        id=row.id,
        dataset=row.dataset,
        release_id=row.release_id,
        run_id=row.run_id,
        step=row.step,
        mechanism=row.mechanism,
        epsilon=float(row.epsilon),
        delta=float(row.delta),
        recorded_at=_utc(row.recorded_at),
        charge_id=row.charge_id,
    )


# ----------------------------------------------------------------------------------------------
# Exact amounts


def _amount(value: Any, name: str, *, delta: bool = False) -> Decimal:
    """The exact decimal of an epsilon or delta: ``repr`` of a float, an int or a Decimal as is.

    Raises
    ------
    PrivacyParameterError
        If the value is not a finite number >= 0 (and, for a delta, < 1).
    """
    if isinstance(value, bool | str | bytes):
        raise PrivacyParameterError(f"{name} must be a number; got {value!r}")
    if isinstance(value, Decimal):
        exact = value
    elif isinstance(value, int):
        exact = Decimal(value)
    else:
        try:
            number = float(value)
        except (TypeError, ValueError) as error:
            raise PrivacyParameterError(f"{name} must be a number; got {value!r}") from error
        if not math.isfinite(number):
            raise PrivacyParameterError(f"{name} must be finite; got {value!r}")
        exact = Decimal(repr(number))
    if not exact.is_finite() or exact < 0 or (delta and exact >= 1):
        bound = "in [0, 1)" if delta else ">= 0"
        raise PrivacyParameterError(f"{name} must be a finite number {bound}; got {value!r}")
    return exact if exact != 0 else Decimal(0)


def _exact_sum(values: Any) -> Decimal:
    total = Decimal(0)
    for value in values:
        total = _EXACT.add(total, value)
    return total


def _exact_sum_floats(items: Sequence[LedgerEntry]) -> tuple[float, float]:
    """Sum of entries' floats for display (``math.fsum``: correctly rounded)."""
    return math.fsum(item.epsilon for item in items), math.fsum(item.delta for item in items)


def _spend_rows(spends: Sequence[SpendLike]) -> list[dict[str, Any]]:
    """Validate duck-typed spends and read them into exact rows."""
    if isinstance(spends, str | bytes) or not isinstance(spends, Sequence) or not spends:
        raise PrivacyParameterError(
            f"charge() needs a non-empty sequence of spends; got {spends!r}"
        )
    rows = []
    for position, spend in enumerate(spends):
        try:
            mechanism = spend.mechanism
            epsilon = spend.epsilon
            delta = spend.delta
        except AttributeError as error:
            raise PrivacyParameterError(
                f"spend #{position} has no mechanism, epsilon and delta: {spend!r}"
            ) from error
        if not isinstance(mechanism, str) or not mechanism:
            raise PrivacyParameterError(
                f"spend #{position} needs a non-empty mechanism name; got {mechanism!r}"
            )
        step = getattr(spend, "step", "") or ""
        rows.append(
            {
                "mechanism": mechanism,
                "step": str(step),
                "epsilon": _amount(epsilon, f"spend #{position} epsilon"),
                "delta": _amount(delta, f"spend #{position} delta", delta=True),
            }
        )
    return rows


def _fit(
    dataset: str,
    what: str,
    budget: tuple[Decimal, Decimal],
    spent: tuple[Decimal, Decimal],
    asked: list[tuple[Decimal, Decimal]],
) -> list[tuple[Decimal, Decimal]]:
    """The amounts to record for ``asked``, or BudgetExceededError if they do not fit.

    A request fits if the exact sum stays within the budget, or if its total rounds to the same
    float as the remaining budget (the caller asked for "what is left", read as a float); the
    largest amount is then lowered by the sub-ulp excess so the total is exactly the remaining.
    """
    remaining = (_EXACT.subtract(budget[0], spent[0]), _EXACT.subtract(budget[1], spent[1]))
    recorded = [list(pair) for pair in asked]
    for axis in (0, 1):
        total = _exact_sum(pair[axis] for pair in asked)
        if total <= remaining[axis]:
            continue
        if remaining[axis] > 0 and float(total) == float(remaining[axis]):
            largest = max(range(len(asked)), key=lambda index: asked[index][axis])
            excess = _EXACT.subtract(total, remaining[axis])
            recorded[largest][axis] = _EXACT.subtract(recorded[largest][axis], excess)
            continue
        left = (float(max(remaining[0], Decimal(0))), float(max(remaining[1], Decimal(0))))
        asked_total = (
            _exact_sum(pair[0] for pair in asked),
            _exact_sum(pair[1] for pair in asked),
        )
        raise BudgetExceededError(
            f"dataset {dataset!r}: {what} does not fit its lifetime privacy budget: asked "
            f"{_pair(*asked_total)}, remaining {_pair(*left)} (budget {_pair(*budget)}, "
            f"already spent {_pair(*spent)})",
            remaining=left,
        )
    return [(pair[0], pair[1]) for pair in recorded]


# ----------------------------------------------------------------------------------------------
# Small helpers


def _check_name(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise LedgerError(f"{name} must be a non-empty string; got {value!r}")
    if len(value) > 255:
        raise LedgerError(f"{name} must be at most 255 characters; got {len(value)}")
    return value


def _pair(epsilon: float | Decimal, delta: float | Decimal) -> str:
    return f"(epsilon={_number(epsilon)}, delta={_number(delta)})"


def _number(value: float | Decimal) -> str:
    """The value to 12 significant digits (``0.3``, ``1e-06``, ``3.0``).

    A sum of per-step floats such as ``0.39999999999999997`` reads as the ``0.4`` it stands
    for; exact values are in the entries and in :meth:`Account.to_dict`.
    """
    return repr(float(format(float(value), ".12g")))


def _decimal_text(value: Decimal) -> str:
    """Exact decimal text without an exponent or trailing zeros (``"0.5"``, ``"2"``)."""
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text or "0"


def _now() -> datetime:
    return datetime.now(UTC)


def _utc(moment: datetime) -> datetime:
    """SQLite returns naive datetimes; every ledger time is UTC."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _optional_float(value: str | None) -> float | None:
    return None if value is None else float(value)
