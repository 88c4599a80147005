"""The DP branch's stages as plain functions: what ``tasks/dp.py`` wraps and the flow composes.

release id -> (dry run: a read-only budget check) -> :func:`~privgate.core.dp.release.
run_dp_release` -> utility (from the DP output) -> :func:`stage_and_verify` -> manifest ->
publish + ledger mark. Nothing here imports Prefect.

What is published about a DP release is a function of the policy, the declared domains, the
release date and the DP outputs only: its id, its manifest (:func:`build_dp_manifest`) and its
summary. Exact facts about the private input (row count, content hash, run time, how many
records the declared-domain rule excluded) appear in the data owner's log, never there.
"""

from __future__ import annotations

import hashlib
import json
import platform
from datetime import date

from privgate.core.dp.gate import verify_dp_release
from privgate.core.dp.ledger import BudgetLedger, configured_ledger_url, ledger_exists
from privgate.core.dp.person_bounding import privacy_unit
from privgate.core.dp.release import COUNT_COLUMN, DPTable, expected_absolute_noise, open_ledger
from privgate.core.gate import GateDecision
from privgate.core.manifest import output_facts, package_version
from privgate.core.policy import ReleasePolicy
from privgate.core.publish import (
    StagedRelease,
    discard,
    make_release_id,
    stage_release,
)

__all__ = [
    "build_dp_manifest",
    "held_out_statement",
    "write_dp_report",
    "dp_release_id",
    "dry_run_check",
    "noise_token",
    "plain_words",
    "stage_and_verify",
    "summary_markdown",
]


def _settings_digest(policy: ReleasePolicy, *sections: str) -> str:
    dumped = policy.model_dump(mode="json", include=set(sections))
    return hashlib.sha256(json.dumps(dumped, sort_keys=True).encode()).hexdigest()


def dp_release_id(policy: ReleasePolicy, release_date: date) -> str:
    """A DP release's id: dataset, DP settings, declared columns and date — never the data.

    One DP release per policy and day, published once; a hash of the private input would be an
    exact function of the data that a reader could test guesses against.
    """
    digest = _settings_digest(policy, "dataset", "columns", "differential_privacy")
    return make_release_id("differential-privacy", digest, release_date)


def noise_token(policy: ReleasePolicy, input_sha256: str, release_id: str) -> str:
    """Cache key of a DP stage's result: the data, what the mechanism reads, the release and
    the ledger that paid for it (the noise itself is journaled in that ledger)."""
    sections = _settings_digest(policy, "dataset", "input", "columns", "differential_privacy")
    key = f"{input_sha256}:{sections}:{release_id}:{configured_ledger_url()}"
    return hashlib.sha256(key.encode()).hexdigest()


def dry_run_check(policy: ReleasePolicy, release_id: str, ledger_url: str | None = None) -> dict:
    """Whether the release's ε would fit, read without drawing, reserving or creating anything.

    A ledger that does not exist yet is not created (its budget would be the policy's, all of
    it left). Returns a JSON-ready outcome whose ``message`` says what would happen.

    Raises
    ------
    BudgetExceededError
        The release would not fit what is left.
    """
    from privgate.core.exceptions import BudgetExceededError

    dp = policy.differential_privacy
    url = ledger_url or configured_ledger_url()
    remaining, remaining_delta = dp.budget.epsilon, dp.budget.delta
    reserved = False
    if ledger_exists(url):
        with BudgetLedger(url) as ledger:
            if policy.dataset in ledger.datasets():
                account = ledger.account(policy.dataset)
                remaining = float(account.exact_remaining_text[0])
                remaining_delta = float(account.exact_remaining_text[1])
                reserved = ledger.reservation(policy.dataset, release_id) is not None
    if not reserved and dp.epsilon > remaining * (1 + 1e-12):
        raise BudgetExceededError(
            f"dataset {policy.dataset!r}: DP release {release_id} would reserve epsilon="
            f"{dp.epsilon:g}, but only {remaining:g} is left of its lifetime budget",
            remaining=(remaining, remaining_delta),
        )
    if not reserved and dp.delta > remaining_delta * (1 + 1e-12):
        raise BudgetExceededError(
            f"dataset {policy.dataset!r}: DP release {release_id} would reserve delta="
            f"{dp.delta:g}, but only {remaining_delta:g} is left of its lifetime budget",
            remaining=(remaining, remaining_delta),
        )
    after = remaining if reserved else remaining - dp.epsilon
    message = (
        f"dry run: DP release {release_id} "
        + (
            "is already reserved (a rerun replays its draws if they were drawn from this "
            "input table and these hierarchy files, and is refused otherwise: the ledger "
            "binds a release to its input)"
            if reserved
            else f"would reserve epsilon {dp.epsilon:g} of the {remaining:g} left "
            f"({after:g} after it)"
        )
        + "; no noise drawn, nothing reserved or published"
    )
    return {
        "release_id": release_id,
        "path": None,
        "published": False,
        "dry_run": True,
        "message": message,
        "gate": {"passed": True, "reasons": [], "measurements": {"remaining_epsilon": after}},
        "differential_privacy": {"epsilon": dp.epsilon, "spends": []},
    }


