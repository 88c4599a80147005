"""The report's figures, as inline SVG markup (see :mod:`._svg`).

Each function returns one ``<svg>`` element for the HTML page: the same panels, values,
labels and limit lines the report has always shown, drawn without a plotting library. Bars
are labelled with their values where the report labels them, and every bar carries its value
(``data-value``) and a tooltip.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from privgate.core.report._svg import Canvas, Panel, nice_ticks, text_width

__all__ = [
    "attack_figure",
    "class_size_figure",
    "classification_figure",
    "clustering_figure",
    "levels_figure",
    "loss_figure",
    "risk_analysis_figure",
    "risk_bands",
    "risk_figure",
    "sensitive_figure",
]

ORIGINAL = "#7f8c99"
RELEASE = "#2f6db5"
BAD = "#c0392b"
GOOD = "#2e8b57"
SECOND = "#e0a030"
LIGHT = "#dde5ee"
#: Width of every figure, in the SVG's own pixels (it scales down with the page).
WIDTH = 960
DASH = "6 4"


def _y_space(low: float, high: float, counts: bool) -> float:
    """Room left of a panel for its y tick labels and its y label."""
    return 34 + max(text_width(label, 10.5) for _, label in nice_ticks(low, high, integer=counts))


def _top(counts: Sequence[float], labelled: bool = True) -> float:
    """The upper end of a count axis: room above the highest bar for its label."""
    highest = max((float(c) for c in counts if np.isfinite(c)), default=0.0)
    return highest * (1.15 if labelled else 1.06) or 1.0


def _row(canvas, height, ranges, ratios=None, top=54, bottom=56, gap=46, lefts=None, counts=False):
    """Panels side by side on one canvas; ``ranges`` is ``[(x_range, y_range, x_log)]``.

    The top margin holds a title and, below it, a legend; ``counts``: whole-number y ticks.
    """
    ratios = ratios or [1] * len(ranges)
    lefts = lefts or [_y_space(*y, counts) for _, y, _ in ranges]
    usable = canvas.width - 16 - sum(lefts) - gap * (len(ranges) - 1)
    panels, left = [], 0.0
    for (x_range, y_range, x_log), ratio, space in zip(ranges, ratios, lefts, strict=True):
        left += space
        width = usable * ratio / sum(ratios)
        box = (left, top, width, height - top - bottom)
        panels.append(Panel.of(canvas, box, x_range, y_range, x_log=x_log, counts=counts))
        left += width + gap
    return panels


def _legend(panel: Panel, items) -> None:
    panel.canvas.legend(panel.right, panel.top - 12, items)  # below the title


def _category_ticks(names: Sequence[str]) -> list[tuple[float, str]]:
    return [(float(i), name) for i, name in enumerate(names)]


def _histogram(panel: Panel, edges, weights, noun: str, colour: str = RELEASE) -> None:
    """Bars over ``[edges[i], edges[i+1])`` of height ``weights[i]`` (the last bin closed)."""
    for i, weight in enumerate(weights):
        if weight <= 0:
            continue
        low, high = float(edges[i]), float(edges[i + 1])
        x0, x1 = panel.x(low), panel.x(high)
        y0, y1 = panel.y(0.0), panel.y(float(weight))
        title = f"{low:g} to {high:g}: {weight:,.6g} {noun}"
        panel.canvas.rect(x0 + 0.5, y1, x1 - x0 - 1, y0 - y1, colour, title, value=float(weight),
                          base=0.0, panel=panel.index, axis="y", low=low, high=high)  # fmt: skip


def class_size_figure(class_sizes: Mapping[int, int], k: int) -> str:
    """Equivalence classes and records by class size (log-spaced bins), with ``k`` marked."""
    canvas = Canvas(WIDTH, 300, "class size histogram")
    sizes = np.array([int(s) for s in class_sizes], dtype=float)
    counts = np.array([int(c) for c in class_sizes.values()], dtype=float)
    if len(sizes) == 0:
        canvas.text(WIDTH / 2, 150, "no classes", 13)
        return canvas.markup()
    top = max(sizes.max(), k) * 1.05
    edges = np.unique(np.geomspace(1, top + 1, 25).round())
    edges = np.append(edges, edges[-1] + 1) if len(edges) < 2 else edges
    histograms = [
        (np.histogram(sizes, bins=edges, weights=weights)[0], label)
        for weights, label in ((counts, "classes"), (counts * sizes, "records"))
    ]
    x_range = (float(edges[0]), float(edges[-1]))
    panels = _row(
        canvas, 300, [(x_range, (0, _top(h, False)), True) for h, _ in histograms], counts=True
    )
    for panel, (heights, label) in zip(panels, histograms, strict=True):
        panel.axes(
            "equivalence class size (records sharing all QI values)",
            label,
            f"{label} by class size",
        )
        _histogram(panel, edges, heights, label)
        panel.vline(k, BAD, DASH, f"k = {k}")
        _legend(panel, [(f"k = {k}", BAD, "dash")])
    return canvas.markup()


#: Upper edges of the prosecutor-risk bands (risk of a record = 1 / its class size).
RISK_BANDS = (0.01, 0.02, 0.05, 0.1, 0.2, 1 / 3, 0.5, 1.0)


def risk_bands(class_sizes: Mapping[int, int]) -> list[tuple[str, float]]:
    """Share of records per prosecutor-risk band ``(lower, upper]`` (of persons, when the
    class sizes count persons: each person weighs 1 in each class they are in)."""
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


def risk_figure(class_sizes: Mapping[int, int], k: int, unit: str = "records") -> str:
    """Share of ``unit`` (records, or persons when the class sizes count persons) per
    prosecutor re-identification risk band, with ``1/k`` marked."""
    bands = risk_bands(class_sizes)
    single = unit.removesuffix("s")
    percents = [100 * share for _, share in bands]
    canvas = Canvas(WIDTH, 280, "risk distribution")
    [panel] = _row(canvas, 280, [((-0.6, len(bands) - 0.4), (0, _top(percents)), False)])
    panel.axes(
        f"prosecutor risk of a {single} (1 / its class size)",
        f"% of released {unit}",
        xticks=_category_ticks([band for band, _ in bands]),
    )
    width = 0.8 * (panel.x(1) - panel.x(0))
    for i, ((band, _), percent) in enumerate(zip(bands, percents, strict=True)):
        panel.vbar(i, width, percent, RELEASE, f"risk {band}: {percent:.2f}% of released {unit}",
                   f"{percent:.1f}%")  # fmt: skip
    limit = 1.0 / k
    position = next((i for i, up in enumerate(RISK_BANDS) if limit <= up + 1e-12), len(bands) - 1)
    panel.vline(position + 0.5, BAD, DASH, f"1/k = {limit:.3g}")
    _legend(panel, [(f"1/k = {limit:.3g}", BAD, "dash")])
    return canvas.markup()


#: The measures :func:`risk_analysis_figure` compares, as (label, reader of an analysis dict).
RISK_MEASURES = (
    ("highest\nprosecutor", lambda a: a["prosecutor"]["highest"]),
    ("average\nprosecutor", lambda a: a["prosecutor"]["average"]),
    ("at risk", lambda a: a["prosecutor"]["share_at_risk"]),
    ("marketer", lambda a: a["marketer"]),
    ("sample\nuniques", lambda a: a["sample_uniques"] / a["records"] if a["records"] else 0.0),
)


def _paired_bars(panel: Panel, names, series, fmt: str = "{:.3f}") -> None:
    """Bars of two series per category: ``series = [(label, colour, values)]``."""
    step = panel.x(1) - panel.x(0)
    width = 0.38 * step
    for j, (label, colour, values) in enumerate(series):
        offset = (j - (len(series) - 1) / 2) * 0.38
        for i, (name, value) in enumerate(zip(names, values, strict=True)):
            value = float(value)
            text = fmt.format(value)
            panel.vbar(i + offset, width, value, colour, f"{name.replace(chr(10), ' ')}, "
                       f"{label}: {text}", text, series=label)  # fmt: skip


def _series_legend(series) -> list[tuple[str, str, str]]:
    return [(label, colour, "box") for label, colour, _ in series]


def risk_analysis_figure(before: Mapping, after: Mapping) -> str:
    """Left: risk measures, input vs release. Right: the share of sample uniques reached by
    the strongest combination of 1, 2, ... quasi-identifiers (which attributes drive it)."""
    canvas = Canvas(WIDTH, 330, "re-identification risk")
    names = [label for label, _ in RISK_MEASURES]
    lines = []
    for analysis, colour, label in ((before, ORIGINAL, "original"), (after, RELEASE, "release")):
        top = (analysis.get("drivers") or {}).get("top", {})
        sizes = sorted(int(n) for n in top)
        shares = [top[str(n)][0]["unique_share"] if top[str(n)] else 0.0 for n in sizes]
        lines.append((label, colour, sizes, shares))
    every = sorted({n for _, _, sizes, _ in lines for n in sizes}) or [1]
    left, right = _row(
        canvas,
        330,
        [((-0.6, len(names) - 0.4), (0, 1.1), False),
         ((every[0] - 0.3, every[-1] + 0.3), (0, 1.05), False)],
        ratios=[1.3, 1],
        bottom=70,
    )  # fmt: skip
    series = [
        ("original", ORIGINAL, [float(read(before)) for _, read in RISK_MEASURES]),
        ("release", RELEASE, [float(read(after)) for _, read in RISK_MEASURES]),
    ]
    left.axes("", "probability / share", "re-identification risk", _category_ticks(names))
    _paired_bars(left, names, series)
    _legend(left, _series_legend(series))
    right.axes(
        "number of quasi-identifiers combined",
        "share of sample uniques (strongest)",
        "uniqueness by attribute combination",
        [(float(n), str(n)) for n in every],
    )
    for label, colour, sizes, shares in lines:
        points = [
            (right.x(n), right.y(right.y.clamp(s))) for n, s in zip(sizes, shares, strict=True)
        ]
        if len(points) > 1:
            canvas.polyline(points, colour)
        for n, share, (px, py) in zip(sizes, shares, points, strict=True):
            canvas.circle(px, py, 3.5, colour, f"{label}, {n} QIs: {share:.4f}", value=share,
                          series=label)  # fmt: skip
    _legend(right, [(label, colour, "line") for label, colour, _, _ in lines])
    return canvas.markup()


def sensitive_figure(column: str, distinct: Mapping[int, int], t_distances=None, t=None) -> str:
    """Per class: distinct sensitive values (l) and, for t-closeness, the distance to the table."""
    two = t_distances is not None
    canvas = Canvas(WIDTH if two else 520, 290, f"sensitive column {column}")
    values = [int(v) for v in distinct]
    counts = [int(c) for c in distinct.values()]
    ranges = [((0.4, max(values, default=1) + 0.6), (0, _top(counts)), False)]
    if two:
        heights, edges = np.histogram(np.asarray(t_distances, dtype=float), bins=20)
        low, high = float(edges[0]), float(edges[-1])
        if t is not None:
            low, high = min(low, t), max(high, t)
        pad = 0.02 * (high - low)
        ranges.append(((low - pad, high + pad), (0, _top(heights, False)), False))
    panels = _row(canvas, 290, ranges, counts=True)
    first = panels[0]
    first.axes(f"distinct values of {column} in a class", "classes",
               xticks=[(float(v), str(v)) for v in values])  # fmt: skip
    width = 0.6 * (first.x(1) - first.x(0))
    for value, count in zip(values, counts, strict=True):
        first.vbar(value, width, count, RELEASE,
                   f"{count:,} classes with {value} distinct values", f"{count:.0f}")  # fmt: skip
    if two:
        second = panels[1]
        second.axes(f"distance of a class's {column} to the table's (EMD)", "classes")
        _histogram(second, edges, heights, "classes")
        if t is not None:
            second.vline(t, BAD, DASH, f"t = {t:g}")
            _legend(second, [(f"t = {t:g}", BAD, "dash")])
    return canvas.markup()


def classification_figure(scores: Sequence[Mapping], majority: float | None = None) -> str:
    """ROC AUC and accuracy per model, original vs release."""
    names = [s["model"].replace("_", " ") for s in scores]
    canvas = Canvas(WIDTH, 300, "classification before and after")
    x_range = (-0.6, len(names) - 0.4)
    panels = _row(canvas, 300, [(x_range, (0.5, 1.04), False)] * 2)
    for panel, (key, title) in zip(
        panels,
        (("auc", "ROC AUC (cross-validated)"), ("accuracy", "accuracy (cross-validated)")),
        strict=True,
    ):
        series = [
            ("original", ORIGINAL, [s[f"{key}_original"] for s in scores]),
            ("release", RELEASE, [s[f"{key}_release"] for s in scores]),
        ]
        panel.axes("", "AUC" if key == "auc" else "accuracy", title, _category_ticks(names))
        _paired_bars(panel, names, series)
        legend = _series_legend(series)
        if key == "accuracy" and majority is not None:
            panel.hline(majority, "#888", "2 3", f"majority class {majority:.3f}")
            legend.append((f"majority class {majority:.3f}", "#888", "dash"))
        _legend(panel, legend)
    return canvas.markup()


def clustering_figure(scores: Sequence[Mapping]) -> str:
    """F-measure and MatchPoint per clustering (method, number of clusters)."""
    names = [f"{s['method'].replace('_', ' ')}\n{s['n_clusters']} clusters" for s in scores]
    canvas = Canvas(WIDTH, 300, "clustering agreement")
    [panel] = _row(canvas, 300, [((-0.6, len(names) - 0.4), (0, 1.12), False)], bottom=60)
    series = [
        ("F-measure", RELEASE, [s["f_measure"] for s in scores]),
        ("MatchPoint", SECOND, [s["match_point"] for s in scores]),
    ]
    panel.axes("", "agreement with the original's clustering", xticks=_category_ticks(names))
    panel.hline(1.0, "#888", width=0.8)
    _paired_bars(panel, names, series)
    _legend(panel, _series_legend(series))
    return canvas.markup()


def _name_space(names: Sequence[str]) -> float:
    return 16 + max((text_width(n, 10.5) for n in names), default=0)


def _rows_height(rows: int) -> float:
    return 44 + 56 + 28 * max(rows, 4)


def loss_figure(per_attribute: Mapping[str, float], distribution: Mapping[str, float]) -> str:
    """Information loss per quasi-identifier and total variation per released column."""
    height = _rows_height(max(len(per_attribute), len(distribution)))
    canvas = Canvas(WIDTH, height, "loss per attribute")
    parts = (
        (per_attribute, "information loss per quasi-identifier", RELEASE),
        (distribution, "distribution shift (total variation)", SECOND),
    )
    panels = _row(
        canvas,
        height,
        [((0, 1.12), (max(len(d), 1) - 0.5, -0.5), False) for d, _, _ in parts],
        lefts=[_name_space(list(d)) for d, _, _ in parts],
        gap=30,
    )
    for panel, (data, title, colour) in zip(panels, parts, strict=True):
        names = list(data)
        panel.axes("", "", title, yticks=_category_ticks(names), grid="x")
        for i, name in enumerate(names):
            value = float(data[name])
            panel.hbar(i, 18, value, colour, f"{name}: {value:.4f}", f"{value:.3f}")
    return canvas.markup()


def levels_figure(
    levels: Mapping[str, int],
    heights: Mapping[str, int],
    labels: Mapping[str, Mapping[str, int]],
) -> str:
    """Chosen generalization level per QI (full-domain), or distinct labels per QI (local)."""
    names = list(labels)
    height = _rows_height(len(names))
    canvas = Canvas(WIDTH, height, "generalization per quasi-identifier")
    rows = (max(len(names), 1) - 0.5, -0.5)
    space = [_name_space(names)]
    if levels:
        heights_ = [max(heights.get(n, 1), 1) for n in names]
        chosen = [levels.get(n, 0) for n in names]
        top = max(heights_, default=1) * 1.25
        [panel] = _row(canvas, height, [((0, top), rows, False)], lefts=space)
        ticks = [(v, f"{v:.0f}") for v, _ in nice_ticks(0, top) if float(v).is_integer()]
        panel.axes("generalization level (0 = original values)", "",
                   "chosen generalization level per quasi-identifier",
                   xticks=ticks, yticks=_category_ticks(names), grid="x")  # fmt: skip
        for i, (name, h, level) in enumerate(zip(names, heights_, chosen, strict=True)):
            panel.hbar(i, 18, h, LIGHT, f"{name}: hierarchy height {h}", series="height")
            panel.hbar(i, 18, level, RELEASE, f"{name}: level {level} of {h}", series="level")
            canvas.text(panel.x(h) + 4, panel.y(i), f"level {level}/{h}", 10, "start")
        _legend(panel, [("hierarchy height", LIGHT, "box"), ("chosen level", RELEASE, "box")])
        return canvas.markup()
    original = [int(labels[n]["original"]) for n in names]
    release = [int(labels[n]["release"] or 0) for n in names]
    positive = [v for v in original + release if v > 0] or [1]
    x_range = (min(positive) / 2, max(positive) * 3)
    [panel] = _row(canvas, height, [(x_range, rows, True)], lefts=space)
    panel.axes("distinct values (log scale)", "",
               "local recoding: distinct values per quasi-identifier",
               yticks=_category_ticks(names), grid="x")  # fmt: skip
    for i, name in enumerate(names):
        panel.hbar(i - 0.2, 11, original[i], ORIGINAL, f"{name}: {original[i]:,} original values",
                   f"{original[i]:,}", base=0, series="original")  # fmt: skip
        panel.hbar(i + 0.2, 11, release[i], RELEASE, f"{name}: {release[i]:,} labels released",
                   f"{release[i]:,}", base=0, series="release")  # fmt: skip
    _legend(
        panel, [("original values", ORIGINAL, "box"), ("labels in the release", RELEASE, "box")]
    )
    return canvas.markup()


def attack_figure(
    risks: Mapping[str, Mapping | None], checks: Mapping[str, tuple[float, bool]]
) -> str:
    """Each attack's measured risk with its confidence interval, and its limit if one is set.

    ``risks``: ``{measure: {"value", "ci": [low, high]}}``; ``checks``: ``{measure: (limit,
    held)}`` as the gate decided them. A bar is red when the gate found its limit exceeded.
    """
    names = [n for n, r in risks.items() if r is not None]
    shown = [n.replace("_", " ") for n in names]
    height = 100 + 48 * max(len(names), 1)
    canvas = Canvas(680, height, "attack risks")
    rows = (max(len(names), 1) - 0.5, -0.5)
    [panel] = _row(canvas, height, [((0, 1.25), rows, False)], top=30,
                   lefts=[_name_space(shown)])  # fmt: skip
    panel.axes("risk (bar), 95 % interval (whiskers), limit (red tick)", "",
               yticks=_category_ticks(shown), grid="x")  # fmt: skip
    for row, (name, label) in enumerate(zip(names, shown, strict=True)):
        risk = risks[name]
        value, (low, high) = float(risk["value"]), (float(c) for c in risk["ci"])
        limit, held = checks.get(name, (None, None))
        blocked = held is False
        text = f"{value:.3f} [{low:.3f}, {high:.3f}]"
        panel.hbar(row, 22, value, BAD if blocked else RELEASE,
                   f"{label}: risk {text}" + ("" if limit is None else f", limit {limit:g}"),
                   series="risk")  # fmt: skip
        y = panel.y(row)
        x_low, x_high = panel.x(panel.x.clamp(low)), panel.x(panel.x.clamp(high))
        canvas.line(
            x_low, y, x_high, y, "#222", 1.0, title=f"95 % interval [{low:.4f}, {high:.4f}]"
        )
        for x in (x_low, x_high):
            canvas.line(x, y - 5, x, y + 5, "#222", 1.0)
        if limit is not None:
            x = panel.x(panel.x.clamp(limit))
            canvas.line(x, y - 17, x, y + 17, BAD, 2.0, title=f"limit {limit:g}")
        canvas.text(panel.x(min(high, 1.0)) + 5, y, text, 9.5, "start")
    return canvas.markup()
