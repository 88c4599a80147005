"""Differentially private synthetic microdata: MST and AIM, run by OpenDP, paid through the ledger.

The release is a table of synthetic records with exactly the policy's released columns, every
value inside its declared domain, drawn from a graphical model (Private-PGM, McKenna et al.)
fitted to noisy marginals of the input:

* **MST** (McKenna, Miklau & Sheldon, "Winning the NIST Contest", JPC 2021): all one-way
  marginals, then the pairs that are worst explained by them chosen as a maximum spanning tree
  by the exponential mechanism, then those two-way marginals;
* **AIM** (McKenna, Mullins, Sheldon & Miklau, VLDB 2022): rounds that each choose, with the
  exponential mechanism, the marginal of the workload (all ``degree``-way marginals) the current
  model explains worst, measure it, refit, and double the per-round budget when progress
  stalls.

**The DP claim.** Privacy unit: one record (one row of the input); neighbouring tables differ by
adding or removing one record (OpenDP's ``frame_distance(symmetric_distance)`` at
``Bound(per_group=1)``). The input is first restricted to the declared domains record by record
(:func:`~privgate.core.dp.release.restrict_records`: a record outside a domain is dropped, a
number clamped), so neighbouring inputs stay neighbours. Each measured marginal is a count
vector over public keys: adding or removing one record changes exactly one cell by 1, so its L2
sensitivity is 1 (OpenDP's ``make_stable_marginals``/``dp_len`` derive the same from the input
metric, not from us). The one-way marginals and the total are released with discrete Gaussian
noise, the two-way (MST) or workload (AIM) marginals are *chosen* with OpenDP's report-noisy-max
(the exponential mechanism; the scores' sensitivity is derived by OpenDP from the same input
metric) and measured with discrete Gaussian noise; OpenDP composes all of it adaptively in
zero-concentrated DP at ``rho`` and converts it to ``(ε, δ)`` with ``make_zCDP_to_approxDP``
at the policy's ``delta`` (the published algorithms are zCDP; OpenDP 0.16's pure-DP MST fails
its own budget check by one ulp). The ``(ε, δ)`` charged is OpenDP's
privacy map of the whole measurement at ``d_in = 1``, never computed by hand.

That measurement is **one journaled draw** (:class:`~privgate.core.dp.journal.
JournaledAccountant`): reserved before it runs, its value (the noisy marginals as JSON text, a
DP output) persisted before it is used, replayed after a crash. Everything after the draw is a
function of that text alone: the graphical model is refitted from it (Private-PGM's mirror
descent, deterministic), the synthetic records are sampled with a seed derived from it, numeric
values are drawn inside their bin with that seed, and records the model puts in OpenDP's latent
"missing" category (which holds no input record) are dropped. Hence the release, and every
number published about it, is post-processing of the charged draw: two neighbouring inputs that
replay the same journal publish the same table (``tests/core/dp/test_synthetic.py``).

What is public: the declared columns and domains (categorical values from the policy's
hierarchies or ``categories``; numeric columns as the integers of their declared range, or as
``numeric_bins`` equal-width bins of it), ε, δ and the settings. Nothing about the private
input is published except through the draw: the number of input records, the records the
declared-domain rule excluded and the run time are owner-side facts (:attr:`SyntheticResult.
owner`).
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import hashlib
import json
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from privgate.core.dp import _scale_search
from privgate.core.dp._accountant import Charger, PrivacyParameterError, Spend

__all__ = [
    "METHODS",
    "NumericBins",
    "SyntheticConfig",
    "SyntheticDomains",
    "SyntheticResult",
    "numeric_bins",
    "records_from_draw",
    "synthesize",
]

#: The synthesizers a policy may name (``differential_privacy.method``).
METHODS = ("mst", "aim")


@dataclass(frozen=True)
class SyntheticDomains:
    """The declared domain of every released column (all of it public).

    Attributes
    ----------
    columns : list of str
        The released columns, in policy order: exactly the synthetic table's columns.
    categorical : dict
        Column -> its declared values.
    numeric : dict
        Column -> declared ``(minimum, maximum)``.
    integer : frozenset
        The numeric columns declared ``type: integer``.
    """

    columns: list[str]
    categorical: dict[str, list[str]]
    numeric: dict[str, tuple[float, float]]
    integer: frozenset[str]

    def to_dict(self) -> dict:
        return {
            "columns": list(self.columns),
            "categorical": {k: list(v) for k, v in self.categorical.items()},
            "numeric": {k: list(v) for k, v in self.numeric.items()},
            "integer": sorted(self.integer),
        }


@dataclass(frozen=True)
class SyntheticConfig:
    """What the synthesizer does (all of it public, from the policy).

    Attributes
    ----------
    method : {"mst", "aim"}
    epsilon, delta : float
        The release's (ε, δ); δ > 0 (the mechanisms are zCDP, converted at δ).
    numeric_bins : int
        Equal-width bins of a numeric column's declared range, when it is a float column or an
        integer column with more than ``max_integer_keys`` values.
    max_integer_keys : int
        An integer column with at most this many values in its declared range keeps one
        category per value.
    aim_degree : int
        AIM's workload: every marginal of this many columns.
    aim_rounds : int or None
        AIM's maximum number of rounds (None: the published default, 16 x columns).
    aim_max_size : float
        AIM's model-size cap in MB.
    """

    method: str
    epsilon: float
    delta: float
    numeric_bins: int = 32
    max_integer_keys: int = 128
    aim_degree: int = 3
    aim_rounds: int | None = None
    aim_max_size: float = 80.0
    #: MST's share of its multi-way budget for measuring (the rest selects the tree). When
    #: OpenDP 0.16 would refuse its own selection budget at this split (a floating-point sum,
    #: :func:`_mst_selection_fits`), the largest split below it in steps of 0.001 that it
    #: accepts is used: a public, data-independent choice, reported in the settings.
    mst_measure_split: float = 0.9

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise PrivacyParameterError(f"method must be one of {METHODS}; got {self.method!r}")
        if not (self.epsilon > 0 and math.isfinite(self.epsilon)):
            raise PrivacyParameterError(f"epsilon must be > 0; got {self.epsilon!r}")
        if not 0 < self.delta < 1:
            raise PrivacyParameterError(
                f"delta must lie in (0, 1) for {self.method}: its noise is Gaussian (zCDP, "
                f"converted to (epsilon, delta)); got {self.delta!r}"
            )


@dataclass(frozen=True)
class NumericBins:
    """A numeric column's public categories: integers, or bins of its declared range."""

    column: str
    low: float
    high: float
    integer: bool
    edges: tuple[float, ...]  # empty: one category per integer

    @property
    def labels(self) -> list[str]:
        if not self.edges:
            return [str(v) for v in range(int(self.low), int(self.high) + 1)]
        return [f"b{i}" for i in range(len(self.edges) - 1)]

    def encode(self, values: pd.Series) -> pd.Series:
        """The category of each (restricted) value."""
        numbers = values.to_numpy(dtype=float)
        if not self.edges:
            return pd.Series([str(int(v)) for v in numbers], index=values.index, dtype=object)
        inner = np.asarray(self.edges[1:-1])
        index = np.searchsorted(inner, numbers, side="right")
        return pd.Series([f"b{i}" for i in index], index=values.index, dtype=object)

    def decode(self, labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Numbers for categories: the integer itself, or uniform inside the bin."""
        if not self.edges:
            return np.array([int(v) for v in labels], dtype=np.int64)
        index = np.array([int(str(v)[1:]) for v in labels], dtype=np.int64)
        lo = np.asarray(self.edges)[index]
        hi = np.asarray(self.edges)[index + 1]
        if self.integer:
            low = np.ceil(lo).astype(np.int64)
            last = index == len(self.edges) - 2
            high = np.where(last, np.floor(hi), np.ceil(hi) - 1).astype(np.int64)
            high = np.maximum(high, low)
            return low + (rng.random(len(index)) * (high - low + 1)).astype(np.int64)
        return rng.uniform(lo, hi)

    def to_dict(self) -> dict:
        return {"bins": len(self.edges) - 1 if self.edges else None, "edges": list(self.edges)}


def numeric_bins(domains: SyntheticDomains, config: SyntheticConfig) -> dict[str, NumericBins]:
    """Each numeric column's categories, from its declared range only (never the data)."""
    out = {}
    for name, (low, high) in domains.numeric.items():
        integer = name in domains.integer
        if integer and high - low + 1 <= config.max_integer_keys:
            out[name] = NumericBins(name, math.ceil(low), math.floor(high), True, ())
            continue
        edges = tuple(float(e) for e in np.linspace(low, high, config.numeric_bins + 1))
        out[name] = NumericBins(name, low, high, integer, edges)
    return out


@dataclass(frozen=True)
class SyntheticResult:
    """A synthetic release and its public account (plus the owner's log).

    Attributes
    ----------
    frame : DataFrame
        The synthetic records (declared columns only, values in the declared domains).
    spend : Spend
        What the one OpenDP draw cost (ε, δ from OpenDP's privacy map).
    rho : float
        The zCDP budget the measurement was built with.
    marginals : list of dict
        The measured marginals (columns and noise standard deviation; DP outputs).
    keys : dict
        The categories each categorical column was measured over (public).
    bins : dict
        The numeric columns' binning (public).
    noisy_total : int
        The model's estimate of the number of records (a DP output).
    dropped : int
        Synthetic records dropped because the model put them in the latent missing category
        (a function of the DP output).
    seed : int
        The sampling seed, derived from the journaled marginals (public: post-processing).
    draws : list of dict
        The journaled draw(s) the release used; empty when not drawn through a journal.
    owner : dict
        **Not differentially private, never published**: input rows, the declared-domain
        rule's exclusions and clampings, whether the draw was replayed, run time.
    """

    frame: pd.DataFrame
    spend: Spend
    rho: float
    marginals: list[dict]
    keys: dict
    bins: dict
    noisy_total: int
    dropped: int
    seed: int
    settings: dict = field(default_factory=dict)
    draws: list[dict] = field(default_factory=list)
    owner: dict = field(default_factory=dict)

    def public(self) -> dict:
        """JSON-ready: everything about the release that may be published."""
        return {
            "method_spend": self.spend.to_dict(),
            "rho": self.rho,
            "marginals": list(self.marginals),
            "numeric_bins": dict(self.bins),
            "noisy_total": self.noisy_total,
            "dropped_missing_category": self.dropped,
            "sampling_seed": self.seed,
            "settings": dict(self.settings),
            "synthetic_rows": len(self.frame),
        }


# ----------------------------------------------------------------------------------------------
# The OpenDP measurement


def _opendp():
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


def _rho_for(epsilon: float, delta: float) -> float:
    """The largest ρ whose zCDP-to-(ε, δ) conversion (OpenDP's) stays within ``epsilon``.

    Found on a one-number Gaussian mechanism (cheap to build) whose privacy map at sensitivity
    1 is ``ρ = 1 / (2 scale²)``; the contingency table is then built once at that ρ and its own
    map is checked.
    """
    dp = _opendp()
    space = (dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float))

    def approx(scale: float):
        zcdp = dp.m.make_gaussian(*space, scale=scale)
        return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(zcdp), delta=delta)

    scale = float(dp.binary_search_param(approx, d_in=1.0, d_out=(epsilon, delta), T=float))
    return float(dp.m.make_gaussian(*space, scale=scale).map(1.0))


