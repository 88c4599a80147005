"""The heuristic search for wide tables, against the exact optimum, the gate and pycanon.

* On real Adult (8 quasi-identifiers, 6,480 nodes) the search is forced into its heuristic
  mode (``exact_below=0``) and compared with the exact optimum cell by cell.
* On a synthetic 30-quasi-identifier table (3^30 nodes) the exact search refuses and names
  the heuristic; the heuristic's release is checked by the gate and by pycanon, and its loss
  is measured from the released cells (``table_loss``), not from the search's bookkeeping.
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd
import pytest
from adult_reference import ADULT_QI
from pycanon import anonymity

from privgate.core.anonymize import (
    Datafly,
    HeuristicLattice,
    OptimalLattice,
    SearchInput,
    SearchSetup,
    apply_generalization,
    make_algorithm,
    release_table,
)
from privgate.core.encoding import encode_table
from privgate.core.exceptions import AnonymizationError
from privgate.core.gate import verify_table
from privgate.core.hierarchy import IntervalHierarchy, MaskingHierarchy, taxonomy_hierarchy
from privgate.core.metrics import table_loss
from privgate.core.policy import Algorithm
from privgate.core.privacy import DistinctLDiversity, EntropyLDiversity, KAnonymity
from privgate.core.progress import PROGRESS_LOGGER
from privgate.core.wide_data import (
    WIDE_TARGET,
    generate_wide_table,
    wide_attributes,
    wide_hierarchies,
)

pytestmark = pytest.mark.filterwarnings("ignore:In a future version, the keys of `groups`")

SENSITIVE = "salary-class"


@pytest.fixture(scope="module")
def adult_freq(adult):
    """Adult's frequency set over the policy's 8 quasi-identifiers."""
    return encode_table(adult.frame, adult.hierarchies, [SENSITIVE]).frequency_set()


# --------------------------------------------------------------------------------------------
# Adult: the heuristic mode against the exact optimum


@pytest.mark.parametrize("limit", [0.0, 0.02])
@pytest.mark.parametrize("k", [2, 5, 10, 50, 100, 200])
def test_heuristic_mode_reaches_the_exact_optimum_on_adult(adult_freq, k: int, limit: float):
    models = [KAnonymity(k=k)]
    optimum = OptimalLattice(models, limit).search(adult_freq)
    found = HeuristicLattice(models, limit, exact_below=0).search(adult_freq)
    assert found.details["mode"] == "heuristic"
    assert found.details["loss"] <= optimum.details["loss"] * 1.01
    # it cannot beat the optimum: the loss is that of a real, satisfying node
    assert found.details["loss"] >= optimum.details["loss"] - 1e-12
    spent = found.details["evaluated"] - found.details["climb_evaluations"]
    assert 0 <= spent <= found.details["max_evaluations"]
    assert found.n_suppressed <= math.floor(limit * adult_freq.table.n_rows + 1e-9)


def test_a_small_lattice_is_searched_exactly(adult_freq) -> None:
    models = [KAnonymity(k=5)]
    found = HeuristicLattice(models, 0.02).search(adult_freq)
    optimum = OptimalLattice(models, 0.02).search(adult_freq)
    assert found.details["mode"] == "exact" and "6480 nodes" in found.details["why"]
    assert found.algorithm == "heuristic"
    assert found.levels == optimum.levels
    assert np.array_equal(found.suppressed, optimum.suppressed)


def test_the_heuristic_release_of_adult_passes_the_gate_and_pycanon(adult, adult_freq) -> None:
    qis = adult.policy.quasi_identifiers
    models = [KAnonymity(k=10), DistinctLDiversity(column=SENSITIVE, l=2)]
    found = HeuristicLattice(models, 0.02, exact_below=0).search(adult_freq)
    encoded = encode_table(adult.frame, adult.hierarchies, [SENSITIVE])
    release = apply_generalization(adult.frame, encoded, found, [*qis, SENSITIVE])
    release = release.reset_index(drop=True)
    decision = verify_table(
        release, qis, models, input_rows=len(adult.frame), suppression_limit=0.02
    )
    assert decision.passed, decision.reasons
    assert anonymity.k_anonymity(release, qis) >= 10
    assert anonymity.l_diversity(release, qis, [SENSITIVE]) >= 2


@pytest.fixture(scope="module")
def ten_qi_freq(shared_data):
    """UCI Adult's frequency set over 10 quasi-identifiers, read and encoded once per module."""
    from privgate.core.datasets import load_adult
    from privgate.core.hierarchy import ARXHierarchy

    frame = load_adult(shared_data("adult/adult.data")).dropna().reset_index(drop=True)
    hierarchies = {q: ARXHierarchy.from_csv(q, shared_data(f"arx/adult_hierarchy_{q}.csv"))
                   for q in ADULT_QI}  # fmt: skip
    hierarchies["relationship"] = taxonomy_hierarchy(
        "relationship",
        {
            "spouse": ["Husband", "Wife"],
            "other-family": ["Own-child", "Other-relative"],
            "non-family": ["Not-in-family", "Unmarried"],
        },
    )
    hierarchies["hours-per-week"] = IntervalHierarchy("hours-per-week", [5, 10, 20, 40])
    return encode_table(frame, hierarchies, ["income"]).frequency_set()


