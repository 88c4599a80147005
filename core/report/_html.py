"""The release report as one self-contained HTML file.

Everything is inline: the style sheet, and the figures as SVG markup in the page (no image
file, no ``data:`` URI; :mod:`._plots`). There is no script, font, or link to fetch, so the
file reads the same offline, attached to a ticket or opened years later. Sections, in order:
the gate decision, privacy, utility (with the chosen transformation), the input's validation,
and the run's metadata.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

from privgate.core.report import _plots
from privgate.core.report._data import ReleaseReport
from privgate.core.report._summary import gate_checks

__all__ = ["SECTIONS", "render_html"]

#: Section ids, in the order they appear.
SECTIONS = ("decision", "privacy", "risk", "utility", "validation", "run")

_CSS = """
:root { --ink:#1f2933; --muted:#5f6b7a; --line:#e3e7ec; --bg:#f6f8fa; --ok:#1e7a46;
  --okbg:#e6f4ec; --bad:#b3261e; --badbg:#fbeaea; --accent:#2f6db5; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--ink);
  font: 15px/1.5 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1080px; margin: 0 auto; padding: 24px 28px 48px; }
header.top { display:flex; justify-content:space-between; align-items:flex-end; gap:16px;
  border-bottom:1px solid var(--line); padding-bottom:12px; margin-bottom:8px; }
header.top h1 { font-size: 22px; margin:0; }
header.top .sub { color:var(--muted); font-size:13px; }
nav { font-size:13px; margin: 6px 0 18px; color:var(--muted); }
nav a { color:var(--accent); text-decoration:none; margin-right:14px; }
section { background:#fff; border:1px solid var(--line); border-radius:8px;
  padding: 18px 22px; margin: 16px 0; }
