"""The release policy: what a data owner declares about one table and one release.

A policy is a YAML document validated into frozen pydantic models. Everything the pipeline does
is derived from it (the schema, the hierarchies, the privacy models, the gate's criteria), so it
is validated strictly and once: unknown keys are rejected, and every error names the key path
(``privacy.k``, ``columns.age.hierarchy.bands``). Relative paths inside a policy are resolved
against the folder of the policy file, so a policy works from any working directory.

Examples
--------
>>> policy = ReleasePolicy.model_validate({
...     "dataset": "toy",
...     "input": {"path": "toy.csv"},
...     "columns": {
...         "age": {"role": "quasi_identifier", "type": "integer",
...                 "hierarchy": {"kind": "interval", "bands": [5, 10]}},
...         "disease": {"role": "sensitive"},
...     },
...     "privacy": {"k": 2},
... })
>>> policy.quasi_identifiers
['age']
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from privgate.core.exceptions import PolicyError

__all__ = [
    "ARXHierarchySpec",
    "Algorithm",
    "AttacksSpec",
    "check_band_levels",
    "BandsHierarchySpec",
    "DateHierarchySpec",
    "AlgorithmSpec",
    "ColumnSpec",
    "ColumnType",
    "DifferentialPrivacySpec",
    "DPBudgetSpec",
    "HierarchySpec",
    "InputSpec",
    "IntervalHierarchySpec",
    "K_MINIMUM",
    "LDiversitySpec",
    "MaskingHierarchySpec",
    "OutputSpec",
    "PrivacySpec",
    "RankingSpec",
    "ResearchSubsetSpec",
    "ReleasePolicy",
    "RiskSpec",
    "Role",
    "TClosenessSpec",
    "TaxonomyHierarchySpec",
    "UtilitySpec",
    "UtilityThresholds",
    "load_policy",
]


class _Strict(BaseModel):
    """Frozen, no unknown keys: a typo in a policy is an error, never a silent default."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Role(StrEnum):
    """What a column is to an attacker, which decides how it is treated."""

    IDENTIFIER = "identifier"  #: direct identifier: always dropped from the release
    QUASI_IDENTIFIER = "quasi_identifier"  #: linkable: generalized along its hierarchy
    SENSITIVE = "sensitive"  #: protected by l-diversity / t-closeness, released as is
    INSENSITIVE = "insensitive"  #: released as is


class ColumnType(StrEnum):
    """Declared logical type; ingest reads the column with exactly this dtype."""

    CATEGORICAL = "categorical"
    STRING = "string"
    INTEGER = "integer"
    FLOAT = "float"
    #: ISO 8601 dates (``2024-03-15``), kept as text; generalized by a ``date`` hierarchy
    DATE = "date"
    #: ISO 8601 timestamps (``2024-03-15T10:22:05``, ``2024-03-15 10:22``), kept as text
    DATETIME = "datetime"


#: Column types whose values are numbers.
NUMERIC_TYPES = frozenset({ColumnType.INTEGER, ColumnType.FLOAT})
#: Column types whose values are calendar dates or timestamps.
DATE_TYPES = frozenset({ColumnType.DATE, ColumnType.DATETIME})


# ---------------------------------------------------------------------------------------------
# Hierarchies
# ---------------------------------------------------------------------------------------------


class ARXHierarchySpec(_Strict):
    """An ARX-format hierarchy file: ``;``-separated, no header, column i = level i, last ``*``."""

    kind: Literal["arx"]
    path: Path
    delimiter: str = ";"


class IntervalHierarchySpec(_Strict):
    """Numeric bands of growing width, then ``*``: ``bands: [5, 10, 20]`` gives 4 levels above 0.

    Each width must divide the next so that every band nests inside exactly one wider band
    (otherwise the hierarchy would not be a tree and generalization would not be monotone).
    """

    kind: Literal["interval"]
    bands: list[Annotated[float, Field(gt=0)]] = Field(min_length=1)
    start: float = 0.0

    # A field validator (not a model validator) so the error names ``...hierarchy.bands``.
    @field_validator("bands")
    @classmethod
    def _bands_nest(cls, bands: list[float]) -> list[float]:
        for narrow, wide in zip(bands, bands[1:], strict=False):
            ratio = wide / narrow
            if wide <= narrow or abs(ratio - round(ratio)) > 1e-9:
                raise ValueError(
                    f"bands must grow and each must divide the next; {wide} does not nest {narrow}"
                )
        return bands


class MaskingHierarchySpec(_Strict):
    """Codes masked from the right one character per level (``12345 -> 1234* -> 123** ...``).

    ``levels`` masking steps are applied (default: the code length, ending in all-masked), and a
    final ``*`` level is always added.
    """

    kind: Literal["masking"]
    length: int = Field(ge=1)
    levels: int | None = Field(default=None, ge=1)
    mask_char: str = Field(default="*", min_length=1, max_length=1)

    # A field validator so the error names ``...hierarchy.levels`` (``length`` is validated first).
    @field_validator("levels")
    @classmethod
    def _levels_fit(cls, levels: int | None, info: ValidationInfo) -> int | None:
        length = info.data.get("length")
        if levels is not None and length is not None and levels > length:
            raise ValueError(f"levels ({levels}) cannot exceed length ({length})")
        return levels