#: True while :func:`_runs_at` rehearses a measurement on an empty table: its models are not
#: fitted (:func:`_estimator`). A context variable, so a rehearsal in one thread leaves the
#: draws of others as they are.
_REHEARSING: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "privgate_synthetic_rehearsing", default=False
)


def _estimator(method: str, domain, loss_fn, *, potentials=None):
    """The model OpenDP's MST/AIM asks for, looked up when it asks.

    OpenDP's fit where a model is read; its scores (AIM's workload, MST's pairs) query the model
    in numpy instead of eager JAX compiled anew for every shape; MST's last fit, which nobody
    reads, is skipped (:mod:`~privgate.core.dp._model_projection`). In a rehearsal on an empty
    table (:func:`_runs_at`) no model is fitted: nobody reads them, and OpenDP's measurement
    and its privacy map do not depend on the estimator (its documented extension point), so
    the measurement that is rehearsed is the very one that then runs on the data.
    """
    from privgate.core.dp import _model_projection

    if _REHEARSING.get():
        chosen = _model_projection.unfitted_model
    elif method == "mst":
        chosen = _model_projection.mst_estimator
    else:
        chosen = _model_projection.numpy_projection_estimator
    return chosen(domain, loss_fn, potentials=potentials)


def _measurement(columns, keys, config: SyntheticConfig, rho: float, estimator=None):
    """The (ε, δ) contingency-table measurement over string-coded columns, and its ``d_in``.

    ``estimator`` None: :func:`_estimator` (OpenDP's fit where MST/AIM reads the model, none in
    a rehearsal). OpenDP's noise-scale searches while it is built (the one-way marginals) and
    while it runs (:func:`_run`: MST's and AIM's selections and measurements) find OpenDP's own
    scales from their closed form (:mod:`~privgate.core.dp._scale_search`); run it through
    :func:`_run`.
    """
    dp = _opendp()
    series = [dp.series_domain(c, dp.atom_domain(T=dp.String)) for c in columns]
    domain = dp.lazyframe_domain(series)
    metric = dp.frame_distance(dp.symmetric_distance())
    d_in = [dp.polars.Bound(per_group=1)]  # one record added or removed
    fit = {"estimator": estimator or functools.partial(_estimator, config.method)}
    if config.method == "mst":
        algorithm = dp.mbi.MST(measure_split=config.mst_measure_split, **fit)
    else:
        algorithm = dp.mbi.AIM(
            queries=config.aim_degree,
            rounds=config.aim_rounds,
            max_size=config.aim_max_size,
            **fit,
        )
    with _scale_search.routed():  # the one-way scale: OpenDP's, found in a few builds
        zcdp, _, _ = dp.mbi.make_contingency_table(
            domain, metric, dp.zero_concentrated_divergence(), d_in, rho,
            keys=keys, algorithm=algorithm,
        )  # fmt: skip
    approx = dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(zcdp), delta=config.delta)
    return approx, d_in


