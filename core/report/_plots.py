"""The report's figures, drawn with matplotlib's Agg canvas and embedded as base64 PNG.

No pyplot and no global backend switch: each figure is a :class:`matplotlib.figure.Figure`
rendered by its own Agg canvas, so drawing a report never touches the process's matplotlib
state, needs no display, and the PNGs need no network to be seen. Fonts are matplotlib's
bundled DejaVu Sans.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping, Sequence

import numpy as np

__all__ = [
    "attack_figure",
    "class_size_figure",
    "classification_figure",
    "clustering_figure",
    "levels_figure",
    "loss_figure",
    "risk_analysis_figure",
    "risk_figure",
    "sensitive_figure",
]

ORIGINAL = "#7f8c99"
RELEASE = "#2f6db5"
BAD = "#c0392b"
GOOD = "#2e8b57"
_DPI = 110


def _figure(width: float, height: float):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=_DPI, layout="constrained")
    return fig


def _png(fig) -> str:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=_DPI, metadata={"Software": None})
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _style(ax) -> None:
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(axis="y", color="#e5e5e5", linewidth=0.8)
    ax.set_axisbelow(True)
    ax.tick_params(labelsize=9)


def _bar_labels(ax, bars, fmt: str = "{:.3f}") -> None:
    for bar in bars:
        height = bar.get_height()
        if np.isfinite(height):
            ax.annotate(
                fmt.format(height),
                (bar.get_x() + bar.get_width() / 2, height),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=7.5,
            )


def class_size_figure(class_sizes: Mapping[int, int], k: int) -> str:
    """Equivalence classes and records by class size (log-spaced bins), with ``k`` marked."""
    sizes = np.array([int(s) for s in class_sizes], dtype=float)
    counts = np.array([int(c) for c in class_sizes.values()], dtype=float)
    fig = _figure(9.6, 3.0)
    axes = fig.subplots(1, 2)
    if len(sizes) == 0:
        for ax in axes:
            ax.text(0.5, 0.5, "no classes", ha="center", va="center")
        return _png(fig)
    top = max(sizes.max(), k) * 1.05
    edges = np.unique(np.geomspace(1, top + 1, 25).round())
    edges = np.append(edges, edges[-1] + 1) if len(edges) < 2 else edges
    for ax, weights, label in (
        (axes[0], counts, "classes"),
        (axes[1], counts * sizes, "records"),
    ):
        ax.hist(sizes, bins=edges, weights=weights, color=RELEASE, edgecolor="white")
        ax.set_xscale("log")
        ax.axvline(k, color=BAD, linestyle="--", linewidth=1.2, label=f"k = {k}")
        ax.set_xlabel("equivalence class size (records sharing all QI values)", fontsize=9)
        ax.set_ylabel(label, fontsize=9)
        ax.set_title(f"{label} by class size", fontsize=10)
        ax.legend(fontsize=8, frameon=False)
        _style(ax)
    return _png(fig)


#: Upper edges of the prosecutor-risk bands (risk of a record = 1 / its class size).
RISK_BANDS = (0.01, 0.02, 0.05, 0.1, 0.2, 1 / 3, 0.5, 1.0)


def risk_bands(class_sizes: Mapping[int, int]) -> list[tuple[str, float]]:
    """Share of records per prosecutor-risk band ``(lower, upper]``."""
    sizes = np.array([int(s) for s in class_sizes], dtype=float)
    counts = np.array([int(c) for c in class_sizes.values()], dtype=float)
    records = counts * sizes
    total = records.sum()
    risks = 1.0 / sizes if len(sizes) else np.zeros(0)
    out, lower = [], 0.0
    for upper in RISK_BANDS:
        share = records[(risks > lower + 1e-12) & (risks <= upper + 1e-12)].sum()
        out.append((f"{_pct(lower)}–{_pct(upper)}", float(share / total) if total else 0.0))
        lower = upper
    return out


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def risk_figure(class_sizes: Mapping[int, int], k: int) -> str:
    """Share of records per prosecutor re-identification risk band, with ``1/k`` marked."""
    bands = risk_bands(class_sizes)
    fig = _figure(9.6, 2.8)
    ax = fig.subplots()
    x = np.arange(len(bands))
    bars = ax.bar(x, [100 * s for _, s in bands], color=RELEASE, edgecolor="white")
    _bar_labels(ax, bars, "{:.1f}%")
    ax.set_xticks(x, [b for b, _ in bands], fontsize=8.5)
    limit = 1.0 / k
    position = next((i for i, up in enumerate(RISK_BANDS) if limit <= up + 1e-12), len(x) - 1)
    ax.axvline(position + 0.5, color=BAD, linestyle="--", linewidth=1.2, label=f"1/k = {limit:.3g}")
    ax.set_xlabel("prosecutor risk of a record (1 / its class size)", fontsize=9)
    ax.set_ylabel("% of released records", fontsize=9)
    ax.legend(fontsize=8, frameon=False, loc="upper right")
    _style(ax)
    return _png(fig)


#: The measures :func:`risk_analysis_figure` compares, as (label, reader of an analysis dict).
RISK_MEASURES = (
    ("highest\nprosecutor", lambda a: a["prosecutor"]["highest"]),
    ("average\nprosecutor", lambda a: a["prosecutor"]["average"]),
    ("at risk", lambda a: a["prosecutor"]["share_at_risk"]),
    ("marketer", lambda a: a["marketer"]),
    ("sample\nuniques", lambda a: a["sample_uniques"] / a["records"] if a["records"] else 0.0),
)


def risk_analysis_figure(before: Mapping, after: Mapping) -> str:
    """Left: risk measures, input vs release. Right: the share of sample uniques reached by
    the strongest combination of 1, 2, ... quasi-identifiers (which attributes drive it)."""
    fig = _figure(9.6, 3.4)
    axes = fig.subplots(1, 2, width_ratios=[1.3, 1])
    names = [label for label, _ in RISK_MEASURES]
    _paired_bars(
        axes[0],
        names,
        [float(read(before)) for _, read in RISK_MEASURES],
        [float(read(after)) for _, read in RISK_MEASURES],
        "re-identification risk",
        "probability / share",
        (0, 1.1),
    )
    axes[0].legend(fontsize=8, frameon=False)
    for analysis, color, label in ((before, ORIGINAL, "original"), (after, RELEASE, "release")):
        top = (analysis.get("drivers") or {}).get("top", {})
        sizes = sorted(int(n) for n in top)
        shares = [top[str(n)][0]["unique_share"] if top[str(n)] else 0.0 for n in sizes]
        axes[1].plot(sizes, shares, marker="o", color=color, label=label)
    axes[1].set_xlabel("number of quasi-identifiers combined", fontsize=9)
    axes[1].set_ylabel("share of sample uniques (strongest)", fontsize=9)
    axes[1].set_title("uniqueness by attribute combination", fontsize=10)
    axes[1].set_ylim(0, 1.05)
    axes[1].legend(fontsize=8, frameon=False)
    _style(axes[1])
    return _png(fig)


def sensitive_figure(column: str, distinct: Mapping[int, int], t_distances=None, t=None) -> str:
    """Per class: distinct sensitive values (l) and, for t-closeness, the distance to the table."""
    panels = 2 if t_distances is not None else 1
    fig = _figure(9.6 if panels == 2 else 5.2, 2.8)
    axes = np.atleast_1d(fig.subplots(1, panels))
    values = [int(v) for v in distinct]
    bars = axes[0].bar(values, list(distinct.values()), 0.6, color=RELEASE, edgecolor="white")
    _bar_labels(axes[0], bars, "{:.0f}")
    axes[0].set_xticks(values)
    axes[0].set_xlim(0.4, max(values, default=1) + 0.6)
    axes[0].set_xlabel(f"distinct values of {column} in a class", fontsize=9)
    axes[0].set_ylabel("classes", fontsize=9)
    _style(axes[0])
    if t_distances is not None:
        axes[1].hist(t_distances, bins=20, color=RELEASE, edgecolor="white")
        if t is not None:
            axes[1].axvline(t, color=BAD, linestyle="--", linewidth=1.2, label=f"t = {t:g}")
            axes[1].legend(fontsize=8, frameon=False)
        axes[1].set_xlabel(f"distance of a class's {column} to the table's (EMD)", fontsize=9)
        axes[1].set_ylabel("classes", fontsize=9)
        _style(axes[1])
    return _png(fig)


def _paired_bars(ax, names, original, release, title, ylabel, ylim=None):
    x = np.arange(len(names))
    width = 0.38
    b1 = ax.bar(x - width / 2, original, width, color=ORIGINAL, label="original")
    b2 = ax.bar(x + width / 2, release, width, color=RELEASE, label="release")
    _bar_labels(ax, b1)
    _bar_labels(ax, b2)
    ax.set_xticks(x, names, fontsize=9)
    ax.set_title(title, fontsize=10)
    ax.set_ylabel(ylabel, fontsize=9)
    if ylim is not None:
        ax.set_ylim(*ylim)
    _style(ax)


def classification_figure(scores: Sequence[Mapping], majority: float | None = None) -> str:
    """ROC AUC and accuracy per model, original vs release."""
    names = [s["model"].replace("_", " ") for s in scores]
    fig = _figure(9.6, 3.1)
    axes = fig.subplots(1, 2)
    _paired_bars(
        axes[0],
        names,
        [s["auc_original"] for s in scores],
        [s["auc_release"] for s in scores],
        "ROC AUC (cross-validated)",
        "AUC",
        (0.5, 1.04),
    )
    _paired_bars(
        axes[1],
        names,
        [s["accuracy_original"] for s in scores],
        [s["accuracy_release"] for s in scores],
        "accuracy (cross-validated)",
        "accuracy",
        (0.5, 1.04),
    )
    if majority is not None:
        axes[1].axhline(
            majority,
            color="#888",
            linestyle=":",
            linewidth=1.2,
            label=f"majority class {majority:.3f}",
        )
    axes[1].legend(fontsize=8, frameon=False, loc="upper right", ncols=3)
    axes[0].legend(fontsize=8, frameon=False, loc="upper right", ncols=2)
    return _png(fig)


def clustering_figure(scores: Sequence[Mapping]) -> str:
    """F-measure and MatchPoint per clustering (method, number of clusters)."""
    names = [f"{s['method'].replace('_', ' ')}\n{s['n_clusters']} clusters" for s in scores]
    fig = _figure(9.6, 3.1)
    ax = fig.subplots()
    x = np.arange(len(names))
    width = 0.38
    b1 = ax.bar(
        x - width / 2, [s["f_measure"] for s in scores], width, color=RELEASE, label="F-measure"
    )
    b2 = ax.bar(
        x + width / 2,
        [s["match_point"] for s in scores],
        width,
        color="#e0a030",
        label="MatchPoint",
    )
    _bar_labels(ax, b1)
    _bar_labels(ax, b2)
    ax.set_xticks(x, names, fontsize=8.5)
    ax.set_ylim(0, 1.12)
    ax.axhline(1.0, color="#888", linewidth=0.8)
    ax.set_ylabel("agreement with the original's clustering", fontsize=9)
    ax.legend(fontsize=8, frameon=False, ncols=2, loc="upper right")
    _style(ax)
    return _png(fig)


def loss_figure(per_attribute: Mapping[str, float], distribution: Mapping[str, float]) -> str:
    """Information loss per quasi-identifier and total variation per released column."""
    fig = _figure(9.6, 0.5 + 0.28 * max(len(per_attribute), len(distribution), 4))
    axes = fig.subplots(1, 2)
    for ax, data, title, color in (
        (axes[0], per_attribute, "information loss per quasi-identifier", RELEASE),
        (axes[1], distribution, "distribution shift (total variation)", "#e0a030"),
    ):
        names = list(data)[::-1]
        values = [data[n] for n in names]
        bars = ax.barh(names, values, color=color)
        for bar, v in zip(bars, values, strict=True):
            ax.annotate(
                f"{v:.3f}",
                (v, bar.get_y() + bar.get_height() / 2),
                xytext=(3, 0),
                textcoords="offset points",
                va="center",
                fontsize=7.5,
            )
        ax.set_xlim(0, 1.12)
        ax.set_title(title, fontsize=10)
        ax.tick_params(labelsize=8.5)
        ax.spines[["top", "right"]].set_visible(False)
        ax.grid(axis="x", color="#e5e5e5", linewidth=0.8)
        ax.set_axisbelow(True)
    return _png(fig)


def levels_figure(
    levels: Mapping[str, int],
    heights: Mapping[str, int],
    labels: Mapping[str, Mapping[str, int]],
) -> str:
    """Chosen generalization level per QI (full-domain), or distinct labels per QI (local)."""
    fig = _figure(9.6, 0.5 + 0.28 * max(len(labels), 4))
    ax = fig.subplots()
    names = list(labels)[::-1]
    if levels:
        heights_ = [max(heights.get(n, 1), 1) for n in names]
        chosen = [levels.get(n, 0) for n in names]
        ax.barh(names, heights_, color="#dde5ee", label="hierarchy height")
        bars = ax.barh(names, chosen, color=RELEASE, label="chosen level")
        for bar, lvl, h in zip(bars, chosen, heights_, strict=True):
            ax.annotate(
                f"level {lvl}/{h}",
                (h, bar.get_y() + bar.get_height() / 2),
                xytext=(4, 0),
                textcoords="offset points",
                va="center",
                fontsize=8,
            )
        ax.set_xlabel("generalization level (0 = original values)", fontsize=9)
        ax.set_xlim(0, max(heights_) * 1.25)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set_title("chosen generalization level per quasi-identifier", fontsize=10)
    else:
        orig = [labels[n]["original"] for n in names]
        rel = [labels[n]["release"] or 0 for n in names]
        y = np.arange(len(names))
        ax.barh(y + 0.2, orig, 0.4, color=ORIGINAL, label="original values")
        ax.barh(y - 0.2, rel, 0.4, color=RELEASE, label="labels in the release")
        ax.set_yticks(y, names)
        ax.set_xscale("log")
        ax.set_xlabel("distinct values (log scale)", fontsize=9)
        ax.set_title("local recoding: distinct values per quasi-identifier", fontsize=10)
    ax.legend(fontsize=8, frameon=False, loc="lower right")
    ax.tick_params(labelsize=8.5)
    ax.spines[["top", "right"]].set_visible(False)
    return _png(fig)


def attack_figure(
    risks: Mapping[str, Mapping | None], checks: Mapping[str, tuple[float, bool]]
) -> str:
    """Each attack's measured risk with its confidence interval, and its limit if one is set.

    ``risks``: ``{measure: {"value", "ci": [low, high]}}``; ``checks``: ``{measure: (limit,
    held)}`` as the gate decided them. A bar is red when the gate found its limit exceeded.
    """
    names = [n for n, r in risks.items() if r is not None]
    fig = _figure(6.4, 0.55 * max(len(names), 1) + 1.0)
    ax = fig.add_subplot()
    for row, name in enumerate(names):
        risk = risks[name]
        low, high = risk["ci"]
        limit, held = checks.get(name, (None, None))
        blocked = held is False
        ax.barh(row, risk["value"], color=BAD if blocked else RELEASE, height=0.5)
        ax.errorbar(
            risk["value"], row,
            xerr=[[max(risk["value"] - low, 0.0)], [max(high - risk["value"], 0.0)]],
            fmt="none", ecolor="#222", capsize=4, linewidth=1,
        )  # fmt: skip
        if limit is not None:
            ax.plot([limit, limit], [row - 0.35, row + 0.35], color=BAD, linewidth=2)
        ax.annotate(
            f"{risk['value']:.3f} [{low:.3f}, {high:.3f}]",
            (min(high, 1.0), row), xytext=(4, 0), textcoords="offset points",
            va="center", fontsize=7.5,
        )  # fmt: skip
    ax.set_yticks(range(len(names)), [n.replace("_", " ") for n in names])
    ax.invert_yaxis()
    ax.set_xlim(0, 1.25)
    ax.set_xlabel("risk (bar), 95 % interval (whiskers), limit (red tick)", fontsize=9)
    _style(ax)
    return _png(fig)
