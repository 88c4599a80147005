"""The fast attacks return exactly what the attacks computed one predicate, one row at a time.

The reference is the previous implementation itself, kept verbatim in
``attacks_reference.py`` (commit 27831ac). For several seeds, on an Adult release
generalized by the optimal search, on a leaky raw "synthetic" Adult release and on a small
table with missing and numeric cells (ranges, half-open ranges, ``*``, a hierarchy), both must
write the same predicates in the same order, count the same successes on the released and the
control records, apply the same control-size correction, report the same details, and leave
the generator in the same state (so every later attack of :func:`run_attacks` draws the same).
The Adult cases are ``slow`` (the session's Adult release and the reference's 20,000 attempts);
the small table runs in ``make test-fast``.
The random draws of the attempts are checked on their own against ``rng.integers`` and
``rng.choice`` called once per attempt, and the nearest released rows of linkability and
inference (summed once per distinct combination of cells) against one pass over every row:
the same rows, ties broken by the same draws.
"""

from __future__ import annotations

import attacks_reference as reference
import numpy as np
import pandas as pd
import pytest

from privgate.core.attacks import (
    AttackSettings,
    ReleaseSpace,
    control_mask,
    run_attacks,
    singling_out_attack,
)
from privgate.core.attacks import _evidence as evidence_module
from privgate.core.attacks import _singling_out as singling_module
from privgate.core.attacks import _space as space_module
from privgate.core.attacks._draws import AttemptDraws
from privgate.core.attacks._singling_out import (
    _CellPredicates,
    _dedup_rows,
    _multivariate_queries,
    _ReleaseMatcher,
    _univariate_queries,
)
from privgate.core.attacks._space import _key as value_key_or_none
from privgate.core.attacks._space import cell_keys, row_keys
from privgate.core.hierarchy import IntervalHierarchy

# ----------------------------------------------------------------------------------------------
# The attempts' draws


def _by_calls(rng, n, n_rows, n_columns, width):
    rows, cols = [], []
    for _ in range(n):
        rows.append(int(rng.integers(n_rows)))
        cols.append(rng.choice(n_columns, size=width, replace=False).tolist())
    return rows, cols


@pytest.mark.parametrize(
    ("n_rows", "n_columns", "width"),
    [
        (20_000, 9, 3),  # Adult's released rows and columns
        (7, 4, 4),  # every column: Floyd's first pick has one choice
        (1, 12, 5),  # one row: the row draw reads nothing
        (2, 2, 2),
        (5, 6, 0),  # no column (rng.choice of size 0 reads nothing)
        (1_000_000, 30, 5),
        (3_000_000_000, 9, 3),  # a rejected 32-bit word in about 70 % of the row draws
    ],
)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_attempt_draws_are_the_per_attempt_calls(seed, n_rows, n_columns, width):
    calls = np.random.default_rng(seed)
    bulk = np.random.default_rng(seed)
    for rng in (calls, bulk):
        rng.integers(5)  # a buffered half of a 64-bit output waits in the state
    draws = AttemptDraws(bulk, n_rows, n_columns, width)
    assert draws.bulk
    rows, cols = [], []
    for n in (1, 5, 300, 3000, 0):
        r, c = draws.block(n)
        rows += r.tolist()
        cols += c.tolist()
    r, c = draws.block(777)
    draws.rewind_to(123)  # the attack stops inside a block
    rows += r[:123].tolist()
    cols += c[:123].tolist()
    assert (rows, cols) == _by_calls(calls, len(rows), n_rows, n_columns, width)
    assert bulk.bit_generator.state == calls.bit_generator.state
    assert bulk.random() == calls.random()


def test_attempt_draws_on_another_bit_generator_are_the_calls_themselves():
    calls = np.random.Generator(np.random.MT19937(4))
    other = np.random.Generator(np.random.MT19937(4))
    draws = AttemptDraws(other, 500, 9, 3)
    assert not draws.bulk
    rows, cols = draws.block(200)
    assert (rows.tolist(), cols.tolist()) == _by_calls(calls, 200, 500, 9, 3)
    assert other.random(5).tolist() == calls.random(5).tolist()


# ----------------------------------------------------------------------------------------------
# The attack against the reference


def _key(query) -> list:
    return [reference._cond_key(c) for c in query]


