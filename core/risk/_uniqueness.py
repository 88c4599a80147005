"""How many people of the *population* are unique, estimated from a sample's class sizes.

A release drawn from a larger population (a survey, a 10 % extract of a register) has sample
uniques that are not necessarily unique in the population: a journalist who links the release
to a register only re-identifies the people who are unique there. These estimators turn the
sample's frequencies of frequencies and the population size ``N`` into an estimate of the
number of population uniques.

* **Zayatz** (1991): a sample unique is a population unique with the probability the
  hypergeometric draw of a class of each sample size gives; closed form.
* **Pitman** (Pitman sampling formula, Hoshino 2001): fit the two-parameter
  Poisson–Dirichlet process (θ, α) by maximum likelihood on the sample, then
  ``E[uniques] ≈ Γ(θ+1)/Γ(θ+α) N^α``.
* **SNB** (Chen and McNulty 1998, "slide negative binomial"): each population class holds
  ``1 + G`` people with ``G ~ NB(α, β)`` and the sample draws each person with probability
  ``f = n/N``; α and β are fitted to the sample's numbers of classes of size 1 and 2 and the
  number of population classes ``K`` (Shlosser's estimator, Haas et al. 1995), then
  ``uniques = K β^α``.
* **Dankar et al.** (2012) decision rule: Pitman when ``f <= 0.1`` (Zayatz if Pitman does not
  converge); otherwise the smaller of Zayatz and SNB (Zayatz if SNB does not converge).

The definitions and the decision rule follow ARX's ``org.deidentifier.arx.risk`` package;
the numerical methods are our own (scipy's root finder on the same score equations, in
digamma form). Two deliberate differences from ARX, both the published formulas: the
second SNB moment equation divides by ``(1-(1-f)(1-β))^(α+2)`` (the derivative of the
model's probability generating function; ARX multiplies), and Shlosser's estimator
subtracts each term's own weight (``Σ (1-f)^i ((1+f)^i - 1) c_i``; ARX subtracts 1 per
term). The tests check the SNB probabilities against the model summed directly.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from privgate.core.risk._histogram import SizeHistogram


class _OnFirstUse:
    """A scipy module imported when one of its functions is first used, not when privgate is
    imported: ``scipy.stats`` alone takes about a second, and most runs never estimate
    population uniqueness."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(importlib.import_module(self._name), attribute)


optimize = _OnFirstUse("scipy.optimize")
special = _OnFirstUse("scipy.special")
stats = _OnFirstUse("scipy.stats")

Estimator = Literal["pitman", "zayatz", "snb", "dankar"]
ESTIMATORS: tuple[str, ...] = ("pitman", "zayatz", "snb", "dankar")


def zayatz(hist: SizeHistogram, population_size: int) -> float:
    """Zayatz's estimate of the number of population uniques."""
    n, big_n = hist.records, int(population_size)
    c1 = hist.classes_of_size(1)
    if c1 == 0:
        return 0.0
    u = hist.classes
    # P(a class of `size` population members yields exactly one sample record).
    weights = stats.hypergeom(big_n, hist.size, n).pmf(1)
    denominator = float((hist.count / u * weights).sum())
    numerator = c1 / u * float(stats.hypergeom(big_n, 1, n).pmf(1))
    if denominator <= 0:
        return math.nan
    conditional = numerator / denominator
    return c1 * conditional / (n / big_n)


def _pitman_equations(params: np.ndarray, hist: SizeHistogram) -> np.ndarray:
    theta, alpha = params
    u, n = hist.classes, hist.records
    r = theta / alpha
    # sum_{i=1}^{u-1} 1/(θ+iα) and sum_{i=1}^{n-1} 1/(θ+i), in digamma form.
    o1 = (special.digamma(r + u) - special.digamma(r + 1)) / alpha
    o2 = special.digamma(theta + n) - special.digamma(theta + 1)
    # sum_{i=1}^{u-1} i/(θ+iα) = ((u-1) - θ o1) / α
    o3 = ((u - 1) - theta * o1) / alpha
    # sum over classes of sum_{j=1}^{size-1} 1/(j-α)
    o4 = float(
        (hist.count * (special.digamma(hist.size - alpha) - special.digamma(1 - alpha))).sum()
    )
    return np.array([o1 - o2, o3 - o4])


