"""``privacy.research_subset`` against its definition, written out in this file.

The definition (ARX's, ``privgate.core.research_subset``): the subset is the data. A node is
feasible when the classes of the subset's records failing the models hold at most
``floor(limit * n)`` records, ``n`` the *subset's* size; the metric counts the subset's
records only; the records outside the subset are neither released nor counted. The search's
optimum, its value and the gate's verdict are checked against an exhaustive reference on
seeded random tables whose subsets differ from the whole table in what they make feasible.
"""

from __future__ import annotations

import hashlib
import itertools
import math

import numpy as np
import pandas as pd
import pytest

import privgate
from privgate.core import stages
from privgate.core.anonymize import SearchSetup, full_domain_setup
from privgate.core.exceptions import AnonymizationError, IngestError
from privgate.core.manifest import input_facts
from privgate.core.policy import ReleasePolicy
from privgate.core.risk import analyse_policy

#: Each quasi-identifier's values and their ancestors, bottom up (the reference's own copy).
TREES = {
    "q0": {"Any": {"G0": ["a0", "a1", "a2"], "G1": ["a3", "a4", "a5"]}},
    "q1": {"Any": {"H0": ["b0", "b1"], "H1": ["b2", "b3"]}},
    "q2": {"Any": ["c0", "c1", "c2"]},
}


def _ancestors(tree: dict, path: tuple[str, ...] = ()) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for label, children in tree.items():
        if isinstance(children, dict):
            out.update(_ancestors(children, (label, *path)))
        else:
            out.update({leaf: [leaf, label, *path] for leaf in children})
    return out


CHAINS = {q: _ancestors(tree) for q, tree in TREES.items()}
HEIGHTS = {q: len(next(iter(chain.values()))) - 1 for q, chain in CHAINS.items()}


def _policy(tmp_path, keys_file, k: int, limit: float, l_div: int | None, metric: str):
    privacy: dict = {"k": k, "suppression_limit": limit}
    if keys_file is not None:
        privacy["research_subset"] = {"path": str(keys_file), "key": "rid"}
    if l_div is not None:
        privacy["l_diversity"] = [{"column": "s", "variant": "distinct", "l": l_div}]
    columns: dict = {"rid": {"role": "identifier", "type": "string"}}
    for q, tree in TREES.items():
        columns[q] = {"role": "quasi_identifier",
                      "hierarchy": {"kind": "taxonomy", "tree": tree}}  # fmt: skip
    columns["s"] = {"role": "sensitive"}
    return ReleasePolicy.model_validate({
        "dataset": "subset-test",
        "input": {"path": str(tmp_path / "input.csv")},
        "columns": columns,
        "privacy": privacy,
        "algorithm": {"name": "optimal", "metric": metric},
    })  # fmt: skip


def _table(rng: np.random.Generator, n: int) -> pd.DataFrame:
    data: dict = {"rid": [f"r{i}" for i in range(n)]}
    for q, chain in CHAINS.items():
        values = sorted(chain)
        data[q] = rng.choice(values, size=n, p=rng.dirichlet(np.ones(len(values)) * 0.7))
    data["s"] = rng.choice(["x", "y", "z"], size=n)
    return pd.DataFrame(data)


def _node_classes(sub: pd.DataFrame) -> dict[tuple[int, ...], tuple[pd.Series, pd.Series]]:
    """At every node, each class of the subset's records: its size and its distinct sensitive
    values (the same for every privacy setting, so derived once per table)."""
    out = {}
    for node in itertools.product(*(range(HEIGHTS[q] + 1) for q in TREES)):
        labels = [
            sub[q].map(lambda v, q=q, h=h: CHAINS[q][v][h])
            for q, h in zip(TREES, node, strict=True)
        ]
        keys = pd.MultiIndex.from_arrays(labels)
        sizes = pd.Series(1, index=keys).groupby(level=list(range(len(TREES)))).sum()
        distinct = sub.groupby(labels)["s"].nunique().reindex(sizes.index)
        out[node] = (sizes, distinct)
    return out


