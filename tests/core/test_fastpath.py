"""`privgate anonymize`: the engine alone (no Prefect) on real Adult, and what it refuses."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from adult_reference import ADULT_QI
from pycanon import anonymity

from privgate.core.publish import staging_owner
from privgate.flows.cli import main

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # whole Adult through both engines
def test_engine_only_release_is_verified_k_anonymous(shared_data, tmp_path, capsys):
    shared_data("arx/adult.csv")
    out = tmp_path / "release.csv"
    code = main(
        ["anonymize", str(REPO / "policies" / "adult.yaml"), "--output", str(out), "--k", "10"]
    )
    shown = capsys.readouterr().out
    assert code == 0, shown
    assert "gate: PASSED" in shown
    release = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert anonymity.k_anonymity(release, ADULT_QI) >= 10
    assert 30162 - len(release) <= int(0.02 * 30162)


@pytest.mark.parametrize(
    ("policy", "fragment"),
    [
        ("adult-rfka.yaml", "algorithm.name rfka is not available in `privgate anonymize`"),
        ("adult-tiered.yaml", "algorithm.name tiered is not available"),
        ("adult-dp.yaml", "a differential_privacy policy is not available"),
    ],
)
def test_algorithms_beyond_full_domain_are_refused_by_name(
    shared_data, tmp_path, capsys, policy, fragment
):
    shared_data("arx/adult.csv")
    out = tmp_path / "release.csv"
    assert main(["anonymize", str(REPO / "policies" / policy), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert fragment in err and "use `privgate run`" in err
    assert not out.exists()


@pytest.mark.slow  # whole Adult through both engines
@pytest.mark.parametrize("k", [2, 5, 50])
def test_columnar_engine_releases_what_the_row_engine_releases(shared_data, tmp_path, k):
    """`privgate anonymize` runs on codes (issue 18); its release is, row for row up to order,
    the one the in-memory engine makes from the text cells: same levels, same suppressed
    records, same cells."""
    from privgate.core.anonymize import (
        SearchInput,
        full_domain_setup,
        make_algorithm,
        release_columns,
    )
    from privgate.core.fastpath import anonymize_csv
    from privgate.core.policy import load_policy
    from privgate.core.textcsv import read_text_columns

    shared_data("arx/adult.csv")
    policy = load_policy(REPO / "policies" / "adult.yaml").with_overrides(**{"privacy.k": k})
    decision, summary = anonymize_csv(policy, tmp_path / "release.csv", shuffle_seed=1)
    assert decision.passed

    setup = full_domain_setup(policy, "test")
    spec = policy.input
    text = read_text_columns(
        spec.path, spec.delimiter, spec.encoding, spec.header, spec.missing_values
    )
    result = make_algorithm(setup).anonymize(SearchInput.prepare(text, setup))
    assert summary["levels"] == result.levels
    assert summary["suppressed"] == result.n_suppressed
    expected = release_columns(text, result, setup.released_columns)
    written = read_text_columns(tmp_path / "release.csv")
    assert list(written) == list(expected)

    def rows(columns):
        return sorted(zip(*(c.tolist() for c in columns.values()), strict=True))

    assert rows(written) == rows(expected)


@pytest.mark.slow  # whole Adult through both engines
def test_columnar_engine_writes_a_missing_quasi_identifier_kept_at_level_0_as_missing(
    shared_data, tmp_path
):
    """A missing workclass ('?') kept at level 0 is released as an empty cell, as the row
    engine releases it; the columnar engine wrote the text "None" (a category no input held)."""
    from privgate.core.anonymize import (
        SearchInput,
        full_domain_setup,
        make_algorithm,
        release_columns,
    )
    from privgate.core.fastpath import anonymize_csv
    from privgate.core.policy import load_policy
    from privgate.core.textcsv import read_text_columns, write_text_columns

    cells = read_text_columns(shared_data("arx/adult.csv"), delimiter=";")
    cells["workclass"][::97] = "?"
    data = tmp_path / "adult_missing.csv"
    write_text_columns(data, cells, delimiter=";")
    policy = load_policy(REPO / "policies" / "adult.yaml").with_overrides(
        **{
            "input.path": str(data),
            "privacy.l_diversity": [{"column": "salary-class", "l": 2}],
        }
    )
    decision, summary = anonymize_csv(policy, tmp_path / "release.csv", shuffle_seed=1)
    assert decision.passed
    assert summary["levels"]["workclass"] == 0  # the missing cells are released as such

    setup = full_domain_setup(policy, "test")
    text = read_text_columns(data, ";", "utf-8", True, ["", "?"])
    result = make_algorithm(setup).anonymize(SearchInput.prepare(text, setup))
    expected = release_columns(text, result, setup.released_columns)
    written = read_text_columns(tmp_path / "release.csv")
    assert None in written["workclass"].tolist()
    assert "None" not in written["workclass"].tolist()

    def rows(columns):
        return sorted(
            zip(
                *(["" if v is None else v for v in c.tolist()] for c in columns.values()),
                strict=True,
            )
        )

    assert list(written) == list(expected)
    assert rows(written) == rows(expected)


def _policy_k5(shared_data):
    from privgate.core.policy import load_policy

    shared_data("arx/adult.csv")
    return load_policy(REPO / "policies" / "adult.yaml").with_overrides(**{"privacy.k": 5})


@pytest.mark.slow  # whole Adult, searched twice
def test_a_written_file_missing_a_whole_class_is_blocked_not_renamed(
    shared_data, tmp_path, monkeypatch
):
    """A writer that loses rows can leave a file that is still k-anonymous (a whole class gone
    looks like more suppression, within the limit): the gate compares the written rows with
    the search's plan, so such a file is blocked and never takes the output's name."""
    import numpy as np

    from privgate.core import fastpath
    from privgate.core.exceptions import GateBlockedError

    policy = _policy_k5(shared_data)
    real_write = fastpath.write_coded_csv
    lost: list[int] = []

    def write_losing_the_smallest_class(path, columns, rows=None, delimiter=","):
        # the rows written are columns[c].codes[rows] (the release's distinct lines and each
        # row's line), or every row of the columns without ``rows``
        rows = np.arange(len(next(iter(columns.values())))) if rows is None else rows
        qis = [columns[q].codes[rows].astype(np.int64) for q in policy.quasi_identifiers]
        key = np.zeros(len(qis[0]), dtype=np.int64)
        for codes in qis:
            key = key * (int(codes.max()) + 2) + codes + 1
        _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
        kept = np.flatnonzero(inverse.reshape(-1) != int(np.argmin(counts)))
        lost.append(int(counts.min()))
        real_write(path, columns, rows[kept], delimiter)

    out = tmp_path / "release.csv"
    unchecked, summary = fastpath.anonymize_csv(policy, out, shuffle_seed=1)
    assert unchecked.passed
    # the limit allows losing the smallest class on top of what the plan suppresses
    assert summary["suppressed"] + unchecked.measurements["min_class_size"] <= int(0.02 * 30162)
    out.unlink()
    monkeypatch.setattr(fastpath, "write_coded_csv", write_losing_the_smallest_class)
    with pytest.raises(GateBlockedError, match="the search's plan releases"):
        fastpath.anonymize_csv(policy, out, shuffle_seed=1)
    assert lost and lost[0] >= 5
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing written, nothing left


@pytest.mark.parametrize("wrong", ["ages_under_salary", "sex_and_race_swapped"])
def test_a_file_whose_columns_are_not_the_inputs_is_blocked(
    shared_data, tmp_path, monkeypatch, wrong
):
    """The gate measured only the quasi-identifier columns: a writer that put the input's
    original ages under ``salary-class`` (every age published exactly), or swapped two
    columns' names, left a file it passed (its named quasi-identifiers stayed 5-anonymous).
    Each written column must hold a sub-multiset of its input column's values (labels at the
    plan's level for a quasi-identifier)."""
    from privgate.core import fastpath
    from privgate.core.columnar import TextCodes, read_coded_csv
    from privgate.core.exceptions import GateBlockedError

    policy = _policy_k5(shared_data)
    spec = policy.input
    ages = read_coded_csv(spec.path, spec.delimiter, missing=spec.missing_values)["age"]
    real_write = fastpath.write_coded_csv

    def wrong_writer(path, columns, rows=None, delimiter=","):
        cells = {name: TextCodes(c.codes[rows], c.values) for name, c in columns.items()}
        if wrong == "ages_under_salary":
            cells["salary-class"] = TextCodes(ages.codes[: len(rows)], ages.values)
        else:
            cells["sex"], cells["race"] = cells["race"], cells["sex"]
        real_write(path, cells, None, delimiter)

    out = tmp_path / "release.csv"
    passed, _ = fastpath.anonymize_csv(policy, out, shuffle_seed=1)
    assert passed.passed and not passed.reasons
    out.unlink()
    monkeypatch.setattr(fastpath, "write_coded_csv", wrong_writer)
    with pytest.raises(GateBlockedError) as info:
        fastpath.anonymize_csv(policy, out, shuffle_seed=1)
    reasons = info.value.decision.reasons
    columns = ["salary-class"] if wrong == "ages_under_salary" else ["sex", "race"]
    assert [r.split(":")[0] for r in reasons] == [f"column {c!r}" for c in columns], reasons
    assert all("not a release of the input" in r for r in reasons)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_marginals_count_an_empty_and_a_missing_cell_as_one():
    import numpy as np

    from privgate.core.hierarchy import taxonomy_hierarchy
    from privgate.core.marginals import (
        TextCounts,
        excess_cells,
        generalized_texts,
        text_counts,
        unknown_texts,
    )

    counts = text_counts(np.array([-1, 0, 1, 1, 2], np.int8), np.array(["", "a", "b"], object))
    assert counts.to_dict() == {None: 2, "a": 2, "b": 1}
    hierarchy = taxonomy_hierarchy("x", {"ab": ["a", "b"], "c": ["c"]})
    values = np.array(["a", "b"], object)  # "c" is in the hierarchy, not in the input
    assert generalized_texts(values, hierarchy, 1) == {"ab", None}
    assert generalized_texts(values, hierarchy, 0) == {"a", "b", None}
    assert unknown_texts(np.array(["ab", "c", ""], object), {"ab", None}) == ["c"]

    def of(found: dict) -> TextCounts:
        texts = np.array(list(found), dtype=object)
        return TextCounts.from_arrays(texts, np.array(list(found.values())))

    allowed = of({"a": 2, "b": 5, None: 1})
    assert excess_cells(of({"a": 3, None: 1}), allowed) == (1, ["a"])
    assert excess_cells(of({"c": 1, "0": 1, "zz": 2}), allowed) == (4, ["0", "c", "zz"])
    assert excess_cells(of({"a": 2, "": 2}), allowed) == (1, [None])
    assert excess_cells(of({"a": 2, "b": 5, None: 1}), allowed) == (0, [])
    assert excess_cells(of({"a": 1}), of({})) == (1, ["a"])


