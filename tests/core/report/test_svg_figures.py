"""The report's inline SVG figures on hand-made inputs: the cases Adult's report does not reach
(a blocked attack, local recoding on a log axis, no classes, text that needs escaping)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from privgate.core.report._plots import (
    BAD,
    RELEASE,
    attack_figure,
    class_size_figure,
    levels_figure,
    sensitive_figure,
)
from privgate.core.report._svg import nice_ticks


def _bars(svg: ET.Element, **data: str) -> list[ET.Element]:
    return [
        r
        for r in svg.iter("rect")
        if r.get("class") == "bar" and all(r.get(f"data-{k}") == v for k, v in data.items())
    ]


def _texts(svg: ET.Element) -> list[str]:
    return [" ".join(t.itertext()) for t in svg.iter("text")]


def test_ticks_are_round_and_counts_get_whole_numbers() -> None:
    assert [v for v, _ in nice_ticks(0, 1.1)] == pytest.approx([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    assert [label for _, label in nice_ticks(0, 1.25)][1:3] == ["0.25", "0.50"]
    assert [label for _, label in nice_ticks(0, 12_000)][-2:] == ["10,000", "12,000"]
    assert [v for v, _ in nice_ticks(0.5, 1.04)] == pytest.approx([0.5, 0.6, 0.7, 0.8, 0.9, 1.0])
    assert [label for _, label in nice_ticks(0, 10.6, integer=True)] == [
        "0", "2", "4", "6", "8", "10"
    ]  # fmt: skip
    assert [v for v, _ in nice_ticks(0, 3.2, integer=True)] == [0, 1, 2, 3]


def test_attack_figure_marks_the_blocked_bar_its_interval_and_its_limit() -> None:
    risks = {
        "singling_out": {"value": 0.12, "ci": [0.08, 0.16]},
        "linkability": {"value": 0.01, "ci": [0.0, 0.03]},
        "inference": None,  # not run: no row
    }
    svg = ET.fromstring(attack_figure(risks, {"singling_out": (0.05, False)}))
    singling, linkability = _bars(svg)
    assert singling.get("fill") == BAD and linkability.get("fill") == RELEASE
    assert float(singling.get("width")) / float(linkability.get("width")) == pytest.approx(12, 0.01)
    assert "0.120 [0.080, 0.160]" in _texts(svg) and "0.010 [0.000, 0.030]" in _texts(svg)
    titles = [t.text for t in svg.iter("title")]
    assert "limit 0.05" in titles and "95 % interval [0.0800, 0.1600]" in titles
    assert "inference" not in " ".join(_texts(svg))


def test_local_recoding_draws_distinct_values_on_a_log_axis() -> None:
    labels = {"age": {"original": 72, "release": 1403}, "sex": {"original": 2, "release": None}}
    svg = ET.fromstring(levels_figure({}, {}, labels))
    assert {bar.get("data-axis") for bar in _bars(svg)} == {"x-log"}
    lengths = {
        (bar.get("data-series"), float(bar.get("data-value"))): float(bar.get("width"))
        for bar in _bars(svg)
    }
    # on a log axis the length grows with the logarithm: 72 -> 1403 is 1.29 decades more
    assert lengths[("release", 1403)] > lengths[("original", 72)] > lengths[("original", 2)]
    assert lengths[("release", 0)] == 0  # no labels in the release: no bar, value still shown
    assert {"1,403", "72", "2", "0"} <= set(_texts(svg))


def test_figures_without_data_and_with_markup_in_names_stay_well_formed() -> None:
    empty = ET.fromstring(class_size_figure({}, 5))
    assert _texts(empty) == ["no classes"] and not _bars(empty)
    svg = ET.fromstring(sensitive_figure('a<b & "c"', {1: 3, 2: 10}))
    assert 'distinct values of a<b & "c" in a class' in _texts(svg)
    assert svg.get("aria-label") == 'sensitive column a<b & "c"'
    assert [float(bar.get("data-value")) for bar in _bars(svg)] == [3, 10]
