"""What the algorithms return: a transformation of the table, never a file.

:class:`AnonymizationResult` is what every algorithm returns through the contract
(:class:`~privgate.core.anonymize.AnonymizationAlgorithm`): which records are suppressed, the
released text of every recoded quasi-identifier and how each one was transformed.
:class:`Generalization` is the narrower outcome of a full-domain search over a frequency set
(levels and suppressed records, no row values), which the Dask path applies partition by
partition.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["AnonymizationResult", "Generalization"]


@dataclass(frozen=True)
class Generalization:
    """A full-domain generalization plus record suppression, found on a frequency set.

    Attributes
    ----------
    algorithm : str
    levels : dict of str to int
        Generalization level chosen for each quasi-identifier (0 = original values), in the
        same form as ARX reports a transformation, so results compare node for node.
    suppressed : ndarray of bool, shape (n_rows,)
        Input rows removed from the release because their class failed a privacy model (empty
        when the frequency set keeps no per-row array, as on the Dask path).
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


@dataclass(frozen=True)
class AnonymizationResult:
    """How one release transforms the input: the contract's result, for every algorithm.

    The release itself follows from it and the input alone
    (:func:`~privgate.core.anonymize.release_table`): the kept rows, in input order, with each
    quasi-identifier in ``labels`` replaced by its released text and every other column as in
    the input.

    Attributes
    ----------
    algorithm : str
        The registry name of the algorithm that produced it.
    covered : tuple of str
        The quasi-identifiers the privacy models were applied to (all of them, except for a
        tiered release E: the attributes of tiers 1..E).
    suppressed : ndarray of bool, shape (n_rows,)
        Input records left out of the release.
    labels : dict of str to ndarray
        Per recoded quasi-identifier, its released text for each kept record, in input order. A
        quasi-identifier absent from it is released as in the input (an RFKA attribute kept,
        a tiered release's uncovered attribute).
    transformation : dict of str to str
        Per quasi-identifier, what was done to it, in words (``"level 2/4"``, ``"kept"``,
        ``"suppressed (*)"``, ``"local recoding"``, ``"unchanged (not covered)"``).
    levels : dict of str to int or None
        The full-domain transformation (one level per covered quasi-identifier); ``None`` for a
        local recoding or a feature selection, which no level describes.
    steps : list of dict
        The algorithm's history, for the report.
    details : dict
        Algorithm-specific facts for the report (optimum's loss, partitions, attributes kept).
    """

    algorithm: str
    covered: tuple[str, ...]
    suppressed: np.ndarray
    labels: dict[str, np.ndarray]
    transformation: dict[str, str]
    levels: dict[str, int] | None = None
    steps: list[dict] = field(default_factory=list)
    details: dict = field(default_factory=dict)

    @property
    def n_suppressed(self) -> int:
        return int(self.suppressed.sum())

    @property
    def n_released(self) -> int:
        return int(len(self.suppressed) - self.n_suppressed)
