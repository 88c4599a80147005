"""Tests for core.policy: loading, strict validation with named keys, fingerprint, overrides."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from privgate.core.exceptions import PolicyError
from privgate.core.policy import (
    ARXHierarchySpec,
    IntervalHierarchySpec,
    ReleasePolicy,
    Role,
    TaxonomyHierarchySpec,
    load_policy,
)

REPO = Path(__file__).resolve().parents[2]
POLICIES = REPO / "policies"

#: A small valid policy; each bad-policy case mutates a deep copy of it.
BASE: dict[str, Any] = {
    "dataset": "toy",
    "input": {"path": "data/toy.csv", "delimiter": ";"},
    "columns": {
        "person_id": {"role": "identifier", "type": "string"},
        "age": {
            "role": "quasi_identifier",
            "type": "integer",
            "minimum": 0,
            "maximum": 120,
            "hierarchy": {"kind": "interval", "bands": [5, 10]},
        },
        "zip": {
            "role": "quasi_identifier",
            "type": "string",
            "hierarchy": {"kind": "masking", "length": 5},
        },
        "sex": {
            "role": "quasi_identifier",
            "hierarchy": {"kind": "arx", "path": "hierarchies/sex.csv"},
        },
        "hours": {"role": "insensitive", "type": "integer"},
        "disease": {"role": "sensitive"},
    },
    "privacy": {"k": 2},
    "output": {"directory": "../out"},
}


def write_policy(folder: Path, data: Any, name: str = "policy.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def mutated(change: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    change(data)
    return data


# ---------------------------------------------------------------------------------------------
# Valid policies
# ---------------------------------------------------------------------------------------------


def test_demo_policy_loads() -> None:
    policy = load_policy(POLICIES / "demo.yaml")
    assert policy.dataset == "census-demo"
    assert policy.identifiers == ["person_id"]
    assert "age" in policy.quasi_identifiers
    assert policy.sensitive_columns == ["income"]
    assert "person_id" not in policy.released_columns
    assert policy.privacy.k == 5
    assert policy.privacy.suppression_limit == pytest.approx(0.02)
    assert [s.column for s in policy.privacy.l_diversity] == ["income"]
    assert isinstance(policy.columns["age"].hierarchy, IntervalHierarchySpec)
    assert isinstance(policy.columns["sex"].hierarchy, TaxonomyHierarchySpec)
    # Relative paths resolve against policies/, not the working directory.
    assert policy.input.path == (POLICIES / "../demo-data/census.csv").resolve()
    assert policy.output.directory == (POLICIES / "../releases").resolve()


def test_adult_policy_loads_and_resolves_hierarchy_paths() -> None:
    policy = load_policy(POLICIES / "adult.yaml")
    assert policy.dataset == "adult"
    assert policy.input.delimiter == ";"
    assert policy.input.missing_values == ["", "?"]
    assert len(policy.quasi_identifiers) == 8
    assert policy.sensitive_columns == ["salary-class"]
    arx_dir = (POLICIES / "../../shared/data/arx").resolve()
    assert policy.input.path == arx_dir / "adult.csv"
    for name in policy.quasi_identifiers:
        spec = policy.columns[name].hierarchy
        assert isinstance(spec, ARXHierarchySpec)
        assert spec.path == arx_dir / f"adult_hierarchy_{name}.csv"
        assert spec.path.is_absolute()


def test_relative_paths_resolve_against_the_policy_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_policy(tmp_path / "policies", BASE)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    policy = load_policy(path)
    folder = (tmp_path / "policies").resolve()
    assert policy.input.path == folder / "data" / "toy.csv"
    assert policy.output.directory == tmp_path.resolve() / "out"
    sex = policy.columns["sex"].hierarchy
    assert isinstance(sex, ARXHierarchySpec)
    assert sex.path == folder / "hierarchies" / "sex.csv"


def test_absolute_paths_are_kept(tmp_path: Path) -> None:
    absolute = tmp_path / "abs" / "toy.csv"
    path = write_policy(tmp_path, mutated(lambda d: d["input"].update(path=str(absolute))))
    assert load_policy(path).input.path == absolute


def test_policy_is_frozen() -> None:
    policy = load_policy(POLICIES / "demo.yaml")
    with pytest.raises(ValueError):
        policy.dataset = "other"  # type: ignore[misc]


def test_role_views() -> None:
    policy = ReleasePolicy.model_validate(BASE)
    assert policy.quasi_identifiers == ["age", "zip", "sex"]
    assert policy.sensitive_columns == ["disease"]
    assert policy.identifiers == ["person_id"]
    assert policy.released_columns == ["age", "zip", "sex", "hours", "disease"]
    assert policy.columns["age"].role is Role.QUASI_IDENTIFIER
    # Quasi-identifiers default to non-null, other columns to nullable.
    assert not policy.columns["age"].allows_missing
    assert policy.columns["hours"].allows_missing


# ---------------------------------------------------------------------------------------------
# Invalid policies: every error is a PolicyError naming the offending key
# ---------------------------------------------------------------------------------------------

BAD_POLICIES: list[tuple[str, Callable[[dict[str, Any]], object], list[str]]] = [
    ("unknown top-level key", lambda d: d.update(privcy={"k": 2}), ["privcy", "unknown key"]),
    (
        "unknown column key (typo)",
        lambda d: d["columns"]["age"].update(hierachy={"kind": "interval", "bands": [5]}),
        ["columns.age.hierachy", "unknown key"],
    ),
    ("k below 1", lambda d: d["privacy"].update(k=0), ["privacy.k"]),
    ("k negative", lambda d: d["privacy"].update(k=-3), ["privacy.k"]),
    (
        "suppression_limit above 1",
        lambda d: d["privacy"].update(suppression_limit=1.5),
        ["privacy.suppression_limit"],
    ),
    (
        "suppression_limit below 0",
        lambda d: d["privacy"].update(suppression_limit=-0.1),
        ["privacy.suppression_limit"],
    ),
    (
        "quasi-identifier without hierarchy",
        lambda d: d["columns"]["age"].pop("hierarchy"),
        ["columns.age", "needs a 'hierarchy'"],
    ),
    (
        "hierarchy on a non-quasi-identifier",
        lambda d: d["columns"]["hours"].update(hierarchy={"kind": "masking", "length": 2}),
        ["columns.hours", "only a quasi_identifier"],
    ),
    (
        "l_diversity on an unknown column",
        lambda d: d["privacy"].update(l_diversity=[{"column": "diagnosis", "l": 2}]),
        ["privacy.l_diversity[0].column", "unknown column 'diagnosis'"],
    ),
    (
        "l_diversity on a non-sensitive column",
        lambda d: d["privacy"].update(l_diversity=[{"column": "hours", "l": 2}]),
        ["privacy.l_diversity[0].column", "'hours' must have role 'sensitive'"],
    ),
    (
        "recursive l-diversity without c",
        lambda d: d["privacy"].update(
            l_diversity=[{"column": "disease", "l": 2, "variant": "recursive"}]
        ),
        ["privacy.l_diversity", "needs 'c'"],
    ),
    (
        "bands that do not nest",
        lambda d: d["columns"]["age"]["hierarchy"].update(bands=[5, 12]),
        ["columns.age.hierarchy.bands", "does not nest"],
    ),
    (
        "bands that shrink",
        lambda d: d["columns"]["age"]["hierarchy"].update(bands=[10, 5]),
        ["columns.age.hierarchy.bands"],
    ),
    (
        "masking levels greater than length",
        lambda d: d["columns"]["zip"]["hierarchy"].update(levels=6),
        ["columns.zip.hierarchy.levels", "cannot exceed length"],
    ),
    (
        "unknown hierarchy kind",
        lambda d: d["columns"]["age"]["hierarchy"].update(kind="bucket"),
        ["columns.age.hierarchy"],
    ),
    (
        "unknown encoding",
        lambda d: d["input"].update(encoding="klingon-8"),
        ["input.encoding", "klingon-8"],
    ),
    (
        "missing privacy section",
        lambda d: d.pop("privacy"),
        ["exactly one of 'privacy'", "'differential_privacy'"],
    ),
    (
        "both privacy and differential privacy",
        lambda d: d.update(
            differential_privacy={
                "epsilon": 0.5,
                "class_column": "disease",
                "budget": {"epsilon": 2.0},
            }
        ),
        ["exactly one of 'privacy'"],
    ),
    (
        "rfka without ranking",
        lambda d: d.update(algorithm={"name": "rfka"}),
        ["algorithm.name", "'ranking' section"],
    ),
    (
        "ranking target is a quasi-identifier",
        lambda d: d.update(ranking={"target": "zip"}),
        ["ranking.target", "'zip' is a quasi_identifier"],
    ),
    (
        "release tiers on the optimal algorithm",
        lambda d: d.update(algorithm={"name": "optimal", "release_tiers": [3]}),
        ["release_tiers", "tiered algorithm only"],
    ),
    (
        "max_evaluations on the optimal algorithm",
        lambda d: d.update(algorithm={"name": "optimal", "max_evaluations": 100}),
        ["max_evaluations", "heuristic algorithm only, not optimal"],
    ),
    (
        "max_evaluations below one",
        lambda d: d.update(algorithm={"name": "heuristic", "max_evaluations": 0}),
        ["algorithm.max_evaluations"],
    ),
    (
        "heuristic with a person key",
        lambda d: (
            d.update(algorithm={"name": "heuristic"}),
            d["privacy"].update(person_key="person_id"),
        ),
        ["privacy.person_key", "'heuristic' counts records"],
    ),
    (
        "release tier above the tiers found",
        lambda d: d.update(
            algorithm={"name": "tiered", "release_tiers": [6]}, ranking={"target": "disease"}
        ),
        ["algorithm.release_tiers", "ranking.tiers = 5"],
    ),
    (
        "rfka with l-diversity",
        lambda d: d.update(
            algorithm={"name": "rfka"},
            ranking={"target": "disease"},
            privacy={"k": 2, "l_diversity": [{"column": "disease", "l": 2}]},
        ),
        ["'rfka' selects attributes for k-anonymity only"],
    ),
    (
        "dp epsilon above its lifetime budget",
        lambda d: (
            d.pop("privacy"),
            d.update(
                differential_privacy={
                    "epsilon": 3.0,
                    "class_column": "disease",
                    "budget": {"epsilon": 2.0},
                }
            ),
        ),
        ["differential_privacy", "lifetime budget"],
    ),
    (
        "dp without a class column",
        lambda d: (
            d.pop("privacy"),
            d.update(differential_privacy={"epsilon": 0.5, "budget": {"epsilon": 2.0}}),
        ),
        ["differential_privacy.class_column: dpheter needs a class column"],
    ),
    (
        "dp scored by the owner's clustering",
        lambda d: (
            d.pop("privacy"),
            d.update(
                differential_privacy={
                    "epsilon": 0.5,
                    "clusters": 3,
                    "class_column": "disease",
                    "budget": {"epsilon": 2.0},
                }
            ),
        ),
        ["differential_privacy.clusters", "not differentially private"],
    ),
    (
        "dp ledger in the policy",
        lambda d: (
            d.pop("privacy"),
            d.update(
                differential_privacy={
                    "epsilon": 0.5,
                    "class_column": "disease",
                    "ledger": "sqlite:///elsewhere.sqlite",
                    "budget": {"epsilon": 2.0},
                }
            ),
        ),
        ["differential_privacy.ledger", "PRIVGATE_LEDGER_URL"],
    ),
    (
        "no quasi-identifier",
        lambda d: d.update(columns={"disease": {"role": "sensitive"}}),
        ["quasi_identifier"],
    ),
]


@pytest.mark.parametrize(
    ("change", "expected"),
    [pytest.param(change, expected, id=case) for case, change, expected in BAD_POLICIES],
)
def test_bad_policy_raises_policy_error_naming_the_key(
    tmp_path: Path, change: Callable[[dict[str, Any]], object], expected: list[str]
) -> None:
    path = write_policy(tmp_path, mutated(change))
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    message = str(info.value)
    assert str(path) in message
    for fragment in expected:
        assert fragment in message


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    def change(d: dict[str, Any]) -> None:
        d["privacy"]["k"] = 0
        d["columns"]["zip"]["hierarchy"]["levels"] = 9

    with pytest.raises(PolicyError) as info:
        load_policy(write_policy(tmp_path, mutated(change)))
    assert "privacy.k" in str(info.value)
    assert "columns.zip.hierarchy.levels" in str(info.value)


@pytest.mark.parametrize("document", ["- a\n- b\n", "just a string\n", "42\n", ""])
def test_not_a_mapping(tmp_path: Path, document: str) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(document, encoding="utf-8")
    with pytest.raises(PolicyError, match="expected a mapping at the top level"):
        load_policy(path)


def test_invalid_yaml_syntax(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("dataset: toy\ncolumns: {age: [1, 2\n", encoding="utf-8")
    with pytest.raises(PolicyError, match="not valid YAML") as info:
        load_policy(path)
    assert str(path) in str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.yaml"
    with pytest.raises(PolicyError, match="policy file not found") as info:
        load_policy(path)
    assert str(path) in str(info.value)


def test_policy_file_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_bytes(b"dataset: caf\xe9\n")
    with pytest.raises(PolicyError, match="cannot read policy file"):
        load_policy(path)


# ---------------------------------------------------------------------------------------------
# Fingerprint and overrides
# ---------------------------------------------------------------------------------------------


def test_fingerprint_is_stable() -> None:
    first = load_policy(POLICIES / "demo.yaml").fingerprint()
    second = load_policy(POLICIES / "demo.yaml").fingerprint()
    assert first == second
    assert len(first) == 64
    int(first, 16)  # hexadecimal
    assert first != load_policy(POLICIES / "adult.yaml").fingerprint()


def test_fingerprint_changes_with_k() -> None:
    policy = load_policy(POLICIES / "demo.yaml")
    assert policy.with_overrides(**{"privacy.k": 10}).fingerprint() != policy.fingerprint()
    assert policy.with_overrides(**{"privacy.k": 5}).fingerprint() == policy.fingerprint()


def test_with_overrides_returns_a_validated_copy() -> None:
    policy = load_policy(POLICIES / "adult.yaml")
    changed = policy.with_overrides(**{"privacy.k": 10, "privacy.suppression_limit": 0.05})
    assert isinstance(changed, ReleasePolicy)
    assert changed.privacy.k == 10
    assert changed.privacy.suppression_limit == pytest.approx(0.05)
    assert policy.privacy.k == 5  # the original is untouched
    assert changed.input.path == policy.input.path  # resolved paths survive


def test_no_overrides_is_an_equal_copy() -> None:
    policy = load_policy(POLICIES / "demo.yaml")
    assert policy.with_overrides() == policy


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("privacy.k", 0, "privacy.k"),
        ("privacy.suppression_limit", 2.0, "privacy.suppression_limit"),
        ("privacy.kk", 3, "privacy.kk"),
    ],
)
def test_invalid_override_raises_policy_error(key: str, value: object, fragment: str) -> None:
    policy = load_policy(POLICIES / "demo.yaml")
    with pytest.raises(PolicyError, match="overrides") as info:
        policy.with_overrides(**{key: value})
    assert fragment in str(info.value)


def test_override_into_a_section_the_policy_lacks_is_validated_not_a_crash() -> None:
    policy = ReleasePolicy.model_validate(copy.deepcopy(BASE))
    ranked = policy.with_overrides(**{"ranking.target": "disease", "algorithm.name": "rfka"})
    assert ranked.ranking is not None and ranked.ranking.target == "disease"
    with pytest.raises(PolicyError, match="differential_privacy"):
        policy.with_overrides(**{"differential_privacy.epsilon": 0.5})
    with pytest.raises(PolicyError, match="'privacy.k.deeper': privacy.k is a value"):
        policy.with_overrides(**{"privacy.k.deeper": 3})


def test_history_check_names_its_key_and_refuses_what_it_cannot_check():
    """The flow enforces ``history.check``; a key it cannot follow is refused when loading."""
    data = copy.deepcopy(BASE)
    data["history"] = {}  # check defaults to true, the key to the only identifier
    assert ReleasePolicy.model_validate(data).history_key == "person_id"
    data["history"] = {"check": False, "key": "person_id"}
    assert ReleasePolicy.model_validate(data).history_key is None
    data["history"] = {"check": True, "key": "age"}
    with pytest.raises(ValueError, match="history.key: 'age' is not an identifier column"):
        ReleasePolicy.model_validate(data)
    tiered = copy.deepcopy(data)
    tiered["history"] = {"check": True}
    tiered["algorithm"] = {"name": "tiered"}
    tiered["ranking"] = {"target": "disease"}
    with pytest.raises(ValueError, match="history.check: a tiered run makes several releases"):
        ReleasePolicy.model_validate(tiered)


def test_the_heuristic_takes_a_metric_and_an_evaluation_budget() -> None:
    """``algorithm.name: heuristic`` with a metric and ``max_evaluations`` reach the search
    setup; without them the budget is 3000 and the policy's dump (its fingerprint) is
    unchanged for every other algorithm."""
    from privgate.core.anonymize import SearchSetup
    from privgate.core.policy import METRIC_ALGORITHMS, POPULATION_ALGORITHMS, Algorithm

    data = copy.deepcopy(BASE)
    data["algorithm"] = {"name": "heuristic", "metric": "precision", "max_evaluations": 250}
    policy = ReleasePolicy.model_validate(data)
    assert policy.algorithm.name is Algorithm.HEURISTIC
    assert policy.algorithm.max_evaluations == 250
    assert Algorithm.HEURISTIC in METRIC_ALGORITHMS and Algorithm.HEURISTIC in POPULATION_ALGORITHMS
    setup = SearchSetup.from_policy(policy, {q: None for q in policy.quasi_identifiers})
    assert (setup.max_evaluations, setup.metric) == (250, "precision")
    data["algorithm"] = {"name": "heuristic"}
    default = SearchSetup.from_policy(
        ReleasePolicy.model_validate(data), {q: None for q in policy.quasi_identifiers}
    )
    assert default.max_evaluations == 3000
    assert "max_evaluations" not in ReleasePolicy.model_validate(BASE).model_dump()["algorithm"]