def _run(measurement, frame, *, rehearsal: bool = False):
    """Invoke a :func:`_measurement` on ``frame`` with OpenDP's scale searches routed
    (:mod:`~privgate.core.dp._scale_search`); ``rehearsal``: with no model fitted
    (:func:`_estimator`)."""
    token = _REHEARSING.set(rehearsal)
    try:
        with _scale_search.routed():
            return measurement(frame)
    finally:
        _REHEARSING.reset(token)


def _marginals_text(table: Any) -> str:
    """The draw's value as journal text: the keys and the noisy marginals (DP outputs only)."""
    marginals = []
    for m in table.marginals.flatten():
        values = np.asarray(m.noisy_measurement, dtype=float).tolist()
        marginals.append({"clique": list(m.clique), "values": values, "stddev": float(m.stddev)})
    keys = {c: table.keys[c].to_list() for c in table.keys}
    return json.dumps({"keys": keys, "marginals": marginals}, sort_keys=True)


class _TextCodec:
    """The draw's value already is its journal text."""

    def encode(self, value: str) -> str:
        return value

    def decode(self, text: str) -> str:
        return text


def fit_model(text: str) -> Any:
    """The contingency table (graphical model) fitted to journaled noisy marginals.

    Post-processing: Private-PGM's mirror descent on the noisy marginals alone, deterministic,
    so the first run and a replay after a crash (or the gate, re-deriving the release) fit the
    same model.
    """
    import jax.numpy as jnp
    import mbi

    dp = _opendp()
    data = json.loads(text)
    measurements = [
        mbi.LinearMeasurement(jnp.asarray(m["values"]), tuple(m["clique"]), m["stddev"])
        for m in data["marginals"]
    ]
    domain = mbi.Domain.fromdict({c: len(k) for c, k in data["keys"].items()})
    model = dp.mbi.mirror_descent(domain, measurements)
    by_clique: dict[tuple, list] = {}
    for m in measurements:
        by_clique.setdefault(m.clique, []).append(m)
    return dp.mbi.ContingencyTable(
        keys=data["keys"], cuts={}, marginals=dp.mbi.Marginals(by_clique), model=model
    )