def stage_and_verify(
    table: DPTable, policy: ReleasePolicy, release_id: str, ledger: BudgetLedger | None = None
) -> tuple[StagedRelease, GateDecision]:
    """Write the release into staging and run the DP gate on the written file.

    The staging folder is removed again if verification raises (the caller never receives it).
    """
    staged = stage_release(
        table.frame,
        policy.output.directory,
        policy.dataset,
        release_id,
        policy.output.format,
        file_mode=policy.output.mode,
    )
    try:
        dp = policy.differential_privacy
        with ledger or open_ledger() as opened:
            if dp.releases_microdata:
                return staged, _verify_microdata(table, policy, release_id, staged, opened)
            decision = verify_dp_release(
                staged.release_file,
                expected_columns=[*policy.quasi_identifiers, COUNT_COLUMN],
                forbidden_columns=policy.identifiers,
                count_column=COUNT_COLUMN,
                ledger=opened,
                dataset=policy.dataset,
                release_id=release_id,
                used_draws=[(d["seq"], d["attempt"]) for d in table.draws],
                count_draw=table.count_draw,
                epsilon=dp.epsilon,
                delta=0.0,
            )
    except BaseException:
        discard(staged)
        raise
    return staged, decision


def _verify_microdata(
    table: DPTable,
    policy: ReleasePolicy,
    release_id: str,
    staged: StagedRelease,
    ledger: BudgetLedger,
) -> GateDecision:
    """The DP gate of an mst, aim or safepub release (records, not counts)."""
    from privgate.core.dp.gate import verify_dp_microdata_release
    from privgate.core.dp.microdata import allowed_values, rederived_rows

    dp = policy.differential_privacy
    safepub = table.metrics.get("safepub") or {}
    return verify_dp_microdata_release(
        staged.release_file,
        expected_columns=policy.dp_released_columns,
        forbidden_columns=policy.identifiers,
        allowed=allowed_values(policy, table),
        ledger=ledger,
        dataset=policy.dataset,
        release_id=release_id,
        used_draws=[(d["seq"], d["attempt"]) for d in table.draws],
        epsilon=dp.epsilon,
        delta=dp.delta,
        expected_rows=rederived_rows(policy, table, ledger, release_id),
        min_class_size=safepub.get("k"),
        expected_count=len(table.frame),
    )


def build_dp_manifest(
    policy: ReleasePolicy,
    release_id: str,
    release_date: date,
    table: DPTable,
    staged: StagedRelease,
    decision: GateDecision,
    utility: dict | None = None,
) -> dict:
    """Everything an auditor needs about a DP release, and nothing exact about the input.

    No row count, content hash or run time of the private input; the spends, sensitivities and
    scales come from the declared domains and ε only; the cuts and specializations are DP
    outputs; the draws name the journal entries the gate verified.
    """
    return {
        "release_id": release_id,
        "dataset": policy.dataset,
        "release_date": release_date.isoformat(),
        "privgate_version": package_version(),
        "python": platform.python_version(),
        "input": {"path": str(policy.input.path)},
        "output": output_facts(staged, table.frame),
        "policy": policy.model_dump(mode="json"),
        "policy_sha256": policy.fingerprint(),
        "differential_privacy": {
            "method": policy.differential_privacy.method,
            "epsilon": table.epsilon,
            "delta": table.delta,
            "privacy_unit": privacy_unit(policy.person_key),
            "held_out_for_attacks": held_out_statement(policy),
            "declared_domains": table.domains,
            "budget_split": table.budget_split,
            "spends": table.spends,
            "draws": table.draws,
            "specializations": table.specializations,
            "cuts": table.cuts,
        },
        "metrics": table.metrics,
        "utility": utility or {},
        "gate": decision.to_dict(),
    }


