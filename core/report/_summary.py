"""The report's summary as Markdown and as table rows, for Prefect's run artifacts."""

from __future__ import annotations

import math
import re
from typing import Any

from privgate.core.report._data import ReleaseReport

__all__ = ["artifact_key", "markdown_summary", "summary_table"]


def artifact_key(report: ReleaseReport, kind: str = "report") -> str:
    """A Prefect artifact key (lowercase letters, digits, dashes) for the dataset's reports."""
    slug = re.sub(r"[^a-z0-9-]+", "-", f"privgate-{kind}-{report.dataset}".lower()).strip("-")
    return re.sub(r"-{2,}", "-", slug)


def _f(value: Any, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _attack_risks(measurements: dict) -> list[tuple[str, dict, float | None, bool | None]]:
    """(measure, risk, limit, held) of each attack the gate ran (policy ``attacks``)."""
    attacks = measurements.get("attacks") or {}
    checks = gate_checks(attacks)
    out = []
    for measure, risk in (attacks.get("risks") or {}).items():
        if risk is not None:
            limit, held = checks.get(measure, (None, None))
            out.append((measure.replace("_", " "), risk, limit, held))
    return out


def gate_checks(attacks: dict) -> dict[str, tuple[float, bool]]:
    """``{measure: (limit, held)}`` as the gate decided them (``attacks.checks``): the report
    shows the gate's verdict, it never re-decides it."""
    return {
        c["limit"].removeprefix("max_"): (c["value"], c["held"]) for c in attacks.get("checks", [])
    }


def _interval(risk: dict) -> str:
    return f"{risk['value']:.4f} [{risk['ci'][0]:.4f}, {risk['ci'][1]:.4f}]"


def summary_table(report: ReleaseReport) -> list[dict]:
    """One row per measured number: ``section``, ``measure``, ``original``, ``release``,
    ``limit``, ``holds``."""
    rows: list[dict] = []

    def add(section, measure, release, original=None, limit=None, holds=None):
        rows.append(
            {
                "section": section,
                "measure": measure,
                "original": _f(original),
                "release": _f(release),
                "limit": _f(limit),
                "holds": _f(holds),
            }
        )

    m = report.privacy_gate.get("measurements", {})
    for c in report.privacy.get("criteria", []):
        add("privacy", c["criterion"], c["reached"], holds=c["holds"])
    if "suppressed" in m:
        add(
            "privacy",
            f"suppressed {m.get('suppressed_unit', 'records')}",  # persons with a person key
            m["suppressed"],
            limit=m.get("suppression_allowed"),
            holds=m["suppressed"] <= m.get("suppression_allowed", 0),
        )
    add("privacy", "equivalence classes", m.get("classes"))
    for measure, risk, limit, held in _attack_risks(m):
        add("attacks", f"{measure} risk [95 % interval]", _interval(risk), None, limit, held)
    checks = {}
    if report.utility_gate:
        for c in report.utility_gate.get("measurements", {}).get("checks", []):
            checks[(c["threshold"], c["subject"])] = c
    u = report.utility or {}
    cls = u.get("classification") or {}
    for s in cls.get("scores", []):
        c = checks.get(("min_auc_ratio", s["model"]))
        add(
            "utility",
            f"{s['model']} ROC AUC",
            s["auc_release"],
            s["auc_original"],
            c and f"ratio >= {c['limit']:g}",
            c and c["held"],
        )
        c = checks.get(("min_accuracy_ratio", s["model"]))
        add(
            "utility",
            f"{s['model']} accuracy",
            s["accuracy_release"],
            s["accuracy_original"],
            c and f"ratio >= {c['limit']:g}",
            c and c["held"],
        )
    for s in (u.get("clustering") or {}).get("scores", []):
        subject = f"{s['method']}, {s['n_clusters']} clusters"
        for key, name in (("f_measure", "F-measure"), ("match_point", "MatchPoint")):
            c = checks.get((f"min_{key}", subject))
            add("utility", f"{subject}: {name}", s[key], 1.0, c and c["limit"], c and c["held"])
    loss = u.get("loss") or {}
    if loss:
        c = checks.get(("max_loss", "total"))
        add(
            "utility",
            "information loss (total)",
            loss.get("total"),
            0.0,
            c and c["limit"],
            c and c["held"],
        )
        for q, value in loss.get("per_attribute", {}).items():
            c = checks.get(("max_attribute_loss", q))
            add("utility", f"loss {q}", value, 0.0, c and c["limit"], c and c["held"])
    for key, value in (u.get("metrics") or {}).items():
        if key in ("precision", "discernibility", "average_class_size", "entropy"):
            add("utility", key.replace("_", " "), value)
    for column, value in (u.get("distribution") or {}).items():
        c = checks.get(("max_total_variation", column))
        add("utility", f"total variation {column}", value, 0.0, c and c["limit"], c and c["held"])
    return rows


def markdown_summary(report: ReleaseReport, report_path: str | None = None) -> str:
    """The decision, its reasons and the headline numbers, as Markdown."""
    if report.status == "published":
        verdict = "PUBLISHED"
    elif report.status == "dry-run":
        verdict = "VERIFIED, not published (dry run)" if report.passed else "WOULD BE BLOCKED"
    else:
        verdict = "BLOCKED by the " + " and ".join(f"{b} gate" for b in report.blocked_by)
    lines = [f"# {report.dataset} `{report.release_id}`: {verdict}", ""]
    reasons = list(report.privacy_gate.get("reasons", []))
    if report.utility_gate:
        reasons += report.utility_gate.get("reasons", [])
    if reasons:
        lines += ["**Reasons**", ""] + [f"- {r}" for r in reasons] + [""]
    flags = [*report.privacy_gate.get("flags", []), *(report.utility_gate or {}).get("flags", [])]
    if flags:
        lines += ["**Flagged**", ""] + [f"- {f}" for f in flags] + [""]
    m = report.privacy_gate.get("measurements", {})
    lines += [
        "## Privacy",
        "",
        f"- {m.get('rows')} records in {m.get('classes')} classes, smallest class "
        f"{m.get('min_class_size')} (k = {report.privacy.get('k')})",
        f"- suppressed: {m.get('suppressed')} (allowed {m.get('suppression_allowed')})",
    ]
    for c in report.privacy.get("criteria", []):
        lines.append(f"- {c['criterion']}: reached {_f(c['reached'])}, holds {_f(c['holds'])}")
    for measure, risk, limit, held in _attack_risks(m):
        bound = "" if limit is None else f" (limit {limit:g} on the lower bound, holds {_f(held)})"
        lines.append(f"- attack: {measure} risk {_interval(risk)}{bound}")
    u = report.utility
    if u:
        loss, metrics = u.get("loss", {}), u.get("metrics", {})
        lines += [
            "",
            "## Utility",
            "",
            f"- information loss {_f(loss.get('total'))} (granularity "
            f"{_f(loss.get('granularity'))}), precision {_f(metrics.get('precision'))}, "
            f"entropy {_f(metrics.get('entropy'))}",
        ]
        cls = u.get("classification")
        if cls:
            lines += [
                "",
                "| model | AUC original | AUC release | ratio | accuracy original | "
                "accuracy release |",
                "|---|---:|---:|---:|---:|---:|",
            ]
            for s in cls["scores"]:
                lines.append(
                    f"| {s['model']} | {_f(s['auc_original'])} | {_f(s['auc_release'])} | "
                    f"{_f(s['auc_ratio'], 3)} | {_f(s['accuracy_original'])} | "
                    f"{_f(s['accuracy_release'])} |"
                )
        clu = u.get("clustering")
        if clu:
            lines += [
                "",
                "| clustering | clusters | F-measure | MatchPoint |",
                "|---|---:|---:|---:|",
            ]
            for s in clu["scores"]:
                lines.append(
                    f"| {s['method']} | {s['n_clusters']} | {_f(s['f_measure'])} | "
                    f"{_f(s['match_point'])} |"
                )
    if report_path:
        lines += ["", f"Full report: `{report_path}`"]
    return "\n".join(lines) + "\n"
