"""One exception hierarchy for everything privgate refuses to do.

Every error a user can meet derives from :class:`PrivgateError`, so the CLI can turn any of them
into one clear line and a non-zero exit without ever showing a traceback. Each subclass names the
stage that refused, and its message names the offending key, column, row or value.
"""

from __future__ import annotations

from typing import Any


class PrivgateError(Exception):
    """Base class: an expected, explainable refusal (bad input, bad policy, blocked gate)."""

    #: Process exit code used by the CLI for this kind of error.
    exit_code: int = 2

    #: The report a blocked run wrote (the CLI and the flow's state message name it).
    report_path: str | None = None


class PolicyError(PrivgateError):
    """The release policy is malformed or inconsistent (the message names the key)."""


class IngestError(PrivgateError):
    """The input file cannot be read as declared (the message names the file and line)."""


class SchemaValidationError(PrivgateError):
    """The input table violates the schema derived from the policy.

    Attributes
    ----------
    failures : list of dict
        One entry per failing check: column, check, failure case and row index.
    """

    def __init__(self, message: str, failures: list[dict] | None = None) -> None:
        super().__init__(message)
        self.failures = failures or []


class HierarchyError(PrivgateError):
    """A generalization hierarchy is malformed or does not cover a value in the data."""


class AnonymizationError(PrivgateError):
    """The chosen algorithm cannot satisfy the privacy model (for example k > rows)."""


class VerificationError(PrivgateError):
    """The written release could not be read back or verified."""


class GateBlockedError(PrivgateError):
    """The privacy gate refused to publish; ``decision`` holds the reasons as data."""

    exit_code = 3

    def __init__(self, message: str, decision: object | None = None) -> None:
        super().__init__(message)
        self.decision = decision


class UtilityBlockedError(PrivgateError):
    """The utility gate refused to publish: the release keeps too little of the data's value.

    ``decision`` holds the violated thresholds and every measured number as data.
    """

    exit_code = 3

    def __init__(self, message: str, decision: object | None = None) -> None:
        super().__init__(message)
        self.decision = decision


def blocked_refusal(
    release_id: str, decision: Any, utility_decision: Any
) -> GateBlockedError | UtilityBlockedError:
    """The refusal of a release a gate blocked: the privacy gate's when it blocked (its
    decision is what the run states first), else the utility gate's. Both decisions are the
    gates' own objects (``passed``, ``summary``); the refusal carries the one it names."""
    if not decision.passed:
        return GateBlockedError(f"gate blocked release {release_id}: {decision.summary}", decision)
    return UtilityBlockedError(
        f"utility gate blocked release {release_id}: {utility_decision.summary}", utility_decision
    )


class PublishError(PrivgateError):
    """Staging or the atomic rename into the release folder failed."""


class BudgetExceededError(GateBlockedError):
    """A differentially private release would spend more than the dataset's lifetime budget.

    The gate blocks it before anything is published; ``remaining`` holds the (epsilon, delta)
    still available, so the message and the caller can say how much is left.
    """

    def __init__(
        self, message: str, remaining: tuple[float, float] | None = None, decision: object = None
    ) -> None:
        super().__init__(message, decision)
        self.remaining = remaining


class LedgerError(PrivgateError):
    """The privacy-budget ledger cannot be opened, or an account is missing or inconsistent."""


class HistoryError(PrivgateError):
    """The release history cannot be opened, or a change to it is refused (the message says
    why: e.g. forgetting a published release without ``force``)."""