def _same_attack(space, ori, control, columns, seed, **options):
    """Run the attack and the reference with generators of one seed; compare everything."""
    mine, ref = np.random.default_rng(seed), np.random.default_rng(seed)
    outcome, details = singling_out_attack(space, ori, control, columns, rng=mine, **options)
    expected, expected_details = reference.singling_out_attack(
        space, ori, control, columns, rng=ref, **options
    )
    assert outcome.to_dict() == expected.to_dict()
    assert details == expected_details
    assert mine.bit_generator.state == ref.bit_generator.state
    return outcome, details


def _same_queries(space, columns, seed, n_queries, width, max_attempts, mode="multivariate"):
    """The predicates themselves, in order, and the generator afterwards."""
    mine, ref = np.random.default_rng(seed), np.random.default_rng(seed)
    rows = _dedup_rows(space, columns)
    medians_matcher = reference._ReleaseMatcher(space, rows)
    if mode == "multivariate":
        found = _multivariate_queries(space, rows, columns, n_queries, width, max_attempts, mine)
        expected = reference._multivariate_queries(
            space, rows, columns, n_queries, width, max_attempts, ref, medians_matcher
        )
    else:
        found = _univariate_queries(
            space, rows, columns, n_queries, mine, _ReleaseMatcher(space, rows)
        )
        expected = reference._univariate_queries(
            space, rows, columns, n_queries, ref, medians_matcher
        )
    assert [_key(q) for q in found] == [_key(q) for q in expected]
    assert mine.bit_generator.state == ref.bit_generator.state
    return found


@pytest.fixture(scope="module")
def adult_split(adult):
    held = control_mask(len(adult.frame), 0.2, 0)
    return adult.frame[~held].reset_index(drop=True), adult.frame[held].reset_index(drop=True)


@pytest.mark.slow
def test_on_an_adult_k_anonymous_release(adult, adult_k5, adult_split):
    """Generalized labels (age bands, hierarchy groups, '*'): few predicates single out, so
    the attack tries all its attempts, and the control-size correction runs."""
    ori, control = adult_split
    _, release = adult_k5
    columns = list(release.columns)
    space = ReleaseSpace(release, [ori, control], columns, ["age"], adult.hierarchies)
    for seed in (0, 1):
        outcome, details = _same_attack(
            space, ori, control, columns, seed, n_attacks=200, max_attempts=20_000
        )
        assert 0 < details["queries"] < 200 and details["control_size_correction"] is not None
    found = _same_queries(space, columns, 2, 100, 3, 20_000)
    assert 0 < len(found) < 100


@pytest.mark.slow
def test_on_a_leaky_raw_adult_release(adult, adult_split):
    """Raw cells (a copy of the records with 30 % of the cells swapped): most predicates single
    out, the attack stops inside its first blocks, with every column count of a predicate."""
    ori, control = adult_split
    rng = np.random.default_rng(0)
    release = ori.iloc[:3000].copy()
    for column in release.columns:
        swap = rng.random(len(release)) < 0.3
        donors = control[column].to_numpy()[rng.integers(len(control), size=swap.sum())]
        release.loc[swap, column] = donors
    columns = list(release.columns)
    space = ReleaseSpace(release, [ori, control], columns, ["age"], adult.hierarchies)
    for seed, n_cols in ((0, 3), (1, 2), (2, 9)):
        outcome, details = _same_attack(
            space, ori, control, columns, seed, n_attacks=60, n_cols=n_cols
        )
        assert details["queries"] == 60 and outcome.n_success > 0
    _same_attack(space, ori, control, columns, 4, n_attacks=60, mode="univariate")
    _same_queries(space, columns, 5, 300, 4, None)


