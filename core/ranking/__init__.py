"""Sensitivity ranking of attributes: which ones a classifier needs, cut into tiers.

A tiered release (issue 5, RFK-anonymity) anonymizes the most important attributes first: tier 1
holds the attributes a random forest relies on most. Each measure lives in its own module:

* :func:`oob_permutation_importance`: Breiman's permutation importance on out-of-bag rows;
* :func:`drop_column_importance`: accuracy lost by refitting without the attribute;
* :func:`importance_tiers`: exact one-dimensional k-means over the scores;
* :func:`approximation_degree_of`: spread of each attribute's value frequencies;
* :func:`rank_attributes` ties them into one :class:`Ranking`.

Nothing here imports Prefect.
"""

from __future__ import annotations

from privgate.core.ranking._approximation import approximation_degree_of
from privgate.core.ranking._drop_column import drop_column_importance
from privgate.core.ranking._encoding import ordinal_matrix
from privgate.core.ranking._permutation import oob_permutation_importance
from privgate.core.ranking._ranking import METHODS, Ranking, rank_attributes
from privgate.core.ranking._tiers import importance_tiers

__all__ = [
    "METHODS",
    "Ranking",
    "approximation_degree_of",
    "drop_column_importance",
    "importance_tiers",
    "oob_permutation_importance",
    "ordinal_matrix",
    "rank_attributes",
]
