"""The contract every privacy model follows."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict

from privgate.core.encoding import ClassStats


class PrivacyModel(BaseModel, ABC):
    """A criterion checked one equivalence class at a time.

    Models are frozen values. Each declares what a search may rely on (``monotonic``: if a
    generalization satisfies the model, so does every coarser one) and reports the *level
    reached* by a table (``achieved``), which the gate compares with the policy; a plain
    pass/fail would hide how close a release came.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Satisfaction is preserved by further generalization (and by suppressing failing classes).
    monotonic: bool = True

    #: Satisfaction stays monotone over the lattice when failing classes are suppressed within
    #: a limit: a class that passes keeps passing once merged with any other class, and no
    #: whole-table condition depends on which records are suppressed. False for t-closeness,
    #: entropy and recursive l-diversity (a passing class merged with a failing one may fail,
    #: so a coarser node may have to suppress more) and for the average-risk and risk-share
    #: limits (suppressing small classes can meet them at a node whose generalizations, which
    #: keep those records in merged classes, do not).
    monotonic_with_suppression: ClassVar[bool] = True

    @abstractmethod
    def satisfied_by(self, stats: ClassStats) -> np.ndarray:
        """Boolean mask over classes: which classes satisfy the model."""

    @abstractmethod
    def achieved(self, stats: ClassStats) -> float:
        """The model's parameter reached by the whole table (e.g. the smallest class size)."""

    @abstractmethod
    def holds(self, achieved: float) -> bool:
        """Whether an achieved level meets this model's requirement."""

    def table_satisfied(self, stats: ClassStats) -> bool:
        """Whole-table condition on the kept classes (default: none beyond the classes')."""
        return True

    @property
    def min_class_size(self) -> int:
        """A lower bound on the size of every satisfying class (used to prune)."""
        return 1
