"""Tiered releases (RFK-anonymity): k-anonymity over the most important attributes first.

Plain k-anonymity generalizes every quasi-identifier, including the ones a classifier needs
most. A tiered release takes the attribute tiers of a sensitivity ranking
(:func:`privgate.core.ranking.rank_attributes`, tier 1 = most important) and, for release
``E``, applies k-anonymity (generalization and suppression) to the attributes of tiers ``1..E``
only; the attributes of later tiers are released as they are. Release ``E = max tier`` covers
every ranked quasi-identifier and is plain k-anonymity.

What a release ``E < max tier`` protects is therefore exactly its ``covered`` columns: every
combination of their released values is shared by at least ``k`` records, while the uncovered
quasi-identifiers can single a record out. The coverage comes from the ranking
(:meth:`Tiered.plan`), never from the search's own account, and the manifest states it.

Each release runs the optimal full-domain search (:class:`OptimalLattice`) on its covered
columns. :func:`select_releases` holds the rule for which of a run's releases are published.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from privgate.core.anonymize._contract import PlannedRelease, SearchInput
from privgate.core.anonymize._optimal import OptimalLattice
from privgate.core.anonymize._release import release_table
from privgate.core.anonymize._result import AnonymizationResult
from privgate.core.anonymize._setup import SearchSetup
from privgate.core.exceptions import AnonymizationError, PolicyError
from privgate.core.policy import Algorithm

if TYPE_CHECKING:
    import pandas as pd

    from privgate.core.hierarchy import Hierarchy
    from privgate.core.privacy import PrivacyModel

__all__ = ["Tiered", "TieredRelease", "check_tiers", "select_releases", "tiered_releases"]


def check_tiers(setup: SearchSetup, tiers: Mapping[str, int]) -> None:
    """Every quasi-identifier has an integer tier >= 1, and nothing else has one.

    Raises
    ------
    PolicyError
        Naming the columns at fault.
    """
    no_hierarchy = [c for c in tiers if c not in setup.hierarchies]
    if no_hierarchy:
        raise PolicyError(
            f"columns {no_hierarchy} have a tier but no hierarchy: they cannot be generalized"
        )
    no_tier = [c for c in setup.quasi_identifiers if c not in tiers]
    if no_tier:
        raise PolicyError(
            f"quasi-identifiers {no_tier} have a hierarchy but no tier: no tiered release would "
            "cover them; rank every quasi-identifier"
        )
    bad = {c: t for c, t in tiers.items() if isinstance(t, bool) or not isinstance(t, int)}
    bad.update({c: t for c, t in tiers.items() if isinstance(t, int) and t < 1})
    if bad:
        raise PolicyError(f"tiers must be integers >= 1; got {bad}")
    unreleased = [c for c in setup.quasi_identifiers if c not in setup.released_columns]
    if unreleased:
        raise PolicyError(
            f"quasi-identifiers {unreleased} are not among the released columns; a ranked "
            "quasi-identifier that is not released needs no tier"
        )


def tier_plan(
    setup: SearchSetup, tiers: Mapping[str, int], wanted: Sequence[int] | None = None
) -> list[PlannedRelease]:
    """Release ``E`` for every wanted tier (default: every tier present), in increasing ``E``."""
    check_tiers(setup, tiers)
    chosen = sorted(set(tiers.values())) if wanted is None else sorted(set(wanted))
    bad = [t for t in chosen if isinstance(t, bool) or not isinstance(t, int) or t < 1]
    if bad or not chosen:
        raise PolicyError(f"tiers_wanted must be integers >= 1; got {list(wanted or [])}")
    plan = []
    for tier in chosen:
        covered = tuple(q for q in setup.quasi_identifiers if tiers[q] <= tier)
        if not covered:  # possible only with tiers that start above 1
            raise PolicyError(
                f"tier {tier} covers no quasi-identifier (lowest tier present is "
                f"{min(tiers.values())})"
            )
        plan.append(PlannedRelease(covered, tier))
    return plan


class Tiered(OptimalLattice):
    """The optimal search, run once per tier of the ranking (see module notes)."""

    name = "tiered"

    def plan(self, data: SearchInput) -> list[PlannedRelease]:
        """One release per tier the ranking found, E = 1..n, each covering tiers 1..E."""
        ranking = data.require_ranking(self.name)
        tiers = {q: ranking.tiers[q] for q in data.setup.quasi_identifiers if q in ranking.tiers}
        return tier_plan(data.setup, tiers)

    def anonymize(self, data: SearchInput) -> AnonymizationResult:
        try:
            result = super().anonymize(data)
        except AnonymizationError as exc:
            raise AnonymizationError(
                f"tiered release covering {list(data.covered)}: {exc}"
            ) from exc
        uncovered = {
            q: "unchanged (not covered)"
            for q in data.setup.quasi_identifiers
            if q not in result.covered
        }
        result.transformation.update(uncovered)
        return result


def select_releases(releases: Sequence, setup: SearchSetup) -> list:
    """The releases of a run to publish, in order.

    A run makes one release, or (tiered) one per tier; each item has a ``tier``. The policy's
    ``algorithm.release_tiers`` names the tiers to publish; by default the last release, which
    covers every quasi-identifier.

    Raises
    ------
    PolicyError
        A requested tier that the run did not make (the ranking found fewer tiers).
    """
    if setup.release_tiers is None:
        return [releases[-1]]
    by_tier = {r.tier: r for r in releases}
    missing = sorted(set(setup.release_tiers) - set(by_tier))
    if missing:
        raise PolicyError(
            f"algorithm.release_tiers: tiers {missing} do not exist; the ranking found tiers "
            f"{sorted(t for t in by_tier if t is not None)} (fewer distinct importance scores "
            "than ranking.tiers)"
        )
    return [by_tier[t] for t in sorted(setup.release_tiers)]


@dataclass(frozen=True)
class TieredRelease:
    """Release ``E`` of :func:`tiered_releases`.

    Attributes
    ----------
    tier : int
        ``E``: the release covers tiers ``1..E``.
    covered : list of str
        The quasi-identifiers its k-anonymity (and every other privacy model) covers, in the
        order of the hierarchies given.
    frame : DataFrame
        The release: covered QIs replaced by their generalized labels (text), the other
        released columns as in the input, suppressed records removed; the input's index is
        kept so rows can be matched with their originals.
    result : AnonymizationResult
    """

    tier: int
    covered: list[str]
    frame: pd.DataFrame
    result: AnonymizationResult

    @property
    def uncovered(self) -> list[str]:
        """Released columns outside the k-anonymity: as in the input."""
        return [c for c in self.frame.columns if c not in self.covered]

    def to_dict(self) -> dict:
        """JSON-able facts for the release's manifest: exactly what its k-anonymity covers."""
        return {
            "tier": self.tier,
            "covered_columns": list(self.covered),
            "uncovered_columns": self.uncovered,
            "levels": {k: int(v) for k, v in (self.result.levels or {}).items()},
            "rows": len(self.frame),
            "suppressed": self.result.n_suppressed,
        }


