"""A small SVG chart kit for the report: a canvas, panels with linear or log scales, bars.

The report's figures are a handful of bar charts, histograms and one line chart. Written as
inline SVG they need no plotting library (matplotlib cost about 1.5 s to import and 0.3-1.4 s
per figure), no font (the browser's own sans-serif draws the text), no network and no
base64: the file stays self-contained and every number a chart shows is in the page as text.

Each bar is a ``<rect class="bar">`` with its value in ``data-value``, where it starts in
``data-base``, its panel in ``data-panel``, the axis its length runs along in ``data-axis``
(``x``, ``y``, or ``x-log`` on a log scale) and a ``<title>`` (the browser's tooltip), so a
test, or a reader of the source, can check that its length is proportional to its value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

__all__ = ["Canvas", "Linear", "Log", "Panel", "nice_ticks"]

FONT = "Helvetica, Arial, sans-serif"
INK = "#1f2933"
MUTED = "#5f6b7a"
GRID = "#e5e5e5"
#: Average width of a character of the sans-serif font, per pixel of font size (for margins).
CHAR_WIDTH = 0.58


def _n(value: float) -> str:
    """A coordinate with two decimals at most, without trailing zeros."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _a(value: object) -> str:
    return escape(str(value), quote=True)


def text_width(text: str, size: float) -> float:
    """Estimated width in pixels of the longest line of ``text`` at font ``size``."""
    return CHAR_WIDTH * size * max((len(line) for line in str(text).split("\n")), default=0)


def nice_ticks(
    low: float, high: float, count: int = 6, integer: bool = False
) -> list[tuple[float, str]]:
    """Round tick positions (1, 2, 2.5 or 5 times a power of ten) within ``[low, high]``;
    whole numbers only when ``integer`` (counts)."""
    span = high - low
    if not math.isfinite(span) or span <= 0:
        return [(low, f"{low:g}")]
    magnitude = 10 ** math.floor(math.log10(span / count))
    if integer:
        magnitude = max(magnitude, 1)
    for multiple in (1, 2, 5, 10) if integer else (1, 2, 2.5, 5, 10):
        step = multiple * magnitude
        if span / step <= count:
            break
    decimals = max(0, -math.floor(math.log10(step) + 1e-9) + (1 if multiple == 2.5 else 0))
    first = math.ceil(low / step - 1e-9)
    ticks = []
    for i in range(first, math.floor(high / step + 1e-9) + 1):
        value = round(i * step, 12)
        ticks.append((value, f"{value:,.{decimals}f}"))
    return ticks


@dataclass(frozen=True)
class Linear:
    """Data ``[low, high]`` to pixels ``[start, end]`` (``end < start`` for an upward y axis)."""

    low: float
    high: float
    start: float
    end: float
    integer: bool = False

    def __call__(self, value: float) -> float:
        return self.start + (value - self.low) / (self.high - self.low) * (self.end - self.start)

    def clamp(self, value: float) -> float:
        return min(max(value, min(self.low, self.high)), max(self.low, self.high))

    def ticks(self) -> list[tuple[float, str]]:
        return nice_ticks(min(self.low, self.high), max(self.low, self.high), integer=self.integer)


@dataclass(frozen=True)
class Log:
    """Like :class:`Linear` on ``log10`` of the data (``low`` > 0)."""

    low: float
    high: float
    start: float
    end: float

    def __call__(self, value: float) -> float:
        share = (math.log10(value) - math.log10(self.low)) / (
            math.log10(self.high) - math.log10(self.low)
        )
        return self.start + share * (self.end - self.start)

    def clamp(self, value: float) -> float:
        return min(max(value, min(self.low, self.high)), max(self.low, self.high))

    def ticks(self) -> list[tuple[float, str]]:
        first, last = math.ceil(math.log10(self.low) - 1e-9), math.floor(math.log10(self.high))
        return [(10.0**e, f"{10.0**e:,.{max(0, -e)}f}") for e in range(first, last + 1)]