def _num(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else f"{number:g}"


def check_band_levels(levels: Sequence[Sequence[float]], top_coding: bool) -> None:
    """Refuse band levels that overlap, leave gaps, or do not nest; the message says which.

    ``levels[0]`` are the finest edges; each later list must be a coarser level whose bands
    are unions of the finer level's bands: it starts at the same first edge (otherwise values
    between the two first edges would be in no band: a gap), uses only finer edges (an edge
    inside a finer band would put that band into two coarser ones: an overlap) and, without
    top-coding, ends at the same last edge (a gap at the top).

    Raises
    ------
    ValueError
    """
    for number, edges in enumerate(levels, start=1):
        if len(edges) < 2:
            raise ValueError(f"level {number} needs at least two edges (one band)")
        for low, high in zip(edges, edges[1:], strict=False):
            if high <= low:
                raise ValueError(
                    f"level {number}: edges must increase; {_num(high)} after {_num(low)} "
                    "would make bands overlap"
                )
    for number, (finer, coarser) in enumerate(zip(levels, levels[1:], strict=False), start=2):
        if coarser[0] != finer[0]:
            low, high = sorted((finer[0], coarser[0]))
            raise ValueError(
                f"level {number} starts at {_num(coarser[0])}, level {number - 1} at "
                f"{_num(finer[0])}: values from {_num(low)} to {_num(high)} would be in no "
                f"band of one of them (a gap); start every level at {_num(finer[0])}"
            )
        for edge in coarser:
            if edge not in finer:
                i = bisect.bisect_right(finer, edge)
                if i == len(finer):
                    where = f"above the last edge {_num(finer[-1])} of level {number - 1}"
                else:
                    where = f"inside the band [{_num(finer[i - 1])}, {_num(finer[i])})"
                raise ValueError(
                    f"level {number}: edge {_num(edge)} lies {where}, which would overlap two "
                    f"bands of level {number}; a coarser level may only use edges of the finer "
                    "one"
                )
        if not top_coding and coarser[-1] != finer[-1]:
            raise ValueError(
                f"level {number} ends at {_num(coarser[-1])}, level {number - 1} at "
                f"{_num(finer[-1])}: without top_coding values from {_num(coarser[-1])} on "
                f"would be in no band of level {number} (a gap)"
            )


class BandsHierarchySpec(_Strict):
    """Numeric bands with uneven edges and top-/bottom-coding.

    ``edges: [0, 18, 45, 65, 90]`` gives level 1 = ``<18, 18-44, 45-64, 65-89, 90+``:
    bands ``[0, 18), [18, 45), ...``; with ``bottom_coding`` (default) the first band is shown
    as ``<18``, with ``top_coding`` (default) every value from the last edge up is ``90+``
    (without it the last edge ends the last band and larger values are refused). ``coarser``
    adds levels, each a list of edges taken from the level below (``[[0, 45, 90]]`` gives
    ``<45, 45-89, 90+``). Values below the first edge are refused. Edges that do not increase
    (overlap), a coarser edge inside a finer band (overlap), or a level that leaves part of the
    range uncovered (gap) are policy errors.
    """

    kind: Literal["bands"]
    edges: list[float] = Field(min_length=2)
    coarser: list[list[float]] = Field(default_factory=list)
    bottom_coding: bool = True
    top_coding: bool = True

    @model_validator(mode="after")
    def _bands_fit(self) -> BandsHierarchySpec:
        check_band_levels([self.edges, *self.coarser], self.top_coding)
        return self


DateStep = Literal["day", "month", "year", "5-year", "10-year"]


class DateHierarchySpec(_Strict):
    """Calendar generalization of a ``date`` or ``datetime`` column, one step per level, then ``*``.

    ``steps`` (finest first) default to ``[month, year, 5-year]`` for a date column and
    ``[day, month, year, 5-year]`` for a timestamp column: ``2024-03-15T10:22`` ->
    ``2024-03-15`` -> ``2024-03`` -> ``2024`` -> ``2020-2024`` -> ``*``.
    """

    kind: Literal["date"]
    steps: list[DateStep] | None = Field(default=None, min_length=1)

    @field_validator("steps")
    @classmethod
    def _steps_ordered(cls, steps: list[str] | None) -> list[str] | None:
        order = ["day", "month", "year", "5-year", "10-year"]
        if steps is not None and [order.index(s) for s in steps] != sorted(
            {order.index(s) for s in steps}
        ):
            raise ValueError(f"steps must be distinct and finest first, in the order {order}")
        return steps


class TaxonomyHierarchySpec(_Strict):
    """A categorical taxonomy written in the policy, as a nested mapping ending in value lists.

    ``tree: {Married: [Married-civ-spouse, Married-AF-spouse], Single: [Never-married]}`` gives
    level 1 = Married/Single and level 2 = ``*``. All leaves must sit at the same depth.
    """

    kind: Literal["taxonomy"]
    tree: dict[str, Any]


HierarchySpec = Annotated[
    ARXHierarchySpec
    | IntervalHierarchySpec
    | MaskingHierarchySpec
    | TaxonomyHierarchySpec
    | BandsHierarchySpec
    | DateHierarchySpec,
    Field(discriminator="kind"),
]


class ColumnSpec(_Strict):
    """One input column: its role, type, and (for quasi-identifiers) its hierarchy."""

    role: Role
    type: ColumnType = ColumnType.CATEGORICAL
    hierarchy: HierarchySpec | None = None
    categories: list[str] | None = None
    minimum: float | None = None
    maximum: float | None = None
    nullable: bool | None = None

    @model_validator(mode="after")
    def _role_needs(self) -> ColumnSpec:
        if self.role is Role.QUASI_IDENTIFIER and self.hierarchy is None:
            raise ValueError("a quasi_identifier needs a 'hierarchy'")
        if self.role not in (Role.QUASI_IDENTIFIER, Role.SENSITIVE) and self.hierarchy:
            raise ValueError(
                "only a quasi_identifier (or a sensitive column, for hierarchical t-closeness) "
                f"takes a 'hierarchy' (role is {self.role})"
            )
        if self.minimum is not None and self.maximum is not None and self.minimum > self.maximum:
            raise ValueError(f"minimum ({self.minimum}) > maximum ({self.maximum})")
        if self.categories is not None and self.type not in (
            ColumnType.CATEGORICAL,
            ColumnType.STRING,
        ):
            raise ValueError("'categories' applies to categorical or string columns only")
        if (self.minimum is not None or self.maximum is not None) and self.type in DATE_TYPES:
            raise ValueError(f"'minimum'/'maximum' apply to numeric columns, not {self.type}")
        self._hierarchy_fits_type()
        return self

    def _hierarchy_fits_type(self) -> None:
        h = self.hierarchy
        if isinstance(h, BandsHierarchySpec):
            if self.type not in NUMERIC_TYPES:
                raise ValueError(f"a 'bands' hierarchy needs a numeric type, not {self.type}")
            if self.type is ColumnType.INTEGER and not all(
                float(e).is_integer() for edges in [h.edges, *h.coarser] for e in edges
            ):
                raise ValueError("the bands of an integer column need whole-number edges")
            if self.minimum is not None and self.minimum < h.edges[0]:
                raise ValueError(
                    f"minimum is {self.minimum:g} but the first band starts at {h.edges[0]:g}: "
                    f"values from {self.minimum:g} to {h.edges[0]:g} would be in no band (a "
                    "gap); lower the first edge or raise the minimum"
                )
            if not h.top_coding and self.maximum is not None and self.maximum >= h.edges[-1]:
                raise ValueError(
                    f"maximum is {self.maximum:g} but without top_coding the bands end below "
                    f"{h.edges[-1]:g}: values from {h.edges[-1]:g} up would be in no band (a "
                    "gap); add an edge above the maximum or set top_coding: true"
                )
        if isinstance(h, DateHierarchySpec) and self.type not in DATE_TYPES:
            raise ValueError(f"a 'date' hierarchy needs type 'date' or 'datetime', not {self.type}")
        if self.type in DATE_TYPES and isinstance(
            h, IntervalHierarchySpec | BandsHierarchySpec | MaskingHierarchySpec
        ):
            raise ValueError(
                f"a {self.type} column is generalized by a 'date' hierarchy (or an 'arx' file "
                f"or a 'taxonomy'), not by {h.kind!r}"
            )

    @property
    def is_numeric(self) -> bool:
        """Declared ``integer`` or ``float``: compared, banded and binned as numbers."""
        return self.type in (ColumnType.INTEGER, ColumnType.FLOAT)

    @property
    def allows_missing(self) -> bool:
        """Quasi-identifiers default to non-null; ``nullable: true`` lets them hold missing cells.

        A missing cell of a quasi-identifier is a value its hierarchy places: by default a leaf
        directly under the root (it stays missing below the top level and becomes ``*`` at the
        top), or wherever a row for the empty value in an ARX file or taxonomy puts it.
        """
        if self.nullable is not None:
            return self.nullable
        return self.role is not Role.QUASI_IDENTIFIER


# ---------------------------------------------------------------------------------------------
# Input, privacy, algorithm, output
# ---------------------------------------------------------------------------------------------


class InputSpec(_Strict):
    """Where the table is and how to read it.

    ``format`` is ``csv`` or ``parquet``, or the name of a known public-dataset layout
    (``adult``, ``bank_marketing``, ``breast_cancer_wisconsin``) whose quirks a loader handles.
    """

    path: Path
    format: Literal["csv", "parquet", "adult", "bank_marketing", "breast_cancer_wisconsin"] = "csv"
    delimiter: str = Field(default=",", min_length=1, max_length=2)
    missing_values: list[str] = Field(default_factory=lambda: [""])
    encoding: str = "utf-8"
    header: bool = True

    @field_validator("encoding")
    @classmethod
    def _encoding_known(cls, encoding: str) -> str:
        import codecs

        try:
            codecs.lookup(encoding)
        except LookupError as exc:
            raise ValueError(f"unknown encoding {encoding!r}") from exc
        return encoding


class LDiversitySpec(_Strict):
    """l-diversity of one sensitive column (Machanavajjhala et al., 2007)."""

    column: str
    variant: Literal["distinct", "entropy", "recursive"] = "distinct"
    l: int = Field(ge=2)  # noqa: E741 - the model's own name
    c: float | None = Field(default=None, gt=0)
    #: entropy only: how a class's entropy is estimated, ``shannon`` (default, the plug-in
    #: entropy) or ``grassberger`` (bias-corrected for small classes, as ARX offers; not
    #: monotone, so the search cannot prune by it: slower)
    estimator: Literal["shannon", "grassberger"] | None = Field(
        default=None, exclude_if=lambda value: value is None
    )

    @model_validator(mode="after")
    def _c_for_recursive(self) -> LDiversitySpec:
        if self.variant == "recursive" and self.c is None:
            raise ValueError("recursive (c,l)-diversity needs 'c'")
        if self.variant != "recursive" and self.c is not None:
            raise ValueError(f"'c' applies to recursive (c,l)-diversity only, not {self.variant}")
        if self.estimator is not None and self.variant != "entropy":
            raise ValueError(f"'estimator' applies to entropy l-diversity only, not {self.variant}")
        return self


class TClosenessSpec(_Strict):
    """t-closeness of one sensitive column (Li, Li and Venkatasubramanian, 2007).

    ``distance`` is ``equal`` (categorical), ``ordered`` (numeric EMD over sorted values) or
    ``hierarchical`` (EMD along the column's own hierarchy, which the column must declare).
    """

    column: str
    t: float = Field(gt=0, le=1)
    distance: Literal["equal", "ordered", "hierarchical"] = "equal"

    @field_validator("t")
    @classmethod
    def _t_protects(cls, t: float) -> float:
        if t >= 1:
            raise ValueError(
                "t = 1 protects nothing: no distribution is farther than 1 from another under "
                "any of the distances, so every class would pass; use t < 1 (0.2 is usual)"
            )
        return t


class RiskSpec(_Strict):
    """Limits on prosecutor re-identification risk (a record's risk is 1 / its class size).

    ``highest``: no record above it; ``average``: mean over records; ``share_above``: at most
    this fraction of records may have a risk above ``threshold``; ``population_uniques``: at
    most this fraction of the ``population_size`` people the table was drawn from is
    estimated unique (``estimator``: Dankar et al.'s rule by default; HIPAA-style guidance is
    e.g. ``highest: 0.09`` and ``population_uniques: 0.0005``). ``suppress: true`` lets the
    whole-table limits (average, share, population uniques) suppress records, smallest
    classes first and within ``suppression_limit``, to meet their limit, as ARX does.
    """

    highest: float | None = Field(default=None, gt=0, le=1)
    average: float | None = Field(default=None, gt=0, le=1)
    threshold: float | None = Field(default=None, gt=0, le=1)
    share_above: float | None = Field(default=None, ge=0, le=1)
    # Left out of the dump when unset, so that policies written before these existed keep
    # their fingerprints (and release ids).
    population_uniques: float | None = Field(
        default=None, gt=0, lt=1, exclude_if=lambda value: value is None
    )
    population_size: int | None = Field(default=None, ge=1, exclude_if=lambda value: value is None)
    estimator: Literal["pitman", "zayatz", "snb", "dankar"] = Field(
        default="dankar", exclude_if=lambda value: value == "dankar"
    )
    suppress: bool = Field(default=False, exclude_if=lambda value: not value)

    @model_validator(mode="after")
    def _threshold_pairs(self) -> RiskSpec:
        if (self.threshold is None) != (self.share_above is None):
            raise ValueError("'threshold' and 'share_above' go together")
        if self.population_uniques is not None and self.population_size is None:
            raise ValueError(
                "'population_uniques' needs 'population_size' (the people the table was drawn from)"
            )
        limits = (self.highest, self.average, self.share_above, self.population_uniques)
        if all(v is None for v in limits):
            raise ValueError(
                "set at least one of 'highest', 'average', 'share_above', 'population_uniques'"
            )
        empty = {
            "highest": "a record's risk is never above 1, so the limit is always met (it is "
            "k = 1); use at most 0.5",
            "average": "the average risk is never above 1, so the limit is always met",
            "threshold": "no record's risk is above 1, so no record is ever counted",
            "share_above": "no share exceeds 1, so the limit is always met",
        }
        for name, why in empty.items():
            if getattr(self, name) == 1:
                raise ValueError(f"{name} = 1 protects nothing: {why}")
        return self


class PopulationSpec(_Strict):
    """The population table a release is compared with (k-map, δ-presence): a CSV file with
    the quasi-identifier columns (others are ignored), e.g. a census extract or, for
    δ-presence, the register the input was drawn from (the input must then be a subset)."""

    path: Path
    delimiter: str = Field(default=",", min_length=1, max_length=1)
    encoding: str = "utf-8"


class ResearchSubsetSpec(_Strict):
    """The records of the input that are released (ARX's research subset, ``DataSubset``).

    The data owner holds the whole input table and releases only the records whose ``key``
    (an identifier column of the input, never published) is listed in the CSV file ``path``
    (a column named ``key``; other columns are ignored). The subset *is* the data: every
    model, the suppression limit, t-closeness's reference distribution, the metric and the
    gate are evaluated on the subset's records only, and the records outside it are neither
    released nor counted, which is ARX's definition (``HashGroupify`` counts only subset
    records, ``entry.count``; ``DataManager`` takes distributions and ``Cardinalities`` the
    metric's frequencies from the subset; the suppression limit is a share of the subset).
    A key listed in the file but absent from the input is refused.
    """

    path: Path
    key: str
    delimiter: str = Field(default=",", min_length=1, max_length=1)
    encoding: str = "utf-8"


class KMapSpec(_Strict):
    """k-map: every released record matches at least ``k`` people of the population.

    Counted exactly in ``privacy.population`` when the policy declares one; otherwise
    estimated from ``population_size`` (ARX's Poisson or zero-truncated Poisson estimate, a
    statistical guarantee at ``significance``).
    """

    k: int = Field(ge=2)
    population_size: int | None = Field(default=None, ge=1)
    significance: float = Field(default=0.01, ge=0, le=1)
    estimator: Literal["poisson", "zero_truncated_poisson"] = "zero_truncated_poisson"


class DeltaPresenceSpec(_Strict):
    """δ-presence: the chance that a person of the population is in the release, as an
    attacker who sees it estimates it, stays within ``[min, max]``."""

    min: float = Field(default=0.0, ge=0, lt=1)
    max: float = Field(gt=0, le=1)

    @model_validator(mode="after")
    def _ordered(self) -> DeltaPresenceSpec:
        if self.min >= self.max:
            raise ValueError(f"min ({self.min:g}) must be below max ({self.max:g})")
        return self


class BetaLikenessSpec(_Strict):
    """β-likeness of one sensitive column (Cao and Karras, 2012): no class raises the
    frequency of a value by more than ``beta`` times its table frequency (``enhanced``: nor by
    more than ``-ln`` of it)."""

    column: str
    beta: float = Field(gt=0)
    variant: Literal["basic", "enhanced"] = "basic"


class DeltaDisclosureSpec(_Strict):
    """δ-disclosure privacy of one sensitive column (Brickell and Shmatikov, 2008):
    ``|log2(p_class / p_table)| < delta`` for every value; ``absent_values: ignored`` skips
    values a class does not hold, as ARX does (weaker, and the search then visits every
    node)."""

    column: str
    delta: float = Field(gt=0)
    absent_values: Literal["fail", "ignored"] = "fail"


#: The smallest ``k`` a policy (or a run's override) accepts: with ``k = 1`` every record may
#: sit alone in its class, which protects nobody.
K_MINIMUM = 2


class PrivacySpec(_Strict):
    """The privacy model the release must satisfy, as written: verified, never assumed."""

    suppression_limit: float = Field(default=0.0, ge=0.0, le=1.0)
    l_diversity: list[LDiversitySpec] = Field(default_factory=list)
    t_closeness: list[TClosenessSpec] = Field(default_factory=list)
    risk: RiskSpec | None = None
    #: The column naming the individual when a table holds several records per person (an
    #: identifier column: never published). Classes are then counted in distinct persons and
    #: suppression removes whole persons; the suppression limit is a fraction of the persons.
    person_key: str | None = Field(default=None, exclude_if=lambda value: value is None)
    #: Release only the records of the input listed in a key file (see
    #: :class:`ResearchSubsetSpec`); left out of the dump when absent (fingerprints unchanged).
    research_subset: ResearchSubsetSpec | None = Field(
        default=None, exclude_if=lambda value: value is None
    )
    population: PopulationSpec | None = None
    k_map: KMapSpec | None = None
    delta_presence: DeltaPresenceSpec | None = None
    beta_likeness: list[BetaLikenessSpec] = Field(default_factory=list)
    delta_disclosure: list[DeltaDisclosureSpec] = Field(default_factory=list)
    #: Declared after the population models, so its check can see them (``k = 1`` is
    #: meaningful only beside k-map, delta-presence or a population-uniques limit, which
    #: protect on their own).
    k: int

    @field_validator("k")
    @classmethod
    def _k_protects(cls, k: int, info: ValidationInfo) -> int:
        population_model = any(info.data.get(name) for name in ("k_map", "delta_presence"))
        risk = info.data.get("risk")  # the population-uniques limit protects on its own too
        population_model = population_model or (risk is not None and risk.population_uniques)
        if k < 1 or (k < K_MINIMUM and not population_model):
            raise ValueError(
                f"k = {k} protects nobody: with k < 2 every record may sit alone in its class, "
                "so the release would publish the quasi-identifiers as they are while the gate "
                "reports PASSED; use k >= 2 (5 or more is usual)"
            )
        return k

    @model_validator(mode="after")
    def _population_for_its_models(self) -> PrivacySpec:
        if self.delta_presence is not None and self.population is None:
            raise ValueError(
                "delta_presence compares the release with its population: declare "
                "privacy.population (the table the input was drawn from)"
            )
        if self.k_map is not None:
            if self.population is None and self.k_map.population_size is None:
                raise ValueError(
                    "k_map needs privacy.population (counted exactly) or "
                    "k_map.population_size (estimated)"
                )
            if self.population is not None and self.k_map.population_size is not None:
                raise ValueError(
                    "k_map: give either privacy.population or k_map.population_size, not both"
                )
        if self.population is not None and self.k_map is None and self.delta_presence is None:
            raise ValueError(
                "privacy.population is declared but no k_map or delta_presence uses it"
            )
        return self


class Algorithm(StrEnum):
    """Anonymization algorithms selectable in a policy."""

    OPTIMAL = "optimal"  #: optimal full-domain generalization (least loss), global recoding
    #: full-domain generalization by a budgeted search (greedy climbs, local descent,
    #: best-first) for wide tables whose lattice the optimal search cannot list; exact below
    #: 50,000 nodes
    HEURISTIC = "heuristic"
    MONDRIAN = "mondrian"  #: multidimensional local recoding, no suppression
    #: multidimensional local recoding like Mondrian, each cut chosen by the information loss it
    #: saves (any dimension, any cut point), small regions clustered (k-member) when that loses
    #: less; no suppression; the exact search's release instead when its lattice is small and
    #: it loses less
    GREEDY_PARTITION = "greedy_partition"
    DATAFLY = "datafly"
    MULTI_ATTRIBUTE_DATAFLY = "multi_attribute_datafly"
    #: RFKA: keep attributes in order of importance while the projection stays k-anonymous;
    #: the others are suppressed (needs a ``ranking`` section)
    RFKA = "rfka"
    #: RFK-anonymity: tiered releases, E = 1..n, k-anonymity over the attributes of tiers 1..E
    #: (needs a ``ranking`` section)
    TIERED = "tiered"
    #: Local recoding by repeated optimal searches: each round keeps the records its optimum
    #: keeps, the next round searches again on the rest (ARX's local recoding)
    LOCAL_RECODING = "local_recoding"
    #: The optimal node, then its suppressed records released with cells set to ``*``
    LOCAL_SUPPRESSION = "local_suppression"


#: Algorithms that cut the table into regions (numeric quasi-identifiers become ranges).
PARTITION_ALGORITHMS = frozenset({Algorithm.MONDRIAN, Algorithm.GREEDY_PARTITION})


def _partitioner(name: Algorithm) -> str:
    """How a refusal names a partitioning algorithm."""
    return "Mondrian" if name is Algorithm.MONDRIAN else name.value


#: Algorithms that consume the sensitivity ranking.
RANKED_ALGORITHMS = frozenset({Algorithm.RFKA, Algorithm.TIERED})


#: Algorithms that count each class's population (k-map and δ-presence with a table).
POPULATION_ALGORITHMS = frozenset({Algorithm.OPTIMAL, Algorithm.HEURISTIC, Algorithm.DATAFLY})

#: Algorithms whose search minimizes ``algorithm.metric``.
METRIC_ALGORITHMS = frozenset(
    {
        Algorithm.OPTIMAL,
        Algorithm.HEURISTIC,
        Algorithm.TIERED,
        Algorithm.LOCAL_RECODING,
        Algorithm.LOCAL_SUPPRESSION,
    }
)


MetricName = Literal[
    "loss",
    "precision",
    "discernibility",
    "average_class_size",
    "entropy",
    "arx_loss",
    "arx_entropy",
    "arx_average_class_size",
    "discernibility_star",
]


class AlgorithmSpec(_Strict):
    """Which algorithm anonymizes, and its options.

    ``metric`` (optimal only) is the objective: loss, precision, discernibility,
    average_class_size or entropy (privgate's definitions: a column's domain is the data's
    values, a suppressed record is charged in full), or ARX's own definitions arx_loss,
    arx_entropy, arx_average_class_size and discernibility_star (``privgate.core.metrics``
    states each formula). The ARX metrics take ``gs_factor`` (ARX's weight of generalization
    against suppression, default 0.5), ``aggregate`` (how attributes combine) and
    ``attribute_weights`` (a larger weight keeps that column finer); ``arx_entropy`` also takes
    ``monotonic`` (true: suppression ignored, ARX's default). ``strict`` (mondrian only)
    chooses strict or relaxed median partitioning. ``max_evaluations`` (heuristic only) is the
    number of node evaluations its search may spend after its greedy climbs (default 3000).
    """

    name: Algorithm = Algorithm.OPTIMAL
    metric: MetricName | None = None
    #: ARX metrics only: generalization weighed against suppression (0.5: equally)
    gs_factor: float | None = Field(default=None, ge=0, le=1, exclude_if=lambda v: v is None)
    #: ARX metrics only: geometric_mean, arithmetic_mean, sum or max over the attributes
    aggregate: Literal["geometric_mean", "arithmetic_mean", "sum", "max"] | None = Field(
        default=None, exclude_if=lambda value: value is None
    )
    #: ARX metrics only: per quasi-identifier weight >= 0 (scaled so the largest is 1)
    attribute_weights: dict[str, Annotated[float, Field(ge=0)]] | None = Field(
        default=None, exclude_if=lambda value: value is None
    )
    #: arx_entropy only: ignore suppression (true, ARX's monotonic variant) or charge it
    monotonic: bool | None = Field(default=None, exclude_if=lambda value: value is None)
    strict: bool | None = None
    #: heuristic only: node evaluations allowed after its greedy climbs (default 3000)
    max_evaluations: int | None = Field(default=None, ge=1, exclude_if=lambda value: value is None)
    #: greedy_partition only: seconds the partitioning may take (default 600)
    max_seconds: float | None = Field(default=None, gt=0, exclude_if=lambda value: value is None)
    # The options below are left out of the dump when unset, so that policies written before
    # they existed keep their fingerprints (and release ids).
    #: tiered only: which tiered releases E to publish (default: the last tier, which covers
    #: every quasi-identifier); all tiers are computed and reported either way
    release_tiers: list[Annotated[int, Field(ge=1)]] | None = Field(
        default=None, exclude_if=lambda value: value is None
    )
    #: tiered only: publish a release whose k-anonymity covers fewer than all quasi-identifiers
    #: (tiers 1..E with E below the last tier). The gate refuses such a release otherwise.
    accept_narrower_coverage: bool | None = Field(
        default=None, exclude_if=lambda value: value is None
    )

    @model_validator(mode="after")
    def _options_fit(self) -> AlgorithmSpec:
        if self.metric is not None and self.name not in METRIC_ALGORITHMS:
            raise ValueError(
                "'metric' applies to the "
                + ", ".join(sorted(METRIC_ALGORITHMS))
                + f" algorithms only, not {self.name}"
            )
        if self.max_evaluations is not None and self.name is not Algorithm.HEURISTIC:
            raise ValueError(
                f"'max_evaluations' applies to the heuristic algorithm only, not {self.name}"
            )
        if self.max_seconds is not None and self.name is not Algorithm.GREEDY_PARTITION:
            raise ValueError(
                f"'max_seconds' applies to the greedy_partition algorithm only, not {self.name}"
            )
        for key in ("release_tiers", "accept_narrower_coverage"):
            if getattr(self, key) is not None and self.name is not Algorithm.TIERED:
                raise ValueError(f"'{key}' applies to the tiered algorithm only, not {self.name}")
        if self.release_tiers is not None:
            if not self.release_tiers:
                raise ValueError("'release_tiers' must name at least one tier")
            if len(set(self.release_tiers)) != len(self.release_tiers):
                raise ValueError(f"'release_tiers' must not repeat a tier: {self.release_tiers}")
        if self.strict is not None and self.name is not Algorithm.MONDRIAN:
            raise ValueError(f"'strict' applies to mondrian only, not {self.name}")
        if any(v is not None for v in self.metric_options.values()):
            from privgate.core.metrics import make_metric  # numpy: only when options are set

            make_metric(self.metric or "loss", **self.metric_options)
        return self

    @property
    def metric_options(self) -> dict[str, Any]:
        """The metric's options as :func:`privgate.core.metrics.make_metric` takes them."""
        return {
            "gs_factor": self.gs_factor,
            "aggregate": self.aggregate,
            "weights": self.attribute_weights,
            "monotonic": self.monotonic,
        }


class OutputSpec(_Strict):
    """Where releases go (``<directory>/<dataset>/<release-id>/``) and how they are kept.

    ``file_mode`` is the permission of every published file (octal text, default ``"0644"``:
    a release is meant to be read; ``"0640"`` for a group-only share). Folders get the same
    read bits plus the matching execute bits. ``keep_stage_results`` keeps a run's cached
    private stage results after a successful publish (default: they are removed).
    """

    directory: Path = Path("releases")
    format: Literal["csv", "parquet"] = "csv"
    file_mode: str = Field(default="0644", pattern=r"^0?[0-7]{3}$")
    keep_stage_results: bool = False

    @property
    def mode(self) -> int:
        """``file_mode`` as an integer (``0o644``)."""
        return int(self.file_mode, 8)


# ---------------------------------------------------------------------------------------------
# Utility
# ---------------------------------------------------------------------------------------------


class UtilityThresholds(_Strict):
    """Limits the release's measured utility must meet, or nothing is published.

    Each is optional. Ratios compare the release with the original table under the same model
    and the same folds: ``min_auc_ratio: 0.95`` asks every model's ROC AUC on the release to be
    at least 0.95 x its AUC on the original. Losses and total variation lie in [0, 1].
    """

    min_auc_ratio: float | None = Field(default=None, gt=0)
    min_accuracy_ratio: float | None = Field(default=None, gt=0)
    max_loss: float | None = Field(default=None, ge=0, le=1)
    max_attribute_loss: float | None = Field(default=None, ge=0, le=1)
    min_f_measure: float | None = Field(default=None, ge=0, le=1)
    min_match_point: float | None = Field(default=None, ge=0, le=1)
    max_total_variation: float | None = Field(default=None, ge=0, le=1)
    #: DP releases only: the expected absolute noise of all released counts over their noisy
    #: total, at most this. Computed from the DP output and public parameters alone, so it may
    #: decide publication (see docs/PRIVACY.md).
    max_relative_noise: float | None = Field(default=None, gt=0)


ClassifierName = Literal["svm", "random_forest", "logistic_regression"]
ClusteringName = Literal["kmeans", "bisecting_kmeans"]


class UtilitySpec(_Strict):
    """How the release's utility is measured, and the thresholds it must meet.

    ``target`` is the column the classifiers predict (a declared sensitive or insensitive
    column; without it no classifier runs). Classification uses a stratified, seeded sample of
    ``sample_size`` input records (``null``: all of them) and ``cv_folds``-fold stratified
    cross-validation; clustering runs every method in ``clustering`` for every number of
    clusters in ``clusters`` on the whole table.
    """

    target: str | None = None
    models: list[ClassifierName] = Field(
        default_factory=lambda: ["svm", "random_forest", "logistic_regression"]
    )
    cv_folds: int = Field(default=5, ge=2, le=20)
    sample_size: int | None = Field(default=5000, ge=100)
    seed: int = Field(default=0, ge=0)
    clusters: list[Annotated[int, Field(ge=2)]] = Field(default_factory=lambda: [3, 5])
    clustering: list[ClusteringName] = Field(default_factory=lambda: ["kmeans", "bisecting_kmeans"])
    thresholds: UtilityThresholds = Field(default_factory=UtilityThresholds)

    @field_validator("models", "clusters", "clustering")
    @classmethod
    def _no_repeats(cls, values: list) -> list:
        repeated = sorted({v for v in values if values.count(v) > 1}, key=str)
        if repeated:
            raise ValueError(f"values must not repeat; {repeated} appear more than once")
        return values

    @model_validator(mode="after")
    def _thresholds_measurable(self) -> UtilitySpec:
        t = self.thresholds
        for key in ("min_auc_ratio", "min_accuracy_ratio"):
            if getattr(t, key) is not None and (self.target is None or not self.models):
                raise ValueError(
                    f"thresholds.{key} needs a classification: set 'target' and at least one "
                    "of 'models'"
                )
        for key in ("min_f_measure", "min_match_point"):
            if getattr(t, key) is not None and not (self.clusters and self.clustering):
                raise ValueError(
                    f"thresholds.{key} needs a clustering: set 'clusters' and 'clustering'"
                )
        return self


# ---------------------------------------------------------------------------------------------
# Sensitivity ranking
# ---------------------------------------------------------------------------------------------


class RankingSpec(_Strict):
    """The sensitivity-ranking stage: how much each quasi-identifier reveals about ``target``.

    ``method`` is random-forest permutation importance on out-of-bag samples (``permutation``)
    or drop-column importance averaged over ``runs`` seeds (``drop_column``). Importance scores
    are grouped into ``tiers`` by k-means, tier 1 the most important. ``n_estimators`` defaults
    to 100 trees for nightly runs (the published experiments use 1000). ``sample_size`` caps the
    records the forests see (a stratified, seeded sample; ``null``: all of them).
    """

    target: str
    method: Literal["permutation", "drop_column"] = "permutation"
    n_estimators: int = Field(default=100, ge=1, le=5000)
    runs: int = Field(default=20, ge=1, le=200)
    tiers: int = Field(default=5, ge=1, le=20)
    sample_size: int | None = Field(default=20000, ge=100)
    seed: int = Field(default=0, ge=0)


# ---------------------------------------------------------------------------------------------
# Differential privacy
# ---------------------------------------------------------------------------------------------


class DPBudgetSpec(_Strict):
    """A dataset's lifetime privacy budget: what all its DP releases together may spend."""

    epsilon: float = Field(gt=0, allow_inf_nan=False)
    delta: float = Field(default=0.0, ge=0, lt=1)


class DifferentialPrivacySpec(_Strict):
    """A differentially private release instead of a k-anonymous one.

    ``method: dpheter`` is differentially private top-down specialization (DiffGen/DPHeter):
    ``rounds`` specializations chosen by the exponential mechanism, then discrete-Laplace counts
    of the leaf partitions; ``count_share`` of ``epsilon`` pays for the counts, the rest for the
    selections. Specializations are scored against ``class_column``, a column whose classes the
    policy declares (``categories``). Everything the release's shape depends on is declared in
    the policy, never read from the data: each categorical quasi-identifier's domain (its
    hierarchy's values, or ``categories``), each numeric quasi-identifier's ``minimum`` and
    ``maximum``, and the classes. Records outside a declared domain are excluded and numeric
    values clamped to their bounds (docs/PRIVACY.md). Every release reserves ``epsilon`` from
    the dataset's lifetime ``budget`` in the ε ledger (``PRIVGATE_LEDGER_URL``, default a file in
    the privgate data directory) before it draws any noise.

    ``method: mst`` / ``aim`` release **synthetic records** (MST, AIM: OpenDP's marginal-based
    synthesizers, zCDP converted to ``(epsilon, delta)``) with exactly the released columns
    (quasi-identifiers and sensitive columns), each with a declared domain; numeric columns
    with more than ``max_integer_keys`` values (or float ones) are measured in ``numeric_bins``
    equal-width bins of their declared range. ``aim_degree``/``aim_rounds`` set AIM's workload
    and round limit. ``method: safepub`` releases real records generalized along the
    quasi-identifiers' hierarchies (ARX's SafePub: random sampling, a DP search, a k-filter;
    ``search_share`` of ``epsilon`` for the search). These three need ``delta > 0`` (each
    release reserves ``(epsilon, delta)``; the lifetime ``budget.delta`` must cover it).
    """

    method: Literal["dpheter", "mst", "aim", "safepub"] = "dpheter"
    epsilon: float = Field(gt=0, allow_inf_nan=False)
    #: per-release delta: 0 for dpheter (pure DP); > 0 for mst, aim, safepub
    delta: float = Field(default=0.0, ge=0, lt=1)
    rounds: int = Field(default=8, ge=0, le=200)
    count_share: float = Field(default=0.5, gt=0, lt=1)
    #: how candidate specializations are scored: DiffGen's information gain (sensitivity
    #: log2 of the number of declared classes) or its Max score (sensitivity 1), which keeps more
    #: utility at small epsilon (see the DPHeter section of benchmarks/BENCHMARKS.md)
    score: Literal["info_gain", "max"] = "info_gain"
    class_column: str | None = None
    numeric_bins: int = Field(default=32, ge=2, le=1024)
    max_integer_keys: int = Field(default=128, ge=2, le=4096)
    aim_degree: int = Field(default=3, ge=1, le=4)
    aim_rounds: int | None = Field(default=None, ge=1, le=10_000)
    search_share: float = Field(default=0.1, gt=0, lt=1)
    steps: int | None = Field(default=None, ge=1, le=1000)
    #: The column naming the person when a table holds several records per person (an
    #: identifier, never published). The privacy unit is then one person: each person's records
    #: are bounded to one before any mechanism sees them (docs/PRIVACY.md §1).
    person_key: str | None = Field(default=None, exclude_if=lambda value: value is None)
    budget: DPBudgetSpec

    @model_validator(mode="before")
    @classmethod
    def _removed_settings(cls, data: Any) -> Any:
        if isinstance(data, dict):
            if "clusters" in data or "clustering" in data:
                raise ValueError(
                    "differential_privacy.clusters: scoring specializations by the data owner's "
                    "clustering of the private table is not differentially private (one added "
                    "record can relabel many others, so the score's sensitivity does not hold); "
                    "score by a declared class column instead (class_column, with categories)"
                )
            if "ledger" in data:
                raise ValueError(
                    "differential_privacy.ledger: the ε ledger is the data owner's setting, not "
                    "the policy's (a copied policy could point a release at an empty ledger); "
                    "set the environment variable PRIVGATE_LEDGER_URL instead"
                )
        return data

    @property
    def releases_microdata(self) -> bool:
        """One released row per (synthetic or sampled) record, not noisy counts."""
        return self.method in ("mst", "aim", "safepub")

    @model_validator(mode="after")
    def _fits_budget(self) -> DifferentialPrivacySpec:
        if self.method == "dpheter":
            if self.class_column is None:
                raise ValueError("differential_privacy.class_column: dpheter needs a class column")
            if self.delta != 0:
                raise ValueError("differential_privacy.delta: dpheter is pure DP; set delta: 0")
        elif self.delta <= 0:
            raise ValueError(
                f"differential_privacy.delta: {self.method} needs delta > 0 (its noise is "
                "Gaussian or its guarantee is (epsilon, delta)); e.g. delta: 1e-6"
            )
        if self.delta > self.budget.delta:
            raise ValueError(
                f"differential_privacy.delta = {self.delta} is larger than the lifetime "
                f"budget.delta = {self.budget.delta}: no run of this policy could be released"
            )
        if self.epsilon > self.budget.epsilon:
            raise ValueError(
                f"epsilon = {self.epsilon} is larger than the lifetime budget.epsilon = "
                f"{self.budget.epsilon}: no run of this policy could ever be released"
            )
        return self


class AttacksSpec(_Strict):
    """Attack the release before publishing it (Anonymeter's method, :mod:`privgate.core.attacks`).

    A share of the input (``control_fraction``, drawn with ``seed``) is held out: the release is
    made from the other records only, and the held-out ones are never published. Singling-out,
    linkability and attribute-inference attacks then run against the written release, each on
    the records it was made from and on the held-out ones; the risk is the success beyond the
    held-out records', with a 95 % confidence interval. A ``max_*`` limit blocks the release
    when the risk's *lower* confidence bound is above it (the excess is then shown, not noise).
    The unique exact-match rate is the share of records unique in the input that the release
    contains verbatim (the NIST CRC's proxy).

    A differentially private release may not depend on private data except through noise, and
    attack results are exact functions of it (docs/PRIVACY.md): there the limits are refused,
    and the attacks run after publication, their evidence written for the data owner only.
    """

    max_singling_out: float | None = Field(default=None, ge=0.0, lt=1.0)
    max_linkability: float | None = Field(default=None, ge=0.0, lt=1.0)
    max_inference: float | None = Field(default=None, ge=0.0, lt=1.0)
    max_unique_exact_match: float | None = Field(default=None, ge=0.0, lt=1.0)
    #: Share of the input held out of the release as the attacks' control records.
    control_fraction: float = Field(default=0.2, ge=0.01, le=0.5)
    #: Attacks per measure (predicates for singling out, target records otherwise).
    n_attacks: int = Field(default=500, ge=20, le=100_000)
    #: Seeds which records are held out and the attacker's random choices (reproducible).
    seed: int = Field(default=0, ge=0)
    #: The columns the attacker reads; default: every released column.
    columns: list[str] | None = None
    #: The columns the inference attack guesses; default: the sensitive columns, or every
    #: attacked column when there is none.
    secrets: list[str] | None = None

    def limits(self) -> dict[str, float]:
        """The limits that are set, by name."""
        names = ("max_singling_out", "max_linkability", "max_inference", "max_unique_exact_match")
        return {n: getattr(self, n) for n in names if getattr(self, n) is not None}


class HistorySpec(_Strict):
    """Check each release against every earlier release of the dataset (the release history).

    ``key`` is the identifier column that names the same record or person from one night to
    the next (never published; default: the policy's only identifier column). With ``check``
    (the default) a release that, combined with the earlier ones, would leave someone with
    fewer than k candidate records or fewer than l possible sensitive values first loses those
    people within the suppression limit, and is blocked otherwise (see privgate.core.history).

    The release flow enforces it: the search asks for larger classes (``margin``), the
    people the combination would expose are removed before staging, the gate re-checks the
    written release against the history, and publishing records the release in the history
    in the same transaction (``PRIVGATE_HISTORY_URL``, default a file in the privgate data
    directory).
    """

    check: bool = True
    key: str | None = None
    #: The search asks for classes of ``ceil(k * (1 + margin))`` records so that people who
    #: leave later do not take a class below k (benchmarks/BENCHMARKS.md, issue 20: without a
    #: margin, removing the exposed people exhausts the suppression limit within weeks).
    margin: float = Field(default=1.0, ge=0, le=10)


class ReleasePolicy(_Strict):
    """A complete release policy: one table, one privacy model, one output location."""

    dataset: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=100)
    description: str = ""
    input: InputSpec
    columns: dict[str, ColumnSpec] = Field(min_length=1)
    # ``privacy`` (a k-anonymous release) or ``differential_privacy`` (a DP release): one of them.
    privacy: PrivacySpec | None = Field(default=None, exclude_if=lambda value: value is None)
    algorithm: AlgorithmSpec = Field(default_factory=AlgorithmSpec)
    output: OutputSpec = Field(default_factory=OutputSpec)
    # Left out of the dump when absent, so that a policy without it keeps its fingerprint (and
    # its release ids) from before the section existed.
    utility: UtilitySpec | None = Field(default=None, exclude_if=lambda value: value is None)
    ranking: RankingSpec | None = Field(default=None, exclude_if=lambda value: value is None)
    history: HistorySpec | None = Field(default=None, exclude_if=lambda value: value is None)
    attacks: AttacksSpec | None = Field(default=None, exclude_if=lambda value: value is None)
    differential_privacy: DifferentialPrivacySpec | None = Field(
        default=None, exclude_if=lambda value: value is None
    )

    @property
    def is_differentially_private(self) -> bool:
        """True for a DP release (``differential_privacy``), False for a k-anonymous one."""
        return self.differential_privacy is not None

    @model_validator(mode="after")
    def _consistent(self) -> ReleasePolicy:
        if not self.quasi_identifiers:
            raise ValueError("columns: at least one column must have role 'quasi_identifier'")
        if (self.privacy is None) == (self.differential_privacy is None):
            raise ValueError(
                "set exactly one of 'privacy' (a k-anonymous release) and "
                "'differential_privacy' (a differentially private release)"
            )
        self._check_ranking()
        self._check_metric()
        self._check_history()
        self._check_attacks()
        self._check_differential_privacy()
        target = self.utility.target if self.utility is not None else None
        if target is not None:
            self._check_released_target("utility.target", target)
        if self.privacy is not None:
            self._check_privacy_columns(self.privacy)
        self._check_missing_supported()
        return self

    def _check_metric(self) -> None:
        """Attribute weights name quasi-identifiers; ``arx_loss`` needs listed domains."""
        spec = self.algorithm
        unknown = sorted(set(spec.attribute_weights or {}) - set(self.quasi_identifiers))
        if unknown:
            raise ValueError(
                f"algorithm.attribute_weights: {', '.join(map(repr, unknown))} is not a "
                f"quasi-identifier (they are {', '.join(self.quasi_identifiers)})"
            )
        if spec.metric == "arx_loss":
            for name in self.quasi_identifiers:
                kind = getattr(self.columns[name].hierarchy, "kind", None)
                if kind not in ("arx", "taxonomy"):
                    raise ValueError(
                        f"algorithm.metric 'arx_loss' measures a column against its "
                        f"hierarchy's list of values, and column {name!r} has "
                        + (
                            f"a hierarchy of kind {kind!r}, which lists none"
                            if kind
                            else "no hierarchy"
                        )
                        + "; use metric 'loss' (the data's values) or an 'arx'/'taxonomy' one"
                    )

    def _check_missing_supported(self) -> None:
        """Refuse, by column, a nullable quasi-identifier the chosen algorithm cannot place."""
        if self.algorithm.name not in PARTITION_ALGORITHMS:
            return
        for name in self.quasi_identifiers:
            spec = self.columns[name]
            if spec.type in NUMERIC_TYPES and spec.allows_missing:
                raise ValueError(
                    f"columns.{name}: {_partitioner(self.algorithm.name)} cuts numeric "
                    "quasi-identifiers into ranges and cannot place a missing cell in one; "
                    "remove 'nullable: true' (and the missing "
                    "cells), or choose the optimal algorithm, whose hierarchies place a missing "
                    "cell as a value of its own"
                )

    def _check_person_key(self, privacy: PrivacySpec) -> None:
        """A person key must be a never-published identifier, searched by the optimal search,
        with models that have a per-person definition (see
        ``privgate.core.privacy.unsupported_with_persons`` and docs/PERSONS.md)."""
        key = privacy.person_key
        if key is None:
            return
        if key not in self.columns:
            raise ValueError(f"privacy.person_key: unknown column {key!r}")
        if self.columns[key].role is not Role.IDENTIFIER:
            raise ValueError(
                f"privacy.person_key: column {key!r} must have role 'identifier' (a person key "
                "names people and is never published)"
            )
        if self.algorithm.name is not Algorithm.OPTIMAL:
            raise ValueError(
                f"privacy.person_key: algorithm {self.algorithm.name.value!r} counts records, "
                "not persons; use algorithm 'optimal' with a person key"
            )
        table_k_map = privacy.k_map is not None and privacy.k_map.population_size is None
        refused = ["k_map with a population table"] * table_k_map
        refused += ["delta_presence"] * (privacy.delta_presence is not None)
        if refused:
            raise ValueError(
                f"privacy.person_key: {'; '.join(refused)} cannot be guaranteed per person "
                "(no per-person definition, see docs/PERSONS.md); k, every l-diversity variant, "
                "t-closeness, beta-likeness, delta-disclosure, the risk limits and k_map with "
                "population_size count persons"
            )

    def _check_local_recoding(self, privacy: PrivacySpec) -> None:
        local = (Algorithm.LOCAL_RECODING, Algorithm.LOCAL_SUPPRESSION)
        if self.algorithm.name not in local:
            return
        refused = [f"{ld.variant} l-diversity" for ld in privacy.l_diversity]
        refused = [r for r in refused if not r.startswith("distinct")]
        refused += [f"t-closeness of {tc.column!r}" for tc in privacy.t_closeness]
        refused += ["beta-likeness"] * bool(privacy.beta_likeness)
        refused += ["delta-disclosure"] * bool(privacy.delta_disclosure)
        refused += ["k-map"] * (privacy.k_map is not None)
        refused += ["delta-presence"] * (privacy.delta_presence is not None)
        refused += ["privacy.person_key"] * (privacy.person_key is not None)
        risk = privacy.risk
        if risk is not None:
            refused += ["the average risk limit"] * (risk.average is not None)
            refused += ["the risk share limit"] * (risk.share_above is not None)
            refused += ["the population-uniques limit"] * (risk.population_uniques is not None)
        if refused:
            raise ValueError(
                f"algorithm.name: {self.algorithm.name.value!r} cannot guarantee "
                f"{', '.join(refused)}: a "
                "class of its release may join records of several rounds, and only k, distinct "
                "l-diversity and risk.highest hold for such a union; use algorithm 'optimal'"
            )

    def _check_risk_suppression(self, privacy: PrivacySpec) -> None:
        risk = privacy.risk
        if (
            risk is not None
            and risk.population_uniques
            and self.algorithm.name in PARTITION_ALGORITHMS
        ):
            raise ValueError(
                f"privacy.risk.population_uniques: {_partitioner(self.algorithm.name)} checks "
                "each partition, never the whole table, so its release would be blocked by the "
                "gate; use algorithm 'optimal' or 'datafly'"
            )
        if risk is None or not risk.suppress:
            return
        if risk.average is None and risk.share_above is None and risk.population_uniques is None:
            raise ValueError(
                "privacy.risk.suppress applies to the whole-table limits (average, share_above, "
                "population_uniques); 'highest' already suppresses the classes above it"
            )
        if privacy.suppression_limit == 0:
            raise ValueError(
                "privacy.risk.suppress: suppression_limit is 0, so no record may be suppressed; "
                "set privacy.suppression_limit (e.g. 0.02)"
            )
        if self.algorithm.name not in (Algorithm.OPTIMAL, Algorithm.HEURISTIC):
            raise ValueError(
                f"privacy.risk.suppress: algorithm {self.algorithm.name.value!r} does not "
                "suppress records to meet a risk limit; use algorithm 'optimal' or 'heuristic'"
            )

    def _check_research_subset(self, privacy: PrivacySpec) -> None:
        """The subset's key must be a never-published identifier column of the input."""
        spec = privacy.research_subset
        if spec is None:
            return
        if spec.key not in self.columns:
            raise ValueError(f"privacy.research_subset.key: unknown column {spec.key!r}")
        if self.columns[spec.key].role is not Role.IDENTIFIER:
            raise ValueError(
                f"privacy.research_subset.key: column {spec.key!r} must have role 'identifier' "
                "(it names the records to release and is never published)"
            )

    def _check_privacy_columns(self, privacy: PrivacySpec) -> None:
        self._check_research_subset(privacy)
        self._check_person_key(privacy)
        self._check_risk_suppression(privacy)
        self._check_local_recoding(privacy)
        compares_population = privacy.delta_presence is not None or (
            privacy.k_map is not None and privacy.k_map.population_size is None
        )
        if compares_population and self.algorithm.name not in POPULATION_ALGORITHMS:
            raise ValueError(
                f"algorithm.name: {self.algorithm.name.value!r} cannot check k-map or "
                "delta_presence against a population table; use "
                + " or ".join(repr(a.value) for a in sorted(POPULATION_ALGORITHMS))
            )
        sensitive = set(self.sensitive_columns)
        for key, specs in (
            ("l_diversity", privacy.l_diversity),
            ("t_closeness", privacy.t_closeness),
            ("beta_likeness", privacy.beta_likeness),
            ("delta_disclosure", privacy.delta_disclosure),
        ):
            for i, spec in enumerate(specs):
                if spec.column not in self.columns:
                    raise ValueError(f"privacy.{key}[{i}].column: unknown column {spec.column!r}")
                if spec.column not in sensitive:
                    raise ValueError(
                        f"privacy.{key}[{i}].column: {spec.column!r} must have role 'sensitive'"
                    )
                if getattr(spec, "distance", None) == "hierarchical" and (
                    self.columns[spec.column].hierarchy is None
                ):
                    raise ValueError(
                        f"privacy.{key}[{i}].distance: hierarchical t-closeness needs a "
                        f"'hierarchy' on column {spec.column!r}"
                    )

    def _check_released_target(self, key: str, target: str) -> None:
        if target not in self.columns:
            raise ValueError(f"{key}: unknown column {target!r}")
        role = self.columns[target].role
        if role in (Role.IDENTIFIER, Role.QUASI_IDENTIFIER):
            raise ValueError(
                f"{key}: {target!r} is a {role.value}; it must be a released column whose "
                "values are not generalized (role 'sensitive' or 'insensitive')"
            )

    def _check_attacks(self) -> None:
        spec = self.attacks
        if spec is None:
            return
        dp = self.differential_privacy
        if dp is not None and spec.limits():
            raise ValueError(
                f"attacks.{next(iter(spec.limits()))}: a differentially private release cannot "
                "be blocked on attack results: they are exact functions of the private "
                "records, so letting them decide publication (or showing them in the release) "
                "would break the ε guarantee (docs/PRIVACY.md); remove the attacks.max_* "
                "limits (the attacks still run, and their evidence goes to the data owner "
                "only)"
            )
        if dp is not None and not dp.releases_microdata:
            raise ValueError(
                f"attacks: differential_privacy.method {dp.method!r} releases noisy counts, "
                "not records; the attacks need released records (mst, aim, safepub)"
            )
        released = self.released_columns if dp is None else self.dp_released_columns
        for key, names in (("columns", spec.columns), ("secrets", spec.secrets)):
            for name in names or []:
                if name not in released:
                    raise ValueError(
                        f"attacks.{key}: {name!r} is not a released column (released: {released})"
                    )
        attacked = spec.columns if spec.columns is not None else released
        if len(attacked) < 2:
            raise ValueError(
                "attacks.columns: the linkability and inference attacks need at least two "
                "attacked columns"
            )
        outside = [n for n in spec.secrets or [] if n not in attacked]
        if outside:
            raise ValueError(f"attacks.secrets: {outside} are not among attacks.columns")

    def _check_history(self) -> None:
        if self.history is None:
            return
        if self.differential_privacy is not None:
            raise ValueError(
                "history: differentially private releases compose through the ε ledger; the "
                "release history is for k-anonymous releases"
            )
        if self.history.check and self.algorithm.name is Algorithm.TIERED:
            raise ValueError(
                "history.check: a tiered run makes several releases at once, and the release "
                "history checks one release per run against the earlier ones; use a single-"
                "release algorithm (e.g. 'optimal') or set history.check: false"
            )
        key = self.history.key
        if key is None:
            if len(self.identifiers) != 1:
                raise ValueError(
                    "history.key: name the identifier column that identifies a record or person "
                    f"from one release to the next (identifiers: {self.identifiers or 'none'})"
                )
        elif key not in self.columns or self.columns[key].role is not Role.IDENTIFIER:
            raise ValueError(
                f"history.key: {key!r} is not an identifier column of the policy; the key is "
                "never published, so it must be declared with role: identifier"
            )
        person_key = self.privacy.person_key if self.privacy is not None else None
        if self.history.check and person_key is not None and self.history_key != person_key:
            raise ValueError(
                f"history.key: with privacy.person_key {person_key!r} the history follows "
                f"the same persons; set history.key: {person_key}"
            )

    @property
    def history_key(self) -> str | None:
        """The column identifying people across releases, or None when no history is kept."""
        if self.history is None or not self.history.check:
            return None
        return self.history.key or self.identifiers[0]

    def _check_ranking(self) -> None:
        if self.ranking is not None:
            self._check_released_target("ranking.target", self.ranking.target)
        name = self.algorithm.name
        if name in RANKED_ALGORITHMS and self.ranking is None:
            raise ValueError(
                f"algorithm.name: {name.value!r} orders attributes by importance; add a "
                "'ranking' section naming the target column"
            )
        if name is Algorithm.RFKA and self.privacy is not None:
            p = self.privacy
            if p.l_diversity or p.t_closeness or p.risk is not None or p.suppression_limit:
                raise ValueError(
                    "algorithm.name: 'rfka' selects attributes for k-anonymity only, without "
                    "record suppression; remove privacy.l_diversity/t_closeness/risk and "
                    "suppression_limit, or choose another algorithm"
                )
        tiers = self.algorithm.release_tiers or []
        if tiers and self.ranking is not None and max(tiers) > self.ranking.tiers:
            raise ValueError(
                f"algorithm.release_tiers: {max(tiers)} is above ranking.tiers = "
                f"{self.ranking.tiers}"
            )

    def _check_dp_person_key(self, dp: DifferentialPrivacySpec) -> None:
        """A DP person key names a declared identifier column: it is read to bound each
        person's records, and never released."""
        key = dp.person_key
        if key is None:
            return
        if key not in self.columns:
            raise ValueError(f"differential_privacy.person_key: unknown column {key!r}")
        if self.columns[key].role is not Role.IDENTIFIER:
            raise ValueError(
                f"differential_privacy.person_key: column {key!r} must have role 'identifier' "
                "(a person key names the individual and is never published)"
            )

    def _check_differential_privacy(self) -> None:
        dp = self.differential_privacy
        if dp is None:
            return
        if self.algorithm != AlgorithmSpec():
            raise ValueError(
                "algorithm: a differentially private release is produced by "
                "differential_privacy.method; remove the 'algorithm' section"
            )
        self._check_dp_person_key(dp)
        thresholds = self.utility.thresholds if self.utility is not None else None
        if thresholds is not None:
            unsupported = [
                key
                for key, value in thresholds.model_dump().items()
                if value is not None and key != "max_relative_noise"
            ]
            if unsupported:
                raise ValueError(
                    f"utility.thresholds: {unsupported} do not apply to a differentially "
                    "private release: they compare the release with the private table, and "
                    "publication must not depend on private data except through noise; use "
                    "max_relative_noise (computed from the DP output alone)"
                )
        released = self.dp_released_columns
        for name in released:
            spec = self.columns[name]
            numeric = spec.is_numeric
            if numeric and (spec.minimum is None or spec.maximum is None):
                raise ValueError(
                    f"columns.{name}: a differentially private release needs the public range "
                    "of every numeric released column; declare 'minimum' and 'maximum' (never "
                    "taken from the data, which would leak it)"
                )
            kind = getattr(spec.hierarchy, "kind", None)
            if not numeric and kind not in ("arx", "taxonomy") and spec.categories is None:
                what = f"a {kind!r} hierarchy does not list it" if kind else "it has no list"
                raise ValueError(
                    f"columns.{name}: a differentially private release needs the whole domain "
                    f"of every categorical released column; {what}, so declare the column's "
                    "'categories' (never taken from the data)"
                )
        if dp.releases_microdata:
            if thresholds is not None and thresholds.max_relative_noise is not None:
                raise ValueError(
                    f"utility.thresholds.max_relative_noise: {dp.method} releases records, not "
                    "noisy counts; remove it"
                )
            if dp.class_column is not None:
                raise ValueError(
                    f"differential_privacy.class_column: {dp.method} releases every quasi-"
                    "identifier and sensitive column; remove class_column"
                )
            if dp.method == "safepub" and not any(
                self.columns[q].hierarchy is not None for q in self.quasi_identifiers
            ):
                raise ValueError("differential_privacy.method safepub needs hierarchies")
            if dp.method == "safepub":
                for name in released:
                    spec = self.columns[name]
                    kind = getattr(spec.hierarchy, "kind", None)
                    if kind not in ("arx", "taxonomy") and spec.categories is None:
                        raise ValueError(
                            f"columns.{name}: safepub generalizes over listed domains; give "
                            "the column an arx or taxonomy hierarchy or its 'categories'"
                        )
            return
        if dp.class_column not in self.columns:
            raise ValueError(
                f"differential_privacy.class_column: unknown column {dp.class_column!r}"
            )
        spec = self.columns[dp.class_column]
        if spec.role is Role.IDENTIFIER:
            raise ValueError(
                f"differential_privacy.class_column: {dp.class_column!r} is an identifier"
            )
        if dp.class_column in self.quasi_identifiers:
            raise ValueError(
                f"differential_privacy.class_column: {dp.class_column!r} is a quasi-identifier; "
                "the class scores the specializations and is not released"
            )
        if spec.categories is None or len(set(spec.categories)) < 2:
            raise ValueError(
                f"columns.{dp.class_column}: the class column of a differentially private "
                "release needs its classes declared ('categories', at least two): the score's "
                "sensitivity is computed from them, never from the classes in the data"
            )

    # Derived views, so callers never filter ``columns`` by role themselves.
    def _by_role(self, role: Role) -> list[str]:
        return [name for name, spec in self.columns.items() if spec.role is role]

    @property
    def quasi_identifiers(self) -> list[str]:
        return self._by_role(Role.QUASI_IDENTIFIER)

    @property
    def person_key(self) -> str | None:
        """The column naming the individual (``privacy.person_key`` or
        ``differential_privacy.person_key``), or None when every record is its own person."""
        if self.privacy is not None:
            return self.privacy.person_key
        return self.differential_privacy.person_key if self.differential_privacy else None

    @property
    def dp_released_columns(self) -> list[str]:
        """The columns a DP release publishes, in policy order: the quasi-identifiers, and for
        microdata methods (mst, aim, safepub) the sensitive and insensitive columns too."""
        dp = self.differential_privacy
        if dp is None or not dp.releases_microdata:
            return self.quasi_identifiers
        keep = (Role.QUASI_IDENTIFIER, Role.SENSITIVE, Role.INSENSITIVE)
        return [name for name, spec in self.columns.items() if spec.role in keep]

    @property
    def sensitive_columns(self) -> list[str]:
        return self._by_role(Role.SENSITIVE)

    @property
    def identifiers(self) -> list[str]:
        return self._by_role(Role.IDENTIFIER)

    @property
    def released_columns(self) -> list[str]:
        """Every declared column except direct identifiers, in declaration order."""
        return [n for n, s in self.columns.items() if s.role is not Role.IDENTIFIER]

    def fingerprint(self) -> str:
        """sha256 of the policy's canonical JSON: equal policies hash equally."""
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    def with_overrides(self, **changes: Any) -> ReleasePolicy:
        """A validated copy with dotted-key overrides, e.g. ``{"privacy.k": 10}``."""
        data = self.model_dump(mode="python")
        for dotted, value in changes.items():
            node = data
            *parents, leaf = dotted.split(".")
            for depth, part in enumerate(parents):
                if node.get(part) is None:  # a section the policy does not have: start it
                    node[part] = {}
                node = node[part]
                if not isinstance(node, dict):
                    raise PolicyError(
                        f"override {dotted!r}: {'.'.join(parents[: depth + 1])} is a value, "
                        "not a section"
                    )
            node[leaf] = value
        return _validate(data, source="overrides")


