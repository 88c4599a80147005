"""The utility gate: a release that keeps too little of the data's value is not published.

It compares what :func:`~privgate.core.utility.measure_utility` measured with the policy's
``utility.thresholds`` and returns a :class:`UtilityDecision`: passed or not, one reason per
violated threshold (naming the threshold, the measured number and the limit), and every check
as data. A threshold that cannot be evaluated because its measurement was not taken blocks the
release too: an unmeasured promise is not kept.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from privgate.core.policy import UtilityThresholds

if TYPE_CHECKING:
    from privgate.core.utility._measure import UtilityReport

__all__ = ["CHANCE_RULE", "UtilityDecision", "baseline_at_chance", "check_utility"]

_TOLERANCE = 1e-12

#: When a classifier's baseline (trained and scored on the original) counts as at chance: a
#: ratio against it compares the release with a model that learned nothing, so the gate says
#: so. One definition, stated in the decision's measurements and the report.
CHANCE_RULE = (
    "a model's baseline on the original is at chance when its mean cross-validated ROC AUC is "
    "within two standard errors of 0.5 (AUC - 0.5 <= 2 x the folds' standard deviation / "
    "sqrt(folds)), or when its accuracy is no higher than always predicting the most frequent "
    "class (the majority rate)"
)


@dataclass(frozen=True)
class UtilityDecision:
    """The utility gate's verdict (the counterpart of :class:`privgate.core.gate.GateDecision`).

    Attributes
    ----------
    passed : bool
    reasons : list of str
        One line per violated threshold (empty when it passed).
    measurements : dict
        ``checks``: per threshold, what was compared (``threshold``, ``limit``, ``subject``,
        ``measured``, ``held``); ``thresholds``: the limits that were set.
    """

    passed: bool
    reasons: list[str] = field(default_factory=list)
    measurements: dict = field(default_factory=dict)

    @property
    def flags(self) -> list[str]:
        """What a passed gate's numbers do not say: each classifier whose baseline is at
        chance (:data:`CHANCE_RULE`), one sentence per model."""
        return list(self.measurements.get("flags", []))

    @property
    def summary(self) -> str:
        """One line for logs and the CLI (a passed gate's flags at its end)."""
        checks = self.measurements.get("checks", [])
        if self.passed:
            if not checks:
                text = "PASSED: no utility threshold set"
            else:
                text = f"PASSED: {len(checks)} utility check(s) within the policy's thresholds"
            return text + "".join(f"; FLAGGED: {flag}" for flag in self.flags)
        return "BLOCKED: " + "; ".join(self.reasons)

    def to_dict(self) -> dict:
        """The decision as data, with its :attr:`flags` (for the manifest and the report)."""
        return {**asdict(self), "flags": self.flags}


def baseline_at_chance(score, folds: int, majority_accuracy: float) -> dict[str, bool]:
    """Whether a model's baseline ROC AUC and accuracy are at chance (:data:`CHANCE_RULE`).

    Parameters
    ----------
    score : ModelScore
        The model's cross-validated scores on the original (``auc_original``,
        ``auc_std_original``, ``accuracy_original``).
    folds : int
        Number of cross-validation folds the mean and standard deviation are over.
    majority_accuracy : float
        Accuracy of always predicting the sample's most frequent class.
    """
    error = score.auc_std_original / math.sqrt(max(folds, 1))
    return {
        "auc": bool(score.auc_original - 0.5 <= 2 * error + _TOLERANCE),
        "accuracy": bool(score.accuracy_original <= majority_accuracy + _TOLERANCE),
    }


def _chance(cls) -> tuple[dict[str, dict[str, bool]], list[str]]:
    """Per model, which baselines are at chance, and one flag per model that has one."""
    at_chance, flags = {}, []
    for s in cls.scores:
        verdict = baseline_at_chance(s, cls.folds, cls.majority_accuracy)
        at_chance[s.model] = verdict
        parts = []
        if verdict["auc"]:
            parts.append(
                f"ROC AUC {s.auc_original:.4f} (std {s.auc_std_original:.4f} over {cls.folds} "
                "folds) is within two standard errors of 0.5"
            )
        if verdict["accuracy"]:
            parts.append(
                f"accuracy {s.accuracy_original:.4f} is no higher than the majority rate "
                f"{cls.majority_accuracy:.4f}"
            )
        if parts:
            flags.append(
                f"{s.model}'s baseline on the original predicts {cls.target!r} at chance: "
                f"{'; '.join(parts)} (its ratios compare the release with a model that "
                "learned nothing)"
            )
    return at_chance, flags


def _check(checks, reasons, threshold, limit, subject, measured, at_least, describe):
    held = measured >= limit - _TOLERANCE if at_least else measured <= limit + _TOLERANCE
    checks.append(
        {
            "threshold": threshold,
            "limit": limit,
            "subject": subject,
            "measured": measured,
            "held": bool(held),
        }
    )
    if not held:
        word = "below" if at_least else "above"
        reasons.append(f"{describe}, {word} {threshold} = {limit:g}")


def check_utility(utility: UtilityReport, thresholds: UtilityThresholds | None) -> UtilityDecision:
    """Evaluate every threshold of the policy on the measured utility.

    Parameters
    ----------
    utility : UtilityReport
        From :func:`~privgate.core.utility.measure_utility`.
    thresholds : UtilityThresholds or None
        The policy's ``utility.thresholds``; ``None`` or an empty one passes.

    Returns
    -------
    UtilityDecision
    """
    thresholds = thresholds or UtilityThresholds()
    t = thresholds
    checks: list[dict] = []
    reasons: list[str] = []
    cls = utility.classification
    for key, attr in (("min_auc_ratio", "auc"), ("min_accuracy_ratio", "accuracy")):
        limit = getattr(t, key)
        if limit is None:
            continue
        if cls is None or not cls.scores:
            reasons.append(f"{key} = {limit:g} cannot be checked: no classification was run")
            continue
        name = "ROC AUC" if attr == "auc" else "accuracy"
        for s in cls.scores:
            orig, rel = getattr(s, f"{attr}_original"), getattr(s, f"{attr}_release")
            ratio = getattr(s, f"{attr}_ratio")
            _check(
                checks,
                reasons,
                key,
                limit,
                s.model,
                ratio,
                True,
                f"{s.model}: {name} on the release {rel:.4f} is {ratio:.3f} x the original's "
                f"{orig:.4f}",
            )
    if t.max_loss is not None:
        loss = utility.loss["total"]
        _check(
            checks,
            reasons,
            "max_loss",
            t.max_loss,
            "total",
            loss,
            False,
            f"information loss {loss:.4f} (mean over the quasi-identifiers)",
        )
    if t.max_attribute_loss is not None:
        for q, loss in utility.loss["per_attribute"].items():
            _check(
                checks,
                reasons,
                "max_attribute_loss",
                t.max_attribute_loss,
                q,
                loss,
                False,
                f"information loss of {q!r} {loss:.4f}",
            )
    for key, attr, name in (
        ("min_f_measure", "f_measure", "F-measure"),
        ("min_match_point", "match_point", "MatchPoint"),
    ):
        limit = getattr(t, key)
        if limit is None:
            continue
        clu = utility.clustering
        if clu is None or not clu.scores:
            reasons.append(f"{key} = {limit:g} cannot be checked: no clustering was run")
            continue
        for s in clu.scores:
            value = getattr(s, attr)
            _check(
                checks,
                reasons,
                key,
                limit,
                f"{s.method}, {s.n_clusters} clusters",
                value,
                True,
                f"{s.method} with {s.n_clusters} clusters: {name} {value:.4f}",
            )
    if t.max_total_variation is not None:
        for column, tv in utility.distribution.items():
            _check(
                checks,
                reasons,
                "max_total_variation",
                t.max_total_variation,
                column,
                tv,
                False,
                f"total variation of {column!r} {tv:.4f}",
            )
    set_limits = {k: v for k, v in t.model_dump().items() if v is not None}
    measurements: dict = {"checks": checks, "thresholds": set_limits}
    if cls is not None and cls.scores:
        at_chance, flags = _chance(cls)
        measurements.update(baseline_at_chance=at_chance, chance_rule=CHANCE_RULE, flags=flags)
        for check in checks:  # a ratio check against a baseline at chance says so itself
            metric = {"min_auc_ratio": "auc", "min_accuracy_ratio": "accuracy"}.get(
                check["threshold"]
            )
            if metric is not None:
                check["baseline_at_chance"] = at_chance[check["subject"]][metric]
    return UtilityDecision(not reasons, reasons, measurements)
