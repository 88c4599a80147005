"""Evidence from real attacks on a release: singling out, linkability, inference (Anonymeter).

The method is Anonymeter's (Giomi, Boenisch, Wehmeyer, Tasnádi, "A Unified Framework for
Quantifying Privacy Risk in Synthetic Data", PoPETs 2023; the framework the CNIL assessed for
GDPR's three criteria). A release is attacked with part of the input *held out* as a control:
each attack runs against the records the release was made from and against the control records,
which it cannot contain, and the risk is the success beyond the control's, with a 95 % Wilson
interval (:mod:`~privgate.core.attacks._confidence`). Implemented here, cross-checked against
``anonymeter`` 1.1.0 itself in a separate test-only environment
(``tests/attacks_anonymeter/``, ``requirements-anonymeter.lock``).

It extends the method to generalized releases (k-anonymous, DP generalization): a released cell
is read as the region of original values it stands for (:class:`ReleaseSpace`). On raw
(synthetic) cells this is exactly Anonymeter's attack. The NIST CRC's unique exact-match rate is
reported beside them (:func:`unique_exact_match`).

Entry point: :func:`run_attacks`; a policy's attacks on a release (the control split first):
:func:`split_control` and :func:`attack_release`; the gate's reading: :func:`check_attack_limits`.
"""

from __future__ import annotations

from privgate.core.attacks._confidence import (
    AttackOutcome,
    PrivacyRisk,
    SuccessRate,
    residual_success,
    success_rate,
)
from privgate.core.attacks._evidence import (
    LIMIT_NAMES,
    AttackEvidence,
    AttackSettings,
    check_attack_limits,
    run_attacks,
    unique_exact_match,
)
from privgate.core.attacks._inference import inference_attack
from privgate.core.attacks._linkability import count_links, linkability_attack
from privgate.core.attacks._release import (
    ControlSplit,
    attack_release,
    attacked_columns,
    control_mask,
    owner_evidence_path,
    record_coins,
    split_control,
    write_owner_evidence,
)
from privgate.core.attacks._singling_out import (
    singling_out_attack,
    singling_out_probability_integral,
)
from privgate.core.attacks._space import Condition, ReleaseSpace

__all__ = [
    "LIMIT_NAMES",
    "AttackEvidence",
    "AttackOutcome",
    "AttackSettings",
    "Condition",
    "ControlSplit",
    "PrivacyRisk",
    "ReleaseSpace",
    "SuccessRate",
    "attack_release",
    "attacked_columns",
    "check_attack_limits",
    "control_mask",
    "count_links",
    "inference_attack",
    "linkability_attack",
    "owner_evidence_path",
    "record_coins",
    "residual_success",
    "run_attacks",
    "singling_out_attack",
    "singling_out_probability_integral",
    "split_control",
    "success_rate",
    "unique_exact_match",
    "write_owner_evidence",
]
