"""The report of a differentially private release: one self-contained HTML page.

It is rendered from the release's manifest alone, which by construction holds nothing exact
about the private input (docs/PRIVACY.md): the decision, the budget (this release's spend, the
dataset's lifetime account), the noise in plain words, every spend with its sensitivity and
scale, the declared domains, and the released cuts. Same look as the k-anonymity report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from privgate.core.report._html import _CSS, _cards, _e, _pill, _Raw, _table

__all__ = ["DP_SECTIONS", "render_dp_html"]

#: Section ids of the DP report, in order.
DP_SECTIONS = ("decision", "budget", "noise", "domains", "release", "run")


def _decision(manifest: Mapping, status: str) -> str:
    gate = manifest.get("gate", {})
    passed = bool(gate.get("passed"))
    verdict = {"published": "PUBLISHED", "blocked": "BLOCKED by the DP gate"}.get(
        status, "VERIFIED (dry run, not published)"
    )
    reasons = gate.get("reasons") or []
    items = "".join(f"<li>{escape(str(r))}</li>" for r in reasons)
    return (
        f'<div class="banner {"ok" if passed else "bad"}"><div class="verdict">{verdict}</div>'
        + (f"<ul>{items}</ul>" if items else "")
        + "</div><p class='note'>The DP gate re-read the written file and the ε ledger: the "
        "release's reservation, the journaled draws it used (their composition within the "
        "policy's ε) and that every published count is the journaled noisy count.</p>"
    )


def _budget(manifest: Mapping) -> str:
    dp = manifest["differential_privacy"]
    m = manifest.get("gate", {}).get("measurements", {})
    budget = m.get("budget_epsilon")
    spent = m.get("spent_epsilon")
    remaining = (m.get("remaining_exact") or [m.get("remaining_epsilon")])[0]
    share = 0.0
    if budget and spent is not None:
        share = max(0.0, min(1.0, spent / budget))
    bar = (
        '<div style="border:1px solid var(--line);border-radius:6px;height:18px;'
        'background:#f2f4f7;margin:6px 0 4px"><div style="height:100%;border-radius:6px;'
        f'background:var(--accent);width:{100 * share:.1f}%"></div></div>'
        f"<p class='note'>{100 * share:.1f} % of the dataset's lifetime ε spent "
        "(reservations of every release, and any draw lost in a crash).</p>"
    )
    lost = m.get("lost_draws_epsilon") or 0.0
    cards = _cards(
        [
            ("ε of this release", dp["epsilon"]),
            ("δ of this release", dp["delta"]),
            ("lifetime ε budget", budget),
            ("spent so far", spent),
            ("ε remaining", remaining),
            ("lost in crashes", lost),
        ]
    )
    return cards + bar


def _noise(manifest: Mapping, plain: Sequence[str]) -> str:
    dp = manifest["differential_privacy"]
    rows = [
        (
            s.get("step", ""),
            s.get("mechanism", ""),
            s.get("epsilon"),
            s.get("sensitivity"),
            s.get("scale"),
        )
        for s in dp.get("spends", [])
    ]
    held = dp.get("held_out_for_attacks")
    if held:
        plain = [*plain, f"Held out: {held['statement']}."]
    words = "".join(f"<li>{escape(line)}</li>" for line in plain)
    split = dp.get("budget_split", {})
    return (
        (f"<ul>{words}</ul>" if words else "")
        + f"<p class='note'>Privacy unit: {escape(str(dp.get('privacy_unit', '')))}. Score "
        f"{escape(str(split.get('score')))} with sensitivity {_e(split.get('sensitivity'))} "
        f"(from {_e(split.get('classes'))} declared classes); every draw made by OpenDP.</p>"
        + _table(["step", "mechanism", "ε", "sensitivity", "noise scale"], rows, numeric=(2, 3, 4))
    )


def _domains(manifest: Mapping) -> str:
    declared = manifest["differential_privacy"].get("declared_domains", {})
    rows: list[tuple[Any, ...]] = []
    for name, values in declared.get("categorical", {}).items():
        shown = ", ".join(map(str, values[:12])) + (" …" if len(values) > 12 else "")
        rows.append((name, "categorical", f"{len(values)} values: {shown}"))
    for name, (low, high) in declared.get("numeric", {}).items():
        rows.append((name, "numeric", f"[{low:g}, {high:g}] (values outside are clamped)"))
    rows.append(
        (
            declared.get("class_column", ""),
            "class (not released)",
            ", ".join(map(str, declared.get("classes", []))),
        )
    )
    return (
        "<p class='note'>Everything the release's shape depends on, declared in the policy and "
        "never read from the data. Records outside a declared domain are excluded before any "
        "mechanism runs.</p>" + _table(["column", "kind", "declared domain"], rows)
    )


def _release(manifest: Mapping) -> str:
    dp = manifest["differential_privacy"]
    metrics = manifest.get("metrics", {})
    cards = _cards(
        [
            ("leaf partitions", metrics.get("partitions")),
            ("noisy total", metrics.get("noisy_total")),
            ("specializations", len(dp.get("specializations", []))),
            ("journaled draws", len(dp.get("draws", []))),
        ]
    )
    rows = [
        (name, len(cut.get("values", [])), ", ".join(map(str, cut.get("values", [])[:10])))
        for name, cut in dp.get("cuts", {}).items()
    ]
    return (
        cards
        + "<p class='note'>The final cut of each attribute (a DP output): every published row is "
        "one cell of their cross product, with its noisy count.</p>"
        + _table(["attribute", "values in the cut", "cut (first 10)"], rows, numeric=(1,))
    )


def _run(manifest: Mapping) -> str:
    rows = [
        ("release id", _Raw(f"<code>{escape(str(manifest.get('release_id')))}</code>")),
        ("release date", manifest.get("release_date")),
        ("policy sha256", _Raw(f"<code>{escape(str(manifest.get('policy_sha256')))}</code>")),
        ("release file", manifest.get("output", {}).get("file")),
        (
            "release sha256",
            _Raw(f"<code>{escape(str(manifest.get('output', {}).get('sha256')))}</code>"),
        ),
        ("privgate", manifest.get("privgate_version")),
    ]
    return _table(None, rows)


def render_dp_html(manifest: Mapping, status: str, plain: Sequence[str] = ()) -> str:
    """The DP release report as one self-contained HTML document.

    Parameters
    ----------
    manifest : mapping
        The release's manifest (:func:`privgate.core.dp.pipeline.build_dp_manifest`).
    status : {"published", "blocked", "dry-run"}
    plain : sequence of str
        The noise described in plain words (:func:`privgate.core.dp.pipeline.plain_words`).
    """
    sections = [
        ("decision", "Decision", _decision(manifest, status)),
        ("budget", "Privacy budget", _budget(manifest)),
        ("noise", "Noise and spends", _noise(manifest, plain)),
        ("domains", "Declared domains", _domains(manifest)),
        ("release", "What was released", _release(manifest)),
        ("run", "Release metadata", _run(manifest)),
    ]
    nav = "".join(f'<a href="#{sid}">{escape(title)}</a>' for sid, title, _ in sections)
    body = "".join(
        f'<section id="{sid}"><h2>{escape(title)}</h2>{content}</section>'
        for sid, title, content in sections
    )
    dataset, release = manifest.get("dataset", ""), manifest.get("release_id", "")
    title = f"privgate DP release report: {dataset} {release}"
    passed = bool(manifest.get("gate", {}).get("passed"))
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body><main>"
        '<header class="top"><div><h1>Differentially private release: '
        f"{escape(str(dataset))}</h1><div class='sub'>release <code>{escape(str(release))}"
        f"</code></div></div><div>{_pill(passed, status, status)}</div></header>"
        f"<nav>{nav}</nav>{body}"
        "<footer>Generated by privgate from the release's manifest. Self-contained: no script, "
        "no external resource.</footer></main></body></html>\n"
    )