def pitman_parameters(hist: SizeHistogram) -> tuple[float, float] | None:
    """Maximum-likelihood (θ, α) of the Pitman sampling formula, or ``None`` when the score
    equations have no solution with θ >= 0 and 0 < α < 1 from the moment starting point."""
    c1, c2 = hist.classes_of_size(1), hist.classes_of_size(2) or 1
    u, n = hist.classes, hist.records
    if u < 2 or c1 == 0:
        return None
    c = c1 * (c1 - 1) / c2
    denominator = (2 * c1 * u + c1 * c) - n * c
    starts = []
    if denominator != 0:
        t0 = (n * u * c - c1 * (n - 1) * (2 * u + c)) / denominator
        a0 = (t0 * (c1 - n) + (n - 1) * c1) / (n * u)
        starts.append((t0, a0))
    starts += [(1.0, 0.5), (float(u), 0.1), (10.0, 0.9)]
    for t0, a0 in starts:
        if not (t0 >= 0 and 0 < a0 < 1):
            continue
        try:
            sol = optimize.root(_pitman_equations, [t0, a0], args=(hist,), method="hybr")
        except (ValueError, FloatingPointError):
            continue
        theta, alpha = (float(v) for v in sol.x)
        solved = np.all(np.abs(_pitman_equations(sol.x, hist)) < 1e-6 * max(1.0, n))
        if sol.success and theta >= 0 and 0 < alpha < 1 and solved:
            return theta, alpha
    return None


def pitman(hist: SizeHistogram, population_size: int) -> float:
    """Pitman's estimate of the number of population uniques (``nan``: no fit)."""
    if hist.classes_of_size(1) == 0:
        return 0.0
    fitted = pitman_parameters(hist)
    if fitted is None:
        return math.nan
    theta, alpha = fitted
    log_value = special.gammaln(theta + 1) - special.gammaln(theta + alpha)
    value = math.exp(log_value + alpha * math.log(population_size))
    return value if 0 <= value <= population_size else math.nan


def shlosser(hist: SizeHistogram, fraction: float) -> float:
    """Shlosser's second estimator of the number of population classes (Haas et al. 1995)."""
    i, c, q = hist.size.astype(float), hist.count.astype(float), fraction
    c1 = hist.classes_of_size(1)
    a = (i * q**2 * (1 - q**2) ** (i - 1) * c).sum()
    b = ((1 - q) ** i * ((1 + q) ** i - 1) * c).sum()
    d = ((1 - q) ** i * c).sum()
    e = (i * q * (1 - q) ** (i - 1) * c).sum()
    if b <= 0 or e <= 0:
        return float(hist.classes)
    return hist.classes + c1 * (a / b) * (d / e) ** 2


def snb_probabilities(alpha: float, beta: float, fraction: float) -> tuple[float, float]:
    """P(a population class shows 1 / 2 records in the sample) under the SNB model."""
    q = fraction
    div = (1 - q) * (1 - beta)
    base = beta / (1 - div)
    p1 = q * base**alpha * (1 + alpha * div / (1 - div))
    p2 = (
        q**2
        / 2
        * beta**alpha
        * alpha
        * (1 - beta)
        * (1 - div) ** (-(alpha + 2))
        * (2 - (1 - alpha) * div)
    )
    return p1, p2


