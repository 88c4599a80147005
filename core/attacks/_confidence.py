"""Success rates, residual risk and their confidence intervals (Anonymeter's statistics).

An attack is a sequence of Bernoulli trials (success or failure). Its success rate is estimated
with the Wilson score interval (E. B. Wilson, JASA 22, 1927), which stays sensible when the rate
is near 0 or 1 and the number of trials is small. The *risk* a release adds is the attack's
success on the records it was made from beyond its success on a held-out control split of the
same input, normalized by the control's room for improvement (Giomi et al., "A Unified Framework
for Quantifying Privacy Risk in Synthetic Data", PoPETs 2023, eq. 1)::

    risk = (rate_train - rate_control) / (1 - rate_control)

with the error propagated to first order and the point estimate and interval clipped to
``[0, 1]``. This module reproduces ``anonymeter.stats.confidence`` (1.1.0) and is cross-checked
against it in ``tests/attacks_anonymeter/``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["AttackOutcome", "PrivacyRisk", "SuccessRate", "residual_success", "success_rate"]


@dataclass(frozen=True)
class SuccessRate:
    """A success-rate estimate and its symmetric error at the chosen confidence level."""

    value: float
    error: float

    def to_risk(self) -> PrivacyRisk:
        """Clip the estimate and its interval to ``[0, 1]``."""
        return _bind(self.value, self.error)


@dataclass(frozen=True)
class PrivacyRisk:
    """A risk in ``[0, 1]`` with its confidence interval ``(low, high)``."""

    value: float
    low: float
    high: float

    def to_dict(self) -> dict:
        return {"value": self.value, "ci": [self.low, self.high]}


def _probit(confidence_level: float) -> float:
    from scipy.stats import norm  # here: scipy.stats takes about a second to import

    return float(norm.ppf(0.5 * (1.0 + confidence_level)))


def success_rate(n_total: int, n_success: float, confidence_level: float = 0.95) -> SuccessRate:
    """Wilson score estimate of a Bernoulli success rate.

    Parameters
    ----------
    n_total : int
        Trials (> 0).
    n_success : float
        Successful trials (a float where a size correction was applied, as Anonymeter does for
        singling out against a control split of another size).
    confidence_level : float, default=0.95

    Returns
    -------
    SuccessRate
        ``value = (s + z^2/2) / (n + z^2)`` and ``error = z / (n + z^2) * sqrt(s (n - s) / n +
        z^2 / 4)``, with ``z`` the standard normal quantile at ``(1 + level) / 2``.
    """
    if not 0 <= confidence_level <= 1:
        raise ValueError(
            f"The 'confidence_level' parameter of success_rate must be in [0, 1]. "
            f"Got {confidence_level!r} instead."
        )
    if n_total <= 0:
        raise ValueError(f"The 'n_total' parameter of success_rate must be > 0. Got {n_total}.")
    z = _probit(confidence_level)
    z2 = z * z
    variance = n_success * (n_total - n_success) / n_total
    denominator = n_total + z2
    rate = (n_success + 0.5 * z2) / denominator
    error = (z / denominator) * math.sqrt(max(variance, 0.0) + 0.25 * z2)
    return SuccessRate(rate, error)


def residual_success(attack: SuccessRate, control: SuccessRate) -> SuccessRate:
    """The attack's success beyond the control's, over the control's room to improve.

    Negative when the control split is easier to attack than the released records (clipped to 0
    by :meth:`SuccessRate.to_risk`). The error is propagated to first order:
    ``dR = sqrt((dA / (1 - c))^2 + (dC (a - 1) / (1 - c)^2)^2)``.
    """
    room = 1.0 - control.value
    if room <= 0:
        return SuccessRate(0.0, 1.0)  # the control is always attacked: nothing measurable
    value = (attack.value - control.value) / room
    d_attack = 1.0 / abs(room)
    d_control = (attack.value - 1.0) / room**2
    error = math.sqrt((attack.error * d_attack) ** 2 + (control.error * d_control) ** 2)
    return SuccessRate(value, error)


def _bind(point: float, error: float) -> PrivacyRisk:
    def clip(x: float) -> float:
        return min(max(x, 0.0), 1.0)

    return PrivacyRisk(clip(point), clip(point - error), clip(point + error))


@dataclass(frozen=True)
class AttackOutcome:
    """The counts of one attack and what they mean.

    Attributes
    ----------
    n_attacks : int
        Attacks attempted (the denominator of every rate).
    n_success : float
        Successes against the records the release was made from.
    n_baseline : float
        Successes of the naive (random-guess) attacker against the same records: if it does as
        well as the real attack, the attack is not informative and the result is flagged.
    n_control : float or None
        Successes against the held-out control records (None: no control split).
    confidence_level : float
    """

    n_attacks: int
    n_success: float
    n_baseline: float
    n_control: float | None
    confidence_level: float = 0.95
    #: Attacks of the baseline and on the control when they differ from ``n_attacks`` (fewer
    #: records to attack there; anonymeter 1.1's ``n_attacks`` triple).
    n_attacks_baseline: int | None = None
    n_attacks_control: int | None = None

    @property
    def attack_rate(self) -> SuccessRate:
        return success_rate(self.n_attacks, self.n_success, self.confidence_level)

    @property
    def baseline_rate(self) -> SuccessRate:
        n = self.n_attacks_baseline or self.n_attacks
        return success_rate(n, self.n_baseline, self.confidence_level)

    @property
    def control_rate(self) -> SuccessRate | None:
        if self.n_control is None:
            return None
        n = self.n_attacks_control or self.n_attacks
        return success_rate(n, self.n_control, self.confidence_level)

    @property
    def informative(self) -> bool:
        """False when the attack does no better than random guessing (Anonymeter warns)."""
        return self.attack_rate.value > self.baseline_rate.value

    def risk(self, baseline: bool = False) -> PrivacyRisk:
        """The residual risk against the control (the attack rate if there is no control)."""
        if baseline:
            return self.baseline_rate.to_risk()
        control = self.control_rate
        if control is None:
            return self.attack_rate.to_risk()
        return residual_success(self.attack_rate, control).to_risk()

    def to_dict(self) -> dict:
        control = self.control_rate
        return {
            "n_attacks": self.n_attacks,
            "n_success": self.n_success,
            "n_baseline": self.n_baseline,
            "n_control": self.n_control,
            "n_attacks_baseline": self.n_attacks_baseline or self.n_attacks,
            "n_attacks_control": self.n_attacks_control or self.n_attacks,
            "attack_rate": [self.attack_rate.value, self.attack_rate.error],
            "baseline_rate": [self.baseline_rate.value, self.baseline_rate.error],
            "control_rate": None if control is None else [control.value, control.error],
            "risk": self.risk().to_dict(),
            "informative": self.informative,
            "confidence_level": self.confidence_level,
        }
