"""SafePub on ARX's Adult with ARX's hierarchies: its parameters, its score, its release.

SafePub is not post-processing of its draws (the k-filter reads the sample), so its neighbouring
tests check the two facts its DP proof rests on: the score's sensitivity (brute force over the
whole lattice for neighbours, including the worst case of a record that lifts a class to k), and
the (k, β, δ) relation of Li, Qardaji & Su, recomputed independently.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom

from privgate.core.dp._accountant import Accountant, PrivacyParameterError
from privgate.core.dp.journal import JournaledAccountant
from privgate.core.dp.ledger import BudgetLedger
from privgate.core.dp.safepub import (
    SafePubConfig,
    SchemeSpace,
    delta_for_k,
    loss_score,
    safepub_parameters,
    safepub_release,
)
from privgate.core.hierarchy import ARXHierarchy

QIS = ["sex", "age", "race", "marital-status"]


@pytest.fixture(scope="module")
def adult(shared_data) -> pd.DataFrame:
    return pd.read_csv(shared_data("arx/adult.csv"), sep=";", dtype=str)[QIS]


@pytest.fixture(scope="module")
def hierarchies(shared_data) -> dict:
    return {q: ARXHierarchy.from_csv(q, shared_data(f"arx/adult_hierarchy_{q}.csv")) for q in QIS}


@pytest.fixture(scope="module")
def domains(hierarchies) -> dict:
    return {q: list(hierarchies[q].domain) for q in QIS}


def _delta_brute_force(k: int, beta: float, epsilon: float, horizon: int = 4000) -> float:
    """d(k, β, ε) straight from its definition, the maximum over n up to ``horizon``."""
    gamma = (math.exp(epsilon) - 1 + beta) / math.exp(epsilon)
    start = max(math.ceil(k / gamma - 1), 1)
    n = np.arange(start, horizon)
    return float(binom.sf(np.floor(n * gamma), n, beta).max())


@pytest.mark.parametrize(("epsilon_anon", "delta"), [(0.9, 1e-5), (1.8, 1e-6), (0.45, 1e-4)])
def test_k_is_the_smallest_that_meets_delta(epsilon_anon: float, delta: float) -> None:
    beta, k = safepub_parameters(epsilon_anon, delta)
    assert beta <= 1 - math.exp(-epsilon_anon)  # epsilon_anon >= -ln(1 - beta): the theorem's
    assert _delta_brute_force(k, beta, epsilon_anon) < delta
    assert delta_for_k(k, beta, epsilon_anon) == pytest.approx(
        _delta_brute_force(k, beta, epsilon_anon), rel=1e-9
    )
    assert _delta_brute_force(k - 1, beta, epsilon_anon) >= delta


def test_the_score_moves_by_at_most_one_between_neighbours(adult, hierarchies, domains) -> None:
    """Sensitivity 1, brute force over every scheme of the lattice, on real neighbours.

    Neighbours of a 2,000-record slice: one record removed, one common record added, one record
    added that completes a class of k - 1 (the case the proof's bound is tight for).
    """
    space = SchemeSpace(domains, hierarchies)
    rows = adult.iloc[:2000].reset_index(drop=True)
    k = 5
    nodes = [
        tuple(int(x) for x in node)
        for node in np.ndindex(*(h + 1 for h in space.heights))  # the whole lattice
    ]
    sampled = np.random.default_rng(7).random(len(rows)) < 0.6  # a fixed sample (test only)
    codes = space.encode(rows)
    base = {node: loss_score(space, codes, sampled, node, k) for node in nodes}
    bottom = tuple(0 for _ in QIS)
    gen = space.generalize(codes[sampled], bottom)
    _, inverse, counts = np.unique(gen, axis=0, return_inverse=True, return_counts=True)
    lifted = np.flatnonzero(sampled)[np.flatnonzero(counts[inverse.reshape(-1)] == k - 1)[0]]
    neighbours = {
        "removed": (np.delete(codes, 0, axis=0), np.delete(sampled, 0)),
        "added": (np.vstack([codes, codes[5]]), np.append(sampled, True)),
        "added unsampled": (np.vstack([codes, codes[5]]), np.append(sampled, False)),
        "lifts a class to k": (np.vstack([codes, codes[lifted]]), np.append(sampled, True)),
    }
    for name, (other_codes, other_sampled) in neighbours.items():
        worst = max(
            abs(loss_score(space, other_codes, other_sampled, node, k) - base[node])
            for node in nodes
        )
        assert worst <= 1.0 + 1e-12, name
        if name == "lifts a class to k":
            assert worst > 0.5  # the tight case is really exercised


def test_a_release_is_k_anonymous_generalized_and_paid_for(
    adult, hierarchies, domains, tmp_path
) -> None:
    ledger = BudgetLedger(f"sqlite:///{tmp_path / 'ledger.sqlite'}")
    ledger.open_account("adult", 4.0, 1e-4)
    config = SafePubConfig(epsilon=1.0, delta=1e-5)
    accountant = JournaledAccountant(ledger, "adult", "r1", "run-1", budget=(1.0, 1e-5))
    outsider = adult.iloc[[0]].assign(race="Martian")  # outside the declared domain: excluded
    result = safepub_release(
        pd.concat([adult, outsider], ignore_index=True), domains, hierarchies, config, accountant
    )
    frame = result.frame
    assert list(frame.columns) == QIS
    assert frame.groupby(QIS).size().min() >= result.k
    for q, level in result.scheme.items():
        labels = set(hierarchies[q].generalize(domains[q])[:, level].astype(str))
        assert set(frame[q]) <= labels, q
    # about beta of the records are sampled; the k-filter removes a few more
    assert 0.5 * result.beta * len(adult) < len(frame) <= 1.2 * result.beta * len(adult)
    epsilon, delta = accountant.total
    assert epsilon == pytest.approx(1.0, rel=1e-9) and delta == pytest.approx(1e-5)
    steps = [d.step for d in accountant.used_draws]
    assert (
        steps[0].startswith("SafePub random sampling")
        and len(steps) == 1 + result.details["selections"]
    )
    assert result.owner["excluded_by_column"] == {"race": 1}
    # a retry replays every draw (same sample, same selections) and spends nothing more
    again = safepub_release(
        pd.concat([adult, outsider], ignore_index=True),
        domains,
        hierarchies,
        config,
        JournaledAccountant(ledger, "adult", "r1", "run-2", budget=(1.0, 1e-5)),
    )
    pd.testing.assert_frame_equal(again.frame, frame)
    assert ledger.account("adult").spent_epsilon == pytest.approx(1.0)


def test_the_search_is_charged_per_selection(adult, hierarchies, domains) -> None:
    accountant = Accountant(budget=(1.0, 1e-5))
    config = SafePubConfig(epsilon=1.0, delta=1e-5, search_share=0.2, steps=3)
    result = safepub_release(adult.iloc[:3000], domains, hierarchies, config, accountant)
    selections = [s for s in accountant.entries if s.mechanism == "exponential"]
    assert len(selections) == 4  # 3 steps + the output scheme
    # the search's 0.2 buys selections at 0.1: they read the sample the k-filter releases, and
    # the other 0.1 is charged with the sample (PRIVACY.md 4.9); everything sums to epsilon
    assert math.fsum(s.epsilon for s in selections) == pytest.approx(0.1)
    (sample,) = [s for s in accountant.entries if s.mechanism != "exponential"]
    assert sample.epsilon == pytest.approx(0.8 + 0.1)
    assert math.fsum(s.epsilon for s in accountant.entries) == pytest.approx(1.0)
    assert result.epsilon_selections == pytest.approx(0.1) and result.epsilon_search == 0.2
    assert len(result.pivots) == 4
    # k pays the delta once per scheme of the lattice the search could output
    assert result.schemes == math.prod(h + 1 for h in SchemeSpace(domains, hierarchies).heights)
    beta, k = safepub_parameters(0.8, 1e-5, result.schemes)
    assert (result.beta, result.k) == (beta, k)
    assert result.schemes * delta_for_k(k, beta, 0.8) < 1e-5


def test_an_epsilon_that_samples_nearly_everyone_is_refused() -> None:
    with pytest.raises(PrivacyParameterError, match="no longer protects"):
        safepub_parameters(9.0, 1e-5)


def test_a_written_safepub_release_missing_a_whole_class_is_blocked(
    adult, hierarchies, domains, tmp_path
) -> None:
    """A writer that loses rows can leave a SafePub file that still holds every tuple at least
    k times, inside its domains and paid for: the DP gate compares the written rows with the
    release's (a DP output, not the input), so the manifest's row count is the file's. The
    draw is not seeded: at ε = 1 it now and then selects the top node (one class), which CI
    met once (1 > 1); the writer then loses one row of that class instead of a whole class."""
    from privgate.core.dp.gate import verify_dp_microdata_release

    ledger = BudgetLedger(f"sqlite:///{tmp_path / 'ledger.sqlite'}")
    ledger.open_account("adult", 4.0, 1e-4)
    config = SafePubConfig(epsilon=1.0, delta=1e-5)
    accountant = JournaledAccountant(ledger, "adult", "r1", "run-1", budget=(1.0, 1e-5))
    result = safepub_release(adult, domains, hierarchies, config, accountant)
    sizes = result.frame.groupby(QIS).size()
    if len(sizes) > 1:  # the writer loses the smallest class whole
        smallest = sizes.idxmin()
        rows = result.frame[QIS].itertuples(index=False, name=None)
        keep = [tuple(r) != smallest for r in rows]
    else:  # the draw chose the top node now and then (one class): the writer loses one row
        assert sizes.iloc[0] > result.k
        keep = [True] * len(result.frame)
        keep[0] = False
    lost = len(result.frame) - sum(keep)
    assert lost > 0
    written = tmp_path / "release.csv"
    result.frame[keep].to_csv(written, index=False)
    checks = {
        "expected_columns": QIS,
        "forbidden_columns": [],
        "allowed": {},
        "ledger": ledger,
        "dataset": "adult",
        "release_id": "r1",
        "used_draws": [(d.seq, d.attempt) for d in accountant.used_draws],
        "epsilon": 1.0,
        "delta": 1e-5,
        "min_class_size": result.k,
    }
    unchecked = verify_dp_microdata_release(written, **checks)
    assert unchecked.passed, unchecked.reasons  # k-anonymous, paid for, in its domains
    decision = verify_dp_microdata_release(written, expected_count=len(result.frame), **checks)
    assert not decision.passed
    assert decision.reasons == [
        f"the written release has {len(result.frame) - lost} rows, the release made "
        f"has {len(result.frame)}"
    ]