@pytest.mark.slow
@pytest.mark.parametrize(("k", "limit"), [(2, 0.0), (5, 0.02)])
def test_ten_qis_above_exact_below_reach_the_exact_optimum(ten_qi_freq, k, limit) -> None:
    """UCI Adult with 10 quasi-identifiers (116,640 nodes): the heuristic runs in its own
    mode with its defaults, and the exact search can still list the lattice to compare."""
    freq = ten_qi_freq
    models = [KAnonymity(k=k)]
    found = HeuristicLattice(models, limit).search(freq)
    assert found.details["mode"] == "heuristic" and found.details["nodes"] == 116_640
    optimum = OptimalLattice(models, limit).search(freq)
    assert found.details["loss"] <= optimum.details["loss"] * 1.01


# --------------------------------------------------------------------------------------------
# Random small tables: whatever the heuristic returns passes the gate


def _random_table(seed: int) -> tuple[pd.DataFrame, dict]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(40, 300))
    frame = pd.DataFrame(
        {
            "age": rng.integers(18, 90, n),
            "zip": [f"{v:05d}" for v in rng.integers(10000, 10400, n)],
            "sex": rng.choice(["F", "M"], n),
            "job": rng.choice(list("abcdef"), n),
            "dx": rng.choice(["flu", "cold", "ulcer", "asthma"], n),
        }
    )
    hierarchies = {
        "age": IntervalHierarchy("age", [5, 10, 20, 40]),
        "zip": MaskingHierarchy("zip", 5),
        "sex": MaskingHierarchy("sex", 1),
        "job": taxonomy_hierarchy("job", {"x": ["a", "b", "c"], "y": ["d", "e", "f"]}),
    }
    return frame, hierarchies


@pytest.mark.parametrize("seed", range(12))
def test_random_tables_release_passes_the_gate(seed: int) -> None:
    frame, hierarchies = _random_table(seed)
    rng = np.random.default_rng(1000 + seed)
    k = int(rng.integers(2, 8))
    limit = float(rng.choice([0.0, 0.05, 0.1]))
    models = [KAnonymity(k=k)]
    if seed % 3 == 0:
        models.append(DistinctLDiversity(column="dx", l=2))
    if seed % 3 == 1:  # not monotone: nothing may be pruned
        models.append(EntropyLDiversity(column="dx", l=1.5, estimator="grassberger"))
    encoded = encode_table(frame, hierarchies, ["dx"])
    freq = encoded.frequency_set()
    search = HeuristicLattice(models, limit, max_evaluations=40, exact_below=0)
    try:
        found = search.search(freq)
    except AnonymizationError:
        with pytest.raises(AnonymizationError):  # then no node at all satisfies
            OptimalLattice(models, limit).search(freq)
        return
    if seed % 3 == 1:
        assert found.details["pruned_by_monotonicity"] is False
    release = apply_generalization(frame, encoded, found, list(frame.columns))
    release = release.reset_index(drop=True).astype(str)
    qis = list(hierarchies)
    decision = verify_table(release, qis, models, input_rows=len(frame), suppression_limit=limit)
    assert decision.passed, decision.reasons
    optimum = OptimalLattice(models, limit).search(freq)
    assert found.details["loss"] >= optimum.details["loss"] - 1e-12


