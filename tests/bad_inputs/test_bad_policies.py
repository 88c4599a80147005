"""The bad-policy corpus: a broken policy stops the release before anything is read or written.

For each item: loading the policy (and building its hierarchies, as the release flow does
first) raises the item's own error type with a message naming the key or column; ``privgate
run`` and ``privgate validate`` exit 2 with that message on one line; nothing is published; the
(valid) input file's sha256 is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from bad_input_corpus import POLICY_YAML, sha256

from privgate.core import stages
from privgate.core.exceptions import HierarchyError, PolicyError, PrivgateError
from privgate.core.policy import load_policy

RELEASE_DATE = "2026-11-22"

SEX_TAXONOMY = "    hierarchy: {{kind: taxonomy, tree: {{Person: [Male, Female]}}}}\n"
AGE_HIERARCHY = "    hierarchy: {{kind: interval, bands: [5, 10, 20]}}\n"
PRIVACY = "  suppression_limit: 0.2\n"


def replaced(old: str, new: str) -> Callable[[Path], str]:
    def edit(tmp_path: Path) -> str:
        assert old in POLICY_YAML
        return POLICY_YAML.replace(old, new)

    return edit


def arx_file_of_unequal_depth(tmp_path: Path) -> str:
    (tmp_path / "sex.csv").write_text("Male;*\nFemale;Person;*\n", encoding="utf-8")
    return POLICY_YAML.replace(
        SEX_TAXONOMY, f"    hierarchy: {{{{kind: arx, path: {tmp_path / 'sex.csv'}}}}}\n"
    )


def two_roles_for_one_column(tmp_path: Path) -> str:
    """``person_id`` declared twice: YAML keeps the last, which would release the identifier."""
    return POLICY_YAML.replace(
        "  notes: {{role: insensitive, type: string}}\n",
        "  notes: {{role: insensitive, type: string}}\n"
        "  person_id: {{role: insensitive, type: string}}\n",
    )


@dataclass
class Item:
    policy: Callable[[Path], str]
    error: type[PrivgateError]
    fragments: list[str]
    k: int = 2


CORPUS: dict[str, Item] = {
    "unknown_column": Item(
        replaced(PRIVACY, PRIVACY + "  l_diversity:\n    - {{column: diagnosis, l: 2}}\n"),
        PolicyError,
        ["privacy.l_diversity[0].column: unknown column 'diagnosis'"],
    ),
    "k_below_2": Item(
        replaced("", ""),
        PolicyError,
        ["privacy.k: k = 1 protects nobody", "k >= 2"],
        k=1,
    ),
    "negative_k": Item(
        replaced("", ""),
        PolicyError,
        ["privacy.k: k = -3 protects nobody"],
        k=-3,
    ),
    "suppression_above_1": Item(
        replaced(PRIVACY, "  suppression_limit: 1.5\n"),
        PolicyError,
        ["privacy.suppression_limit: Input should be less than or equal to 1"],
    ),
    "suppression_below_0": Item(
        replaced(PRIVACY, "  suppression_limit: -0.1\n"),
        PolicyError,
        ["privacy.suppression_limit: Input should be greater than or equal to 0"],
    ),
    "taxonomy_levels_of_unequal_depth": Item(
        replaced(
            SEX_TAXONOMY,
            "    hierarchy: {{kind: taxonomy, tree: {{Person: [Male], Other: {{X: [Female]}}}}}}\n",
        ),
        HierarchyError,
        ["taxonomy of column 'sex': hierarchy levels of unequal depth"],
    ),
    "arx_hierarchy_levels_of_unequal_depth": Item(
        arx_file_of_unequal_depth,
        HierarchyError,
        ["hierarchy for column 'sex'", "line 2: levels of unequal depth"],
    ),
    "two_roles_for_one_column": Item(
        two_roles_for_one_column,
        PolicyError,
        ["duplicate key 'person_id'"],
    ),
    "quasi_identifier_without_hierarchy": Item(
        replaced(AGE_HIERARCHY, ""),
        PolicyError,
        ["columns.age: a quasi_identifier needs a 'hierarchy'"],
    ),
}


def load_as_the_flow_does(path: Path) -> None:
    policy = load_policy(path)
    stages.load_hierarchies(policy)


@pytest.mark.parametrize("name", list(CORPUS))
def test_bad_policy_is_refused_with_its_own_error(name, make_case, cli, tmp_path):
    item = CORPUS[name]
    case = make_case(k=item.k, policy_text=item.policy(tmp_path))
    before = sha256(case.data)

    with pytest.raises(item.error) as info:
        load_as_the_flow_does(case.policy)
    for fragment in item.fragments:
        assert fragment in str(info.value), (fragment, str(info.value))
    other = HierarchyError if item.error is PolicyError else PolicyError
    assert not isinstance(info.value, other)

    for args in (("validate",), ("run", "--release-date", RELEASE_DATE)):
        command = args[0]
        code, out, err = cli(command, str(case.policy), *args[1:])
        ours = [line for line in err.splitlines() if line.startswith("privgate:")]
        assert code == 2, (command, code, out, err)
        assert len(ours) == 1 and ours[0].startswith("privgate: error: "), (command, err)
        for fragment in item.fragments:
            assert fragment in ours[0], (command, fragment, ours[0])
        assert "Traceback" not in out + err
    assert case.published() == [], "a refused policy must publish nothing"
    assert sha256(case.data) == before, "the input file must never be modified"