class Canvas:
    """One ``<svg>`` element: a fixed coordinate system that scales with the page width."""

    def __init__(self, width: float, height: float, label: str) -> None:
        self.width, self.height, self.label = width, height, label
        self.parts: list[str] = []
        self.panels = 0

    def rect(
        self,
        x: float,
        y: float,
        width: float,
        height: float,
        fill: str,
        title: str | None = None,
        **data: object,
    ) -> None:
        """A rectangle; with a ``value`` in ``data`` it is a bar (``class="bar"``)."""
        extra = "".join(f' data-{k.replace("_", "-")}="{_a(v)}"' for k, v in data.items())
        cls = ' class="bar"' if "value" in data else ""
        body = f"<title>{escape(title)}</title></rect>" if title else "</rect>"
        self.parts.append(
            f'<rect{cls} x="{_n(x)}" y="{_n(y)}" width="{_n(max(width, 0))}" '
            f'height="{_n(max(height, 0))}" fill="{fill}"{extra}>{body}'
        )

    def line(
        self,
        x1: float,
        y1: float,
        x2: float,
        y2: float,
        stroke: str = INK,
        width: float = 1.0,
        dash: str | None = None,
        title: str | None = None,
    ) -> None:
        style = f' stroke-dasharray="{dash}"' if dash else ""
        body = f"<title>{escape(title)}</title></line>" if title else "</line>"
        self.parts.append(
            f'<line x1="{_n(x1)}" y1="{_n(y1)}" x2="{_n(x2)}" y2="{_n(y2)}" stroke="{stroke}" '
            f'stroke-width="{_n(width)}"{style}>{body}'
        )

    def polyline(self, points: Sequence[tuple[float, float]], stroke: str) -> None:
        coords = " ".join(f"{_n(x)},{_n(y)}" for x, y in points)
        self.parts.append(
            f'<polyline points="{coords}" fill="none" stroke="{stroke}" stroke-width="1.6"/>'
        )

    def circle(
        self, x: float, y: float, radius: float, fill: str, title: str | None = None, **data: object
    ) -> None:
        extra = "".join(f' data-{k}="{_a(v)}"' for k, v in data.items())
        body = f"<title>{escape(title)}</title></circle>" if title else "</circle>"
        self.parts.append(
            f'<circle cx="{_n(x)}" cy="{_n(y)}" r="{_n(radius)}" fill="{fill}"{extra}>{body}'
        )

    def text(
        self,
        x: float,
        y: float,
        text: str,
        size: float = 11.0,
        anchor: str = "middle",
        fill: str = INK,
        weight: str | None = None,
        rotate: bool = False,
        dy: float = 0.35,
    ) -> None:
        """Text whose first line is vertically centred on ``y`` (``dy`` in em); ``\\n`` breaks
        lines below it."""
        lines = str(text).split("\n")
        attrs = f'x="{_n(x)}" y="{_n(y)}" font-size="{_n(size)}" text-anchor="{anchor}"'
        if fill != INK:
            attrs += f' fill="{fill}"'
        if weight:
            attrs += f' font-weight="{weight}"'
        if rotate:
            attrs += f' transform="rotate(-90 {_n(x)} {_n(y)})"'
        spans = "".join(
            f'<tspan x="{_n(x)}" dy="{dy if i == 0 else 1.15}em">{escape(line)}</tspan>'
            for i, line in enumerate(lines)
        )
        self.parts.append(f"<text {attrs}>{spans}</text>")

    def legend(self, x: float, y: float, items: Sequence[tuple[str, str, str]]) -> None:
        """Items ``(label, colour, kind)`` (kind ``box``, ``line`` or ``dash``) in one row
        ending at ``x`` (right-aligned)."""
        widths = [28 + text_width(label, 10.5) for label, _, _ in items]
        left = x - sum(widths)
        for (label, colour, kind), width in zip(items, widths, strict=True):
            if kind == "box":
                self.rect(left, y - 5, 12, 10, colour)
            else:
                self.line(left, y, left + 14, y, colour, 1.6, "5 3" if kind == "dash" else None)
            self.text(left + 18, y, label, 10.5, "start")
            left += width

    def markup(self) -> str:
        return (
            f'<svg class="plot" viewBox="0 0 {_n(self.width)} {_n(self.height)}" '
            f'width="{_n(self.width)}" height="{_n(self.height)}" role="img" '
            f'aria-label="{_a(self.label)}" font-family="{FONT}">'
            f"<title>{escape(self.label)}</title>" + "".join(self.parts) + "</svg>"
        )