def test_a_model_that_is_not_monotone_turns_pruning_off() -> None:
    frame, hierarchies = _random_table(3)
    freq = encode_table(frame, hierarchies, ["dx"]).frequency_set()
    models = [KAnonymity(k=2), EntropyLDiversity(column="dx", l=1.2, estimator="grassberger")]
    found = HeuristicLattice(models, 0.0, exact_below=0).search(freq)
    assert found.details["pruned_by_monotonicity"] is False
    monotone = HeuristicLattice([KAnonymity(k=2)], 0.0, exact_below=0).search(freq)
    assert monotone.details["pruned_by_monotonicity"] is True


# --------------------------------------------------------------------------------------------
# A wide table: 30 quasi-identifiers, 3^30 nodes

WIDE_ROWS, WIDE_K, WIDE_LIMIT = 1000, 5, 0.02


@pytest.fixture(scope="module")
def wide():
    frame = generate_wide_table(WIDE_ROWS)
    hierarchies = wide_hierarchies()
    encoded = encode_table(frame, hierarchies, [WIDE_TARGET])
    return frame, hierarchies, encoded, encoded.frequency_set()


@pytest.fixture(scope="module")
def wide_found(wide):
    *_, freq = wide
    return HeuristicLattice([KAnonymity(k=WIDE_K)], WIDE_LIMIT).search(freq)


def test_the_wide_generator_is_seeded_and_covered_by_its_hierarchies() -> None:
    frame = generate_wide_table(500, n_attributes=30, seed=7)
    assert frame.equals(generate_wide_table(500, n_attributes=30, seed=7))
    assert not frame.equals(generate_wide_table(500, n_attributes=30, seed=8))
    assert list(frame.columns) == [*wide_attributes(30), WIDE_TARGET]
    hierarchies = wide_hierarchies(30)
    assert all(h.height == 2 for h in hierarchies.values())
    encode_table(frame, hierarchies, [WIDE_TARGET])  # raises if a value is not covered
    assert set(frame[WIDE_TARGET]) == {"<=50K", ">50K"}
    # skewed, correlated columns: not every combination is unique, most values not uniform
    assert frame["attr_01"].value_counts(normalize=True).iloc[0] > 0.3


def test_the_optimal_search_refuses_a_wide_lattice_naming_the_heuristic(wide) -> None:
    *_, freq = wide
    with pytest.raises(AnonymizationError, match="use algorithm 'heuristic'") as info:
        OptimalLattice([KAnonymity(k=WIDE_K)], WIDE_LIMIT).search(freq)
    assert "205,891,132,094,649 nodes" in str(info.value)


@pytest.mark.slow
def test_the_wide_release_passes_the_gate_and_pycanon(wide, wide_found) -> None:
    frame, _, encoded, _ = wide
    assert wide_found.details["mode"] == "heuristic"
    assert wide_found.details["nodes"] == 3**30
    release = apply_generalization(frame, encoded, wide_found, list(frame.columns))
    release = release.reset_index(drop=True)
    qis = wide_attributes()
    decision = verify_table(
        release, qis, [KAnonymity(k=WIDE_K)], input_rows=WIDE_ROWS, suppression_limit=WIDE_LIMIT
    )
    assert decision.passed, decision.reasons
    assert anonymity.k_anonymity(release, qis) >= WIDE_K
    assert WIDE_ROWS - len(release) <= math.floor(WIDE_LIMIT * WIDE_ROWS)


