"""F-measure and MatchPoint: by hand, against brute force, on Adult's clusterings, at 1M rows."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privgate.core.utility import (
    cluster_labels,
    clustering_utility,
    describe_domains,
    encode_features,
    f_measure,
    match_point,
)


def _brute_match_point(truth, pred) -> float:
    """The paper's definition: two n x n same-cluster matrices, cell by cell."""
    t, p = np.asarray(truth), np.asarray(pred)
    same_t = t[:, None] == t[None, :]
    same_p = (p[:, None] == p[None, :]) & (p[:, None] >= 0) & (p[None, :] >= 0)
    both_kept = (p[:, None] >= 0) & (p[None, :] >= 0)
    return float(((same_t == same_p) & both_kept).sum() / len(t) ** 2)


def _brute_f_measure(truth, pred) -> float:
    t, p = np.asarray(truth), np.asarray(pred)
    total = 0.0
    for c in np.unique(t):
        in_c = t == c
        best = 0.0
        for a in np.unique(p[p >= 0]):
            in_a = p == a
            both = (in_c & in_a).sum()
            best = max(best, 2 * both / (in_c.sum() + in_a.sum()))
        total += in_c.sum() * best
    return total / len(t)


def test_by_hand() -> None:
    truth = [0, 0, 0, 1, 1, 2]
    pred = [7, 7, 8, 8, 8, 9]
    # cluster 0 (3): best A=7: 2*2/(3+2) = 0.8; cluster 1 (2): A=8: 2*2/(2+3) = 0.8;
    # cluster 2 (1): A=9: 2*1/(1+1) = 1
    assert f_measure(truth, pred) == pytest.approx((3 * 0.8 + 2 * 0.8 + 1) / 6)
    # same-cluster pairs (ordered, with the diagonal): truth 9+4+1 = 14, pred 4+9+1 = 14,
    # both 4+1+4+1 = 10 -> disagreements 14 + 14 - 20 = 8 of 36
    assert match_point(truth, pred) == pytest.approx(28 / 36)


def test_suppressed_records_count_against_the_release() -> None:
    truth = [0, 0, 1, 1]
    pred = [0, 0, 1, -1]  # the last record was suppressed
    # F: cluster 0 -> 1; cluster 1 (2 records) vs A=1 (1 record): 2*1/(2+1)
    assert f_measure(truth, pred) == pytest.approx((2 * 1 + 2 * 2 / 3) / 4)
    # the 3 kept records agree on all 9 ordered pairs; the 7 pairs with record 3 disagree
    assert match_point(truth, pred) == pytest.approx(9 / 16)
    assert f_measure(truth, [-1] * 4) == 0.0 and match_point(truth, [-1] * 4) == 0.0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(-1, 4)), min_size=1, max_size=40))
def test_contingency_formulas_equal_brute_force(pairs) -> None:
    truth = [t for t, _ in pairs]
    pred = [p for _, p in pairs]
    assert match_point(truth, pred) == pytest.approx(_brute_match_point(truth, pred), abs=1e-12)
    assert f_measure(truth, pred) == pytest.approx(_brute_f_measure(truth, pred), abs=1e-12)


def test_match_point_is_rands_index_over_ordered_pairs() -> None:
    from sklearn.metrics import rand_score

    rng = np.random.default_rng(0)
    truth, pred = rng.integers(0, 5, 2000), rng.integers(0, 3, 2000)
    n = len(truth)
    assert match_point(truth, pred) == pytest.approx(
        (n + (n * n - n) * rand_score(truth, pred)) / n**2
    )


@pytest.fixture(scope="module")
def adult_kmeans(adult):
    qis = adult.policy.quasi_identifiers
    domains = describe_domains(adult.frame, {q: adult.hierarchies[q] for q in qis}, {"age"})
    X, _ = encode_features(adult.frame, domains, categorical="leaves", dtype=np.float32)
    return cluster_labels(X, 5, "kmeans", seed=0)


def test_identical_clusterings_score_one(adult_kmeans) -> None:
    renamed = (adult_kmeans + 3) % 5  # the same clusters under other names
    assert f_measure(adult_kmeans, adult_kmeans) == 1.0
    assert match_point(adult_kmeans, adult_kmeans) == 1.0
    assert f_measure(adult_kmeans, renamed) == 1.0
    assert match_point(adult_kmeans, renamed) == 1.0