# ----------------------------------------------------------------------------------------------
# The release


def synthesize(
    records: pd.DataFrame,
    domains: SyntheticDomains,
    config: SyntheticConfig,
    accountant: Charger,
) -> SyntheticResult:
    """Release a synthetic table of ``records``: restrict, draw once through OpenDP, post-process.

    Parameters
    ----------
    records : DataFrame
        The input records (any columns; the declared ones are used). Records outside a declared
        domain are excluded and numbers clamped first
        (:func:`~privgate.core.dp.release.restrict_records`).
    domains : SyntheticDomains
    config : SyntheticConfig
    accountant : Accountant or JournaledAccountant
        Pays for (and journals) the one OpenDP draw.

    Returns
    -------
    SyntheticResult

    Raises
    ------
    BudgetExceededError
        The draw does not fit the accountant's cap (nothing is drawn).
    """
    import polars as pl

    from privgate.core.dp.journal import JournaledAccountant
    from privgate.core.dp.release import restrict_records

    started = time.perf_counter()
    if len(domains.columns) < 2:
        raise PrivacyParameterError(
            f"{config.method} synthesizes a table of at least two columns; got {domains.columns}"
        )
    missing = [c for c in domains.columns if c not in records.columns]
    if missing:
        raise PrivacyParameterError(f"the input has no column(s) {missing} declared for release")
    categorical = {c: domains.categorical[c] for c in domains.columns if c in domains.categorical}
    restricted, rule = restrict_records(records, categorical, domains.numeric, domains.integer)
    bins = numeric_bins(domains, config)
    keys: dict[str, list[str]] = {}
    coded = {}
    for name in domains.columns:
        if name in bins:
            keys[name] = bins[name].labels
            coded[name] = bins[name].encode(restricted[name])
        else:
            keys[name] = list(domains.categorical[name])
            coded[name] = restricted[name].astype(str)
    frame = pl.LazyFrame({c: pl.Series(c, coded[c].tolist(), dtype=pl.String) for c in coded})
    measurement, rho, epsilon, delta, config = _budgeted_measurement(domains.columns, keys, config)
    step = f"{config.method.upper()} noisy marginals (OpenDP contingency table)"
    spend = Spend(f"opendp_{config.method}_zcdp", epsilon, delta, 1.0, step, None)
    text = accountant.draw(spend, lambda: _marginals_text(_run(measurement, frame)), _TextCodec())
    # From here on: post-processing of the journaled text only.
    synthetic, table, seed, dropped = records_from_draw(text, domains, config)
    marginals = [
        {"columns": list(m.clique), "stddev": float(m.stddev)} for m in table.marginals.flatten()
    ]
    journaled = isinstance(accountant, JournaledAccountant)
    return SyntheticResult(
        frame=synthetic,
        spend=spend,
        rho=rho,
        marginals=marginals,
        keys={c: v for c, v in keys.items() if c not in bins},
        bins={c: b.to_dict() for c, b in bins.items()},
        noisy_total=int(round(float(table.model.total))),
        dropped=dropped,
        seed=seed,
        settings={"mst_measure_split": config.mst_measure_split} if config.method == "mst" else {},
        draws=[r.to_dict() for r in accountant.used_draws] if journaled else [],
        owner={
            **rule,
            "replayed_draws": getattr(accountant, "replayed", 0),
            "seconds": round(time.perf_counter() - started, 3),
        },
    )


