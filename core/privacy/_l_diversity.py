"""l-diversity of a sensitive column: distinct, entropy and recursive (c,l) variants.

A. Machanavajjhala, D. Kifer, J. Gehrke, M. Venkitasubramaniam, "l-diversity: privacy beyond
k-anonymity", ACM TKDD 1(1), 2007. All three are monotone under generalization (merging two
classes cannot lower the number of distinct values, the entropy's minimum, or break the
recursive condition when both parts satisfy it), except entropy l-diversity with the
Grassberger estimator (see :class:`EntropyLDiversity`).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from privgate.core.encoding import ClassStats
from privgate.core.privacy._base import PrivacyModel

#: Entropy comparisons allow this much floating-point slack (log/exp round trips).
_ENTROPY_TOLERANCE = 1e-9

#: Recursive (c,l)-diversity on fractional (person) weights: ratios are raised by this
#: relative slack before the strict comparison with ``c`` (conservative: never lenient).
_RATIO_SLACK = 1e-9


class DistinctLDiversity(PrivacyModel):
    """Every class holds at least ``l`` distinct values of ``column``."""

    column: str
    l: int = Field(ge=1)  # noqa: E741

    def _distinct(self, stats: ClassStats) -> np.ndarray:
        return (stats.histograms[self.column] > 0).sum(axis=1)

    def satisfied_by(self, stats: ClassStats) -> np.ndarray:
        return self._distinct(stats) >= self.l

    def achieved(self, stats: ClassStats) -> float:
        d = self._distinct(stats)
        return float(d.min()) if len(d) else float("inf")

    def holds(self, achieved: float) -> bool:
        return achieved >= self.l

    @property
    def min_class_size(self) -> int:
        return self.l

    def __str__(self) -> str:
        return f"distinct-{self.l}-diversity({self.column})"


def class_entropies(hist: np.ndarray) -> np.ndarray:
    """Shannon entropy (natural log) of each row of a count matrix."""
    sizes = hist.sum(axis=1, keepdims=True)
    p = np.divide(hist, sizes, out=np.zeros(hist.shape, dtype=float), where=sizes > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(p), 0.0)
    return -terms.sum(axis=1)


#: Euler-Mascheroni constant (Grassberger's G starts from -γ - ln 2).
_EULER_GAMMA = 0.5772156649015329


@lru_cache(maxsize=8)
def _grassberger_table(largest: int) -> np.ndarray:
    """``G_n`` for ``n = 0..largest``: ``G_{2m} = G_{2m+1} = -γ - ln 2 + sum_{k<=m} 2/(2k-1)``."""
    m = np.arange(largest // 2 + 1)
    steps = np.concatenate([[0.0], np.cumsum(2.0 / (2.0 * m[1:] - 1.0))])
    table = -_EULER_GAMMA - math.log(2.0) + steps[np.arange(largest + 1) // 2]
    table[0] = 0.0  # an absent value contributes nothing (0 * G_0)
    return table


def grassberger_g(counts: np.ndarray) -> np.ndarray:
    """Grassberger's substitute for ``ln n`` in the entropy estimate, elementwise.

    P. Grassberger, "Entropy estimates from insufficient samplings", arXiv physics/0307138
    (2003/2008), the ``G_n`` that ARX's ``EntropyLDiversity.EntropyEstimator.GRASSBERGER``
    uses: ``G_{2m} = G_{2m+1} = -γ - ln 2 + sum_{k=1}^{m} 2 / (2k - 1)`` (exact, not ARX's
    asymptotic series above 100).
    """
    counts = np.asarray(counts, dtype=np.int64)
    largest = int(counts.max(initial=0))
    table = _grassberger_table(1 << max(largest, 1).bit_length())  # reuse across sizes
    return table[counts]


def class_entropies_grassberger(hist: np.ndarray) -> np.ndarray:
    """Grassberger's entropy estimate (nats) of each row: ``G(N) - sum_i n_i G(n_i) / N``.

    Where the plug-in (Shannon) estimate of a small sample is biased low, this one corrects
    it, so a class of a few records can reach a given ``l`` with fewer distinct values' worth
    of evenness (Stammler, Katzenbeisser, Hamacher, "Correcting finite sampling issues in
    entropy l-diversity", PSD 2016).
    """
    hist = np.asarray(hist, dtype=np.int64)
    sizes = hist.sum(axis=1)
    weighted = (hist * grassberger_g(hist)).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sizes > 0, grassberger_g(sizes) - weighted / np.maximum(sizes, 1), 0.0)


class EntropyLDiversity(PrivacyModel):
    """The entropy of ``column`` in every class is at least ``log(l)``, and (as in ARX) every
    class holds at least ``ceil(l)`` distinct values.

    With a person key the class's distribution weighs each person 1, split over their
    records in the class (:func:`privgate.core.privacy.person_histograms`). Grassberger's
    estimator needs whole counts: it reads the class's persons as a sample, each person one
    observation of one value they hold there (of the one the class weighs most when they hold
    several, :func:`privgate.core.privacy.person_samples`), and the distinct values are those
    of that sample, never more than the person weights hold.

    ``estimator`` chooses how a class's entropy is estimated: ``shannon`` (the plug-in
    entropy of the class's values, Machanavajjhala et al.'s definition) or ``grassberger``
    (the bias-corrected estimate, ARX's ``EntropyEstimator.GRASSBERGER``). A class's level is
    ``min(exp(entropy), distinct values)``; the achieved level is the smallest over classes,
    the largest real ``l`` the table satisfies.

    The Shannon version is monotone under generalization (merging classes cannot lower the
    minimum entropy). The Grassberger version is not: classes ``{5, 5}`` and ``{3, 5}`` are
    each Grassberger-2-diverse and their union ``{8, 10}`` is not (``G`` grows in steps), so
    with it the search evaluates every node instead of pruning by monotonicity, and a node is
    never assumed to hold because a finer one did. (ARX declares it monotone.)
    """

    monotonic_with_suppression: ClassVar[bool] = False

    column: str
    l: float = Field(ge=1)  # noqa: E741
    estimator: Literal["shannon", "grassberger"] = "shannon"

    @model_validator(mode="before")
    @classmethod
    def _monotone_with_shannon(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = {**data, "monotonic": data.get("estimator", "shannon") == "shannon"}
        return data

    def _class_levels(self, stats: ClassStats) -> np.ndarray:
        hist = stats.histograms[self.column]
        if self.estimator == "shannon":
            entropy = class_entropies(hist)
        else:
            if stats.person_samples is not None:  # persons: each one sample, whole counts
                hist = stats.person_samples[self.column]
            entropy = class_entropies_grassberger(hist)
        distinct = (np.asarray(hist) > 0).sum(axis=1)
        return np.minimum(np.exp(entropy), distinct)

    def satisfied_by(self, stats: ClassStats) -> np.ndarray:
        return self._class_levels(stats) >= self.l * (1 - _ENTROPY_TOLERANCE)

    def achieved(self, stats: ClassStats) -> float:
        levels = self._class_levels(stats)
        return float(levels.min()) if len(levels) else float("inf")

    def holds(self, achieved: float) -> bool:
        return achieved >= self.l * (1 - _ENTROPY_TOLERANCE)

    @property
    def min_class_size(self) -> int:
        return int(np.ceil(self.l - _ENTROPY_TOLERANCE))

    def __str__(self) -> str:
        prefix = "grassberger-" if self.estimator == "grassberger" else ""
        return f"{prefix}entropy-{self.l:g}-diversity({self.column})"


class RecursiveCLDiversity(PrivacyModel):
    """In every class, ``r_1 < c * (r_l + r_{l+1} + ... + r_m)``.

    ``r_i`` is the count of the i-th most frequent value of ``column`` (with a person key, its
    person weight: each person in the class weighs 1, split over their records there; see
    :func:`privgate.core.privacy.person_histograms`). The most frequent value must not
    dominate the tail that starts at the l-th value. The achieved level is the largest
    ratio ``r_1 / (r_l + ... + r_m)`` over classes (``inf`` when a class has fewer than ``l``
    distinct values); the model holds when it is strictly below ``c``.
    """

    monotonic_with_suppression: ClassVar[bool] = False

    column: str
    c: float = Field(gt=0)
    l: int = Field(ge=2)  # noqa: E741

    def _ratios(self, stats: ClassStats) -> np.ndarray:
        hist = np.sort(stats.histograms[self.column], axis=1)[:, ::-1]
        if hist.shape[1] < self.l:
            return np.full(hist.shape[0], np.inf)
        tail = hist[:, self.l - 1 :].sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = np.where(tail > 0, hist[:, 0] / np.where(tail > 0, tail, 1), np.inf)
        if np.issubdtype(hist.dtype, np.floating):
            # Person weights are sums of fractions (2/3 + 1/6 + 1/6 is 0.9999999999999999 in
            # floating point): a ratio within this slack of ``c`` counts as reaching it, so a
            # class whose exact ratio equals ``c`` never passes by rounding.
            ratios = ratios * (1 + _RATIO_SLACK)
        return ratios

    def satisfied_by(self, stats: ClassStats) -> np.ndarray:
        return self._ratios(stats) < self.c

    def achieved(self, stats: ClassStats) -> float:
        r = self._ratios(stats)
        return float(r.max()) if len(r) else 0.0

    def holds(self, achieved: float) -> bool:
        return achieved < self.c

    @property
    def min_class_size(self) -> int:
        return self.l

    def __str__(self) -> str:
        return f"recursive-({self.c:g},{self.l})-diversity({self.column})"