section h2 { font-size:18px; margin: 0 0 10px; }
section h3 { font-size:15px; margin: 18px 0 6px; color:#334; }
p.note { color:var(--muted); font-size:13px; margin: 4px 0 10px; }
.banner { border-radius:8px; padding: 14px 18px; margin-bottom: 12px; }
.banner.ok { background:var(--okbg); border:1px solid #b5dcc4; }
.banner.bad { background:var(--badbg); border:1px solid #efc2bf; }
.banner .verdict { font-size:22px; font-weight:700; letter-spacing:.5px; }
.banner.ok .verdict { color:var(--ok); } .banner.bad .verdict { color:var(--bad); }
.banner ul { margin: 8px 0 0; padding-left: 20px; }
.banner .flags { margin-top: 10px; padding: 8px 12px; border-radius: 6px;
  background:#fff6e0; border:1px solid #f0d48a; color:#7a5200; }
.pill { display:inline-block; border-radius: 999px; padding: 1px 10px; font-size:12px;
  font-weight:600; }
.pill.ok { background:var(--okbg); color:var(--ok); }
.pill.bad { background:var(--badbg); color:var(--bad); }
.pill.na { background:#eef0f3; color:var(--muted); }
.cards { display:grid; grid-template-columns: repeat(auto-fill, minmax(150px, 1fr)); gap:10px;
  margin: 8px 0 12px; }
.card { border:1px solid var(--line); border-radius:6px; padding:8px 12px; }
.card .v { font-size:20px; font-weight:600; }
.card .l { font-size:12px; color:var(--muted); }
table { border-collapse: collapse; width:100%; font-size:13.5px; margin: 6px 0 10px; }
th, td { text-align:left; padding: 5px 8px; border-bottom:1px solid var(--line);
  vertical-align: top; }
th { background:#f2f4f7; font-weight:600; }
td.num, th.num { text-align:right; font-variant-numeric: tabular-nums; }
figure.plot { margin: 6px 0 4px; }
svg.plot { max-width:100%; height:auto; display:block; }
table.narrow { width:auto; min-width: 360px; }
code { font-size: 12.5px; background:#f2f4f7; padding: 1px 4px; border-radius:3px;
  word-break: break-all; }
.two { display:grid; grid-template-columns: 1fr 1fr; gap: 18px; }
footer { color:var(--muted); font-size:12px; text-align:center; margin-top: 24px; }
"""


# ------------------------------------------------------------------------------------------------
# Small builders


def _fmt(value: Any, digits: int = 4) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "—"
        return f"{value:.{digits}f}"
    return str(value)


def _level(value: Any) -> str:
    """A privacy level: a whole number (k, l) as such, a fraction (t, risk) with 4 digits."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return f"{int(value):,}"
    return _fmt(value)


def _e(value: Any, digits: int = 4) -> str:
    return escape(_fmt(value, digits))


def _pill(held: bool | None, yes: str = "holds", no: str = "fails") -> str:
    if held is None:
        return '<span class="pill na">n/a</span>'
    return f'<span class="pill {"ok" if held else "bad"}">{yes if held else no}</span>'


def _table(
    headers: Sequence[str] | None, rows: Iterable[Sequence[Any]], numeric=(), narrow=False
) -> str:
    head = "".join(
        f'<th class="num">{escape(h)}</th>' if i in numeric else f"<th>{escape(h)}</th>"
        for i, h in enumerate(headers or ())
    )
    body = []
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            text = cell if isinstance(cell, _Raw) else _e(cell)
            cls = ' class="num"' if i in numeric else ""
            cells.append(f"<td{cls}>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    thead = f"<thead><tr>{head}</tr></thead>" if headers else ""
    cls = ' class="narrow"' if narrow else ""
    return f"<table{cls}>{thead}<tbody>{''.join(body)}</tbody></table>"


class _Raw(str):
    """Markup that must not be escaped again."""


def _cards(items: Iterable[tuple[str, Any]]) -> str:
    return (
        '<div class="cards">'
        + "".join(
            f'<div class="card"><div class="v">{_e(v)}</div><div class="l">{escape(label)}</div>'
            "</div>"
            for label, v in items
        )
        + "</div>"
    )


def _plot(svg: str) -> str:
    """A figure of :mod:`._plots`, inline: its ``<svg>`` carries its own label and title."""
    return f'<figure class="plot">{svg}</figure>'


# ------------------------------------------------------------------------------------------------
# Sections


def _flags(report: ReleaseReport) -> str:
    """The gates' flags: what a release that holds does not say (a quasi-identifier
    generalized away, a utility baseline at chance), in the banner under the verdict."""
    flags = [*report.privacy_gate.get("flags", []), *(report.utility_gate or {}).get("flags", [])]
    if not flags:
        return ""
    items = "".join(f"<li>{escape(flag)}</li>" for flag in flags)
    return f'<div class="flags"><b>Flagged</b><ul>{items}</ul></div>'


def _decision(report: ReleaseReport) -> str:
    passed = report.passed
    if report.status == "published":
        verdict = "PUBLISHED"
    elif report.status == "dry-run":
        verdict = "VERIFIED (dry run, not published)" if passed else "WOULD BE BLOCKED (dry run)"
    else:
        verdict = "BLOCKED by the " + " and ".join(f"{b} gate" for b in report.blocked_by)
    reasons = list(report.privacy_gate.get("reasons", []))
    if report.utility_gate:
        reasons += report.utility_gate.get("reasons", [])
    items = "".join(f"<li>{escape(r)}</li>" for r in reasons)
    banner = (
        f'<div class="banner {"ok" if passed else "bad"}"><div class="verdict">'
        f"{escape(verdict)}</div>"
        + (
            f"<ul>{items}</ul>"
            if items
            else "<div>Every privacy criterion and every utility "
            "threshold of the policy holds on the release as written.</div>"
        )
        + _flags(report)
        + "</div>"
    )
    gate = report.privacy_gate
    m = gate.get("measurements", {})
    privacy_rows = [
        (_Raw(_pill(c["holds"])), c["criterion"], _Raw(escape(_level(c["reached"]))))
        for c in report.privacy.get("criteria", [])
    ]
    if "suppressed" in m:
        privacy_rows.append(
            (
                _Raw(_pill(m["suppressed"] <= m.get("suppression_allowed", 0))),
                f"suppressed records <= {m.get('suppression_allowed')} "
                f"({100 * report.privacy.get('suppression_limit', 0):g}% of "
                f"{m.get('input_rows')})",
                m["suppressed"],
            )
        )
    parts = [
        banner,
        '<div class="two"><div>',
        "<h3>Privacy gate</h3>",
        f"<p class='note'>{_pill(gate.get('passed'), 'passed', 'blocked')} measured on the "
        "release file as written (re-read as text, grouped by its quasi-identifiers).</p>",
        _table(["", "criterion", "reached"], privacy_rows, numeric=(2,)),
        "</div><div>",
        "<h3>Utility gate</h3>",
    ]
    ugate = report.utility_gate
    if ugate is None:
        parts.append("<p class='note'>Not evaluated in this run.</p>")
    else:
        checks = ugate.get("measurements", {}).get("checks", [])
        parts.append(
            f"<p class='note'>{_pill(ugate.get('passed'), 'passed', 'blocked')} "
            + (
                f"{len(checks)} check(s) of the policy's <code>utility.thresholds</code>.</p>"
                if checks
                else "the policy sets no utility threshold.</p>"
            )
        )
        if checks:
            parts.append(
                _table(
                    ["", "threshold", "subject", "measured", "limit"],
                    [
                        (
                            _Raw(_pill(c["held"])),
                            c["threshold"],
                            c["subject"],
                            c["measured"],
                            c["limit"],
                        )
                        for c in checks
                    ],
                    numeric=(3, 4),
                )
            )
        parts.append(_chance(ugate.get("measurements", {})))
    parts.append("</div></div>")
    return "".join(parts)


def _chance(measurements: Mapping) -> str:
    """Which classifiers' baselines are at chance, and the rule that says so."""
    at_chance = measurements.get("baseline_at_chance")
    if not at_chance:
        return ""
    rows = [
        (model, "at chance" if v["auc"] else "no", "at chance" if v["accuracy"] else "no")
        for model, v in at_chance.items()
    ]
    return (
        "<p class='note'>Baseline (the model on the original) at chance? "
        f"{escape(measurements.get('chance_rule', ''))}.</p>"
        + _table(["model", "ROC AUC", "accuracy"], rows)
    )


def _privacy(report: ReleaseReport) -> str:
    p = report.privacy
    m = report.privacy_gate.get("measurements", {})
    sizes = {int(s): int(c) for s, c in p.get("class_sizes", {}).items()}
    records = sum(s * c for s, c in sizes.items())
    average_risk = (sum(sizes.values()) / records) if records else None
    highest_risk = (1 / min(sizes)) if sizes else None
    per_person = p.get("class_size_unit") == "persons"
    unit = "persons" if per_person else "records"
    if per_person:  # a person may sit in several classes: the gate's own figure, if measured
        achieved = m.get("achieved", {})
        average_risk = next((v for n, v in achieved.items() if n.startswith("average")), None)
    parts = [
        _cards(
            [
                ("k required", p.get("k")),
                ("smallest class", m.get("min_class_size")),
                ("equivalence classes", m.get("classes")),
                ("released records", m.get("rows")),
                (f"suppressed {m.get('suppressed_unit', 'records')}", m.get("suppressed")),
                ("highest prosecutor risk", highest_risk),
                ("average prosecutor risk", average_risk),
            ]
        )
    ]
    if not sizes:
        parts.append("<p class='note'>The release could not be grouped into classes.</p>")
        return "".join(parts)
    parts += [
        "<h3>Equivalence class sizes</h3>",
        "<p class='note'>Records sharing all quasi-identifier values form a class; no class may "
        "be smaller than k."
        + (
            " Sizes count distinct persons (privacy.person_key), and a class's sensitive "
            "values weigh each person 1 (docs/PERSONS.md).</p>"
            if per_person
            else "</p>"
        ),
        _plot(_plots.class_size_figure(sizes, int(p.get("k", 1)))),
        "<h3>Re-identification risk</h3>",
        (
            "<p class='note'>Prosecutor model: an attacker who knows a person is in the release "
            "and knows their quasi-identifiers picks one person of their class, so a person's "
            "risk is 1 / the persons in the class (a person in several classes counts in "
            "each).</p>"
            if per_person
            else "<p class='note'>Prosecutor model: an attacker who knows a person is in the "
            "release and knows their quasi-identifiers picks one record of their class, so a "
            "record's risk is 1 / its class size.</p>"
        ),
        _plot(_plots.risk_figure(sizes, int(p.get("k", 1)), unit)),
        _table(
            ["risk band", f"share of {unit}"],
            [(band, f"{100 * share:.2f}%") for band, share in _plots.risk_bands(sizes)],
            numeric=(1,),
            narrow=True,
        ),
    ]
    for column, entry in p.get("sensitive", {}).items():
        parts.append(f"<h3>Sensitive column <code>{escape(column)}</code></h3>")
        parts.append(
            "<p class='note'>l-diversity counts the distinct sensitive values in each class; "
            "t-closeness bounds each class's distance to the whole table's distribution.</p>"
        )
        distinct = {int(v): int(c) for v, c in entry.get("distinct_per_class", {}).items()}
        parts.append(
            _plot(
                _plots.sensitive_figure(column, distinct, entry.get("t_distances"), entry.get("t"))
            )
        )
    return "".join(parts)


def _risk(report: ReleaseReport) -> str:
    r = report.risk
    if not r:
        return "<p class='note'>The release could not be grouped into classes.</p>"
    if "error" in r:
        return f"<p class='note'>Risk analysis not available: {escape(r['error'])}</p>"
    before, after = r["before"], r["after"]

    def uniques(a: Mapping) -> Any:
        u = a.get("uniqueness")
        return None if not u else u["population_unique_share"].get("dankar")

    p0, p1 = before["prosecutor"], after["prosecutor"]
    rows = [
        ("highest prosecutor risk", p0["highest"], p1["highest"]),
        ("average prosecutor risk", p0["average"], p1["average"]),
        (f"share above risk {p0['threshold']:g}", p0["share_at_risk"], p1["share_at_risk"]),
        (
            "highest journalist risk",
            before["journalist"]["highest"],
            after["journalist"]["highest"],
        ),
        ("marketer risk", before["marketer"], after["marketer"]),
        ("sample uniques", before["sample_uniques"], after["sample_uniques"]),
        ("estimated population uniques (Dankar)", uniques(before), uniques(after)),
    ]
    u = after.get("uniqueness")
    population = (
        f"Population uniques are estimated for a population of {u['population_size']} "
        f"(sampling fraction {u['sampling_fraction']:.4g}; the rule chose "
        f"{escape(str(u['dankar_choice']))} for the release)."
        if u
        else "Set privacy.risk.population_size to estimate population uniques."
    )
    drivers = []
    for label, analysis in (("original", before), ("release", after)):
        for n, top in (analysis.get("drivers") or {}).get("top", {}).items():
            if top:
                best = top[0]
                drivers.append(
                    (label, n, " + ".join(best["columns"]), f"{100 * best['unique_share']:.2f}%")
                )
    return "".join(
        [
            "<p class='note'>Prosecutor: the attacker knows the person is in the release (risk "
            "1 / class size). Journalist: they only know the person is in a larger population "
            "(shown at its upper bound, the prosecutor risk, unless a population table is "
            "declared). Marketer: the expected share of records re-identified. "
            + (
                "Both columns count persons (privacy.person_key): a person's risk is that of "
                "the smallest class holding one of their records. "
                if before.get("unit") == after.get("unit") == "persons"
                else ""
            )
            + f"{population}</p>",
            _plot(_plots.risk_analysis_figure(before, after)),
            _table(["measure", "original", "release"], rows, numeric=(1, 2)),  # fmt: skip
            "<h3>Which quasi-identifiers drive uniqueness</h3>",
            _table(
                ["table", "attributes", "strongest combination", "sample uniques"],
                drivers,
                numeric=(1, 3),
                narrow=True,
            ),  # fmt: skip
        ]
    )


def _utility(report: ReleaseReport) -> str:
    u = report.utility
    if u is None:
        return "<p class='note'>Utility was not measured in this run.</p>"
    loss, metrics = u.get("loss", {}), u.get("metrics", {})
    parts = [
        _cards(
            [
                ("information loss (mean over QIs)", loss.get("total")),
                ("granularity (1 - loss)", loss.get("granularity")),
                ("precision (Sweeney)", metrics.get("precision")),
                ("non-uniform entropy", metrics.get("entropy")),
                ("discernibility", metrics.get("discernibility")),
                ("average class size / k", metrics.get("average_class_size")),
            ]
        )
    ]
    cls = u.get("classification")
    parts.append("<h3>Classification: original vs release</h3>")
    if cls:
        parts.append(
            f"<p class='note'>Target <code>{escape(cls['target'])}</code>; "
            f"{cls['folds']}-fold stratified cross-validation on the same folds for both tables; "
            f"a stratified sample of {_e(cls['sample_rows'])} original records (seed "
            f"{cls['seed']}), of which the release kept {_e(cls['release_rows'])}. Generalized "
            "values are one-hot categories, numeric ranges their midpoints, <code>*</code> a "
            "category of its own.</p>"
        )
        parts.append(
            _plot(_plots.classification_figure(cls["scores"], cls.get("majority_accuracy")))
        )
        parts.append(
            _table(
                [
                    "model",
                    "AUC original",
                    "AUC release",
                    "AUC ratio",
                    "accuracy original",
                    "accuracy release",
                    "accuracy ratio",
                ],
                [
                    (
                        s["model"],
                        s["auc_original"],
                        s["auc_release"],
                        s["auc_ratio"],
                        s["accuracy_original"],
                        s["accuracy_release"],
                        s["accuracy_ratio"],
                    )
                    for s in cls["scores"]
                ],
                numeric=(1, 2, 3, 4, 5, 6),
            )
        )
    else:
        parts.append(
            "<p class='note'>Not run: the policy's <code>utility</code> section names no "
            "<code>target</code>.</p>"
        )
    clu = u.get("clustering")
    parts.append("<h3>Clustering: agreement with the original's clusters</h3>")
    if clu:
        parts.append(
            f"<p class='note'>Both tables clustered on {', '.join(map(escape, clu['features']))} "
            "(generalized values as the expected one-hot vector over the values they cover, "
            f"numbers as scaled midpoints; seed {clu['seed']}). F-measure: best-match F score "
            "per original cluster, weighted by size; MatchPoint: share of record pairs on which "
            "both clusterings agree. Suppressed records count as disagreements.</p>"
        )
        parts.append(_plot(_plots.clustering_figure(clu["scores"])))
        parts.append(
            _table(
                ["method", "clusters", "F-measure", "MatchPoint"],
                [
                    (s["method"], s["n_clusters"], s["f_measure"], s["match_point"])
                    for s in clu["scores"]
                ],
                numeric=(1, 2, 3),
            )
        )
    else:
        parts.append("<p class='note'>Not run: the policy asks for no clustering.</p>")
    per_attribute = loss.get("per_attribute", {})
    distribution = u.get("distribution", {})
    parts += [
        "<h3>Information loss and distribution shift per attribute</h3>",
        "<p class='note'>Loss of a cell: numeric (hi - lo) / (max - min) of the column; "
        "categorical (values under the label - 1) / (values - 1); <code>*</code> and suppressed "
        "records 1. Total variation: half the L1 distance between the column's original "
        "distribution and the release's, each released label spread evenly over the values it "
        "covers.</p>",
        _plot(_plots.loss_figure(per_attribute, distribution)),
        _table(
            ["column", "information loss", "total variation"],
            [(c, per_attribute.get(c), distribution.get(c)) for c in distribution],
            numeric=(1, 2),
        ),
    ]
    t = report.transformation
    parts.append("<h3>Transformation</h3>")
    if t.get("levels"):
        parts.append(
            f"<p class='note'>{escape(str(t.get('algorithm')))}: full-domain generalization, "
            f"one level per quasi-identifier, {_e(t.get('suppressed'))} records suppressed.</p>"
        )
    else:
        parts.append(
            f"<p class='note'>{escape(str(t.get('algorithm')))}: local recoding into "
            f"{_e(t.get('partitions'))} regions; no single level per quasi-identifier.</p>"
        )
    parts.append(
        _plot(_plots.levels_figure(t.get("levels", {}), t.get("heights", {}), t.get("labels", {})))
    )
    parts.append(
        _table(
            ["quasi-identifier", "level", "height", "distinct original", "distinct released"],
            [
                (
                    q,
                    t.get("levels", {}).get(q),
                    t.get("heights", {}).get(q),
                    v["original"],
                    v["release"],
                )
                for q, v in t.get("labels", {}).items()
            ],
            numeric=(1, 2, 3, 4),
        )
    )
    return "".join(parts)


def _validation(report: ReleaseReport) -> str:
    v = report.validation
    if not v:
        return "<p class='note'>No validation summary.</p>"
    rows = [
        (
            c["column"],
            c["role"],
            c["type"],
            c["missing"],
            c["distinct"],
            " – ".join("" if b is None else _level(b) for b in c["declared_range"])
            if c.get("declared_range")
            else "",
            "; ".join(c["checks"]),
        )
        for c in v.get("columns", [])
    ]
    dropped = v.get("dropped_identifiers") or []
    return (
        f"<p class='note'>{_pill(v.get('passed'), 'passed', 'failed')} {_e(v.get('rows'))} rows "
        f"checked against the schema derived from the policy ({escape(v.get('schema', ''))})."
        + (f" Identifier column(s) dropped: {escape(', '.join(dropped))}." if dropped else "")
        + "</p>"
        + "".join(
            f"<p class='note'><b>Warning:</b> {escape(w)}</p>" for w in v.get("warnings") or []
        )
        + _table(
            ["column", "role", "type", "missing", "distinct", "declared range", "checks"],
            rows,
            numeric=(3, 4),
        )
    )


def _ranking(run: Mapping) -> str:
    """Importance of every quasi-identifier for the target, its tier and approximation degree;
    for a tiered release, which attributes its k-anonymity covers."""
    ranking = run["ranking"]
    covered = set((run.get("tier") or {}).get("covers") or [])
    rows = [
        (
            name,
            f"{score:.4f}",
            ranking["tiers"].get(name, ""),
            f"{ranking['approximation_degree'].get(name, float('nan')):.1f}",
            ("yes" if name in covered else "no") if covered else "",
        )
        for name, score in ranking["importance"].items()
    ]
    tier = run.get("tier")
    note = (
        f"<p class='note'>{escape(ranking['method'])} importance for "
        f"<code>{escape(ranking['target'])}</code> ({ranking['n_estimators']} trees); tier 1 is "
        "the most important."
        + (
            f" This is tiered release E = {tier['tier']}: its k-anonymity covers tiers 1..E."
            if tier
            else ""
        )
        + "</p>"
    )
    headers = ["attribute", "importance", "tier", "approximation degree"]
    if covered:
        headers.append("covered by k-anonymity")
    return note + _table(headers, rows, numeric=(1, 2, 3))


def _run(report: ReleaseReport) -> str:
    run = {k: v for k, v in report.run.items() if k != "ranking"}
    rows = [(key, _Raw(f"<code>{escape(_fmt(value))}</code>")) for key, value in _flatten(run)]
    return _table(None, rows) if rows else "<p class='note'>No run metadata.</p>"


def _flatten(data: Mapping, prefix: str = "") -> list[tuple[str, Any]]:
    out = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out += _flatten(value, f"{name}.")
        else:
            out.append((name, value))
    return out


_ATTACK_MEASURES = {
    "singling_out": "singling out",
    "linkability": "linkability",
    "inference": "attribute inference (worst secret)",
    "unique_exact_match": "exact matches of unique records",
}


def _attacks(report: ReleaseReport) -> str:
    """The attack evidence the gate measured on the written release (policy ``attacks``)."""
    a = report.privacy_gate["measurements"]["attacks"]
    details, control = a["details"], a["details"]["control"]
    checks = gate_checks(a)
    by_measure = {measure: limit for measure, (limit, _) in checks.items()}
    level = f"{100 * (a.get('singling_out') or {}).get('confidence_level', 0.95):g} %"
    parts = [
        "<p class='note'>Anonymeter's method (Giomi et al., PoPETs 2023): "
        f"{control['control_rows']:,} {escape(control['unit'])} of the input "
        f"({100 * control['control_fraction']:g} %, drawn with seed {control['seed']}) were held "
        "out <b>and are not in this release</b>; the release was made from the other "
        f"{control['released_from_rows']:,} rows. Each attack runs on the written release "
        "against the records it was made from and against the held-out ones; the risk is its "
        "success beyond the held-out records' (what the release itself gives away), with a "
        f"{level} confidence interval. Attacked columns: "
        f"{escape(', '.join(details['columns']))}. {escape(a['rule'].capitalize())}.</p>",
        _plot(_plots.attack_figure(a["risks"], checks)),
    ]
    rows = []
    labels = dict(_ATTACK_MEASURES)
    if a.get("worst_secret"):
        labels["inference"] = f"attribute inference (worst secret: {a['worst_secret']})"
    for measure, label in labels.items():
        risk = a["risks"].get(measure)
        limit = by_measure.get(measure)
        if risk is None:
            rows.append((label, None, "not run", limit, _Raw(_pill(None))))
            continue
        low, high = risk["ci"]
        held = checks.get(measure, (None, None))[1]
        rows.append((label, risk["value"], f"[{low:.4f}, {high:.4f}]", limit, _Raw(_pill(held))))
    parts.append(
        _table(["attack", "risk", f"{level} interval", "limit", "gate"], rows, numeric=(1, 3))
    )
    counts = []
    for measure in ("singling_out", "linkability"):
        o = a.get(measure)
        if o:
            counts.append((measure.replace("_", " "), o["n_attacks"], o["n_success"],
                           o["n_control"], o["n_baseline"], o["informative"]))  # fmt: skip
    for secret, o in a.get("inference", {}).items():
        counts.append((f"inference of {secret}", o["n_attacks"], o["n_success"],
                       o["n_control"], o["n_baseline"], o["informative"]))  # fmt: skip
    parts += [
        "<h3>Attack counts</h3>",
        "<p class='note'>Successes on the records the release was made from, on the held-out "
        "records, and of a random-guessing attacker; an attack that does no better than random "
        "guessing is not informative.</p>",
        _table(
            ["attack", "attacks", "successes", "on held-out", "random guess", "informative"],
            counts,
            numeric=(1, 2, 3, 4),
        ),
    ]
    so = details.get("singling_out", {})
    if so.get("queries") is not None and so["queries"] < details.get("n_attacks", 0):
        parts.append(
            f"<p class='note'>Singling out: only {so['queries']} of {details['n_attacks']} "
            "predicates that single out one released record were found; the risk is measured "
            "on those and may be underestimated.</p>"
        )
    uem = a["unique_exact_match"]
    parts.append(
        f"<p class='note'>Exact matches: {uem['matched']:,} of the {uem['unique_records']:,} "
        "records unique in the input (on the attacked columns) appear verbatim in the release "
        "(NIST CRC's proxy for re-identification).</p>"
    )
    return "".join(parts)


def _history(report: ReleaseReport) -> str:
    """The cross-release criterion the gate checked (policy ``history``): what every release of
    the dataset, this one included, still protects when an attacker intersects them."""
    h = report.privacy_gate["measurements"]["history"]
    values = h.get("min_possible_values") or {}
    items = [
        ("earlier releases", h.get("past_releases")),
        ("people checked", h.get("people_checked")),
        ("in several releases", h.get("people_in_several_releases")),
        ("fewest candidates (k)", h.get("min_candidates")),
        *[(f"fewest values of {c} (l)", v) for c, v in values.items()],
        ("exposed below k", h.get("exposed_by_k")),
        ("exposed below l", h.get("exposed_by_l")),
    ]
    removed = (report.transformation or {}).get("removed_by_history")
    return (
        f"<p>{_pill(bool(h.get('passed')), 'holds', 'fails')} Combined with every earlier "
        "release of this dataset, as an attacker who downloaded them all and knows who was in "
        "which would intersect them: each person's candidate records and possible sensitive "
        f"values (k = {_e(h.get('k'))}, l = {escape(str(h.get('l') or {}))}).</p>"
        + _cards(items)
        + (
            f"<p class='note'>{_e(removed)} row(s) were removed before staging so that the "
            "combination exposes no one (counted as suppressed).</p>"
            if removed
            else ""
        )
        + "<p class='note'>Who went into which class is recorded privately in the release "
        "history (never published); <code>privgate history DATASET</code> lists the releases "
        "and their checks.</p>"
    )


def render_html(report: ReleaseReport) -> str:
    """The report as one self-contained HTML document (inline CSS, inline SVG figures).

    Parameters
    ----------
    report : ReleaseReport

    Returns
    -------
    str
    """
    status = {"published": "published", "dry-run": "dry run", "blocked": "blocked"}[report.status]
    sections = [
        ("decision", "Decision", _decision(report)),
        ("privacy", "Privacy", _privacy(report)),
        ("risk", "Re-identification risk", _risk(report)),
        ("utility", "Utility", _utility(report)),
        ("validation", "Input validation", _validation(report)),
        ("run", "Run metadata", _run(report)),
    ]
    if report.run.get("ranking"):
        sections.insert(4, ("ranking", "Sensitivity ranking", _ranking(report.run)))
    if report.privacy_gate.get("measurements", {}).get("attacks"):
        sections.insert(3, ("attacks", "Attacks on the release", _attacks(report)))
    if report.privacy_gate.get("measurements", {}).get("history"):
        sections.insert(2, ("history", "Earlier releases", _history(report)))
    nav = "".join(f'<a href="#{sid}">{escape(title)}</a>' for sid, title, _ in sections)
    body = "".join(
        f'<section id="{sid}"><h2>{escape(title)}</h2>{content}</section>'
        for sid, title, content in sections
    )
    title = f"privgate release report: {report.dataset} {report.release_id}"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body><main>"
        '<header class="top"><div><h1>Release report: '
        f"{escape(report.dataset)}</h1><div class='sub'>release <code>"
        f"{escape(report.release_id)}</code></div></div>"
        f"<div>{_pill(report.passed, status, status)}</div></header>"
        f"<nav>{nav}</nav>{body}"
        "<footer>Generated by privgate. Self-contained: no script, no external resource."
        "</footer></main></body></html>\n"
    )