def _format_validation_error(exc: ValidationError, source: str) -> str:
    """One line per problem, each naming the dotted key path, as the user wrote it."""
    lines = []
    for err in exc.errors():
        path = ".".join(str(p) for p in err["loc"] if not str(p).startswith("function-after"))
        # Discriminated unions add the tag name to the location; drop it for readability.
        for tag in ("arx", "interval", "masking", "taxonomy"):
            path = path.replace(f"hierarchy.{tag}", "hierarchy")
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = "unknown key (not part of the policy format)"
        elif err["type"] == "missing":
            message = "required key is missing"
        lines.append(f"{path or '<policy>'}: {message}")
    return f"invalid policy {source}: " + "; ".join(lines)


def _validate(data: Any, source: str) -> ReleasePolicy:
    if not isinstance(data, dict):
        raise PolicyError(f"invalid policy {source}: expected a mapping at the top level")
    try:
        return ReleasePolicy.model_validate(data)
    except ValidationError as exc:
        raise PolicyError(_format_validation_error(exc, source)) from None


def _resolve_paths(policy: ReleasePolicy, base: Path) -> ReleasePolicy:
    """Make relative paths absolute against ``base`` (the policy file's folder)."""

    def resolve(p: Path) -> Path:
        p = Path(os.path.expandvars(str(p))).expanduser()
        return p if p.is_absolute() else (base / p).resolve()

    data = policy.model_dump(mode="python")
    data["input"]["path"] = resolve(policy.input.path)
    data["output"]["directory"] = resolve(policy.output.directory)
    for name, spec in policy.columns.items():
        if isinstance(spec.hierarchy, ARXHierarchySpec):
            data["columns"][name]["hierarchy"]["path"] = resolve(spec.hierarchy.path)
    if policy.privacy is not None and policy.privacy.population is not None:
        data["privacy"]["population"]["path"] = resolve(policy.privacy.population.path)
    return ReleasePolicy.model_validate(data)


