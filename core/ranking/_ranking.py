"""One ranking of a table's attributes: importance, tiers and approximation degree together.

A tiered release (:func:`core.anonymize._tiered.tiered_releases`) needs the tiers; a manifest or
report needs to say how they were obtained. :class:`Ranking` keeps both as one frozen value that
serializes to JSON.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd

from privgate.core.exceptions import PolicyError
from privgate.core.ranking._approximation import approximation_degree_of
from privgate.core.ranking._drop_column import drop_column_importance
from privgate.core.ranking._permutation import oob_permutation_importance
from privgate.core.ranking._tiers import importance_tiers

__all__ = ["METHODS", "Ranking", "rank_attributes"]

#: Importance measures :func:`rank_attributes` accepts.
METHODS = ("permutation", "drop_column")


@dataclass(frozen=True)
class Ranking:
    """Attributes ranked by how much they help predict ``target``.

    Attributes
    ----------
    target : str
    method : str
        ``"permutation"`` (out-of-bag permutation importance) or ``"drop_column"``.
    importance : dict of str to float
        Score per attribute, most important first.
    tiers : dict of str to int
        Tier per attribute, 1 = most important.
    approximation_degree : dict of str to float
        Standard deviation of each attribute's value frequencies.
    n_estimators : int
        Trees per forest.
    runs : int
        Seeds averaged over (drop-column); 1 for permutation importance.
    seconds : float
        Wall time of the ranking.
    """

    target: str
    method: str
    importance: dict[str, float]
    tiers: dict[str, int]
    approximation_degree: dict[str, float]
    n_estimators: int
    runs: int
    seconds: float

    @property
    def order(self) -> list[str]:
        """Attributes, most important first."""
        return list(self.importance)

    def columns_in_tiers(self, last_tier: int) -> list[str]:
        """Attributes of tiers ``1..last_tier``, most important first."""
        return [name for name in self.order if self.tiers[name] <= last_tier]

    def to_dict(self) -> dict:
        """JSON-able form, for manifests and reports."""
        return {
            "target": self.target,
            "method": self.method,
            "n_estimators": self.n_estimators,
            "runs": self.runs,
            "seconds": round(self.seconds, 4),
            "order": self.order,
            "importance": {k: float(v) for k, v in self.importance.items()},
            "tiers": {k: int(v) for k, v in self.tiers.items()},
            "approximation_degree": {k: float(v) for k, v in self.approximation_degree.items()},
        }

    def to_frame(self) -> pd.DataFrame:
        """One row per attribute, most important first."""
        return pd.DataFrame(
            {
                "attribute": self.order,
                "importance": [self.importance[n] for n in self.order],
                "tier": [self.tiers[n] for n in self.order],
                "approximation_degree": [self.approximation_degree[n] for n in self.order],
            }
        )


def _check_request(frame: pd.DataFrame, columns: list[str], target: str, method: str) -> None:
    if method not in METHODS:
        raise PolicyError(f"ranking method {method!r} is unknown; choose one of {list(METHODS)}")
    if target not in frame.columns:
        raise PolicyError(f"target column {target!r} is not in the table")
    if target in columns:
        raise PolicyError(
            f"target column {target!r} is among the columns to rank: an attribute cannot be "
            "ranked by how well it predicts itself"
        )
    if not columns:
        raise PolicyError("no columns to rank")
    unknown = [c for c in columns if c not in frame.columns]
    if unknown:
        raise PolicyError(f"columns {unknown} to rank are not in the table")
    duplicated = sorted({c for c in columns if columns.count(c) > 1})
    if duplicated:
        raise PolicyError(f"columns {duplicated} are listed more than once")


def rank_attributes(
    frame: pd.DataFrame,
    columns: Iterable[str],
    target: str,
    *,
    method: str = "permutation",
    n_estimators: int = 100,
    runs: int = 20,
    n_tiers: int = 5,
    random_state: int = 0,
) -> Ranking:
    """Rank ``columns`` by importance for predicting ``target`` and cut them into tiers.

    Parameters
    ----------
    frame : DataFrame
        The original (unanonymized) table.
    columns : iterable of str
        Attributes to rank (usually the quasi-identifiers).
    target : str
        The class column whose prediction the release should keep.
    method : {"permutation", "drop_column"}, default="permutation"
        :func:`oob_permutation_importance` (one forest) or :func:`drop_column_importance`
        (``runs * (len(columns) + 1)`` forests).
    n_estimators : int, default=100
    runs : int, default=20
        Seeds averaged over by ``drop_column``; ignored (and reported as 1) by ``permutation``.
    n_tiers : int, default=5
    random_state : int, default=0

    Returns
    -------
    Ranking

    Raises
    ------
    PolicyError
        Unknown ``method``; ``target`` missing, among ``columns``, with a missing value or a
        single class; a column not in ``frame``; or a non-positive setting.
    """
    names = list(columns)
    _check_request(frame, names, target, method)
    started = time.perf_counter()
    X, y = frame[names], frame[target]
    if method == "permutation":
        scores = oob_permutation_importance(
            X, y, n_estimators=n_estimators, random_state=random_state
        )
        used_runs = 1
    else:
        scores = drop_column_importance(
            X, y, runs=runs, n_estimators=n_estimators, random_state=random_state
        )
        used_runs = runs
    tiers = importance_tiers(scores, n_tiers=n_tiers, random_state=random_state)
    degrees = approximation_degree_of(frame, scores.index)
    return Ranking(
        target=target,
        method=method,
        importance={str(k): float(v) for k, v in scores.items()},
        tiers=tiers,
        approximation_degree={str(k): float(v) for k, v in degrees.items()},
        n_estimators=n_estimators,
        runs=used_runs,
        seconds=time.perf_counter() - started,
    )
