"""Unit tests for core.gate: verify_table / verify_release on tiny hand-computed tables."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privgate.core.exceptions import VerificationError
from privgate.core.gate import (
    GateDecision,
    class_stats_of,
    group_rows,
    read_release,
    read_release_codes,
    verify_release,
    verify_table,
)
from privgate.core.privacy import (
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    RecursiveCLDiversity,
    TCloseness,
)

QI = ["zip", "age"]


def two_anonymous() -> pd.DataFrame:
    """Two classes, of sizes 2 and 4."""
    return pd.DataFrame({
        "zip": ["130**", "130**", "148**", "148**", "148**", "148**"],
        "age": ["<30", "<30", ">=40", ">=40", ">=40", ">=40"],
        "disease": ["flu", "cold", "flu", "flu", "cancer", "cold"],
    })  # fmt: skip


def six_rows() -> pd.DataFrame:
    """Two classes of three rows, A = rows 0-2 and B = rows 3-5.

    disease: A = {flu: 2, cold: 1}, B = {flu: 1, cancer: 1, cold: 1};
             overall flu 1/2, cold 1/3, cancer 1/6.
    salary:  A = {9, 9, 10}, B = {10, 30, 30}; overall 1/3 each. Ordered as text
             ("10" < "30" < "9") the ordered EMD would be 1/6 instead of 1/3.
    """
    return pd.DataFrame({
        "zip": ["130**"] * 3 + ["148**"] * 3,
        "age": ["<30"] * 3 + [">=40"] * 3,
        "disease": ["flu", "flu", "cold", "flu", "cancer", "cold"],
        "salary": [9, 9, 10, 10, 30, 30],
    })  # fmt: skip


def _write_csv(tmp_path: Path, df: pd.DataFrame, name: str = "release.csv") -> Path:
    path = tmp_path / name
    df.to_csv(path, index=False)
    return path


# --------------------------------------------------------------------------------------------
# k-anonymity and the decision's shape


def test_two_anonymous_table_passes_k2() -> None:
    decision = verify_table(two_anonymous(), QI, [KAnonymity(k=2)])
    assert decision.passed
    assert decision.reasons == []
    m = decision.measurements
    assert m["rows"] == 6
    assert m["classes"] == 2
    assert m["min_class_size"] == 2
    assert m["average_class_size"] == 3.0
    assert m["achieved"] == {"2-anonymity": 2.0}


def test_two_anonymous_table_fails_k3_naming_the_model() -> None:
    decision = verify_table(two_anonymous(), QI, [KAnonymity(k=3)])
    assert not decision.passed
    assert decision.reasons == ["3-anonymity not met: the release reaches 2"]
    assert decision.measurements["achieved"]["3-anonymity"] == 2.0
    assert decision.summary.startswith("BLOCKED: 3-anonymity")


def test_classes_are_combinations_of_all_quasi_identifiers() -> None:
    # each column alone is 2-anonymous, the pair makes four singleton classes
    df = pd.DataFrame({"zip": ["a", "a", "b", "b"], "age": ["1", "2", "1", "2"]})
    assert verify_table(df, ["zip"], [KAnonymity(k=2)]).passed
    assert verify_table(df, ["age"], [KAnonymity(k=2)]).passed
    decision = verify_table(df, ["zip", "age"], [KAnonymity(k=2)])
    assert not decision.passed
    assert decision.measurements["classes"] == 4
    assert decision.measurements["min_class_size"] == 1


def test_a_missing_cell_is_a_value_of_its_own_in_every_quasi_identifier(tmp_path) -> None:
    """A missing quasi-identifier cell groups with the other missing cells only, never with a
    present value, whatever the column's place in the key (first, middle, last), read from a
    frame or from a written file as codes."""
    df = pd.DataFrame(
        {
            "a": ["x", None, "x", None, "y", "y"],
            "b": ["1", "1", None, None, "2", "2"],
            "c": ["p", "p", "p", "p", None, "q"],
        },
        dtype="string",
    )
    path = _write_csv(tmp_path, df)
    for release in (df, read_release_codes(path)):
        decision = verify_table(release, ["a", "b", "c"], [KAnonymity(k=1)])
        assert decision.measurements["classes"] == 6, release
        stats = class_stats_of(release, ["b", "a"], [])
        assert sorted(stats.sizes.tolist()) == [1, 1, 1, 1, 2]


def test_every_failing_model_is_a_reason() -> None:
    models = [KAnonymity(k=3), DistinctLDiversity(column="disease", l=3),
              RecursiveCLDiversity(column="disease", c=2, l=2)]  # fmt: skip
    decision = verify_table(six_rows(), QI, models)
    assert not decision.passed
    assert decision.reasons == [
        "distinct-3-diversity(disease) not met: the release reaches 2",
        "recursive-(2,2)-diversity(disease) not met: the release reaches 2",
    ]


def test_passing_summary_and_to_dict() -> None:
    decision = verify_table(six_rows(), QI, [KAnonymity(k=3)], input_rows=6)
    assert decision.passed
    assert decision.summary == "PASSED: 6 rows in 2 classes, smallest class 3, 0 records suppressed"
    as_dict = decision.to_dict()
    assert as_dict["passed"] is True
    assert as_dict["measurements"]["suppressed"] == 0


# --------------------------------------------------------------------------------------------
# Columns: direct identifiers, undeclared and missing columns


def test_forbidden_identifier_column_blocks_even_when_k_holds() -> None:
    df = six_rows().assign(name=["Ann", "Bob", "Cid", "Dan", "Eve", "Fay"])
    decision = verify_table(df, QI, [KAnonymity(k=2)], forbidden_columns=["name", "ssn"])
    assert not decision.passed
    assert decision.reasons == ["direct identifier column(s) present in the release: ['name']"]
    # the privacy measurements are still taken
    assert decision.measurements["achieved"]["2-anonymity"] == 3.0


def test_forbidden_columns_absent_pass() -> None:
    decision = verify_table(six_rows(), QI, [KAnonymity(k=2)], forbidden_columns=["name"])
    assert decision.passed


def test_unexpected_extra_column_blocks() -> None:
    df = six_rows().assign(notes=["x"] * 6)
    expected = ["zip", "age", "disease", "salary"]
    decision = verify_table(df, QI, [KAnonymity(k=2)], expected_columns=expected)
    assert not decision.passed
    assert decision.reasons == ["undeclared column(s) in the release: ['notes']"]
    assert verify_table(six_rows(), QI, [KAnonymity(k=2)], expected_columns=expected).passed


def test_missing_expected_column_blocks() -> None:
    expected = ["zip", "age", "disease", "salary", "income"]
    decision = verify_table(six_rows(), QI, [KAnonymity(k=2)], expected_columns=expected)
    assert not decision.passed
    assert decision.reasons == ["column(s) missing from the release: ['income']"]


@pytest.mark.parametrize(
    ("qi", "model", "absent"),
    [
        (["zip", "sex"], KAnonymity(k=2), ["sex"]),
        (QI, DistinctLDiversity(column="income", l=2), ["income"]),
    ],
)
def test_quasi_identifier_or_sensitive_column_absent_cannot_be_verified(qi, model, absent) -> None:
    decision = verify_table(six_rows(), qi, [model])
    assert not decision.passed
    assert decision.reasons == [f"cannot verify: columns not in the release: {absent}"]
    assert "achieved" not in decision.measurements


# --------------------------------------------------------------------------------------------
# Suppression limit


def test_too_many_suppressed_records_blocks_with_the_numbers() -> None:
    decision = verify_table(six_rows(), QI, [KAnonymity(k=3)], input_rows=10,
                            suppression_limit=0.2)  # fmt: skip
    assert not decision.passed
    assert decision.reasons == ["4 records suppressed, more than the limit of 2 (20.00% of 10)"]
    m = decision.measurements
    assert (m["suppressed"], m["suppression_allowed"], m["input_rows"]) == (4, 2, 10)


def test_suppression_within_the_limit_passes() -> None:
    decision = verify_table(six_rows(), QI, [KAnonymity(k=3)], input_rows=10,
                            suppression_limit=0.4)  # fmt: skip
    assert decision.passed
    assert decision.measurements["suppressed"] == 4
    assert decision.measurements["suppression_allowed"] == 4


def test_suppression_allowance_is_floored_but_robust_to_float_error() -> None:
    # 0.29 * 100 == 28.999999999999996 in floating point: the allowance is still 29
    df = pd.DataFrame({"zip": ["1"] * 71})
    decision = verify_table(df, ["zip"], [KAnonymity(k=2)], input_rows=100,
                            suppression_limit=0.29)  # fmt: skip
    assert decision.measurements["suppression_allowed"] == 29
    assert decision.passed
    # 0.5 * 11 = 5.5 -> 5 records may go; 0.3 * 9 = 2.7 -> 2
    odd = verify_table(six_rows(), QI, [KAnonymity(k=3)], input_rows=11, suppression_limit=0.5)
    assert odd.measurements["suppression_allowed"] == 5
    assert odd.passed
    tight = verify_table(six_rows(), QI, [KAnonymity(k=3)], input_rows=9, suppression_limit=0.3)
    assert tight.measurements["suppression_allowed"] == 2
    assert tight.reasons == ["3 records suppressed, more than the limit of 2 (30.00% of 9)"]


def test_zero_suppression_limit_by_default() -> None:
    decision = verify_table(six_rows(), QI, [KAnonymity(k=3)], input_rows=7)
    assert not decision.passed
    assert decision.reasons == ["1 records suppressed, more than the limit of 0 (0.00% of 7)"]


def test_more_rows_than_the_input_blocks() -> None:
    decision = verify_table(six_rows(), QI, [KAnonymity(k=3)], input_rows=5)
    assert not decision.passed
    assert decision.reasons == ["the release has more rows (6) than the input (5)"]


# --------------------------------------------------------------------------------------------
# Empty and unreadable releases


def test_empty_release_is_blocked() -> None:
    empty = six_rows().iloc[0:0]
    decision = verify_table(empty, QI, [KAnonymity(k=2), DistinctLDiversity(column="disease", l=2)])
    assert not decision.passed
    assert decision.reasons == ["the release has no rows"]
    assert decision.measurements["classes"] == 0
    assert all(math.isnan(v) for v in decision.measurements["achieved"].values())


def test_empty_release_file_is_blocked(tmp_path: Path) -> None:
    path = tmp_path / "release.csv"
    path.write_text("zip,age,disease\n")
    decision = verify_release(path, QI, [KAnonymity(k=2)])
    assert not decision.passed
    assert "the release has no rows" in decision.reasons


def test_missing_file_is_blocked_not_raised(tmp_path: Path) -> None:
    decision = verify_release(tmp_path / "nope.csv", QI, [KAnonymity(k=2)])
    assert isinstance(decision, GateDecision)
    assert not decision.passed
    assert len(decision.reasons) == 1
    assert "release file not found" in decision.reasons[0]
    assert "nope.csv" in decision.reasons[0]
    assert decision.measurements == {}


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("release.csv", b"zip,age\n130**,<30\n148**,>=40,extra,cells\n"),  # ragged rows
        ("release.parquet", b"this is not a parquet file"),
        ("release.csv", b"\x00\x01\x02\xff\xfe binary"),  # not UTF-8
    ],
)
def test_unreadable_file_is_blocked_not_raised(tmp_path: Path, name: str, content: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    decision = verify_release(path, QI, [KAnonymity(k=2)])
    assert not decision.passed
    assert len(decision.reasons) == 1
    assert decision.reasons[0].startswith(f"cannot read release {path}")
    assert decision.measurements == {}


def test_directory_instead_of_file_is_blocked(tmp_path: Path) -> None:
    decision = verify_release(tmp_path, QI, [KAnonymity(k=2)])
    assert not decision.passed
    assert "cannot read release" in decision.reasons[0]


def test_read_release_raises_verification_error(tmp_path: Path) -> None:
    with pytest.raises(VerificationError, match="not found"):
        read_release(tmp_path / "missing.csv")


# --------------------------------------------------------------------------------------------
# Releases are read back as text


def test_cells_are_compared_as_text(tmp_path: Path) -> None:
    # As numbers, "02139" and "2139" would merge into one class of four.
    df = pd.DataFrame({"zip": ["02139", "02139", "2139", "2139"], "d": ["NA", "x", "NA", "y"]})
    path = _write_csv(tmp_path, df)
    released = read_release(path)
    assert released["zip"].tolist() == ["02139", "02139", "2139", "2139"]
    assert released["d"].tolist() == ["NA", "x", "NA", "y"]  # "NA" is a value, not missing
    decision = verify_release(path, ["zip"], [KAnonymity(k=2), DistinctLDiversity(column="d", l=2)])
    assert decision.passed
    assert decision.measurements["classes"] == 2
    assert decision.measurements["achieved"]["2-anonymity"] == 2.0


def test_parquet_and_csv_releases_measure_the_same(tmp_path: Path) -> None:
    models = [KAnonymity(k=2), EntropyLDiversity(column="disease", l=1.5),
              TCloseness(column="salary", t=0.5, distance="ordered")]  # fmt: skip
    csv = verify_release(_write_csv(tmp_path, six_rows()), QI, models)
    parquet_path = tmp_path / "release.parquet"
    six_rows().to_parquet(parquet_path, index=False)
    parquet = verify_release(parquet_path, QI, models)
    assert csv.passed and parquet.passed
    for key, value in csv.measurements["achieved"].items():
        assert parquet.measurements["achieved"][key] == pytest.approx(value)


# --------------------------------------------------------------------------------------------
# Hand-computed levels of the l-diversity and t-closeness models on six_rows()


@pytest.fixture(params=["memory", "csv"])
def six(request, tmp_path: Path):
    """Run the gate on six_rows(), in memory or read back from a CSV file (all text)."""

    def run(models):
        if request.param == "memory":
            return verify_table(six_rows(), QI, models)
        return verify_release(_write_csv(tmp_path, six_rows()), QI, models)

    return run


def test_distinct_l_diversity_level(six) -> None:
    decision = six([DistinctLDiversity(column="disease", l=2)])
    assert decision.passed
    assert decision.measurements["achieved"]["distinct-2-diversity(disease)"] == 2.0


def test_entropy_l_diversity_level(six) -> None:
    # A: H = -(2/3 ln 2/3 + 1/3 ln 1/3), exp(H) = 3 / 2^(2/3) ~ 1.8899; B: exp(ln 3) = 3
    expected = 3 / 2 ** (2 / 3)
    passing = six([EntropyLDiversity(column="disease", l=1.8)])
    assert passing.passed
    assert passing.measurements["achieved"]["entropy-1.8-diversity(disease)"] == pytest.approx(
        expected, rel=1e-12
    )
    failing = six([EntropyLDiversity(column="disease", l=1.9)])
    assert not failing.passed
    assert failing.reasons == [
        "entropy-1.9-diversity(disease) not met: the release reaches 1.88988"
    ]


def test_entropy_l_diversity_exactly_at_the_bound_passes() -> None:
    # Each class is 50/50 over two values: entropy is exactly ln 2, which is 2-diverse.
    df = pd.DataFrame({"zip": ["a", "a", "b", "b"], "d": ["x", "y", "y", "z"]})
    model = EntropyLDiversity(column="d", l=2)
    decision = verify_table(df, ["zip"], [model])
    assert decision.passed
    assert decision.measurements["achieved"][str(model)] == pytest.approx(2.0, rel=1e-12)


def test_recursive_cl_diversity_level(six) -> None:
    # l=2: A counts (2,1) -> 2/1 = 2; B (1,1,1) -> 1/(1+1) = 0.5; the table reaches max = 2
    holds = six([RecursiveCLDiversity(column="disease", c=3, l=2)])
    assert holds.passed
    assert holds.measurements["achieved"]["recursive-(3,2)-diversity(disease)"] == 2.0
    # the condition is strict: r1 < c * tail fails when the ratio equals c
    strict = six([RecursiveCLDiversity(column="disease", c=2, l=2)])
    assert not strict.passed
    # l=3: A has only two distinct values, so its tail r3 + ... is empty -> infinite ratio
    three = six([RecursiveCLDiversity(column="disease", c=5, l=3)])
    assert not three.passed
    assert three.measurements["achieved"]["recursive-(5,3)-diversity(disease)"] == math.inf


def test_t_closeness_equal_distance_level(six) -> None:
    # disease, A: 0.5 * (|2/3 - 1/2| + |1/3 - 1/3| + |0 - 1/6|) = 1/6; B: 1/6 likewise.
    # salary,  A: 0.5 * (1/3 + 0 + 1/3) = 1/3
    models = [TCloseness(column="disease", t=0.2), TCloseness(column="salary", t=0.3)]
    decision = six(models)
    achieved = decision.measurements["achieved"]
    assert achieved["0.2-closeness(disease, equal distance)"] == pytest.approx(1 / 6)
    assert achieved["0.3-closeness(salary, equal distance)"] == pytest.approx(1 / 3)
    assert decision.reasons == ["0.3-closeness(salary, equal distance) not met: the release "
                                "reaches 0.333333"]  # fmt: skip


def test_t_closeness_equal_distance_bound_is_inclusive(six) -> None:
    assert six([TCloseness(column="disease", t=1 / 6)]).passed


def test_t_closeness_ordered_distance_orders_numbers_numerically(six) -> None:
    # salary values 9 < 10 < 30, m = 3. A: p - q = (1/3, 0, -1/3), cumsum (1/3, 1/3, 0),
    # EMD = (1/3 + 1/3) / (m - 1) = 1/3; B symmetric. In text order it would be 1/6.
    model = TCloseness(column="salary", t=0.25, distance="ordered")
    decision = six([model])
    assert decision.measurements["achieved"][str(model)] == pytest.approx(1 / 3)
    assert not decision.passed
    assert six([TCloseness(column="salary", t=1 / 3, distance="ordered")]).passed


def test_class_stats_of_counts_by_class() -> None:
    stats = class_stats_of(six_rows(), QI, ["disease"])
    assert stats.sizes.tolist() == [3, 3]
    assert list(stats.ordered_values["disease"]) == ["cancer", "cold", "flu"]
    assert stats.histograms["disease"].tolist() == [[0, 1, 2], [1, 1, 1]]
    assert stats.overall["disease"].tolist() == pytest.approx([1 / 6, 1 / 3, 1 / 2])


def test_text_codes_of_a_text_or_integer_column_count_distinct_cells_first(shared_data) -> None:
    """The in-memory class statistics (utility metrics, the Python API's gate) code a text or
    integer column from its distinct cells (issue 18: a Python string per row cost 60 s of
    the utility stage at 1M rows): exactly the codes and texts of the per-cell reading."""
    import numpy as np

    from privgate.core import gate as core_gate
    from privgate.core import stages
    from privgate.core.anonymize import SearchSetup
    from privgate.core.encoding import factorize
    from privgate.core.policy import load_policy

    shared_data("arx/adult.csv")
    policy = load_policy(Path(__file__).resolve().parents[2] / "policies" / "adult.yaml")
    frame = stages.ingest(policy).frame
    (table,) = stages.anonymize(frame, SearchSetup.from_policy(policy))
    release = table.frame.copy()
    release.iloc[::40, release.columns.get_loc("workclass")] = pd.NA
    columns = [release[c] for c in release.columns]
    columns.append(pd.Series([39, None, 7, 39, -1], dtype="Int64"))
    columns.append(pd.Series([3, 1, 2, 1], dtype="int64"))
    for column in columns:
        assert core_gate._text_exact_dtype(column), column.dtype
        codes, values = core_gate._text_codes(column)
        want_codes, want_values = factorize(core_gate._as_text(column))
        assert np.array_equal(codes, want_codes) and codes.dtype == np.int32
        assert values.tolist() == want_values.tolist()
    for other in (pd.Series([1, 1.0, "1", True], dtype=object), pd.Series([0.0, -0.0])):
        assert not core_gate._text_exact_dtype(other)  # equal values, different texts


def test_a_coded_release_is_grouped_in_ranges_into_the_serial_classes(monkeypatch):
    """From PARALLEL_ROWS rows (lowered here) a release read as codes is keyed and hashed one
    range per core: the same class ids, first rows and decision (k, distinct l, sizes) as the
    serial pass, with missing cells in the quasi-identifiers."""
    import privgate.core.gate as core_gate
    from privgate.core.columnar import TextCodes

    rng = np.random.default_rng(5)
    n = 30_000

    def column(name: str, k: int, missing: bool) -> TextCodes:
        values = np.array([f"{name}{i}" for i in range(k)], dtype=object)
        return TextCodes(rng.integers(-1 if missing else 0, k, n).astype(np.int8), values)

    table = {"a": column("a", 3, True), "b": column("b", 40, False), "c": column("c", 5, True)}
    table["s"] = column("s", 4, False)
    qis, models = ["a", "b", "c"], [KAnonymity(k=2), DistinctLDiversity(column="s", l=2)]
    serial = core_gate._classes(table, qis)
    serial_decision = verify_table(table, qis, models, input_rows=n + 50, suppression_limit=0.01)
    used = []
    ranged_groups = core_gate.hash_groups
    monkeypatch.setattr(core_gate, "PARALLEL_ROWS", 1)
    monkeypatch.setattr(
        core_gate, "hash_groups", lambda *a, **k: used.append(1) or ranged_groups(*a, **k)
    )
    ranged = core_gate._classes(table, qis)
    assert used, "the ranged grouping was not used"
    for got, want in zip(ranged, serial, strict=True):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    decision = verify_table(table, qis, models, input_rows=n + 50, suppression_limit=0.01)
    assert decision.to_dict() == serial_decision.to_dict()
    combinations = np.unique(np.column_stack([table[q].codes for q in qis]), axis=0)
    assert decision.measurements["classes"] == len(combinations)


@pytest.mark.parametrize("rows", [0, 1, 1000, (1 << 20) + 7])
def test_group_rows_is_np_unique_on_either_side_of_the_hash_threshold(rows):
    """The gate's grouping by hash (from HASH_ROWS rows) gives np.unique's class ids (in the
    keys' order) and first rows, on keys with negative, repeated and far-apart values."""
    rng = np.random.default_rng(rows)
    key = rng.integers(-50, 5000, rows).astype(np.int64) * 7_919_000_011
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    got_ids, got_first = group_rows(key)
    assert np.array_equal(got_ids, inverse.reshape(-1))
    assert np.array_equal(got_first, first)


def _release_of_few_lines(path: Path, n_rows: int, seed: int) -> None:
    """A written release of few distinct lines (QI cells with missing ones, a numeric range
    column, a sensitive column with a missing value), in a random row order."""
    rng = np.random.default_rng(seed)
    zips = np.array(["130**", "148**", "", "1****"], dtype=object)
    ages = np.array(["<30", ">=40", "30-39", ""], dtype=object)
    years = np.array(["20-29", "30-39", "40-49"], dtype=object)
    diseases = np.array(["flu", "cold", "cancer", ""], dtype=object)
    rows = [
        f"{zips[rng.integers(4)]},{ages[rng.integers(4)]},{years[rng.integers(3)]},"
        f"{diseases[rng.integers(4)]}"
        for _ in range(40)
    ]
    picks = rng.integers(0, len(rows), n_rows)
    path.write_text("zip,age,years,disease\n" + "".join(rows[i] + "\n" for i in picks))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gate_measuring_a_release_as_its_distinct_lines_measures_what_its_rows_give(
    tmp_path, seed, monkeypatch
):
    """verify_release reads a CSV release as its distinct lines and measures them, each
    weighing its count of rows: the decision (reasons and every measurement: k, l, t, rows,
    suppression, the marginals', labels' and numeric ranges' reasons) is that of the reference
    reader's rows measured row by row; and the lines are what is measured."""
    import privgate.core.gate as gate
    from privgate.core.marginals import TextCounts, text_counts

    path = tmp_path / "release.csv"
    _release_of_few_lines(path, 3_000, seed)
    models = [
        KAnonymity(k=40),
        DistinctLDiversity(column="disease", l=2),
        EntropyLDiversity(column="disease", l=1.5),
        TCloseness(column="disease", t=0.4),
    ]
    rows = read_release(path)  # the standard library's reader, row by row
    coded = read_release_codes(path)
    marginals = {name: text_counts(c.codes, c.values) for name, c in coded.items()}
    zips = marginals["zip"]
    short = zips.counts - 3 * (zips.texts == "130**")  # 3 cells over
    marginals["zip"] = TextCounts(zips.texts, short, zips.missing)
    ages = np.repeat([22.0, 35.0, 44.0, np.nan], [900, 1_100, 1_000 - 50 * seed, 10])
    limits = {
        "input_rows": 3_200,
        "suppression_limit": 0.1,
        "reference": {"disease": {"flu": 1_000, "cold": 900, "cancer": 700, None: 600, "x": 9}},
        "marginals": marginals,
        "label_sets": {"age": {"<30", ">=40", None}},  # "30-39" is no label of the input's
        "input_numbers": {"years": (ages, None)},
    }
    seen = []
    stats_of = gate.class_stats_of

    def spy(table, *args, **kwargs):
        seen.append((len(next(iter(table.values()))), args[3] if len(args) > 3 else None))
        return stats_of(table, *args, **kwargs)

    monkeypatch.setattr(gate, "class_stats_of", spy)
    decision = verify_release(path, QI, models, expected_rows=3_000, **limits)
    assert seen[0][0] <= 40 and seen[0][1] is not None  # the distinct lines, weighted
    expected = verify_table(rows, QI, models, **limits)
    assert not decision.passed
    assert len(decision.reasons) >= 3  # the marginal, the label and more
    assert decision.reasons == expected.reasons
    assert decision.measurements == expected.measurements
    assert decision.measurements["rows"] == 3_000

    lines = gate._read_release_lines(path)
    assert lines.counts is not None and int(lines.counts.sum()) == 3_000
    by_lines = stats_of(lines.columns, QI, ["disease"], weights=lines.counts)
    by_rows = stats_of(coded, QI, ["disease"])
    assert np.array_equal(by_lines.sizes, by_rows.sizes)
    assert np.array_equal(by_lines.histograms["disease"], by_rows.histograms["disease"])
    assert list(by_lines.ordered_values["disease"]) == list(by_rows.ordered_values["disease"])


def test_gate_refuses_row_counts_it_cannot_apply(tmp_path):
    """Weights of another length than the table, or with persons, are refused instead of
    measuring another table."""
    import privgate.core.gate as gate

    path = tmp_path / "release.csv"
    _release_of_few_lines(path, 500, 3)
    lines = gate._read_release_lines(path)
    with pytest.raises(ValueError, match="one count per row"):
        class_stats_of(lines.columns, QI, ["disease"], weights=lines.counts[1:])
    with pytest.raises(ValueError, match="together"):
        verify_table(lines.columns, QI, [KAnonymity(k=2)], persons=["p"], row_counts=lines.counts)


def test_a_written_release_verified_with_each_rows_person_is_read_as_rows(tmp_path):
    """A person-keyed release is verified with each written row's person, aligned with the
    rows: c1f359e read every CSV release as its distinct lines and verify_table refused the
    persons beside line counts (ValueError), so every person-keyed release flow crashed in
    its gate. Read as rows, 3 admissions of 2 patients are one class of 2 persons."""
    from privgate.core.gate import verify_release
    from privgate.core.privacy import KAnonymity

    path = tmp_path / "release.csv"
    path.write_text("ward,age\nA,30-39\nA,30-39\nA,30-39\nB,40-49\nB,40-49\n", encoding="utf-8")
    persons = np.array(["p1", "p1", "p2", "p3", "p4"], dtype=object)
    decision = verify_release(path, ["ward", "age"], [KAnonymity(k=2)], persons=persons)
    assert decision.passed, decision.reasons
    assert decision.measurements["persons"] == 4
    assert decision.measurements["min_class_size"] == 2
    blocked = verify_release(path, ["ward", "age"], [KAnonymity(k=3)], persons=persons)
    assert not blocked.passed and blocked.measurements["min_class_size"] == 2