def held_out_statement(policy: ReleasePolicy) -> dict | None:
    """What the policy held out of the release for the owner's attacks (policy values only).

    The release was made from the records (persons) *not* held out, so a reader needs the
    fraction to know what the release describes. Only the policy's settings: how many were
    held out is an exact function of the data and stays owner-side.
    """
    spec = policy.attacks
    if spec is None:
        return None
    unit = "persons" if policy.person_key is not None else "records"
    return {
        "control_fraction": spec.control_fraction,
        "seed": spec.seed,
        "unit": unit,
        "statement": (
            f"each of the input's {unit} was held out of this release with probability "
            f"{spec.control_fraction:g} (a seeded coin on its own content) as the control of "
            "owner-side attacks; the release was made from the others, and the attack "
            "evidence is kept by the data owner, never published"
        ),
    }


def plain_words(table: DPTable) -> list[str]:
    """The release's noise in plain words, one sentence per kind of step."""
    lines = []
    for spend in table.spends:
        scale = spend.get("scale")
        if spend["step"].startswith("DPHeter leaf counts") and scale:
            lines.append(
                f"Each published count has discrete Laplace noise of scale {scale:.3g}: on "
                f"average it is off by {expected_absolute_noise(scale):.2f} records, and by "
                f"more than {scale * 3:.0f} records in about 5 % of the counts."
            )
    selections = [s for s in table.spends if s["mechanism"] == "exponential"]
    if selections:
        lines.append(
            f"{len(selections)} specializations and split points were chosen by the "
            f"exponential mechanism at epsilon {selections[0]['epsilon']:.3g} each (score "
            f"sensitivity {selections[0]['sensitivity']:g}, from the declared classes)."
        )
    return lines


def summary_markdown(
    policy: ReleasePolicy,
    release_id: str,
    table: DPTable,
    decision: GateDecision,
    status: str,
    where: str | None = None,
) -> str:
    """The run's Markdown summary: spends, the account, the decision, where the release went."""
    m = decision.measurements
    remaining = m.get("remaining_exact") or [m.get("remaining_epsilon"), m.get("remaining_delta")]
    lines = [
        f"# {policy.dataset} {release_id}: DP release {status}",
        "",
        f"- release: `{where}`" if where else "- nothing published",
        f"- method: {policy.differential_privacy.method}, class: "
        f"{table.domains.get('class_column')} (declared classes {table.domains.get('classes')})",
        f"- this release's draws compose to epsilon = {table.epsilon:g} (delta = {table.delta:g})",
        f"- privacy unit: {privacy_unit(policy.person_key)}",
        *(
            [f"- held out for owner-side attacks: {held['statement']}"]
            if (held := held_out_statement(policy))
            else []
        ),
        f"- lifetime budget epsilon = {m.get('budget_epsilon')}, spent "
        f"{m.get('spent_epsilon')}, remaining {remaining[0]}",
        f"- {len(table.frame)} leaf partitions",
        *[f"- {line}" for line in plain_words(table)],
        "",
        "| step | mechanism | epsilon | delta | scale |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {s['step']} | {s['mechanism']} | {s['epsilon']:g} | {s['delta']:g} | "
        f"{s['scale'] if s.get('scale') is not None else ''} |"
        for s in table.spends
    ]
    if not decision.passed:
        lines += ["", "Blocked: " + "; ".join(decision.reasons)]
    return "\n".join(lines)


def write_dp_report(manifest: dict, table: DPTable, path, status: str):
    """Render the DP release report from the (public) manifest and write it to ``path``."""
    from privgate.core.report import render_dp_html, write_html

    return write_html(render_dp_html(manifest, status, plain_words(table)), path)