@pytest.mark.slow
def test_the_wide_release_loses_less_than_datafly(wide, wide_found) -> None:
    frame, hierarchies, encoded, freq = wide
    qis = wide_attributes()
    greedy = Datafly([KAnonymity(k=WIDE_K)], WIDE_LIMIT).search(freq)
    measured = {}
    for name, found in (("heuristic", wide_found), ("datafly", greedy)):
        release = apply_generalization(frame, encoded, found, list(frame.columns))
        measured[name] = table_loss(frame[qis], release[qis], hierarchies, set())["total"]
    assert measured["heuristic"] < measured["datafly"]
    assert wide_found.details["loss"] == pytest.approx(measured["heuristic"], abs=1e-9)


@pytest.mark.slow
def test_the_search_is_deterministic(wide, wide_found) -> None:
    *_, freq = wide
    again = HeuristicLattice([KAnonymity(k=WIDE_K)], WIDE_LIMIT).search(freq)
    assert again.levels == wide_found.levels
    assert np.array_equal(again.suppressed, wide_found.suppressed)
    drop = {"seconds"}
    assert {k: v for k, v in again.details.items() if k not in drop} == {
        k: v for k, v in wide_found.details.items() if k not in drop
    }


def test_the_budget_counts_evaluations_after_the_climbs(wide) -> None:
    *_, freq = wide
    found = HeuristicLattice([KAnonymity(k=WIDE_K)], WIDE_LIMIT, max_evaluations=5).search(freq)
    assert found.details["evaluated"] - found.details["climb_evaluations"] <= 5
    assert found.details["budget_exhausted"] is True
    # the climbs always complete: never worse than Datafly's node
    assert found.details["loss"] <= found.details["datafly_climb_loss"]


def test_the_contract_runs_it_on_a_wide_table(wide) -> None:
    """Through the registry and the contract, as the stage and the engine-only command run it:
    the release of the wide table passes the gate with the setup's own limits."""
    frame, hierarchies, *_ = wide
    qis = wide_attributes()
    setup = SearchSetup(
        algorithm=Algorithm.HEURISTIC,
        quasi_identifiers=tuple(qis),
        hierarchies=hierarchies,
        models=(KAnonymity(k=WIDE_K),),
        numeric=frozenset(),
        suppression_limit=WIDE_LIMIT,
        released_columns=(*qis, WIDE_TARGET),
        max_evaluations=50,
    )
    algorithm = make_algorithm(setup)
    result = algorithm.anonymize(SearchInput.prepare(frame, setup))
    assert result.algorithm == "heuristic" and result.details["max_evaluations"] == 50
    release = release_table(frame, result, setup.released_columns)
    decision = verify_table(
        release.astype(str), qis, list(setup.models), **setup.gate_limits(WIDE_ROWS)
    )
    assert decision.passed, decision.reasons


def test_progress_lines_name_the_heuristic(wide, caplog, monkeypatch) -> None:
    *_, freq = wide
    monkeypatch.setenv("PRIVGATE_PROGRESS_SECONDS", "0")
    with caplog.at_level(logging.INFO, logger=PROGRESS_LOGGER):
        HeuristicLattice([KAnonymity(k=WIDE_K)], WIDE_LIMIT, max_evaluations=5).search(freq)
    lines = [r.getMessage() for r in caplog.records if r.name == PROGRESS_LOGGER]
    assert lines and all(line.startswith("heuristic search: ") for line in lines)
    assert any("descent" in line and "best loss" in line for line in lines)