def snb(hist: SizeHistogram, population_size: int) -> float:
    """The SNB estimate of the number of population uniques (``nan``: no fit)."""
    c1, c2 = hist.classes_of_size(1), hist.classes_of_size(2)
    if c1 == 0:
        return 0.0
    q = hist.records / population_size
    if q >= 1:
        return float(c1)
    k = shlosser(hist, q)

    def equations(x: np.ndarray) -> np.ndarray:
        alpha, beta = math.exp(x[0]), special.expit(x[1])
        p1, p2 = snb_probabilities(alpha, beta, q)
        return np.array([k * p1 / c1 - 1, k * p2 / max(c2, 1) - c2 / max(c2, 1)])

    for a0, b0 in ((1.0, 0.5), (0.1, 0.1), (5.0, 0.9), (0.5, 0.01)):
        with np.errstate(all="ignore"):
            sol = optimize.root(equations, [math.log(a0), special.logit(b0)], method="hybr")
        if sol.success and np.all(np.abs(equations(sol.x)) < 1e-8):
            alpha, beta = math.exp(sol.x[0]), float(special.expit(sol.x[1]))
            value = k * beta**alpha
            if 0 <= value <= population_size:
                return value
    return math.nan


@dataclass(frozen=True)
class PopulationUniqueness:
    """Sample and estimated population uniques of one table.

    Attributes
    ----------
    records, population_size : int
    sample_uniques : int
        Records alone in their class in the sample.
    estimates : dict of str to float
        Estimated population uniques per estimator (``nan``: did not converge).
    dankar_choice : str
        The estimator Dankar et al.'s rule picked (``"none"`` when there are no sample uniques).
    """

    records: int
    population_size: int
    sample_uniques: int
    estimates: dict[str, float] = field(default_factory=dict)
    dankar_choice: str = "none"

    @property
    def sampling_fraction(self) -> float:
        return self.records / self.population_size

    @property
    def sample_unique_share(self) -> float:
        """Fraction of the sample's records that are unique in the sample."""
        return self.sample_uniques / self.records if self.records else 0.0

    def population_unique_share(self, estimator: Estimator = "dankar") -> float:
        """Estimated population uniques as a fraction of the population."""
        value = self.estimates[estimator]
        return value / self.population_size if not math.isnan(value) else math.nan


def population_uniques(
    hist: SizeHistogram, population_size: int, estimator: Estimator = "dankar"
) -> tuple[float, str]:
    """Estimated population uniques by one estimator, and the estimator that produced it
    (Dankar's rule names its choice). Only the estimators needed are fitted: the gate and the
    search call this once per table or lattice node.

    Raises
    ------
    ValueError
        The population is smaller than the sample.
    """
    n = hist.records
    if population_size < n:
        raise ValueError(
            f"the population size ({population_size}) is smaller than the sample ({n} records)"
        )
    if hist.classes_of_size(1) == 0:
        return 0.0, "none" if estimator == "dankar" else estimator
    single = {"pitman": pitman, "zayatz": zayatz, "snb": snb}
    if estimator != "dankar":
        return single[estimator](hist, population_size), estimator
    if n / population_size <= 0.1:
        value = pitman(hist, population_size)
        if _valid(value):
            return value, "pitman"
        return zayatz(hist, population_size), "zayatz"
    by_snb, by_zayatz = snb(hist, population_size), zayatz(hist, population_size)
    if _valid(by_snb) and by_snb <= by_zayatz:
        return by_snb, "snb"
    return by_zayatz, "zayatz"


def estimate_population_uniqueness(
    hist: SizeHistogram, population_size: int
) -> PopulationUniqueness:
    """Every estimator and Dankar's decision rule for a sample from ``population_size`` people.

    Raises
    ------
    ValueError
        The population is smaller than the sample.
    """
    value, choice = population_uniques(hist, population_size, "dankar")
    c1 = hist.classes_of_size(1)
    estimates = {name: population_uniques(hist, population_size, name)[0] for name in
                 ("pitman", "zayatz", "snb")}  # fmt: skip
    estimates["dankar"] = value
    return PopulationUniqueness(hist.records, population_size, c1, estimates, choice)


def _valid(value: float) -> bool:
    return not math.isnan(value) and value != 0
