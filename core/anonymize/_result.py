"""What an anonymization algorithm returns: a transformation, never a file."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class AnonymizationResult:
    """A full-domain generalization plus record suppression.

    Attributes
    ----------
    algorithm : str
    levels : dict of str to int
        Generalization level chosen for each quasi-identifier (0 = original values), in the
        same form as ARX reports a transformation, so results compare node for node.
    suppressed : ndarray of bool, shape (n_rows,)
        Input rows removed from the release because their class failed a privacy model.
    steps : list of dict
        The search's history (for the report): what was generalized and why.
    details : dict
        Algorithm-specific facts for the report (optimum's loss, nodes evaluated, ...).
    """

    algorithm: str
    levels: dict[str, int]
    suppressed: np.ndarray
    steps: list[dict] = field(default_factory=list)
    details: dict = field(default_factory=dict)

    @property
    def n_suppressed(self) -> int:
        return int(self.suppressed.sum())
