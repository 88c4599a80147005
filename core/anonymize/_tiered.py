"""Tiered releases (RFK-anonymity): k-anonymity over the most important attributes first.

Plain k-anonymity generalizes every quasi-identifier, including the ones a classifier needs
most. A tiered release takes the attribute tiers of a sensitivity ranking
(:func:`core.ranking.rank_attributes`, tier 1 = most important) and, for release ``E``, applies
k-anonymity (generalization and suppression) to the attributes of tiers ``1..E`` only; the
attributes of later tiers are released as they are. Release ``E = max tier`` covers every ranked
quasi-identifier and is plain k-anonymity.

What a release ``E < max tier`` protects is therefore exactly its ``covered`` columns: every
combination of their released values is shared by at least ``k`` records, while the uncovered
quasi-identifiers can single a record out. :class:`TieredRelease` carries that list so a
manifest can state it, never implying protection it does not give.

Each release runs the optimal full-domain engine (:class:`OptimalLattice`) on its covered
columns, exactly as :func:`privgate.core.stages.anonymize` does for the whole table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from privgate.core.anonymize._generalize import apply_generalization
from privgate.core.anonymize._optimal import OptimalLattice
from privgate.core.anonymize._result import AnonymizationResult
from privgate.core.encoding import encode_table
from privgate.core.exceptions import AnonymizationError, PolicyError
from privgate.core.hierarchy import Hierarchy
from privgate.core.privacy import PrivacyModel

__all__ = ["TieredRelease", "tiered_releases"]


@dataclass(frozen=True)
class TieredRelease:
    """Release ``E`` of a tiered run.

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
        Levels chosen for the covered QIs and the suppressed records.
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
            "levels": {k: int(v) for k, v in self.result.levels.items()},
            "rows": len(self.frame),
            "suppressed": self.result.n_suppressed,
        }


def _check_tiers(
    hierarchies: Mapping[str, Hierarchy],
    tiers: Mapping[str, int],
    released_columns: Sequence[str],
    frame: pd.DataFrame,
) -> None:
    no_hierarchy = [c for c in tiers if c not in hierarchies]
    if no_hierarchy:
        raise PolicyError(
            f"columns {no_hierarchy} have a tier but no hierarchy: they cannot be generalized"
        )
    no_tier = [c for c in hierarchies if c not in tiers]
    if no_tier:
        raise PolicyError(
            f"quasi-identifiers {no_tier} have a hierarchy but no tier: no tiered release would "
            "cover them; rank every quasi-identifier"
        )
    bad = {c: t for c, t in tiers.items() if isinstance(t, bool) or not isinstance(t, int)}
    bad.update({c: t for c, t in tiers.items() if isinstance(t, int) and t < 1})
    if bad:
        raise PolicyError(f"tiers must be integers >= 1; got {bad}")
    absent = [c for c in [*hierarchies, *released_columns] if c not in frame.columns]
    if absent:
        raise PolicyError(f"columns {sorted(set(absent))} are not in the table")
    unreleased = [c for c in hierarchies if c not in released_columns]
    if unreleased:
        raise PolicyError(
            f"quasi-identifiers {unreleased} are not among the released columns; a ranked "
            "quasi-identifier that is not released needs no tier"
        )


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
    """Release ``E`` for every wanted tier: the models applied to the QIs of tiers ``1..E``.

    Parameters
    ----------
    frame : DataFrame
        The validated input.
    hierarchies : dict of str to Hierarchy
        One per quasi-identifier; every one must have a tier.
    tiers : dict of str to int
        Tier of each quasi-identifier, 1 = most important (see :class:`core.ranking.Ranking`).
    models : sequence of PrivacyModel
        What every release must satisfy on its covered columns (k-anonymity, l-diversity of
        a sensitive column, ...).
    suppression_limit : float
        Largest fraction of records a release may suppress.
    released_columns : sequence of str
        Columns of every release, in order; must include every quasi-identifier.
    metric : str, default="loss"
        The optimal search's objective (see :class:`OptimalLattice`).
    tiers_wanted : sequence of int, optional
        Which releases to build; default every tier present in ``tiers`` (``1..5`` for five
        tiers). A wanted tier above the last covers every quasi-identifier.

    Returns
    -------
    list of TieredRelease
        In increasing ``E``.

    Raises
    ------
    PolicyError
        A tiered column without hierarchy (or the reverse), a tier or wanted tier that is not
        an integer >= 1, a QI not released, or a column missing from ``frame``.
    AnonymizationError
        A release cannot meet the models within the suppression limit (for example ``k``
        larger than the table).
    HierarchyError
        A covered QI has a missing value or a value its hierarchy does not cover.
    """
    _check_tiers(hierarchies, tiers, released_columns, frame)
    wanted = sorted(set(tiers.values())) if tiers_wanted is None else sorted(set(tiers_wanted))
    bad = [t for t in wanted if isinstance(t, bool) or not isinstance(t, int) or t < 1]
    if bad or not wanted:
        raise PolicyError(f"tiers_wanted must be integers >= 1; got {list(tiers_wanted or [])}")
    sensitive = sorted({m.column for m in models if hasattr(m, "column")})
    releases = []
    for tier in wanted:
        covered = [c for c in hierarchies if tiers[c] <= tier]
        if not covered:  # possible only with tiers that start above 1
            raise PolicyError(
                f"tier {tier} covers no quasi-identifier (lowest tier present is "
                f"{min(tiers.values())})"
            )
        encoded = encode_table(frame, {c: hierarchies[c] for c in covered}, sensitive)
        engine = OptimalLattice(models, suppression_limit, metric=metric)
        try:
            result = engine.anonymize(encoded.frequency_set())
        except AnonymizationError as exc:
            raise AnonymizationError(
                f"tiered release E={tier} (covering {covered}): {exc}"
            ) from exc
        release = apply_generalization(frame, encoded, result, released_columns)
        releases.append(TieredRelease(tier, covered, release, result))
    return releases