def _small_table(seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Originals with missing values, a float and an integer column; a release mixing plain
    numbers, closed and half-open ranges, hierarchy labels, '*' and missing cells."""
    rng = np.random.default_rng(seed)

    def originals(n):
        age = rng.integers(18, 80, n).astype(float)
        age[rng.random(n) < 0.1] = np.nan
        income = np.round(rng.gamma(2.0, 15_000.0, n), 0)
        income[rng.random(n) < 0.05] = np.nan
        job = rng.choice(["clerk", "nurse", "teacher", "driver", "cook", None], n)
        city = rng.choice(["Ghent", "Lyon", "Porto", "Turin", "Graz"], n)
        return pd.DataFrame({"age": age, "income": income, "job": job, "city": city})

    ori, control = originals(600), originals(250)
    release = ori.sample(400, random_state=seed).reset_index(drop=True).astype(object)
    decade = (release["age"] // 10 * 10).to_numpy()
    pick = rng.random(len(release))
    release["age"] = [
        None if np.isnan(a) else
        "*" if p < 0.1 else
        f"{int(d)}-{int(d) + 9}" if p < 0.4 else
        f"[{int(d)}, {int(d) + 10})" if p < 0.6 else
        str(int(a))
        for a, d, p in zip(release["age"], decade, pick, strict=True)
    ]  # fmt: skip
    band = release["income"].astype(float) // 10_000 * 10_000
    release["income"] = [
        v if np.isnan(v) or p < 0.5 else f"{int(b)}-{int(b) + 9999}"
        for v, b, p in zip(release["income"], band, rng.random(len(release)), strict=True)
    ]
    release.loc[rng.random(len(release)) < 0.2, "job"] = "*"
    return release, ori, control


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_on_a_small_table_with_missing_and_numeric_cells(seed, monkeypatch):
    release, ori, control = _small_table(seed)
    columns = ["age", "income", "job", "city"]
    hierarchies = {"age": IntervalHierarchy("age", [10, 20])}
    space = ReleaseSpace(release, [ori, control], columns, ["age", "income"], hierarchies)
    if seed % 2:  # no room to keep the conditions' rows: each block packs its own, in batches
        monkeypatch.setattr(_CellPredicates, "_BUDGET", 0)
        monkeypatch.setattr(_CellPredicates, "_BATCH_BYTES", 200)
    for n_cols, max_attempts in ((0, 500), (2, 3000), (3, 3000), (4, None)):
        _same_attack(
            space, ori, control, columns, seed, n_attacks=60, n_cols=n_cols,
            max_attempts=max_attempts,
        )  # fmt: skip
    _same_attack(space, ori, control, columns, seed, n_attacks=40, mode="univariate")
    # No control split: no correction, no control count.
    outcome, details = _same_attack(space, ori, None, columns, seed, n_attacks=30)
    assert outcome.n_control is None and details["control_size_correction"] is None
    _same_queries(space, columns, seed, 80, 3, 2000)


def _evidence(release, ori, control, columns, hierarchies, settings) -> dict:
    evidence = run_attacks(
        release, ori, control, columns, numeric=["age"], hierarchies=hierarchies,
        settings=settings,
    ).to_dict()  # fmt: skip
    del evidence["details"]["seconds"]
    return evidence


def _patch_in_the_reference(monkeypatch) -> None:
    """Make privgate compute as at 27831ac: the reference's singling-out attack and nearest
    rows, every value of a released column keyed on its own, rows compared with
    ``np.unique(axis=0)`` and Python tuples (``row_keys`` giving up sends every caller there)."""
    monkeypatch.setattr(evidence_module, "singling_out_attack", reference.singling_out_attack)
    monkeypatch.setattr(ReleaseSpace, "nearest", reference.nearest)
    monkeypatch.setattr(
        space_module, "cell_keys", lambda values: values.map(value_key_or_none).astype(object)
    )
    for module in (evidence_module, space_module, singling_module):
        monkeypatch.setattr(module, "row_keys", lambda cells: None)


@pytest.mark.slow
def test_run_attacks_gives_the_reference_evidence(adult_k5, adult, adult_split, monkeypatch):
    """The whole evidence (every attack, count, rate, interval and detail, the unique exact
    matches) of the fast attacks and of the reference, on Adult's k-anonymous release and on
    raw records (a copy of part of the control)."""
    ori, control = adult_split
    _, release = adult_k5
    columns = list(release.columns)
    settings = AttackSettings(n_attacks=100, seed=3, secrets=("salary-class",), max_attempts=5000)
    raw = control.iloc[:3000]
    fast = [
        _evidence(frame, ori, control, columns, adult.hierarchies, settings)
        for frame in (release, raw)
    ]
    _patch_in_the_reference(monkeypatch)
    for frame, evidence in zip((release, raw), fast, strict=True):
        assert _evidence(frame, ori, control, columns, adult.hierarchies, settings) == evidence
    assert fast[1]["unique_exact_match"]["control"]["matched"] > 0


@pytest.mark.parametrize("seed", [0, 1])
def test_run_attacks_gives_the_reference_evidence_on_a_small_table(seed, monkeypatch):
    release, ori, control = _small_table(seed)
    columns = ["age", "income", "job", "city"]
    hierarchies = {"age": IntervalHierarchy("age", [10, 20])}
    settings = AttackSettings(n_attacks=50, seed=seed, max_attempts=2000, n_neighbors=1 + seed)

    def evidence(frame):
        out = run_attacks(
            frame, ori, control, columns, numeric=["age", "income"], hierarchies=hierarchies,
            settings=settings,
        ).to_dict()  # fmt: skip
        del out["details"]["seconds"]
        return out

    frames = (release, ori.iloc[:300].astype({"age": "Int64"}))  # the second leaks records
    fast = [evidence(frame) for frame in frames]
    _patch_in_the_reference(monkeypatch)
    assert [evidence(frame) for frame in frames] == fast
    assert fast[1]["unique_exact_match"]["matched"] > 0


# ----------------------------------------------------------------------------------------------
# Nearest released rows (linkability, inference)


def _same_nearest(space, targets_frame, column_sets, seed):
    targets = space.encode(targets_frame)
    for columns in column_sets:
        for k in (1, 3):
            mine, ref = np.random.default_rng(seed), np.random.default_rng(seed)
            found = space.nearest(targets, columns, k, mine)
            expected = reference.nearest(space, targets, columns, k, ref)
            assert found.tolist() == expected.tolist(), (columns, k)
            assert mine.bit_generator.state == ref.bit_generator.state


@pytest.mark.slow
def test_nearest_rows_on_adult_releases(adult, adult_k5, adult_split):
    """The k-anonymous release (many ties: identical generalized rows) and the raw records."""
    ori, control = adult_split
    _, release = adult_k5
    columns = list(release.columns)
    halves = [columns[:5], columns[5:], columns[:-1], ["age"], ["sex", "race"]]
    for seed, frame in enumerate((release, control.iloc[:5000])):
        space = ReleaseSpace(frame, [ori, control], columns, ["age"], adult.hierarchies)
        _same_nearest(space, ori.sample(40, random_state=seed), halves, seed)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_nearest_rows_on_a_small_table_with_missing_and_numeric_cells(seed):
    release, ori, control = _small_table(seed)
    columns = ["age", "income", "job", "city"]
    hierarchies = {"age": IntervalHierarchy("age", [10, 20])}
    space = ReleaseSpace(release, [ori, control], columns, ["age", "income"], hierarchies)
    targets = pd.concat([ori.iloc[:40], control.iloc[:40]], ignore_index=True)
    _same_nearest(space, targets, [columns, ["age", "job"], ["income"], ["city"], []], seed)


# ----------------------------------------------------------------------------------------------
# Keys of released cells and of rows


@pytest.mark.parametrize(
    "values",
    [
        pd.Series(["a", None, "é", "39", "39.0", "a"], dtype="str"),
        pd.Series(["a", pd.NA, "b", "a"], dtype="string"),
        pd.Series(["b", None, "a"], dtype="string[pyarrow]"),
        pd.Series([1, None, 39, 1], dtype="Int64"),
        pd.Series([1.0, None, 39.5], dtype="Float64"),
        pd.Series([1.0, np.nan, 39.5, -0.0, 0.0, 39.0]),
        pd.Series([1.0, np.nan, 2.5], dtype="float32"),
        pd.Series([3, 1, 3], dtype="uint8"),
        pd.Series([1, None, 2], dtype="int64[pyarrow]"),
        pd.Series([True, False, True]),
        pd.Series([True, None, True], dtype="boolean"),
        pd.Series([True, 1, 1.0, "1", None, np.nan, "x"], dtype=object),
        pd.Series(["x", None, "y"], dtype="category"),
        pd.Series(pd.to_datetime(["2020-01-01", None, "2020-01-01"])),
    ],
    ids=lambda values: str(values.dtype),
)
def test_cell_keys_are_the_keys_of_each_value(values):
    """Keyed once per distinct value or each on its own: the same cells, in the same order."""
    fast = pd.factorize(cell_keys(values), use_na_sentinel=True)
    each = pd.factorize(values.map(value_key_or_none).astype(object), use_na_sentinel=True)
    assert fast[0].tolist() == each[0].tolist() and list(fast[1]) == list(each[1])


def test_row_keys_tell_rows_apart_exactly_as_unique_rows():
    rng = np.random.default_rng(0)
    cells = rng.integers(0, [3, 50, 2, 7000], size=(5000, 4))
    keys = row_keys(cells)
    _, first_rows = np.unique(cells, axis=0, return_index=True)
    _, first_keys = np.unique(keys, return_index=True)
    assert np.sort(first_rows).tolist() == np.sort(first_keys).tolist()
    assert row_keys(np.full((3, 4), 2**20)) is None  # 63 bits are not enough: the caller sorts
    assert row_keys(np.zeros((0, 2), dtype=np.int64)).tolist() == []