class _DuplicateKeyError(yaml.YAMLError):
    """A mapping repeats a key: YAML requires unique keys, PyYAML silently keeps the last one."""

    def __init__(self, key: object, first_line: int, line: int) -> None:
        super().__init__(f"duplicate key {key!r} on line {line} (first on line {first_line})")
        self.key, self.first_line, self.line = key, first_line, line


class _UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key repeated in one mapping (merge keys may override).

    With ``yaml.safe_load`` a column declared twice silently keeps only its last declaration:
    ``person_id: {role: identifier}`` followed by ``person_id: {role: insensitive}`` would
    release the identifier.
    """

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict[object, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    hash(key)
                except TypeError:
                    continue  # SafeLoader reports an unhashable key itself
                line = key_node.start_mark.line + 1
                if key in seen:
                    raise _DuplicateKeyError(key, seen[key], line)
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def load_policy(path: str | Path) -> ReleasePolicy:
    """Read and validate a YAML release policy.

    Parameters
    ----------
    path : str or Path
        The policy file. Relative paths inside it are resolved against its folder.

    Returns
    -------
    ReleasePolicy

    Raises
    ------
    PolicyError
        If the file is missing, is not YAML, or violates the policy format; the message names
        every offending key.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PolicyError(f"policy file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(f"cannot read policy file {path}: {exc}") from None
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader: plain data only
    except _DuplicateKeyError as exc:
        raise PolicyError(
            f"invalid policy {path}, line {exc.line}: duplicate key {exc.key!r} (first on line "
            f"{exc.first_line}); YAML would keep only the last one, e.g. give a column declared "
            "twice only its second role"
        ) from None
    except yaml.YAMLError as exc:
        raise PolicyError(f"policy {path} is not valid YAML: {exc}") from None
    policy = _validate(data, source=str(path))
    return _resolve_paths(policy, path.resolve().parent)