def records_from_draw(
    text: str, domains: SyntheticDomains, config: SyntheticConfig
) -> tuple[pd.DataFrame, Any, int, int]:
    """The synthetic records a journaled draw yields: a function of the draw's text alone.

    Used by :func:`synthesize` and by the DP gate, which re-derives the release from the ledger
    and compares it with the written file. Returns the records, the fitted table, the sampling
    seed and the number of records dropped from the latent missing category.
    """
    table = fit_model(text)
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    synthetic, dropped = _sample(table, seed)
    rng = np.random.default_rng(seed)
    bins = numeric_bins(domains, config)
    out = {}
    for name in domains.columns:
        column = synthetic[name].to_numpy()
        out[name] = bins[name].decode(column, rng) if name in bins else column.astype(object)
    return pd.DataFrame(out, columns=domains.columns), table, seed, dropped


def _runs_at(measurement, columns) -> bool:
    """Whether OpenDP's ``measurement`` completes, tried on an empty (public) table.

    OpenDP 0.16's MST splits its selection budget in floating point and can refuse its own
    selection by one ulp at run time ("insufficient budget for query"), after the one-way
    marginals were already drawn: a draw lost and charged. The split depends on ρ and the
    columns only, never on the data, so a rehearsal on a table with no records (noise on
    public data costs nothing) with models that are not fitted (nobody reads them:
    :func:`_estimator`) finds such a ρ before anything private is measured. The measurement
    rehearsed is the one built for the draw (no second OpenDP build); it keeps no state
    between invocations. AIM's later rounds depend on the data; the rehearsal covers its first
    ones.
    """
    import polars as pl
    from opendp.mod import OpenDPException

    empty = pl.LazyFrame({c: pl.Series(c, [], dtype=pl.String) for c in columns})
    try:
        _run(measurement, empty, rehearsal=True)
    except OpenDPException as error:
        if "insufficient budget" in str(error):
            return False
        raise
    return True