# --------------------------------------------------------------------------------------------
# Options


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_evaluations": 0}, "'max_evaluations' parameter must be >= 1"),
        ({"max_evaluations": 2.5}, "'max_evaluations' parameter must be an int"),
        ({"exact_below": -1}, "'exact_below' parameter must be >= 0"),
        ({"suppression_limit": 1.5}, "'suppression_limit' parameter must be in"),
    ],
)
def test_bad_options_are_refused(options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        HeuristicLattice([KAnonymity(k=2)], **options)


def test_the_registry_builds_it_from_a_policy(adult) -> None:
    policy = adult.policy.with_overrides(
        **{"algorithm": {"name": "heuristic", "metric": "precision", "max_evaluations": 77}}
    )
    setup = SearchSetup.from_policy(policy, adult.hierarchies)
    algorithm = make_algorithm(setup)
    assert setup.algorithm is Algorithm.HEURISTIC and isinstance(algorithm, HeuristicLattice)
    assert algorithm.max_evaluations == 77 and algorithm.metric.name == "precision"


# --------------------------------------------------------------------------------------------
# The command a user types: `privgate anonymize` on a wide CSV file


def _wide_policy(folder, algorithm: dict, n_rows: int = 600) -> str:
    import yaml

    from privgate.core.wide_data import wide_taxonomies

    generate_wide_table(n_rows).to_csv(folder / "wide.csv", index=False)
    columns = {
        name: {"role": "quasi_identifier", "hierarchy": {"kind": "taxonomy", "tree": tree}}
        for name, tree in wide_taxonomies().items()
    }
    columns[WIDE_TARGET] = {"role": "sensitive"}
    policy = {
        "dataset": "wide",
        "input": {"path": str(folder / "wide.csv"), "delimiter": ","},
        "columns": columns,
        "privacy": {"k": 3, "suppression_limit": 0.02},
        "algorithm": algorithm,
        "output": {"directory": str(folder / "out")},
    }
    path = folder / "wide.yaml"
    path.write_text(yaml.safe_dump(policy, sort_keys=False), encoding="utf-8")
    return str(path)


def test_privgate_anonymize_releases_a_wide_table(tmp_path, capsys) -> None:
    from privgate.flows.cli import main

    policy = _wide_policy(tmp_path, {"name": "heuristic", "max_evaluations": 30})
    out = tmp_path / "release.csv"
    code = main(["anonymize", policy, "--output", str(out)])
    shown = capsys.readouterr()
    assert code == 0, shown.out + shown.err
    assert "gate: PASSED" in shown.out
    release = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert anonymity.k_anonymity(release, wide_attributes()) >= 3
    assert 600 - len(release) <= math.floor(0.02 * 600)


def test_privgate_anonymize_with_optimal_names_the_heuristic(tmp_path, capsys) -> None:
    from privgate.flows.cli import main

    policy = _wide_policy(tmp_path, {"name": "optimal"})
    out = tmp_path / "release.csv"
    assert main(["anonymize", policy, "--output", str(out)]) == 2
    assert "use algorithm 'heuristic'" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.slow  # the Dask path (dask.dataframe, partitions, Parquet): the file's slowest test
def test_the_dask_path_finds_the_same_node_on_a_wide_table(tmp_path) -> None:
    """The partitioned path searches the merged frequency set of its blocks: the same node as
    the search on the whole table (the search is deterministic), and its gate passes."""
    import dask

    from privgate.core.policy import load_policy
    from privgate.core.scale import anonymize_dask

    policy = load_policy(_wide_policy(tmp_path, {"name": "heuristic", "max_evaluations": 30}))
    with dask.config.set(scheduler="threads"):
        run = anonymize_dask(policy, tmp_path / "release", blocksize="20KB", shuffle_seed=1)
    assert run.decision.passed
    assert run.summary["search_mode"] == "heuristic"
    frame = pd.read_csv(tmp_path / "wide.csv", dtype=str)
    freq = encode_table(frame, wide_hierarchies(), [WIDE_TARGET]).frequency_set()
    whole = HeuristicLattice([KAnonymity(k=3)], 0.02, max_evaluations=30).search(freq)
    assert run.levels == whole.levels
    assert run.summary["suppressed"] == whole.n_suppressed
    written = pd.read_parquet(run.output)
    assert anonymity.k_anonymity(written.astype(str), wide_attributes()) >= 3