@dataclass
class Panel:
    """One plot area of a canvas: its box in pixels and its two scales."""

    canvas: Canvas
    left: float
    top: float
    width: float
    height: float
    x: Linear | Log
    y: Linear | Log
    index: int = 0

    @classmethod
    def of(cls, canvas, box, x_range, y_range, x_log=False, counts=False) -> Panel:
        """A panel in ``box = (left, top, width, height)`` showing ``x_range`` and ``y_range``
        (``counts``: whole-number ticks on the y axis)."""
        left, top, width, height = box
        x_scale = (Log if x_log else Linear)(*x_range, left, left + width)
        y_scale = Linear(*y_range, top + height, top, integer=counts)
        canvas.panels += 1
        return cls(canvas, left, top, width, height, x_scale, y_scale, canvas.panels - 1)

    @property
    def bottom(self) -> float:
        return self.top + self.height

    @property
    def right(self) -> float:
        return self.left + self.width

    def axes(
        self,
        xlabel: str = "",
        ylabel: str = "",
        title: str = "",
        xticks: Sequence[tuple[float, str]] | None = None,
        yticks: Sequence[tuple[float, str]] | None = None,
        grid: str = "y",
    ) -> None:
        """Grid lines, the left and bottom axes, tick labels, axis labels and the title."""
        c = self.canvas
        xticks = self.x.ticks() if xticks is None else xticks
        yticks = self.y.ticks() if yticks is None else yticks
        for value, label in yticks:
            py = self.y(value)
            if grid == "y":
                c.line(self.left, py, self.right, py, GRID, 0.8)
            c.line(self.left - 4, py, self.left, py, MUTED)
            c.text(self.left - 7, py, label, 10.5, "end")
        for value, label in xticks:
            px = self.x(value)
            if grid == "x":
                c.line(px, self.top, px, self.bottom, GRID, 0.8)
            c.line(px, self.bottom, px, self.bottom + 4, MUTED)
            c.text(px, self.bottom + 8, label, 10.5, dy=0.8)
        c.line(self.left, self.top, self.left, self.bottom, MUTED)
        c.line(self.left, self.bottom, self.right, self.bottom, MUTED)
        if xlabel:
            lines = max((label.count("\n") + 1 for _, label in xticks), default=1)
            c.text((self.left + self.right) / 2, self.bottom + 14 + 13 * lines, xlabel, 11.5)
        if ylabel:
            widest = max((text_width(label, 10.5) for _, label in yticks), default=0)
            c.text(self.left - 16 - widest, (self.top + self.bottom) / 2, ylabel, 11.5,
                   rotate=True)  # fmt: skip
        if title:
            c.text((self.left + self.right) / 2, self.top - 32, title, 12.5, weight="600")

    def vbar(self, center, width, value, fill, title, label=None, base=0.0, **data) -> None:
        """A vertical bar from ``base`` to ``value`` (both clipped to the axis), labelled above."""
        if not math.isfinite(value):
            return
        base = self.y.clamp(base)
        y0, y1 = self.y(base), self.y(self.y.clamp(value))
        x0 = self.x(center) - width / 2
        self.canvas.rect(x0, min(y0, y1), width, abs(y0 - y1), fill, title, value=value,
                         base=base, panel=self.index, axis="y", **data)  # fmt: skip
        if label is not None:
            self.canvas.text(x0 + width / 2, min(y0, y1) - 6, label, 9.5)

    def hbar(self, center, height, value, fill, title, label=None, base=0.0, **data) -> None:
        """A horizontal bar from ``base`` to ``value``, labelled at its right end."""
        if not math.isfinite(value):
            return
        base = self.x.clamp(base)
        x0, x1 = self.x(base), self.x(self.x.clamp(value))
        y0 = self.y(center) - height / 2
        axis = "x" if isinstance(self.x, Linear) else "x-log"
        self.canvas.rect(min(x0, x1), y0, abs(x1 - x0), height, fill, title, value=value,
                         base=base, panel=self.index, axis=axis, **data)  # fmt: skip
        if label is not None:
            self.canvas.text(max(x0, x1) + 4, y0 + height / 2, label, 9.5, "start")

    def vline(self, value, stroke, dash=None, title=None) -> None:
        px = self.x(self.x.clamp(value))
        self.canvas.line(px, self.top, px, self.bottom, stroke, 1.4, dash, title)

    def hline(self, value, stroke, dash=None, title=None, width=1.2) -> None:
        py = self.y(self.y.clamp(value))
        self.canvas.line(self.left, py, self.right, py, stroke, width, dash, title)
