"""t-closeness: one definition for the search and the gate.

A class is compared with the *input's* distribution of the sensitive column, suppressed
records included (ARX's definition, and the search's): the gate receives that distribution
(:func:`privgate.core.gate.sensitive_reference`) instead of recomputing it from the released
records, which differ from the input's exactly when records are suppressed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from adult_reference import arx_t_closeness_spec

from privgate.core.gate import class_stats_of, sensitive_reference, verify_table, with_reference
from privgate.core.hierarchy import ARXHierarchy
from privgate.core.privacy import KAnonymity, TCloseness


def test_a_value_whose_records_are_all_suppressed_stays_in_the_reference() -> None:
    released = pd.DataFrame({"q": ["a", "a", "b", "b"], "s": ["x", "y", "x", "y"]})
    stats = class_stats_of(released, ["q"], ["s"])
    stats = with_reference(stats, {"s": {"x": 2, "y": 2, "z": 4}})
    assert list(stats.ordered_values["s"]) == ["x", "y", "z"]
    np.testing.assert_allclose(stats.overall["s"], [0.25, 0.25, 0.5])
    assert stats.histograms["s"].tolist() == [[1, 1, 0], [1, 1, 0]]
    model = TCloseness(column="s", t=0.4)
    assert model.achieved(stats) == pytest.approx(0.5)  # half the input's mass is 'z'


def test_reference_names_values_as_the_written_release_does() -> None:
    frame = pd.DataFrame(
        {"n": pd.array([1, 2, None, 2], dtype="Int64"), "t": ["a,b", "c", "c", "c"]}
    )
    reference = sensitive_reference(frame, ["n", "t"])
    assert reference == {"n": {"1": 1, "2": 2, None: 1}, "t": {"a,b": 1, "c": 3}}


def test_reference_of_a_value_holding_a_carriage_return_is_the_released_value(tmp_path) -> None:
    """A sensitive value holding a lone "\\r" is released quoted (5f2c535) and read back whole;
    the reference names it the same way (it raised csv.Error: the column was written with the
    "\\r" bare and read back split)."""
    from collections import Counter

    from privgate.core.gate import read_release
    from privgate.core.publish import stage_release

    frame = pd.DataFrame({"q": ["a", "a", "b", "b", "b"], "s": ["cr\rx", "cr\rx", "y", None, "y"]})
    reference = sensitive_reference(frame, ["s"])
    staged = stage_release(frame, tmp_path, "toy", "2024-05-01-0123456789ab")
    released = Counter(read_release(staged.release_file)["s"].tolist())
    assert reference == {"s": dict(released)} == {"s": {"cr\rx": 2, "y": 2, None: 1}}


@pytest.fixture(scope="module")
def arx_release(arx_t_closeness):
    """The ARX case through :func:`privgate.anonymize`: the session's release
    (``arx_t_closeness`` in ``tests/conftest.py``, searched once per test run for the tests
    that read it here and in ``tests/core/scale/test_scale_dask_cluster.py``)."""
    _, frame, release = arx_t_closeness
    return frame, release


@pytest.mark.slow  # a whole-Adult search under hierarchical t-closeness: 10 s under load
def test_arx_hierarchical_t_closeness_case_publishes(shared_data, arx_release) -> None:
    """ARX's test case: the search finds ARX's node (1,384 records suppressed); the gate
    measured t against the released records blocked it at 0.202777, and with the input's
    distribution it passes, at the level the search measured."""
    folder = shared_data("arx/adult.csv").parent
    frame, found = arx_release
    sensitive = "occupation"
    qis = [c for c in frame.columns if c != sensitive]
    assert sorted(qis) == sorted(found.policy.quasi_identifiers)
    t_model = TCloseness(
        column=sensitive,
        t=0.2,
        distance="hierarchical",
        hierarchy=ARXHierarchy.from_csv(sensitive, folder / "adult_hierarchy_occupation.csv"),
    )
    models = [KAnonymity(k=5), t_model]
    assert found.metrics["suppressed"] == 1384
    release = found.frame
    assert len(release) == len(frame) - 1384
    limits = {"input_rows": len(frame), "suppression_limit": 0.05}
    old = verify_table(release, qis, models, **limits)
    assert not old.passed and "reaches 0.202777" in old.reasons[0]
    reference = sensitive_reference(frame, [sensitive])
    decision = verify_table(release, qis, models, reference=reference, **limits)
    assert decision.passed, decision.reasons
    assert decision.measurements["achieved"][str(t_model)] <= 0.2


@pytest.mark.slow  # the same whole-Adult search as above (shared), then the written file
def test_arx_case_publishes_through_the_python_api(arx_release, tmp_path) -> None:
    """The same case as a policy, through :func:`privgate.anonymize`, and written: the file's
    gate uses the same reference (without it, it blocked and removed the file)."""
    _, release = arx_release
    assert release.passed, release.decision.reasons
    assert release.metrics["suppressed"] == 1384
    achieved = release.decision.measurements["achieved"]
    assert achieved["0.2-closeness(occupation, hierarchical distance)"] <= 0.2
    written = release.write(tmp_path / "arx.csv")
    assert written.passed, written.reasons
    assert written.measurements["achieved"] == achieved
    assert (tmp_path / "arx.csv").is_file()


@pytest.mark.slow  # the same whole-Adult search as above, in the CLI's reader and writer
def test_arx_case_publishes_through_privgate_anonymize(adult_policy, tmp_path, capsys) -> None:
    """`privgate anonymize` (one process, its own reader and writer) verifies the written file
    with the input's distribution too: the ARX case exits 0 and its file is written."""
    import json

    from privgate.flows.cli import main

    policy = tmp_path / "arx-t.yaml"
    spec = arx_t_closeness_spec(adult_policy.model_dump(mode="json", exclude_none=True))
    policy.write_text(json.dumps(spec))  # JSON is YAML
    out = tmp_path / "arx.csv"
    assert main(["anonymize", str(policy), "--output", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("gate: PASSED: 28778 rows") and "1384 records suppressed" in text
    assert out.is_file()