def _mst_selection_fits(n_columns: int, rho: float, split: float) -> bool:
    """Whether OpenDP 0.16's MST accepts its own tree-selection budget at ``(rho, split)``.

    OpenDP's MST (``opendp/extras/mbi``) gives half of ``rho`` to the one-way marginals, the
    rest less two ulps to MST; of that, ``split`` measures and the rest less two ulps selects
    the tree, in ``n - 1`` noisy-max rounds of one ulp below ``d_select / (n - 1)`` each. Its
    adaptive composition adds those ``n - 1`` budgets rounding up, and the sum can exceed
    ``d_select``: the run then stops with "insufficient budget for query" after the one-way
    marginals were drawn. On 9 columns (8 rounds) this happens at every ρ for a split of 0.9
    (ε = 0.5, 1, 2 and 10 on Adult), and for some splits and not others. This repeats the same
    floating-point steps with OpenDP's own composition, on public numbers only (ρ, the split,
    the number of columns), so a split it accepts is found before anything is measured.
    """
    dp = _opendp()

    def prior(x: float) -> float:
        return float(np.nextafter(x, -np.inf))

    rounds = n_columns - 1
    d_multiway = prior(prior(rho - rho * 0.5))
    d_select = prior(prior(d_multiway - d_multiway * split))
    each = prior(d_select / rounds)
    composition = dp.c.make_adaptive_composition(
        dp.vector_domain(dp.atom_domain(T=float, nan=False)),
        dp.linf_distance(T=float, monotonic=False),
        dp.zero_concentrated_divergence(),
        d_in=1.0,
        d_mids=[each] * rounds,
    )
    return float(composition.map(1.0)) <= d_select


