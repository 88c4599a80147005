"""One privacy accountant: every differentially private step is charged here, and only here.

Algorithms never add up epsilons by hand. Each mechanism in :mod:`core.dp.mechanisms` reads its
cost from OpenDP's privacy map and charges it as a :class:`Spend`; the :class:`Accountant` composes
the charges and refuses the one that would overrun the cap.

Composition rules (neighbouring datasets differ by adding or removing one record):

* **sequential**: mechanisms run on the same data compose to the *sum* of their epsilons and of
  their deltas (basic composition, Dwork & Roth 2014, Thm. 3.16);
* **parallel**: mechanisms run on *disjoint* partitions compose to the *maximum* epsilon and the
  maximum delta, because one record lives in one partition only (McSherry 2009, PINQ, Thm. 4).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from privgate.core.exceptions import BudgetExceededError, PolicyError

#: A charge may overrun the cap by this relative amount: floating-point rounding of a split
#: budget (``0.1 + 0.2 > 0.3``) must not block a release that is within budget on paper.
ROUNDING_TOLERANCE = 1e-9


class PrivacyParameterError(PolicyError, ValueError):
    """An epsilon, delta, sensitivity or budget is not a valid privacy parameter.

    It is a :class:`~privgate.core.exceptions.PolicyError` (the CLI reports it in one line) and a
    :class:`ValueError` (the usual Python contract for a bad argument).
    """


def check_epsilon(epsilon: float, name: str = "epsilon", *, allow_zero: bool = False) -> float:
    """Return ``epsilon`` as a float, or raise if it is not a finite positive number.

    Parameters
    ----------
    epsilon : float
        The privacy-loss parameter to check.
    name : str, default="epsilon"
        The setting's name, used in the message.
    allow_zero : bool, default=False
        Accept 0 (a record of a step that cost nothing), which no mechanism may use.

    Raises
    ------
    PrivacyParameterError
        If ``epsilon`` is not a real number, is NaN or infinite, is negative, or is zero while
        ``allow_zero`` is false.
    """
    value = _real(epsilon, name)
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise PrivacyParameterError(f"{name} must be a finite number {bound}; got {epsilon!r}")
    return value


def check_delta(delta: float, name: str = "delta", *, allow_zero: bool = True) -> float:
    """Return ``delta`` as a float, or raise unless ``0 <= delta < 1`` (``0 < delta`` if required).

    Parameters
    ----------
    delta : float
        The failure probability of approximate differential privacy.
    name : str, default="delta"
        The setting's name, used in the message.
    allow_zero : bool, default=True
        Accept 0 (pure differential privacy). The Gaussian mechanism needs ``delta > 0``.

    Raises
    ------
    PrivacyParameterError
        If ``delta`` is outside the accepted interval.
    """
    value = _real(delta, name)
    low_ok = value >= 0 if allow_zero else value > 0
    if not (math.isfinite(value) and low_ok and value < 1):
        interval = "[0, 1)" if allow_zero else "(0, 1)"
        raise PrivacyParameterError(f"{name} must lie in {interval}; got {delta!r}")
    return value


def check_sensitivity(sensitivity: float, name: str = "sensitivity") -> float:
    """Return ``sensitivity`` as a float, or raise unless it is finite and strictly positive.

    Raises
    ------
    PrivacyParameterError
        If ``sensitivity`` is not a finite number > 0.
    """
    value = _real(sensitivity, name)
    if not math.isfinite(value) or value <= 0:
        raise PrivacyParameterError(f"{name} must be a finite number > 0; got {sensitivity!r}")
    return value


def _real(value: Any, name: str) -> float:
    """Convert a real number (not a bool, not a string) to float, naming ``name`` on failure."""
    if isinstance(value, bool | str | bytes):
        raise PrivacyParameterError(f"{name} must be a number; got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError) as error:
        raise PrivacyParameterError(f"{name} must be a number; got {value!r}") from error


@dataclass(frozen=True)
class Spend:
    """The privacy cost of one mechanism run: what it paid, for what, at which sensitivity.

    A spend is the unit of accounting: mechanisms create one from OpenDP's privacy map, the
    :class:`Accountant` composes them, and ledgers and manifests store :meth:`to_dict`.

    Parameters
    ----------
    mechanism : str
        The noise mechanism, e.g. ``"discrete_laplace"``, ``"laplace"``, ``"gaussian"``,
        ``"exponential"``; ``"parallel(<mechanisms>)"`` for a group charged with
        :meth:`Accountant.charge_parallel`.
    epsilon : float
        The privacy loss epsilon (>= 0, finite).
    delta : float, default=0.0
        The failure probability (``0 <= delta < 1``); 0 means pure epsilon-DP.
    sensitivity : float, default=1.0
        How much one record (added or removed) can move the mechanism's input, in the metric the
        mechanism uses (L1 for Laplace, L2 for Gaussian, L-infinity of the scores for selection).
    step : str, default=""
        What the spend paid for, e.g. ``"round 3 selection"`` or ``"leaf counts"``.
    scale : float or None, default=None
        The noise scale OpenDP used, for audit; None when not applicable.
    parts : tuple of Spend, default=()
        For a parallel group, the spends of the disjoint partitions it composes.
    """

    mechanism: str
    epsilon: float
    delta: float = 0.0
    sensitivity: float = 1.0
    step: str = ""
    scale: float | None = None
    parts: tuple[Spend, ...] = field(default=())

    def __post_init__(self) -> None:
        if not isinstance(self.mechanism, str) or not self.mechanism:
            raise PrivacyParameterError(
                f"Spend.mechanism must be a non-empty string; got {self.mechanism!r}"
            )
        object.__setattr__(
            self, "epsilon", check_epsilon(self.epsilon, "Spend.epsilon", allow_zero=True)
        )
        object.__setattr__(self, "delta", check_delta(self.delta, "Spend.delta"))
        object.__setattr__(
            self, "sensitivity", check_sensitivity(self.sensitivity, "Spend.sensitivity")
        )
        if self.scale is not None:
            object.__setattr__(self, "scale", check_sensitivity(self.scale, "Spend.scale"))
        object.__setattr__(self, "parts", tuple(self.parts))

    def to_dict(self) -> dict:
        """Return a JSON-ready dict (every field; ``parts`` as a list of dicts)."""
        return {
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "sensitivity": self.sensitivity,
            "step": self.step,
            "scale": self.scale,
            "parts": [part.to_dict() for part in self.parts],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Spend:
        """Rebuild a spend from :meth:`to_dict` output (missing optional keys take defaults)."""
        return cls(
            mechanism=data["mechanism"],
            epsilon=data["epsilon"],
            delta=data.get("delta", 0.0),
            sensitivity=data.get("sensitivity", 1.0),
            step=data.get("step", ""),
            scale=data.get("scale"),
            parts=tuple(cls.from_dict(part) for part in data.get("parts", ())),
        )


def sequential(spends: Sequence[Spend]) -> tuple[float, float]:
    """Compose spends on the same data: ``(sum of epsilons, sum of deltas)``.

    Basic sequential composition (Dwork & Roth 2014, Thm. 3.16). ``math.fsum`` keeps the sum
    correctly rounded however many spends there are. An empty sequence costs ``(0.0, 0.0)``.
    """
    return (
        math.fsum(spend.epsilon for spend in spends),
        math.fsum(spend.delta for spend in spends),
    )


def parallel(spends: Sequence[Spend]) -> tuple[float, float]:
    """Compose spends on disjoint partitions: ``(max epsilon, max delta)``.

    One record lives in exactly one partition, so adding or removing it changes the input of one
    mechanism only (McSherry 2009, parallel composition). An empty sequence costs ``(0.0, 0.0)``.
    """
    return (
        max((spend.epsilon for spend in spends), default=0.0),
        max((spend.delta for spend in spends), default=0.0),
    )


class Charger(Protocol):
    """Anything a mechanism can charge: an :class:`Accountant` or a :class:`ParallelGroup`."""

    def charge(self, spend: Spend) -> None:
        """Record ``spend`` or raise :class:`~privgate.core.exceptions.BudgetExceededError`."""

    def draw(self, spend: Spend, sample: Callable[[], Any], codec: Codec) -> Any:
        """Check ``spend`` against the cap, obtain the noisy value, record the spend."""


class Codec(Protocol):
    """How a drawn value is written to (and read back from) a draw journal as JSON text."""

    def encode(self, value: Any) -> str: ...

    def decode(self, text: str) -> Any: ...


class Accountant:
    """Composes every spend of a release and enforces an optional (epsilon, delta) cap.

    Mechanisms charge *before* they draw noise, so a charge that would exceed the cap raises
    :class:`~privgate.core.exceptions.BudgetExceededError` and nothing is sampled or recorded.

    Parameters
    ----------
    budget : tuple of (float, float) or None, default=None
        The cap ``(epsilon, delta)``; None records spends without a cap.

    Examples
    --------
    >>> acc = Accountant(budget=(1.0, 1e-6))
    >>> acc.charge(Spend("laplace", 0.5, step="counts"))
    >>> acc.charge_parallel([Spend("laplace", 0.3), Spend("laplace", 0.2)], step="leaves")
    >>> acc.total
    (0.8, 0.0)
    """

    def __init__(self, budget: tuple[float, float] | None = None) -> None:
        if budget is not None:
            try:
                epsilon, delta = budget
            except (TypeError, ValueError) as error:
                raise PrivacyParameterError(
                    f"budget must be a pair (epsilon, delta); got {budget!r}"
                ) from error
            budget = (
                check_epsilon(epsilon, "budget epsilon", allow_zero=True),
                check_delta(delta, "budget delta"),
            )
        self._budget: tuple[float, float] | None = budget
        self._entries: list[Spend] = []
        self._groups = 0

    @property
    def budget(self) -> tuple[float, float] | None:
        """The cap ``(epsilon, delta)``, or None when there is none."""
        return self._budget

    @property
    def total(self) -> tuple[float, float]:
        """``(epsilon, delta)`` spent so far: the sequential composition of the entries."""
        return sequential(self._entries)

    @property
    def remaining(self) -> tuple[float, float] | None:
        """``(epsilon, delta)`` still available under the cap (never negative), None if uncapped."""
        if self._budget is None:
            return None
        spent_epsilon, spent_delta = self.total
        return (
            max(self._budget[0] - spent_epsilon, 0.0),
            max(self._budget[1] - spent_delta, 0.0),
        )

    @property
    def entries(self) -> list[Spend]:
        """One spend per charge, in order (a parallel group is one spend); a copy."""
        return list(self._entries)

    def check_affordable(self, epsilon: float, delta: float, what: str = "charge") -> None:
        """Raise :class:`~core.exceptions.BudgetExceededError` if ``(epsilon, delta)`` more would
        overrun the cap; do nothing otherwise (or without a cap).

        The comparison allows a relative overrun of :data:`ROUNDING_TOLERANCE`.
        """
        if self._budget is None:
            return
        spent_epsilon, spent_delta = self.total
        new_epsilon = math.fsum([spent_epsilon, epsilon])
        new_delta = math.fsum([spent_delta, delta])
        cap_epsilon, cap_delta = self._budget
        over_epsilon = new_epsilon > cap_epsilon * (1 + ROUNDING_TOLERANCE)
        over_delta = new_delta > cap_delta * (1 + ROUNDING_TOLERANCE)
        if over_epsilon or over_delta:
            remaining = self.remaining
            assert remaining is not None
            raise BudgetExceededError(
                f"{what} of (epsilon={epsilon:g}, delta={delta:g}) exceeds the privacy budget "
                f"(epsilon={cap_epsilon:g}, delta={cap_delta:g}): already spent "
                f"(epsilon={spent_epsilon:g}, delta={spent_delta:g}), remaining "
                f"(epsilon={remaining[0]:g}, delta={remaining[1]:g})",
                remaining=remaining,
            )

    def draw(self, spend: Spend, sample: Callable[[], Any], codec: Codec) -> Any:
        """Pay for one noise draw and return its value: the one way mechanisms draw.

        The spend is checked against the cap *before* anything is sampled (a draw over the
        cap raises and samples nothing), then :meth:`_sample` obtains the value and the spend
        is recorded. A journaled accountant (:class:`~privgate.core.dp.journal.
        JournaledAccountant`) overrides :meth:`_sample` to persist every draw before it is
        used and to replay persisted draws instead of drawing again.
        """
        label = f"{spend.mechanism} for {spend.step!r}" if spend.step else spend.mechanism
        self.check_affordable(spend.epsilon, spend.delta, what=label)
        value = self._sample(spend, sample, codec, group="")
        self._entries.append(spend)
        return value

    def _sample(self, spend: Spend, sample: Callable[[], Any], codec: Codec, group: str) -> Any:
        """Obtain the value of one paid-for draw (here: draw it)."""
        return sample()

    def _next_group(self) -> str:
        self._groups += 1
        return f"group-{self._groups}"

    def charge(self, spend: Spend) -> None:
        """Record ``spend`` by sequential composition.

        Raises
        ------
        BudgetExceededError
            If the spend would overrun the cap; nothing is recorded and ``remaining`` holds what
            is left.
        """
        if not isinstance(spend, Spend):
            raise TypeError(f"charge() needs a Spend; got {type(spend).__name__}")
        label = f"{spend.mechanism} for {spend.step!r}" if spend.step else spend.mechanism
        self.check_affordable(spend.epsilon, spend.delta, what=label)
        self._entries.append(spend)

    def charge_parallel(self, spends: Sequence[Spend], step: str = "") -> None:
        """Record spends on *disjoint* partitions as one entry costing ``parallel(spends)``.

        Parameters
        ----------
        spends : sequence of Spend
            One spend per partition; the partitions must not share a record (the caller's
            responsibility: this is what makes the maximum, not the sum, the right cost).
        step : str, default=""
            What the group paid for; defaults to the parts' common step if they share one.

        Raises
        ------
        PrivacyParameterError
            If ``spends`` is empty.
        BudgetExceededError
            If the group would overrun the cap; nothing is recorded.
        """
        parts = tuple(spends)
        if not parts:
            raise PrivacyParameterError("charge_parallel() needs at least one Spend; got none")
        for part in parts:
            if not isinstance(part, Spend):
                raise TypeError(f"charge_parallel() needs Spends; got {type(part).__name__}")
        self.charge(_parallel_spend(parts, step))

    @contextmanager
    def parallel_group(self, step: str = "") -> Iterator[ParallelGroup]:
        """Collect the spends of mechanisms run on disjoint partitions; charge them once on exit.

        Pass the yielded group as ``accountant=`` to the mechanisms. Each charge is checked
        against the cap *before* its noise is drawn; on exit (also on error, because noise may
        already have been drawn) the collected spends are charged as one parallel entry.

        Examples
        --------
        >>> acc = Accountant()
        >>> with acc.parallel_group("leaf counts") as group:
        ...     group.charge(Spend("discrete_laplace", 0.5))
        ...     group.charge(Spend("discrete_laplace", 0.5))
        >>> acc.total
        (0.5, 0.0)
        """
        group = ParallelGroup(self, self._next_group())
        try:
            yield group
        finally:
            if group.spends:
                self.charge_parallel(group.spends, step)

    def to_dict(self) -> dict:
        """Return a JSON-ready dict: budget, total, remaining and every entry."""
        remaining = self.remaining
        return {
            "budget": list(self._budget) if self._budget is not None else None,
            "total": list(self.total),
            "remaining": list(remaining) if remaining is not None else None,
            "entries": [spend.to_dict() for spend in self._entries],
        }

    def __repr__(self) -> str:
        epsilon, delta = self.total
        return (
            f"Accountant(budget={self._budget!r}, spent=(epsilon={epsilon:g}, delta={delta:g}), "
            f"entries={len(self._entries)})"
        )


class ParallelGroup:
    """Spends on disjoint partitions, collected by :meth:`Accountant.parallel_group`."""

    def __init__(self, accountant: Accountant, group_id: str = "") -> None:
        self._accountant = accountant
        self._group_id = group_id
        self._spends: list[Spend] = []

    @property
    def spends(self) -> list[Spend]:
        """The spends collected so far (a copy)."""
        return list(self._spends)

    def charge(self, spend: Spend) -> None:
        """Collect ``spend``, first checking that the group's maximum still fits the cap.

        Raises
        ------
        BudgetExceededError
            If the group with ``spend`` would overrun the accountant's cap.
        """
        if not isinstance(spend, Spend):
            raise TypeError(f"charge() needs a Spend; got {type(spend).__name__}")
        self._check(spend)
        self._spends.append(spend)

    def draw(self, spend: Spend, sample: Callable[[], Any], codec: Codec) -> Any:
        """Pay for one draw on this group's partition (checked before sampling) and return it.

        The draw goes through the accountant's :meth:`Accountant._sample`, so a journaled
        accountant persists it (marked with this group) before it is used.
        """
        if not isinstance(spend, Spend):
            raise TypeError(f"draw() needs a Spend; got {type(spend).__name__}")
        self._check(spend)
        value = self._accountant._sample(spend, sample, codec, group=self._group_id)
        self._spends.append(spend)
        return value

    def _check(self, spend: Spend) -> None:
        epsilon, delta = parallel([*self._spends, spend])
        label = f"parallel group with {spend.mechanism}"
        self._accountant.check_affordable(epsilon, delta, what=label)


def _parallel_spend(parts: tuple[Spend, ...], step: str) -> Spend:
    """The single spend that records a parallel group (its cost is the parts' maxima)."""
    epsilon, delta = parallel(parts)
    mechanisms = sorted({part.mechanism for part in parts})
    steps = {part.step for part in parts}
    if not step and len(steps) == 1:
        step = next(iter(steps))
    return Spend(
        mechanism=f"parallel({'+'.join(mechanisms)})",
        epsilon=epsilon,
        delta=delta,
        sensitivity=max(part.sensitivity for part in parts),
        step=step,
        parts=parts,
    )