@pytest.mark.parametrize("fails_in", ["write", "verify"])
def test_a_failed_write_or_gate_leaves_no_partial_file(
    shared_data, tmp_path, monkeypatch, fails_in
):
    """A full disk while writing, or an error in the gate, leaves neither the output nor its
    hidden temporary file (a partial release as large as the table, at 10M rows)."""
    from privgate.core import fastpath

    policy = _policy_k5(shared_data).with_overrides(**{"privacy.k": 50})
    real_write = fastpath.write_coded_csv

    def write_then_fill_the_disk(path, columns, rows=None, delimiter=","):
        real_write(path, columns, rows, delimiter)
        raise OSError(28, "No space left on device")

    def gate_fails(*args, **kwargs):
        raise MemoryError("the gate ran out of memory")

    if fails_in == "write":
        monkeypatch.setattr(fastpath, "write_coded_csv", write_then_fill_the_disk)
        expected = OSError
    else:
        monkeypatch.setattr(fastpath, "verify_release", gate_fails)
        expected = MemoryError
    with pytest.raises(expected):
        fastpath.anonymize_csv(policy, tmp_path / "release.csv", shuffle_seed=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_the_verified_file_is_on_disk_before_its_name_says_release(
    shared_data, tmp_path, monkeypatch
):
    """The rename is atomic, but a power loss right after it could leave the release's name on
    blocks never written: the verified staging file is flushed before the rename, and the
    folder's entry after it (a crash cannot be staged in a test; the order of the calls is
    what the guarantee rests on). The staging file's flush runs beside the gate: it is made to
    end only after the gate's verdict, so a rename that did not wait for it comes first."""
    import threading
    import time

    from privgate.core import fastpath

    events: list[str] = []
    real_replace = fastpath.os.replace
    real_verify = fastpath.verify_release
    judged = threading.Event()

    def recording_verify(*args, **kwargs):
        try:
            return real_verify(*args, **kwargs)
        finally:
            judged.set()

    def recording_sync(path):
        beside = threading.current_thread() is not threading.main_thread()
        if beside and Path(path).name.endswith(".tmp"):  # still flushing after the verdict
            assert judged.wait(60)
            time.sleep(0.2)
        events.append(f"sync {Path(path).name}")

    def recording_replace(source, target):
        events.append(f"rename {Path(source).name} -> {Path(target).name}")
        real_replace(source, target)

    monkeypatch.setattr(fastpath, "sync_to_disk", recording_sync)
    monkeypatch.setattr(fastpath.os, "replace", recording_replace)
    monkeypatch.setattr(fastpath, "verify_release", recording_verify)
    policy = _policy_k5(shared_data).with_overrides(**{"privacy.k": 50})
    fastpath.anonymize_csv(policy, tmp_path / "out" / "release.csv", shuffle_seed=1)
    staging = f".release.csv.{staging_owner()}.tmp"
    assert events == [f"sync {staging}", f"rename {staging} -> release.csv", "sync out"]


def test_a_staging_file_left_by_a_killed_run_is_removed_by_the_next(shared_data, tmp_path):
    """A run killed between writing and renaming leaves its hidden staging file (the whole
    unverified release); the next run to the same output removes it once its owner is gone,
    and keeps a live process's, another output's and a recent one it cannot ask about."""
    from privgate.core import fastpath

    host, pid, _ = staging_owner().split(".")
    gone = f"{host}.{_exited_pid()}.1"
    stale = tmp_path / f".release.csv.{gone}.tmp"
    live = tmp_path / f".release.csv.{host}.{pid}.0.tmp"
    foreign = tmp_path / ".release.csv.00000000.1.1.tmp"
    other = tmp_path / f".other.csv.{gone}.tmp"
    for path in (stale, live, foreign, other):
        path.write_text("unverified")
    policy = _policy_k5(shared_data).with_overrides(**{"privacy.k": 50})
    fastpath.anonymize_csv(policy, tmp_path / "release.csv", shuffle_seed=1)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted(["release.csv", live.name, foreign.name, other.name])


def _exited_pid() -> int:
    """The pid of a child that has exited and been reaped."""
    import subprocess

    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


#: Runs `privgate anonymize` in a fresh interpreter and prints which heavy modules it loaded.
#: ``HASH_ROWS = 1`` keeps the gate's hash grouping (pyarrow's, the path of every release of
#: more than 2**14 rows) in the run whatever that threshold becomes.
_IMPORT_PROBE = """
import sys
import privgate.core.gate as gate
gate.HASH_ROWS = 1
from privgate.flows.cli import main
code = main(["anonymize", sys.argv[1], "--output", sys.argv[2]])
print(code, "pandas" in sys.modules, "dask" in sys.modules, "prefect" in sys.modules)
"""


@pytest.mark.slow  # a fresh interpreter searching whole Adult
def test_anonymize_runs_without_importing_pandas(shared_data, tmp_path):
    """`privgate anonymize` reads, searches, writes and verifies on codes; nothing it runs
    needs pandas, whose import is about 48 MiB of the command's peak memory at 1M rows (issue
    18). pyarrow's own numpy conversion imports pandas, so the engine's arrays cross through
    ``privgate.core.arrow_numpy``. Fails on ce22ad3 (pandas came in through core.privacy ->
    core.risk, core.gate -> core.attacks, core.scale's release module and the hash grouping)."""
    import subprocess
    import sys

    shared_data("arx/adult.csv")
    out = tmp_path / "release.csv"
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_PROBE, str(REPO / "policies" / "adult.yaml"), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert done.stdout.split()[-4:] == ["0", "False", "False", "False"], done.stdout
    assert "gate: PASSED" in done.stdout
    assert out.stat().st_size > 0


@pytest.mark.slow  # Adult resampled to 70,000 rows, through both engines
def test_columns_of_many_distinct_texts_are_released_as_the_row_engine_releases_them(
    shared_data, tmp_path
):
    """The command holds each column's codes in the narrowest type its texts allow (int8 for
    Adult's columns) and the distinct tuples in the widest of them: an insensitive column of
    300 texts (int16) and one of a distinct text per row (70,000 > 65,535: int32) are released
    as the row engine releases them, next to Adult's one-byte columns."""
    from adult_reference import write_resampled_adult

    from privgate.core.anonymize import (
        SearchInput,
        full_domain_setup,
        make_algorithm,
        release_columns,
    )
    from privgate.core.fastpath import anonymize_csv
    from privgate.core.policy import load_policy
    from privgate.core.textcsv import read_text_columns, write_text_columns

    data = write_resampled_adult(
        shared_data("arx/adult.csv"), tmp_path / "adult_70k.csv", rows=70_000, seed=5
    )
    cells = read_text_columns(data, delimiter=";")
    n = len(cells["age"])
    rng = np.random.default_rng(5)
    cells["visit"] = np.array([f"visit-{i:03d}" for i in rng.integers(0, 300, n)], dtype=object)
    cells["row"] = np.array([f"r{i:06d}" for i in rng.permutation(n)], dtype=object)
    write_text_columns(data, cells, delimiter=";")
    policy = load_policy(REPO / "policies" / "adult.yaml").with_overrides(
        **{
            "input.path": str(data),
            "columns.visit": {"role": "insensitive"},
            "columns.row": {"role": "insensitive"},
        }
    )
    decision, summary = anonymize_csv(policy, tmp_path / "release.csv", shuffle_seed=3)
    assert decision.passed

    setup = full_domain_setup(policy, "test")
    text = read_text_columns(data, ";", "utf-8", True, ["", "?"])
    result = make_algorithm(setup).anonymize(SearchInput.prepare(text, setup))
    assert summary["levels"] == result.levels
    assert summary["suppressed"] == result.n_suppressed
    expected = release_columns(text, result, setup.released_columns)
    written = read_text_columns(tmp_path / "release.csv")
    assert list(written) == list(expected)
    assert len(set(written["row"].tolist())) == len(written["row"]) > 65_535
    assert len(set(written["visit"].tolist())) > 255

    def rows(columns):
        return sorted(zip(*(c.tolist() for c in columns.values()), strict=True))

    assert rows(written) == rows(expected)


def test_a_large_tables_order_drawn_while_its_rows_are_grouped_is_the_seeded_order(
    shared_data, tmp_path, monkeypatch
):
    """From PARALLEL_ROWS rows (lowered here) the command draws the published order while it
    groups the rows instead of beside the search: a seeded release is the same file, and it
    passes the gate."""
    from privgate.core import fastpath

    policy = _policy_k5(shared_data)
    beside, _ = fastpath.anonymize_csv(policy, tmp_path / "beside.csv", shuffle_seed=4)
    drawn: list[int] = []
    shuffled = fastpath.shuffled_rows
    monkeypatch.setattr(fastpath, "PARALLEL_ROWS", 1)
    monkeypatch.setattr(
        fastpath, "shuffled_rows", lambda n, seed: drawn.append(n) or shuffled(n, seed)
    )
    before, _ = fastpath.anonymize_csv(policy, tmp_path / "before.csv", shuffle_seed=4)
    assert drawn == [30162]
    assert beside.passed and before.passed
    assert (tmp_path / "before.csv").read_bytes() == (tmp_path / "beside.csv").read_bytes()


#: `privgate anonymize` as the console script runs it: ``main()`` reading the command line.
_AS_COMMAND = "import sys; from privgate.flows.cli import main; sys.exit(main())"


@pytest.mark.slow  # fresh interpreters searching whole Adult
def test_the_command_ends_its_process_with_every_line_written(shared_data, tmp_path):
    """Run as a command, `privgate anonymize` ends its process without the interpreter's
    teardown once the release is published: what it printed still reaches a pipe (block
    buffered, so lost without the flush), its exit code is the command's, the release is in
    place and no staging file is left; a refused policy still exits 2 with its message."""
    import os
    import subprocess
    import sys

    shared_data("arx/adult.csv")
    out = tmp_path / "release.csv"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # a pipe's buffer
    done = subprocess.run(
        [sys.executable, "-c", _AS_COMMAND, "anonymize", str(REPO / "policies" / "adult.yaml"),
         "--output", str(out)],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("gate: PASSED") and lines[-1].startswith("seconds: read ")
    assert len(lines) == 4
    assert out.stat().st_size > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release.csv"]

    refused = subprocess.run(
        [sys.executable, "-c", _AS_COMMAND, "anonymize", str(REPO / "policies" / "adult-dp.yaml"),
         "--output", str(tmp_path / "dp.csv")],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert refused.returncode == 2
    assert "a differential_privacy policy is not available" in refused.stderr
    assert not (tmp_path / "dp.csv").exists()