def test_scores_drop_as_labels_are_shuffled(adult_kmeans) -> None:
    rng = np.random.default_rng(7)
    n = len(adult_kmeans)
    f_scores, mp_scores = [], []
    for share in (0.0, 0.1, 0.3, 0.6, 1.0):
        pred = adult_kmeans.copy()
        chosen = rng.choice(n, int(share * n), replace=False)
        pred[chosen] = rng.permutation(pred[chosen])
        f_scores.append(f_measure(adult_kmeans, pred))
        mp_scores.append(match_point(adult_kmeans, pred))
    assert f_scores[0] == 1.0 and mp_scores[0] == 1.0
    assert all(a > b for a, b in zip(f_scores, f_scores[1:], strict=False)), f_scores
    assert all(a > b for a, b in zip(mp_scores, mp_scores[1:], strict=False)), mp_scores
    # fully shuffled, agreement falls to what chance gives for these cluster sizes
    sizes = np.bincount(adult_kmeans) / n
    chance = (sizes**2).sum() ** 2 + (1 - (sizes**2).sum()) ** 2
    assert mp_scores[-1] == pytest.approx(chance, abs=0.01)


def test_match_point_of_a_million_records_never_builds_pair_matrices() -> None:
    rng = np.random.default_rng(1)
    n = 1_000_000
    truth = rng.integers(0, 5, n)
    pred = np.where(rng.random(n) < 0.9, truth, rng.integers(0, 5, n))
    pred[rng.choice(n, 1000, replace=False)] = -1  # some suppressed records
    tracemalloc.start()
    mp = match_point(truth, pred)
    fm = f_measure(truth, pred)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 200 * 2**20  # an n x n boolean matrix would need 931 GiB
    # the same number through scikit-learn's Rand index over the kept records
    from sklearn.metrics import rand_score

    kept = pred >= 0
    m = int(kept.sum())
    expected = (m + (m * m - m) * rand_score(truth[kept], pred[kept])) / n**2
    assert mp == pytest.approx(expected, rel=1e-9)
    assert 0.9 < fm < 1.0
    # exact integer arithmetic: agreement counts up to n^2 = 1e12 are not rounded
    assert match_point(truth, truth) == 1.0


@pytest.mark.slow
def test_identical_release_clusters_identically(adult) -> None:
    qis = adult.policy.quasi_identifiers
    domains = describe_domains(adult.frame, {q: adult.hierarchies[q] for q in qis}, {"age"})
    result = clustering_utility(
        adult.frame, adult.frame.astype("string"), domains, n_clusters=(3,), seed=0
    )
    assert [(s.method, s.f_measure, s.match_point) for s in result.scores] == [
        ("kmeans", 1.0, 1.0),
        ("bisecting_kmeans", 1.0, 1.0),
    ]


@pytest.mark.slow
def test_adult_release_clusterings(adult, adult_k5) -> None:
    _, release = adult_k5
    qis = adult.policy.quasi_identifiers
    domains = describe_domains(adult.frame, {q: adult.hierarchies[q] for q in qis}, {"age"})
    result = clustering_utility(adult.frame, release, domains, n_clusters=(3, 5), seed=0)
    assert [(s.method, s.n_clusters) for s in result.scores] == [
        ("kmeans", 3),
        ("kmeans", 5),
        ("bisecting_kmeans", 3),
        ("bisecting_kmeans", 5),
    ]
    for s in result.scores:
        assert 0 < s.f_measure < 1 and 0 < s.match_point < 1
    assert result.rows == len(adult.frame) and result.release_rows == len(release)


def test_bad_parameters_are_named() -> None:
    with pytest.raises(ValueError, match="'method' parameter"):
        cluster_labels(np.zeros((4, 1)), 2, "dbscan")
    with pytest.raises(ValueError, match="'n_clusters' parameter"):
        cluster_labels(np.zeros((4, 1)), 1)
    with pytest.raises(ValueError, match="same length"):
        match_point([0, 1], [0])
