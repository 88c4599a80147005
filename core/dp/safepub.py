"""SafePub: (ε, δ)-differentially private generalization by random sampling and k-anonymity.

Bild, Kuhn & Prasser, "SafePub: A Truthful Data Anonymization Algorithm With Strong Privacy
Guarantees", PoPETs 2018(1), as implemented in ARX (``criteria/EDDifferentialPrivacy``,
``dp/ParameterCalculation``, ``algorithm/DataDependentEDDPAlgorithm``, ``metric/v2/
MetricMDNMLoss.getScore``); written here from those sources and the paper, not ported.

The release is *truthful*: real records, generalized, never perturbed.

1. **Random sampling.** Each record enters the sample independently with probability β
   (OpenDP's bit-vector randomized response, :func:`_draw_sample`).
2. **Search.** A walk down the generalization lattice: from the top (everything ``*``) the
   candidate set gains the predecessors of the current pivot (one attribute one level finer),
   and the exponential mechanism picks the next pivot among all candidates by a score of
   sensitivity 1 (:func:`loss_score`), ``steps`` times. ARX then returns the pivot with the
   best *exact* score, a data-dependent choice no mechanism pays for; here the output scheme is
   picked among the pivots by one more exponential-mechanism draw, so the search is
   ``ε_sel``-DP *in the sample* by sequential composition of ``steps + 1`` selections.
3. **Anonymization.** The sample is generalized with the chosen scheme and every record whose
   generalized tuple (all released columns) occurs fewer than ``k`` times in it is removed.
   Li, Qardaji & Su (ASIACCS 2012, Thm. 5) show that a *strongly safe* k-anonymization of a
   β-sample — its scheme fixed in advance — satisfies (ε_anon, d(k, β, ε_anon))-DP for
   ``β = 1 - e^(-ε_anon)``.

**The composition is not sequential.** SafePub's paper adds the two into (ε_anon + ε_search,
δ)-DP, but the search and the k-filter read the *same* sample, so they are not independent
mechanisms; on two neighbouring tables an exact computation of the whole output distribution
finds δ above that claim (``tests/core/dp/test_safepub_exact.py``: the search picks whichever
of two schemes the sample filled the added record's class in). What is proved (docs/PRIVACY.md
§4.9) is ``(ε_anon + 2 ε_sel, N · d(k, β, ε_anon))``-DP for a lattice of ``N`` schemes, so the
policy's ``search_share`` of ε (ε_search) runs the selections at ``ε_sel = ε_search / 2`` and
``k`` is the smallest with ``N · d(k) < δ`` (:func:`safepub_plan`); the release costs exactly
(ε, δ).

Everything the mechanism's shape depends on is public: the hierarchies over the *declared*
domains (so the score's shares are the declared domain's, never the data's), ε, δ, the number
of steps. Columns released besides the quasi-identifiers are part of every record's tuple at
their original values (the identity generalization): the k-filter counts whole released records.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.stats import binom

from privgate.core.dp._accountant import Charger, PrivacyParameterError, Spend
from privgate.core.dp.mechanisms import exponential_select
from privgate.core.hierarchy import Hierarchy, value_key

__all__ = [
    "SafePubConfig",
    "SafePubPlan",
    "SafePubResult",
    "SchemeSpace",
    "delta_for_k",
    "loss_score",
    "safepub_parameters",
    "safepub_plan",
    "safepub_release",
    "search_scheme",
]


# ----------------------------------------------------------------------------------------------
# The anonymization step's parameters (Li, Qardaji & Su 2012; ARX ParameterCalculation)

#: The largest ε_anon accepted: β = 1 - e^-5 = 0.993 already needs k = 1,703 at δ = 1e-5.
MAX_EPSILON_ANON = 5.0

#: The largest k SafePub will use: beyond it the release would suppress nearly everything.
MAX_K = 1 << 20


def _gamma(epsilon: float, beta: float) -> float:
    power = math.exp(epsilon)
    return (power - 1.0 + beta) / power


def delta_for_k(k: int, beta: float, epsilon: float) -> float:
    """``d(k, β, ε) = max over n >= n_m of P[Binomial(n, β) > floor(γ n)]``.

    ``γ = (e^ε - 1 + β) / e^ε`` and ``n_m = ceil(k / γ - 1)``. The maximum over the infinite
    range stops once the running maximum reaches the Chernoff bound
    ``c_n = exp(-n (γ ln(γ/β) - (γ - β)))`` of the remaining terms, which decreases in ``n``
    (ARX's ``calculateDelta``). Tail probabilities come from scipy's binomial survival function.
    """
    gamma = _gamma(epsilon, beta)
    n = max(math.ceil(k / gamma - 1.0), 1)
    exponent = gamma * math.log(gamma / beta) - (gamma - beta)
    worst = 0.0
    chunk = 256
    while True:  # vectorized in chunks of n; the same stopping rule, term by term
        ns = np.arange(n, n + chunk)
        running = np.maximum.accumulate(binom.sf(np.floor(ns * gamma), ns, beta))
        running = np.maximum(running, worst)
        stop = np.flatnonzero(running >= np.exp(-ns * exponent))
        if stop.size:
            return float(running[stop[0]])
        worst = float(running[-1])
        n += chunk
        chunk = min(chunk * 2, 1 << 16)


def _bitvec_flip(beta: float) -> tuple[float, bool, float]:
    """OpenDP's RAPPOR flip probability ``f`` for inclusion probability β, and the one it gives.

    On all-zero bits a bit comes out 1 with probability ``f / 2``; on all-one bits with
    ``1 - f / 2``. ``f`` is rounded so that the probability actually used is at most β.
    Returns ``(f, start from ones, probability used)``.
    """
    ones = beta > 0.5
    f = 2.0 * (1.0 - beta) if ones else 2.0 * beta
    f = min(float(np.nextafter(f, math.inf if ones else 0.0)), 1.0)
    return f, ones, (1.0 - f / 2.0 if ones else f / 2.0)


def safepub_parameters(epsilon_anon: float, delta: float, schemes: int = 1) -> tuple[float, int]:
    """The sampling probability β and the smallest ``k`` with ``schemes · d(k, β, ε_anon) < δ``.

    ``schemes`` is the number of generalization schemes the search can output (the lattice's
    nodes): the scheme is chosen by looking at the same sample, so the δ of Li, Qardaji & Su's
    bound is paid once per scheme (docs/PRIVACY.md §4.9); 1 for a scheme fixed in advance.

    β is ``1 - e^(-ε_anon)`` rounded down to what OpenDP's sampler draws (:func:`_bitvec_flip`),
    and ``k`` is computed for that β (the theorem holds for any ``ε >= -ln(1 - β)``). ARX's
    ``calculateK`` returns one more than this ``k`` (its loop increments once past the first
    ``k`` that meets δ): also valid, more conservative.
    """
    if not 0 < epsilon_anon <= MAX_EPSILON_ANON:
        raise PrivacyParameterError(
            f"SafePub's epsilon_anon must lie in (0, {MAX_EPSILON_ANON:g}]; got {epsilon_anon!r} "
            "(beyond it nearly every record is sampled and k grows into the thousands: the "
            "random sampling no longer protects anyone; use dpheter, mst or aim)"
        )
    if not 0 < delta < 1:
        raise PrivacyParameterError(f"SafePub needs 0 < delta < 1; got {delta!r}")
    beta = _bitvec_flip(float(np.nextafter(-math.expm1(-epsilon_anon), 0.0)))[2]
    if schemes < 1:
        raise PrivacyParameterError(f"SafePub needs at least one scheme; got {schemes!r}")
    # d(k) is a maximum over n >= n_m(k), and n_m grows with k: non-increasing in k. Doubling
    # then bisection finds the smallest k with schemes * d(k) < delta.
    high = 1
    while schemes * delta_for_k(high, beta, epsilon_anon) >= delta:
        high *= 2
        if high > MAX_K:
            raise PrivacyParameterError(
                f"SafePub: no k up to {MAX_K} reaches delta = {delta!r} over {schemes} schemes "
                f"at epsilon_anon = "
                f"{epsilon_anon!r} (the sampling rate beta = {beta:.6g} is too close to 1); "
                "use a smaller epsilon or a larger delta"
            )
    low = high // 2  # d(low) >= delta (or low = 0)
    while high - low > 1:
        middle = (low + high) // 2
        if schemes * delta_for_k(middle, beta, epsilon_anon) < delta:
            high = middle
        else:
            low = middle
    k = high
    return beta, k


# ----------------------------------------------------------------------------------------------
# The public solution space: hierarchies over the declared domains


@dataclass(frozen=True)
class _Dimension:
    """One released column: its declared domain's codes per level and each label's share."""

    name: str
    domain: list[str]  # declared values (text keys)
    level_maps: list[np.ndarray]  # level -> (domain index -> label index)
    labels: list[list[str]]
    shares: list[np.ndarray]  # level -> label index -> (leaves - 1) / (domain - 1)

    @property
    def height(self) -> int:
        return len(self.level_maps) - 1


class SchemeSpace:
    """The generalization lattice over declared domains (the search's public input).

    Parameters
    ----------
    domains : mapping of str to list of str
        Every released column -> its declared values.
    hierarchies : mapping of str to Hierarchy
        The quasi-identifiers' hierarchies (columns without one stay at their values).
    """

    def __init__(
        self, domains: Mapping[str, Sequence[str]], hierarchies: Mapping[str, Hierarchy]
    ) -> None:
        self.dimensions: list[_Dimension] = []
        for name, values in domains.items():
            domain = [value_key(v) for v in values]
            hierarchy = hierarchies.get(name)
            table = (
                np.asarray(hierarchy.generalize(domain), dtype=object)
                if hierarchy is not None
                else np.asarray(domain, dtype=object)[:, None]
            )
            level_maps, labels, shares = [], [], []
            for level in range(table.shape[1]):
                codes, uniques = pd.factorize(pd.Series(table[:, level].astype(str)))
                leaves = np.bincount(codes, minlength=len(uniques))
                denominator = max(len(domain) - 1, 1)
                level_maps.append(codes.astype(np.int64))
                labels.append([str(u) for u in uniques])
                shares.append((leaves - 1) / denominator)
            self.dimensions.append(_Dimension(name, domain, level_maps, labels, shares))
        self.names = [d.name for d in self.dimensions]
        self.heights = tuple(d.height for d in self.dimensions)
        self.generalizable = [i for i, d in enumerate(self.dimensions) if d.height > 0]

    @property
    def top(self) -> tuple[int, ...]:
        return self.heights

    def predecessors(self, node: tuple[int, ...]) -> list[tuple[int, ...]]:
        """The nodes one level finer in one attribute."""
        out = []
        for i in self.generalizable:
            if node[i] > 0:
                out.append(node[:i] + (node[i] - 1,) + node[i + 1 :])
        return out

    def encode(self, records: pd.DataFrame) -> np.ndarray:
        """Declared-domain index of every record's value, per column (records already inside)."""
        out = np.empty((len(records), len(self.dimensions)), dtype=np.int64)
        for j, dim in enumerate(self.dimensions):
            index = {v: i for i, v in enumerate(dim.domain)}
            keys = records[dim.name].map(value_key)
            out[:, j] = keys.map(index).to_numpy(dtype=np.int64)
        return out

    def generalize(self, codes: np.ndarray, node: Sequence[int]) -> np.ndarray:
        """Label indices of every record at ``node``."""
        out = np.empty_like(codes)
        for j, dim in enumerate(self.dimensions):
            out[:, j] = dim.level_maps[node[j]][codes[:, j]]
        return out

    def labels(self, generalized: np.ndarray, node: Sequence[int]) -> pd.DataFrame:
        return pd.DataFrame(
            {
                dim.name: np.asarray(dim.labels[node[j]], dtype=object)[generalized[:, j]]
                for j, dim in enumerate(self.dimensions)
            }
        )


def _classes(generalized: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Class id of every row and the class sizes (rows with identical generalized tuples)."""
    if len(generalized) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    _, inverse, counts = np.unique(generalized, axis=0, return_inverse=True, return_counts=True)
    return inverse.reshape(-1), counts


def loss_score(
    space: SchemeSpace, codes: np.ndarray, sampled: np.ndarray, node: Sequence[int], k: int
) -> float:
    """ARX's loss (granularity) score of a scheme for SafePub's search; sensitivity 1.

    ``-(1 / (d (k - 1))) * sum over records and columns of the penalty``: 1 for a record not
    sampled or removed by the k-filter, else the share of the declared domain its generalized
    value covers, ``(leaves under it - 1) / (domain size - 1)`` (0 for an original value, 1
    for ``*``). Sensitivity (one record added or removed): not sampled, ``d`` penalty, so
    ``1 / (k - 1)``; sampled into a class of at least ``k`` records, at most ``d`` more, so
    ``1 / (k - 1)``; into a class of ``k - 1``, which reaches ``k``, the ``k - 1`` records
    it held move from penalty 1 to their share, at most ``d (k - 1)`` in all, so 1; into a
    smaller class, ``d``. Every case is at most 1 for ``k >= 2`` (ARX ``MetricMDNMLoss``).
    """
    d = len(space.dimensions)
    penalty = float(d * int((~sampled).sum()))
    rows = codes[sampled]
    generalized = space.generalize(rows, node)
    class_id, sizes = _classes(generalized)
    kept = sizes[class_id] >= k
    penalty += d * float((~kept).sum())
    for j, dim in enumerate(space.dimensions):
        penalty += float(dim.shares[node[j]][generalized[kept, j]].sum())
    return -penalty / (d * max(k - 1, 1))


# ----------------------------------------------------------------------------------------------
# The release


@dataclass(frozen=True)
class SafePubConfig:
    """SafePub's public settings.

    Attributes
    ----------
    epsilon, delta : float
        The release's (ε, δ).
    search_share : float
        The share of ε charged for the search (ε_search); the rest is ε_anon. The selections
        draw at half of it (the other half pays for their reuse of the sample:
        :func:`safepub_plan`).
    steps : int or None
        Search steps (None: the lattice's height, enough to reach the bottom).
    """

    epsilon: float
    delta: float
    search_share: float = 0.1
    steps: int | None = None

    def __post_init__(self) -> None:
        if not (self.epsilon > 0 and math.isfinite(self.epsilon)):
            raise PrivacyParameterError(f"SafePub's epsilon must be > 0; got {self.epsilon!r}")
        if not 0 < self.delta < 1:
            raise PrivacyParameterError(f"SafePub needs 0 < delta < 1; got {self.delta!r}")
        if not 0 < self.search_share < 1:
            raise PrivacyParameterError(
                f"SafePub's search_share must lie in (0, 1); got {self.search_share!r}"
            )

    @property
    def epsilon_search(self) -> float:
        return self.epsilon * self.search_share

    @property
    def epsilon_anon(self) -> float:
        return self.epsilon - self.epsilon_search


@dataclass(frozen=True)
class SafePubResult:
    """A SafePub release and its public account."""

    frame: pd.DataFrame
    scheme: dict[str, int]
    beta: float
    k: int
    epsilon_anon: float
    epsilon_search: float
    steps: int
    pivots: list[dict]
    epsilon_selections: float = 0.0
    schemes: int = 1
    details: dict = field(default_factory=dict)
    #: Owner-side, never published: the declared-domain rule's exclusions (exact counts).
    owner: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "scheme": dict(self.scheme),
            "beta": self.beta,
            "k": self.k,
            "epsilon_anon": self.epsilon_anon,
            "epsilon_search": self.epsilon_search,
            "epsilon_selections": self.epsilon_selections,
            "schemes": self.schemes,
            "steps": self.steps,
            "pivots": list(self.pivots),
        }


class _BitsCodec:
    """The sample's inclusion bits as journal text (base64 of the packed bits)."""

    def __init__(self, n: int) -> None:
        self._n = n

    def encode(self, bits: np.ndarray) -> str:
        packed = np.packbits(np.asarray(bits, dtype=bool))
        return json.dumps({"n": int(len(bits)), "bits": base64.b64encode(packed).decode()})

    def decode(self, text: str) -> np.ndarray:
        data = json.loads(text)
        packed = np.frombuffer(base64.b64decode(data["bits"]), dtype=np.uint8)
        return np.unpackbits(packed)[: data["n"]].astype(bool)


def _draw_sample(n: int, beta: float) -> np.ndarray:
    """Include each of ``n`` records with probability β (as :func:`_bitvec_flip` rounds it).

    Drawn by OpenDP's ``make_randomized_response_bitvec`` (RAPPOR's permanent randomized
    response: each bit becomes a fresh fair coin with probability ``f``), from OpenDP's
    cryptographic source; never numpy's generators.
    """
    import opendp.prelude as dp

    dp.enable_features("contrib")
    if n == 0:
        return np.zeros(0, dtype=bool)
    f, ones, _ = _bitvec_flip(beta)
    measurement = dp.m.make_randomized_response_bitvec(
        dp.bitvector_domain(max_weight=n), dp.discrete_distance(), f=f
    )
    out = measurement(np.packbits(np.full(n, ones, dtype=bool)))
    return np.unpackbits(np.frombuffer(bytes(out), dtype=np.uint8))[:n].astype(bool)


@dataclass(frozen=True)
class SafePubPlan:
    """What a SafePub release draws and charges, from public inputs only (settings, lattice).

    Attributes
    ----------
    beta : float
        The sampling probability.
    k : int
        The k-filter's threshold.
    steps : int
        Search steps (the selections are ``steps + 1`` with the output scheme's).
    epsilon_step : float
        Each selection's ε.
    sample_epsilon : float
        The ε charged for the sample and the k-filter: ``ε_anon`` plus the selections' total
        (the search's second reading of the same sample).
    schemes : int
        The lattice's nodes, each a scheme the search could output (``N`` in the δ bound).
    """

    beta: float
    k: int
    steps: int
    epsilon_step: float
    sample_epsilon: float
    schemes: int


def safepub_plan(config: SafePubConfig, space: SchemeSpace) -> SafePubPlan:
    """The release's parameters and charges for ``config`` on ``space`` (docs/PRIVACY.md §4.9).

    The search reads the sample the k-filter then releases, so the two are not independent
    mechanisms and do not simply compose. What holds (proof in PRIVACY.md) is
    ``(ε_anon + 2 ε_sel, N · d(k, β, ε_anon))``-DP, with ``ε_sel`` the selections' total ε and
    ``N`` the lattice's nodes. So the search's share ``ε_search`` of ε buys selections at
    ``ε_sel = ε_search / 2`` (the other half is charged with the sample, whose reuse it pays
    for), and ``k`` is the smallest with ``N · d(k) < δ``. The charges sum to ε.
    """
    steps = config.steps if config.steps is not None else sum(space.heights)
    if steps < 1:
        raise PrivacyParameterError(f"SafePub needs at least one search step; got {steps}")
    schemes = math.prod(h + 1 for h in space.heights)
    beta, k = safepub_parameters(config.epsilon_anon, config.delta, schemes)
    selections = config.epsilon_search / 2.0
    return SafePubPlan(
        beta, k, steps, selections / (steps + 1), config.epsilon_anon + selections, schemes
    )


def search_scheme(
    space: SchemeSpace,
    score: Callable[[tuple[int, ...]], float],
    steps: int,
    select: Callable[[list[float], str], int],
) -> tuple[list[tuple[int, ...]], tuple[int, ...]]:
    """SafePub's walk down the lattice: the pivots and the output scheme, given the selections.

    From the top, the candidates gain the predecessors of the current pivot and lose the pivot;
    ``select(scores, step)`` picks the next pivot among them (in :func:`safepub_release` the
    exponential mechanism), ``steps`` times or until no candidate is left, and once more the
    output scheme among the pivots. The candidate lists depend only on the lattice and the
    earlier selections, never on the data; ``score`` is the only data-dependent input. Separate
    from the release so that a test can enumerate every transcript with its exact probability.
    """
    pivot = space.top
    pivots = [pivot]
    candidates: dict[tuple[int, ...], float] = {}
    for step in range(1, steps + 1):
        for node in space.predecessors(pivot):
            if node not in pivots:
                candidates[node] = score(node)
        candidates.pop(pivot, None)
        if not candidates:
            break
        nodes = sorted(candidates)
        pivot = nodes[select([candidates[n] for n in nodes], f"SafePub search step {step}")]
        pivots.append(pivot)
    final = select([score(p) for p in pivots], "SafePub output scheme among the pivots")
    return pivots, pivots[final]


def safepub_release(
    records: pd.DataFrame,
    domains: Mapping[str, Sequence[str]],
    hierarchies: Mapping[str, Hierarchy],
    config: SafePubConfig,
    accountant: Charger,
) -> SafePubResult:
    """Run SafePub on ``records``.

    Parameters
    ----------
    records : DataFrame
        The input; records outside a declared domain are excluded first, record by record
        (:func:`~privgate.core.dp.release.restrict_records`), so neighbours stay neighbours.
    domains : mapping
        Every released column -> its declared values (the order of the released columns).
    hierarchies : mapping
        The quasi-identifiers' hierarchies (over the declared domains).
    config : SafePubConfig
    accountant : Charger
        Pays for the sample (ε_anon, δ) and each selection (ε_search / (steps + 1)).
    """
    from privgate.core.dp.release import restrict_records

    space = SchemeSpace(domains, hierarchies)
    records, rule = restrict_records(
        records, {n: d.domain for n, d in zip(space.names, space.dimensions, strict=True)}, {}
    )
    if not space.generalizable:
        raise PrivacyParameterError("SafePub needs at least one column with a hierarchy")
    codes = space.encode(records)
    plan = safepub_plan(config, space)
    beta, k, steps, epsilon_step = plan.beta, plan.k, plan.steps, plan.epsilon_step
    sample_spend = Spend(
        "safepub_sampling(opendp_randomized_response_bitvec)",
        plan.sample_epsilon,
        config.delta,
        1.0,
        f"SafePub random sampling (beta={beta:.6g}) and k-filter (k={k}), with the "
        "search's reuse of the sample",
        None,
    )
    sampled = accountant.draw(
        sample_spend, lambda: _draw_sample(len(records), beta), _BitsCodec(len(records))
    )
    cache: dict[tuple[int, ...], float] = {}

    def score(node: tuple[int, ...]) -> float:
        if node not in cache:
            cache[node] = loss_score(space, codes, sampled, node, k)
        return cache[node]

    def select(scores: list[float], step: str) -> int:
        return exponential_select(
            scores, epsilon_step, sensitivity=1.0, accountant=accountant, step=step
        )

    pivots, scheme = search_scheme(space, score, steps, select)
    frame = _anonymize(space, codes, sampled, scheme, k)
    return SafePubResult(
        frame=frame,
        scheme=dict(zip(space.names, scheme, strict=True)),
        beta=beta,
        k=k,
        epsilon_anon=config.epsilon_anon,
        epsilon_search=config.epsilon_search,
        steps=steps,
        pivots=[dict(zip(space.names, p, strict=True)) for p in pivots],
        epsilon_selections=plan.epsilon_step * (plan.steps + 1),
        schemes=plan.schemes,
        details={"selections": len(pivots)},
        owner=rule,
    )


def _anonymize(
    space: SchemeSpace, codes: np.ndarray, sampled: np.ndarray, scheme, k: int
) -> pd.DataFrame:
    """The sample at ``scheme`` without the records whose tuple occurs fewer than ``k`` times.

    Row order is shuffled by a permutation seeded from the released rows themselves (the output
    reveals nothing the rows do not, and a replay reproduces it).
    """
    rows = codes[sampled]
    generalized = space.generalize(rows, scheme)
    class_id, sizes = _classes(generalized)
    kept = generalized[sizes[class_id] >= k] if len(rows) else generalized
    frame = space.labels(kept, scheme)
    if len(frame):
        frame = frame.sort_values(list(frame.columns), kind="stable").reset_index(drop=True)
        digest = hashlib.sha256(pd.util.hash_pandas_object(frame, index=False).values).digest()
        order = np.random.default_rng(int.from_bytes(digest[:8], "big")).permutation(len(frame))
        frame = frame.iloc[order].reset_index(drop=True)
    return frame