def _mst_splits(n_columns: int, rho: float, split: float, first: int | None = None) -> list[float]:
    """Measure splits to try, largest first: ``split`` and below in steps of 0.001 that fit
    (only the ``first`` ones when given: each costs an OpenDP composition map)."""
    found: list[float] = []
    for i in range(int(round(split * 1000))):
        candidate = round(split - 0.001 * i, 3)
        if candidate > 0 and _mst_selection_fits(n_columns, rho, candidate):
            found.append(candidate)
            if first is not None and len(found) == first:
                break
    return found


#: Public settings whose budget search this process keeps (see :func:`_budgeted_measurement`).
_BUDGET_SEARCHES_KEPT = 16


def _public_setting(columns, keys, config: SyntheticConfig) -> tuple:
    """The key of a budget search: the declared columns, their keys and the settings, hashable.

    Everything in it is public (the policy's declared domains, ε, δ and settings); the records
    never reach it, so two releases of different data with the same policy share one search.
    """
    return (
        tuple(columns),
        tuple((name, tuple(values)) for name, values in keys.items()),
        config,
    )


def _budgeted_measurement(columns, keys, config: SyntheticConfig):
    """The measurement at the largest ρ whose OpenDP privacy map fits ``(epsilon, delta)``.

    Built from public inputs only (columns, keys, settings) by :func:`_search_budget`, once per
    public setting and process: the search (ρ within a few ulps, MST's measure split, a
    rehearsal on an empty table) costs a few CPU seconds (3.3-3.9 s for 2 and 9 columns at a
    load of 10; before :mod:`~privgate.core.dp._scale_search`, OpenDP's bisections for the
    noise scales made it thousands of builds and 45-70 s), and its result is a function of
    :func:`_public_setting` alone. An
    OpenDP measurement keeps no state between invocations (each draw builds its own
    queryable and fresh noise), so a release that reuses it draws exactly as one that built it.
    """
    return _kept_search(_public_setting(columns, keys, config))


@functools.lru_cache(maxsize=_BUDGET_SEARCHES_KEPT)
def _kept_search(setting: tuple):
    """:func:`_search_budget` of a :func:`_public_setting`, kept for the process (LRU) and,
    when a directory is configured, on disk (:mod:`~privgate.core.dp._calibration`), where a
    kept result is used only after :func:`_from_kept` checked it with OpenDP."""
    from privgate.core.dp import _calibration

    columns, keys, config = list(setting[0]), {n: list(v) for n, v in setting[1]}, setting[2]
    document = _calibration.setting_document(columns, keys, config)
    kept = _calibration.load(document)
    if kept is not None:
        found = _from_kept(columns, keys, config, *kept)
        if found is not None:
            return found
    found = _search_budget(columns, keys, config)
    _calibration.store(document, found[1], found[4].mst_measure_split)
    return found


def _from_kept(columns, keys, config: SyntheticConfig, rho: float, split: float):
    """The measurement at a kept ``(rho, split)``, or None when they are not to be trusted.

    Used only when they are values :func:`_search_budget` could have returned for this setting
    (ρ at most the largest OpenDP's conversion accepts and within the search's 16 shrinking
    steps of it; for MST, a split among the first three the public selection check accepts at
    that ρ, :func:`_mst_splits`) and OpenDP's privacy map of the measurement rebuilt at them is
    within ``(epsilon, delta)``. A kept file can therefore never lower the noise; it only
    spares the search and its rehearsal.
    """
    largest = _rho_for(config.epsilon, config.delta)
    if not largest * (1 - 2.0**-40) ** 17 <= rho <= largest:
        return None
    if config.method == "mst":
        if split not in _mst_splits(len(columns), rho, config.mst_measure_split, first=3):
            return None
        chosen = dataclasses.replace(config, mst_measure_split=split)
    elif split == config.mst_measure_split:
        chosen = config
    else:
        return None
    measurement, d_in = _measurement(columns, keys, chosen, rho)
    epsilon, delta = (float(x) for x in measurement.map(d_in))
    if not (epsilon <= config.epsilon and delta <= config.delta):
        return None
    return measurement, rho, epsilon, delta, chosen


