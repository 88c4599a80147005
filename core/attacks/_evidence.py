"""All attacks on one release, their evidence as data, and the gate's reading of it."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from privgate.core.attacks._confidence import AttackOutcome, PrivacyRisk, success_rate
from privgate.core.attacks._inference import inference_attack
from privgate.core.attacks._linkability import linkability_attack
from privgate.core.attacks._singling_out import singling_out_attack
from privgate.core.attacks._space import ReleaseSpace, row_keys
from privgate.core.hierarchy import Hierarchy, value_key

__all__ = [
    "AttackEvidence",
    "AttackSettings",
    "LIMIT_NAMES",
    "check_attack_limits",
    "run_attacks",
    "unique_exact_match",
]

#: Gate limits and the measure each one bounds.
LIMIT_NAMES = {
    "max_singling_out": "singling_out",
    "max_linkability": "linkability",
    "max_inference": "inference",
    "max_unique_exact_match": "unique_exact_match",
}


@dataclass(frozen=True)
class AttackSettings:
    """How the attacks run (Anonymeter's parameters; defaults as in Anonymeter).

    Attributes
    ----------
    n_attacks : int
        Predicates (singling out) or target records (linkability, inference) per attack.
    singling_out_mode : {"multivariate", "univariate"}
    n_cols : int
        Columns per multivariate singling-out predicate.
    max_attempts : int
        Cap on the predicates tried while looking for ``n_attacks`` that single out in the
        release (Anonymeter's default is 10 million; the count found is reported).
    linkability_aux : pair of column lists, optional
        The two attackers' datasets; default: the attacked columns split in two halves in
        order.
    n_neighbors : int
        Linkability succeeds when the halves share one of their ``n_neighbors`` nearest rows.
    secrets : list of str, optional
        Columns the inference attack guesses, each from all other attacked columns; default:
        every attacked column.
    confidence_level : float
    seed : int
        Seeds the attacker's random choices, so the evidence of a release is reproducible.
    """

    n_attacks: int = 500
    singling_out_mode: str = "multivariate"
    n_cols: int = 3
    max_attempts: int = 100_000
    linkability_aux: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    n_neighbors: int = 1
    secrets: tuple[str, ...] | None = None
    confidence_level: float = 0.95
    seed: int = 0


def unique_exact_match(
    ori: pd.DataFrame, release: pd.DataFrame, columns: Sequence[str], confidence_level: float
) -> dict:
    """Share of the records unique in ``ori`` (on ``columns``) that appear verbatim in the release.

    The NIST CRC's proxy for re-identification ("unique exact matches"): a record that is the
    only one of its kind in the data and is published as is can be found by anyone who knows
    it. Cells are compared as text (``39`` and ``39.0`` are one value); a generalized cell never
    equals an original value.
    """

    # One shared code per distinct text per column, then rows compared as code tuples.
    ori_codes, release_codes = [], []
    for name in columns:
        raw, uniques = pd.factorize(
            pd.concat([ori[name], release[name]], ignore_index=True).astype(object),
            use_na_sentinel=True,
        )
        texts = [_text(u) for u in uniques] + [_text(None)]
        codes, _ = pd.factorize(pd.Series(texts, dtype=object))
        codes = codes[raw]  # raw -1 (missing) picks the last entry: the missing text
        ori_codes.append(codes[: len(ori)])
        release_codes.append(codes[len(ori) :])
    keys = None
    if columns:  # one int64 per row where the codes fit (both sides share every column's codes)
        pairs = zip(ori_codes, release_codes, strict=True)
        keys = row_keys(np.stack([np.concatenate(pair) for pair in pairs], axis=1))
    if keys is not None:
        distinct, counts = np.unique(keys[: len(ori)], return_counts=True)
        uniques = distinct[counts == 1]
        matched = int(np.count_nonzero(np.isin(uniques, keys[len(ori) :])))
    else:
        ori_rows = np.stack(ori_codes, axis=1) if columns else np.zeros((len(ori), 0), int)
        distinct, counts = np.unique(ori_rows, axis=0, return_counts=True)
        uniques = distinct[counts == 1]
        released = {tuple(row) for row in np.stack(release_codes, axis=1).tolist()}
        matched = int(sum(1 for row in uniques.tolist() if tuple(row) in released))
    n = len(uniques)
    rate = matched / n if n else 0.0
    ci = (0.0, 0.0)
    if n:
        estimate = success_rate(n, matched, confidence_level)
        # The Wilson interval contains the observed rate; rounding must not move it out (an
        # observed 0 with a lower bound of 3e-20 would exceed a limit of 0).
        low = min(max(estimate.value - estimate.error, 0.0), rate)
        ci = (low, max(min(estimate.value + estimate.error, 1.0), rate))
    return {"unique_records": n, "matched": matched, "value": rate, "ci": list(ci)}


def _text(value: object) -> str:
    missing = value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))
    return "\x00" if missing else value_key(value)


@dataclass
class AttackEvidence:
    """The outcome of every attack on one release (all counts, rates and risks)."""

    singling_out: AttackOutcome | None
    linkability: AttackOutcome | None
    inference: dict[str, AttackOutcome]
    unique_exact_match: dict
    details: dict = field(default_factory=dict)

    def risks(self) -> dict[str, PrivacyRisk | None]:
        """The risk of each attack; inference: the worst secret (:meth:`worst_secret`)."""
        worst = None
        if self.inference:
            worst = self.inference[self.worst_secret()].risk()
        uem = self.unique_exact_match
        return {
            "singling_out": self.singling_out.risk() if self.singling_out else None,
            "linkability": self.linkability.risk() if self.linkability else None,
            "inference": worst,
            "unique_exact_match": PrivacyRisk(uem["value"], *uem["ci"]) if uem else None,
        }

    def worst_secret(self) -> str:
        """The inferred column whose risk has the highest lower bound (then upper bound, then
        estimate): the one the gate reads, since a limit must hold for every secret, and a
        wide interval from few attacks is not evidence of a higher risk."""

        def order(secret: str) -> tuple[float, float, float]:
            risk = self.inference[secret].risk()
            return (risk.low, risk.high, risk.value)

        return max(self.inference, key=order)

    def to_dict(self) -> dict:
        return {
            "singling_out": self.singling_out.to_dict() if self.singling_out else None,
            "linkability": self.linkability.to_dict() if self.linkability else None,
            "inference": {k: v.to_dict() for k, v in self.inference.items()},
            "worst_secret": self.worst_secret() if self.inference else None,
            "unique_exact_match": self.unique_exact_match,
            "risks": {k: (v.to_dict() if v else None) for k, v in self.risks().items()},
            "details": self.details,
        }


def run_attacks(
    release: pd.DataFrame,
    ori: pd.DataFrame,
    control: pd.DataFrame,
    columns: Sequence[str],
    *,
    numeric: Sequence[str] = (),
    hierarchies: Mapping[str, Hierarchy] | None = None,
    settings: AttackSettings | None = None,
) -> AttackEvidence:
    """Singling out, linkability, inference and unique exact matches of one release.

    Parameters
    ----------
    release : DataFrame
        The release as a recipient reads it, one row per released record.
    ori : DataFrame
        The original records the release was made from.
    control : DataFrame
        Original records of the same input held out of the release (never published).
    columns : sequence of str
        The attacked columns.
    numeric, hierarchies
        See :class:`ReleaseSpace`.
    settings : AttackSettings, optional
    """
    settings = settings or AttackSettings()
    columns = list(columns)
    rng = np.random.default_rng(settings.seed)
    started = time.perf_counter()
    space = ReleaseSpace(release, [ori, control], columns, numeric, hierarchies)
    level = settings.confidence_level
    details: dict = {"columns": columns, "released_rows": len(release),
                     "seed": settings.seed}  # fmt: skip
    singling, so_details = singling_out_attack(
        space,
        ori,
        control,
        columns,
        n_attacks=settings.n_attacks,
        mode=settings.singling_out_mode,
        n_cols=settings.n_cols,
        max_attempts=settings.max_attempts,
        rng=rng,
        confidence_level=level,
    )
    details["singling_out"] = so_details
    linkability = None
    aux = settings.linkability_aux
    if aux is None and len(columns) >= 2:
        half = (len(columns) + 1) // 2
        aux = (tuple(columns[:half]), tuple(columns[half:]))
    if aux is not None:
        linkability, details["linkability"] = linkability_attack(
            space,
            ori,
            control,
            aux,
            n_attacks=settings.n_attacks,
            n_neighbors=settings.n_neighbors,
            rng=rng,
            confidence_level=level,
        )
    inference: dict[str, AttackOutcome] = {}
    secrets = list(settings.secrets) if settings.secrets is not None else columns
    for secret in secrets if len(columns) >= 2 else []:
        aux_cols = [c for c in columns if c != secret]
        inference[secret], _ = inference_attack(
            space,
            ori,
            control,
            aux_cols,
            secret,
            n_attacks=settings.n_attacks,
            rng=rng,
            confidence_level=level,
        )
    details["inference"] = {"secrets": secrets, "aux": "every other attacked column"}
    uem = unique_exact_match(ori, release, columns, level)
    uem["control"] = unique_exact_match(control, release, columns, level)
    details["seconds"] = round(time.perf_counter() - started, 3)
    return AttackEvidence(singling, linkability, inference, uem, details)


def check_attack_limits(
    evidence: AttackEvidence, limits: Mapping[str, float | None]
) -> tuple[list[str], list[dict]]:
    """The gate's reading: a limit is exceeded when the risk's *lower* confidence bound is above it.

    The lower bound, because a point estimate just over a limit may be noise; a lower bound over
    it means the attack succeeds more than the limit allows at the stated confidence. The
    inference limit holds for every secret: it is read on the secret whose risk has the highest
    lower bound (:meth:`AttackEvidence.worst_secret`).

    Returns
    -------
    (reasons, checks)
        One reason per exceeded limit (empty: all hold), and one check record per limit set.
    """
    risks = evidence.risks()
    reasons, checks = [], []
    for limit_name, measure in LIMIT_NAMES.items():
        limit = limits.get(limit_name)
        if limit is None:
            continue
        risk = risks.get(measure)
        held = risk is not None and risk.low <= limit
        checks.append(
            {
                "limit": limit_name,
                "value": limit,
                "measured": None if risk is None else risk.to_dict(),
                "held": held,
            }
        )
        if risk is None:
            reasons.append(f"attacks.{limit_name}: the {measure} attack could not be run")
        elif not held:
            level = f"{evidence_level(evidence):.0%}".replace("%", " %")
            what = measure.replace("_", " ")
            if measure == "inference":
                what = f"inference of {evidence.worst_secret()!r}"
            reasons.append(
                f"attacks.{limit_name} = {limit:g} exceeded: {what} risk "
                f"{risk.value:.3f}, the lower bound {risk.low:.3f} of its {level} confidence "
                f"interval [{risk.low:.3f}, {risk.high:.3f}] is above the limit"
            )
    return reasons, checks


def evidence_level(evidence: AttackEvidence) -> float:
    """The confidence level the evidence's intervals were computed at."""
    for outcome in (evidence.singling_out, evidence.linkability, *evidence.inference.values()):
        if outcome is not None:
            return outcome.confidence_level
    return 0.95