def tiered_releases(
    frame: pd.DataFrame,
    hierarchies: dict[str, Hierarchy],
    tiers: dict[str, int],
    models: Sequence[PrivacyModel],
    suppression_limit: float,
    released_columns: Sequence[str],
    *,
    metric: str = "loss",
    tiers_wanted: Sequence[int] | None = None,
) -> list[TieredRelease]:
    """Release ``E`` for every wanted tier from explicit tiers (no policy, no ranking object).

    The same search as a tiered policy runs through :func:`privgate.core.stages.anonymize`,
    for experiments that set the tiers themselves (benchmarks, tests).

    Parameters
    ----------
    frame : DataFrame
        The validated input.
    hierarchies : dict of str to Hierarchy
        One per quasi-identifier; every one must have a tier.
    tiers : dict of str to int
        Tier of each quasi-identifier, 1 = most important.
    models : sequence of PrivacyModel
    suppression_limit : float
    released_columns : sequence of str
        Columns of every release, in order; must include every quasi-identifier.
    metric : str, default="loss"
    tiers_wanted : sequence of int, optional
        Which releases to build; default every tier present in ``tiers``.

    Raises
    ------
    PolicyError
        A tiered column without hierarchy (or the reverse), a tier or wanted tier that is not
        an integer >= 1, a QI not released, or a column missing from ``frame``.
    AnonymizationError
        A release cannot meet the models within the suppression limit.
    HierarchyError
        A covered QI has a missing value or a value its hierarchy does not cover.
    """
    absent = [c for c in [*hierarchies, *released_columns] if c not in frame.columns]
    if absent:
        raise PolicyError(f"columns {sorted(set(absent))} are not in the table")
    setup = SearchSetup(
        algorithm=Algorithm.TIERED,
        quasi_identifiers=tuple(hierarchies),
        hierarchies=dict(hierarchies),
        models=tuple(models),
        numeric=frozenset(),
        suppression_limit=suppression_limit,
        released_columns=tuple(released_columns),
        metric=metric,
    )
    plan = tier_plan(setup, tiers, tiers_wanted)
    data = SearchInput.prepare(frame, setup)
    algorithm = Tiered.from_setup(setup)
    releases = []
    for planned in plan:
        result = algorithm.anonymize(data.covering(planned.covered))
        release = release_table(frame, result, setup.released_columns)
        releases.append(TieredRelease(planned.tier, list(planned.covered), release, result))
    return releases