def _first_accepted_split(n_columns: int, rho: float, config: SyntheticConfig) -> SyntheticConfig:
    """MST's settings at the largest measure split :func:`_mst_splits` accepts at ``rho`` (the
    configured ones if none is accepted, or for AIM)."""
    if config.method != "mst":
        return config
    splits = _mst_splits(n_columns, rho, config.mst_measure_split, first=1)
    return dataclasses.replace(config, mst_measure_split=splits[0]) if splits else config


def _search_budget(columns, keys, config: SyntheticConfig):
    """The budget search itself (uncached; see :func:`_budgeted_measurement`).

    OpenDP's conversion rounds conservatively, so ρ is shrunk by a few ulps until the map is
    within the budget. For MST the measure split is the largest at or below the configured one
    whose selection budget OpenDP accepts (:func:`_mst_selection_fits`), confirmed by a
    rehearsal of the same measurement on an empty table (:func:`_runs_at`) before the private
    table is measured; each ρ is tried at that split (the measurement returned is always one
    whose own map was checked and that was rehearsed), so when it fits and runs the measurement
    is built once.
    """
    rho = _rho_for(config.epsilon, config.delta)
    measurement = None
    for _ in range(17):
        # MST: built at the split OpenDP accepts at this ρ, so the search below reuses it.
        built = _first_accepted_split(len(columns), rho, config)
        measurement, d_in = _measurement(columns, keys, built, rho)
        epsilon, delta = (float(x) for x in measurement.map(d_in))
        if epsilon <= config.epsilon and delta <= config.delta:
            break
        rho *= 1 - 2.0**-40
    else:
        measurement = None
    if measurement is not None:
        if config.method != "mst":
            if _runs_at(measurement, columns):
                return measurement, rho, epsilon, delta, config
        else:
            at_built_split = measurement, epsilon, delta
            for split in _mst_splits(len(columns), rho, config.mst_measure_split, first=3):
                candidate = dataclasses.replace(config, mst_measure_split=split)
                if split == built.mst_measure_split:  # built and mapped above: same inputs
                    measurement, epsilon, delta = at_built_split
                else:
                    measurement, d_in = _measurement(columns, keys, candidate, rho)
                    epsilon, delta = (float(x) for x in measurement.map(d_in))
                fits = epsilon <= config.epsilon and delta <= config.delta
                if fits and _runs_at(measurement, columns):
                    return measurement, rho, epsilon, delta, candidate
    raise PrivacyParameterError(
        f"{config.method}: no zCDP budget found within (epsilon={config.epsilon}, "
        f"delta={config.delta})"
    )


def _sample(table: Any, seed: int) -> tuple[pd.DataFrame, int]:
    """Sample synthetic records from the fitted model (post-processing), reproducibly.

    :func:`~privgate.core.dp._model_sampling.sample_indices` (not mbi 1.1.0's own sampler,
    whose rank-aligned rounding and measured-clique conditioning publish associations the
    model does not have), with a generator seeded from the journaled marginals. Records in
    OpenDP's latent missing category (it holds no input record) are dropped.
    """
    from privgate.core.dp._model_sampling import sample_indices

    model = table.model
    rows = max(1, int(model.total))
    indices = sample_indices(model, rows, np.random.default_rng([seed, 1]))
    columns = {}
    for name in table.keys:
        keys = np.asarray(list(table.keys[name]), dtype=object)
        columns[name] = keys[indices[name]]
    synthetic = pd.DataFrame(columns)
    keep = synthetic.notna().all(axis=1).to_numpy()
    synthetic = synthetic[keep].reset_index(drop=True)
    return synthetic, int((~keep).sum())
