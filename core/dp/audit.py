"""An empirical audit of a differential privacy claim: a statistical lower bound on ε.

A mechanism M is (ε, δ)-DP when, for neighbouring datasets D and D' and every set of outputs
S, ``P[M(D) in S] <= exp(ε) P[M(D') in S] + δ``. An auditor who runs M many times on D and
on D' can therefore bound ε *from below*: for an event S,

    ε >= ln((p_low(D) - δ) / p_high(D'))

where ``p_low`` / ``p_high`` are Clopper-Pearson confidence bounds on the event's probability
under each dataset. If that lower bound exceeds the claimed ε, the claim is false (at the
chosen confidence); if it does not, the audit found no violation — which is only evidence, not
proof, so the tests also show the audit's *power*: it must catch planted bugs (half the noise
scale; a score whose sensitivity does not hold).

The event is chosen on one half of the samples (the threshold on a scalar statistic, or the
value of a discrete one, that maximizes the empirical bound) and the bound is computed on the
other half, so the choice does not inflate it (Jagielski, Ullman & Oprea 2020; Nasr et al.
2021 use the same split).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import beta

__all__ = ["AuditResult", "audit_epsilon", "clopper_pearson", "epsilon_lower_bound"]


def clopper_pearson(successes: int, trials: int, alpha: float) -> tuple[float, float]:
    """The exact two-sided ``1 - alpha`` confidence interval of a binomial proportion."""
    if trials <= 0:
        raise ValueError("clopper_pearson needs at least one trial")
    low = 0.0 if successes == 0 else float(beta.ppf(alpha / 2, successes, trials - successes + 1))
    high = (
        1.0
        if successes == trials
        else float(beta.ppf(1 - alpha / 2, successes + 1, trials - successes))
    )
    return low, high


def epsilon_lower_bound(
    hits: int, trials: int, hits_prime: int, trials_prime: int, delta: float, alpha: float
) -> float:
    """``ln((p_low - δ) / p'_high)`` for one event, both directions and both complements.

    The largest of the four (the event and its complement, D against D' and D' against D) is
    returned; ``-inf`` when none is positive.
    """
    best = -math.inf
    for a, n, b, m in (
        (hits, trials, hits_prime, trials_prime),
        (hits_prime, trials_prime, hits, trials),
        (trials - hits, trials, trials_prime - hits_prime, trials_prime),
        (trials_prime - hits_prime, trials_prime, trials - hits, trials),
    ):
        low, _ = clopper_pearson(a, n, alpha)
        _, high = clopper_pearson(b, m, alpha)
        if low - delta > 0 and high > 0:
            best = max(best, math.log((low - delta) / high))
    return best


@dataclass(frozen=True)
class AuditResult:
    """What an audit measured.

    Attributes
    ----------
    epsilon_lower_bound : float
        The statistical lower bound on ε (``-inf`` if the samples show no difference).
    claimed_epsilon, delta : float
    event : str
        The event the bound was computed on (chosen on the other half of the samples).
    trials : int
        Runs of the mechanism per dataset.
    confidence : float
        Confidence of each Clopper-Pearson bound.
    """

    epsilon_lower_bound: float
    claimed_epsilon: float
    delta: float
    event: str
    trials: int
    confidence: float

    @property
    def violated(self) -> bool:
        """The lower bound exceeds the claim: the mechanism is *not* ε-DP as claimed."""
        return self.epsilon_lower_bound > self.claimed_epsilon


def _events(select: np.ndarray, select_prime: np.ndarray) -> list[tuple[str, Callable]]:
    """Candidate events on a scalar or discrete statistic."""
    values = np.unique(np.concatenate([select, select_prime]))
    if values.size <= 64:  # discrete: "statistic == v" for each value, plus thresholds
        events = [(f"== {v!r}", lambda x, v=v: x == v) for v in values]
    else:
        events = []
        values = np.quantile(np.concatenate([select, select_prime]), np.linspace(0.01, 0.99, 99))
    events += [(f">= {v!r}", lambda x, v=v: x >= v) for v in np.unique(values)]
    return events


def audit_epsilon(
    run: Callable[[object], object],
    dataset: object,
    neighbour: object,
    *,
    statistic: Callable[[object], float | int | str] | None = None,
    trials: int,
    claimed_epsilon: float,
    delta: float = 0.0,
    confidence: float = 0.99,
    batch: Callable[[object, int], Sequence] | None = None,
) -> AuditResult:
    """Run a mechanism ``trials`` times on each of two neighbouring datasets; bound ε below.

    Parameters
    ----------
    run : callable
        ``run(dataset)`` runs the mechanism once (fresh noise) and returns its output.
    dataset, neighbour : object
        D and D' (differing in one record under the mechanism's neighbouring relation).
    statistic : callable, optional
        Maps an output to a scalar or a discrete value the events are defined on (default:
        the output itself).
    trials : int
        Runs per dataset (half choose the event, half bound it).
    claimed_epsilon, delta : float
        The claim being audited.
    confidence : float, default=0.99
        Confidence of each Clopper-Pearson bound.
    batch : callable, optional
        ``batch(dataset, n)`` returns ``n`` independent outputs at once (a vectorized
        mechanism); used instead of calling ``run`` ``n`` times.
    """
    statistic = statistic or (lambda output: output)

    def sample(data: object) -> np.ndarray:
        outputs = batch(data, trials) if batch is not None else [run(data) for _ in range(trials)]
        return np.asarray([statistic(output) for output in outputs])

    first, second = sample(dataset), sample(neighbour)
    half = trials // 2
    choose, choose_prime = first[:half], second[:half]
    bound, bound_prime = first[half:], second[half:]
    alpha = 1 - confidence
    best_event, best_value = "none", -math.inf
    for name, event in _events(choose, choose_prime):
        value = epsilon_lower_bound(
            int(event(choose).sum()), len(choose), int(event(choose_prime).sum()),
            len(choose_prime), delta, alpha,
        )  # fmt: skip
        if value > best_value:
            best_event, best_value = name, value
    lower = -math.inf
    for name, event in _events(choose, choose_prime):
        if name == best_event:
            lower = epsilon_lower_bound(
                int(event(bound).sum()), len(bound), int(event(bound_prime).sum()),
                len(bound_prime), delta, alpha,
            )  # fmt: skip
    return AuditResult(lower, claimed_epsilon, delta, best_event, trials, confidence)