def _reference(classes, n: int, k: int, limit: float, l_div: int | None, metric: str):
    """Every feasible node of the subset alone (``n`` records, ``classes`` from
    :func:`_node_classes`) and its metric value, from the definitions."""
    out = {}
    for node, (sizes, distinct) in classes.items():
        ok = sizes >= k
        if l_div is not None:
            ok &= distinct >= l_div
        suppressed = int(sizes[~ok].sum())
        if suppressed > math.floor(limit * n + 1e-9):
            continue
        kept = sizes[ok].to_numpy(dtype=float)
        if metric == "discernibility":
            out[node] = (float(kept @ kept) + suppressed * n) / n**2
        else:  # average_class_size: kept records per kept class, in units of k (or l)
            need = max(k, l_div or 1)
            out[node] = (n - suppressed) / len(kept) / need if len(kept) else n / need
    return out


SETTINGS = [(2, 0.0, None), (3, 0.1, None), (2, 0.05, 2), (4, 0.2, None), (3, 0.0, 2)]


@pytest.mark.slow  # an exhaustive reference search per seed: 2-3 s each
@pytest.mark.parametrize("seed", range(8))
def test_search_and_gate_follow_the_subset_definition(tmp_path, seed) -> None:
    rng = np.random.default_rng(seed)
    frame = _table(rng, int(rng.integers(40, 120)))
    chosen = np.sort(rng.choice(len(frame), size=int(rng.integers(12, len(frame) // 2)),
                                replace=False))  # fmt: skip
    keys = tmp_path / "cohort.csv"
    pd.DataFrame({"rid": frame["rid"].iloc[chosen]}).to_csv(keys, index=False)
    sub = frame.iloc[chosen]
    classes = _node_classes(sub)
    for (k, limit, l_div), metric in itertools.product(
        SETTINGS, ["discernibility", "average_class_size"]
    ):
        policy = _policy(tmp_path, keys, k, limit, l_div, metric)
        truths = _reference(classes, len(sub), k, limit, l_div, metric)
        if not truths:
            with pytest.raises(AnonymizationError):
                privgate.anonymize(frame, policy)
            continue
        release = privgate.anonymize(frame, policy)
        result = release.table.result
        node = tuple(result.levels[q] for q in TREES)
        best = min(truths.values())
        assert node in truths, (seed, k, limit, l_div, metric)
        assert truths[node] == pytest.approx(best, abs=1e-9), (seed, k, limit, l_div, metric)
        assert result.details["loss"] == pytest.approx(best, abs=1e-9)
        assert set(release.frame.index) <= set(chosen)  # only subset records, never others
        assert release.metrics["input_rows"] == len(chosen)
        assert release.passed, release.decision.reasons
        # The gate counts the subset: its verdict on the release, and on the release with
        # the records outside the subset generalized alike, is the definition's.
        outside = frame.drop(index=frame.index[chosen])
        generalized = outside.assign(**{
            q: outside[q].map(lambda v, q=q, h=result.levels[q]: CHAINS[q][v][h]) for q in TREES
        })  # fmt: skip
        setup = SearchSetup.from_policy(policy)
        for candidate in (
            release.frame,
            pd.concat([release.frame, generalized[release.frame.columns]]),
        ):
            expected = _gate_reference(candidate, len(chosen), k, limit, l_div)
            assert stages.verify(candidate, setup, len(chosen)).passed == expected


def _gate_reference(release: pd.DataFrame, n: int, k: int, limit: float, l_div) -> bool:
    """A release of a subset of ``n`` records: every class holds k records (and l values),
    and between 0 and ``floor(limit * n)`` of the subset's records are missing from it."""
    classes = release.groupby(list(TREES))
    ok = bool((classes.size() >= k).all())
    if l_div is not None:
        ok &= bool((classes["s"].nunique() >= l_div).all())
    return ok and 0 <= n - len(release) <= math.floor(limit * n + 1e-9)


def test_subset_changes_the_optimum_against_the_whole_table(tmp_path) -> None:
    """Not a filter in name only: on a table where the whole table is 2-anonymous at the
    bottom and the subset is not, the two optima differ."""
    frame = pd.DataFrame({
        "rid": [f"r{i}" for i in range(8)],
        "q0": ["a0", "a0", "a1", "a1", "a3", "a3", "a4", "a4"],
        "q1": ["b0"] * 8, "q2": ["c0"] * 8, "s": ["x", "y"] * 4,
    })  # fmt: skip
    keys = tmp_path / "cohort.csv"
    pd.DataFrame({"rid": ["r0", "r2", "r4", "r6"]}).to_csv(keys, index=False)
    whole = privgate.anonymize(frame, _policy(tmp_path, None, 2, 0.0, None, "discernibility"))
    part = privgate.anonymize(frame, _policy(tmp_path, keys, 2, 0.0, None, "discernibility"))
    assert whole.table.result.levels["q0"] == 0
    assert part.table.result.levels["q0"] == 1  # a0/a1 -> G0, a3/a4 -> G1: classes of 2
    assert sorted(part.frame.index) == [0, 2, 4, 6]
    assert part.passed and part.metrics["input_rows"] == 4


def test_refusals_name_the_problem(tmp_path) -> None:
    frame = _table(np.random.default_rng(0), 30)
    keys = tmp_path / "cohort.csv"
    pd.DataFrame({"rid": ["r1", "r2", "nobody"]}).to_csv(keys, index=False)
    policy = _policy(tmp_path, keys, 2, 0.5, None, "discernibility")
    with pytest.raises(IngestError, match="1 key.*match no record.*nobody"):
        privgate.anonymize(frame, policy)
    pd.DataFrame({"other": ["r1"]}).to_csv(keys, index=False)
    with pytest.raises(IngestError, match="has no column 'rid'"):
        privgate.anonymize(frame, policy)
    with pytest.raises(AnonymizationError, match="research_subset is not available in here"):
        full_domain_setup(policy, "here")
    raw = policy.model_dump(mode="json")
    raw["columns"]["rid"]["role"] = "insensitive"
    with pytest.raises(ValueError, match="must have role 'identifier'"):
        ReleasePolicy.model_validate(raw)
    raw["privacy"]["research_subset"]["key"] = "nope"
    with pytest.raises(ValueError, match="unknown column 'nope'"):
        ReleasePolicy.model_validate(raw)


def test_ingest_selects_the_subset_and_fingerprints_it(tmp_path) -> None:
    frame = _table(np.random.default_rng(1), 20)
    frame.to_csv(tmp_path / "input.csv", index=False)
    keys = tmp_path / "cohort.csv"
    pd.DataFrame({"rid": ["r3", "r5", "r7", "r9"]}).to_csv(keys, index=False)
    policy = _policy(tmp_path, keys, 2, 0.0, None, "discernibility")
    plain = _policy(tmp_path, None, 2, 0.0, None, "discernibility")
    ingested = stages.ingest(policy)
    assert ingested.rows == 4 and list(ingested.frame["rid"]) == ["r3", "r5", "r7", "r9"]
    assert ingested.subset.table_rows == 20 and ingested.subset.rows == 4
    assert ingested.file_sha256 == stages.fingerprint_input(plain)
    facts = input_facts(ingested)  # the manifest's input: the file's own sha256, the subset
    assert facts["sha256"] == ingested.file_sha256 and facts["rows"] == 4
    assert facts["research_subset"]["rows"] == 4 and facts["research_subset"]["table_rows"] == 20
    assert facts["research_subset"]["sha256"] == hashlib.sha256(keys.read_bytes()).hexdigest()
    first = stages.fingerprint_input(policy)
    assert first != stages.fingerprint_input(plain)
    pd.DataFrame({"rid": ["r3", "r5", "r7"]}).to_csv(keys, index=False)
    assert stages.fingerprint_input(policy) != first  # another cohort, another release id
    (analysis,) = analyse_policy(policy, drivers=False)  # `privgate risk`: the cohort's risk
    assert analysis.records == 3 and "research subset: 3 of 20" in analysis.label
