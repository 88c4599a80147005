"""The two expectation suites a policy implies: the input's and the release's.

See the package docstring for what each suite checks.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from privgate.core.hierarchy import (
    SUPPRESSED,
    ARXHierarchy,
    Hierarchy,
    IntervalHierarchy,
    MaskingHierarchy,
    value_key,
)
from privgate.core.policy import ColumnType, ReleasePolicy
from privgate.validations.expectations._gx import _NUMBER, gx_api, tagged_expectation

__all__ = ["SUPPRESSION_MARKER", "build_input_suite", "build_release_suite"]

SUPPRESSION_MARKER = SUPPRESSED

#: Integer hierarchies whose declared range holds at most this many values have their labels
#: enumerated exactly; wider ones are checked with a pattern.
_ENUMERABLE = 100_000

_TYPE_LISTS = {
    # pandas extension dtypes (pandera's coerced frame), numpy dtypes (Parquet), and Python types
    # for the per-value check Great Expectations runs on an object column.
    ColumnType.INTEGER: ["Int64Dtype", "int64", "int32", "int"],
    ColumnType.FLOAT: ["Float64Dtype", "float64", "float32", "float", "int"],
    ColumnType.CATEGORICAL: ["StringDtype", "str"],
    ColumnType.STRING: ["StringDtype", "str"],
    ColumnType.DATE: ["StringDtype", "str"],
    ColumnType.DATETIME: ["StringDtype", "str"],
}

#: A numeric domain (a label hierarchy's, or an integer column's declared range) of at most
#: this many numbers is spelled out as the ends a local recoding range may have; a larger one
#: is checked with the number pattern.
_RANGE_ENDS = 2_000

_INTEGER = r"-?\d+"


def _numeric_domain(values: Sequence[str], column_type: ColumnType) -> list:
    """Hierarchy domain values as numbers, for a numeric column (unparseable ones dropped)."""
    out: list = []
    for value in values:
        try:
            number = float(value)
        except ValueError:
            continue
        if column_type is ColumnType.INTEGER:
            if number.is_integer():
                out.append(int(number))
        else:
            out.append(number)
    return out


def build_input_suite(
    policy: ReleasePolicy,
    hierarchies: Mapping[str, Hierarchy],
    row_bounds: tuple[int | None, int | None] | None = None,
    whole_table: bool = True,
) -> Any:
    """The input suite of ``policy`` (a Great Expectations ``ExpectationSuite``).

    Parameters
    ----------
    policy : ReleasePolicy
    hierarchies : mapping of str to Hierarchy
        The quasi-identifiers' hierarchies (their domains become value sets).
    row_bounds : (min, max), optional
        Row count bounds; the minimum is never below ``privacy.k`` (a smaller table has no
        k-anonymous release). Default: at least ``k`` rows, no maximum.
    whole_table : bool, default=True
        ``False``: the suite runs on a sample of the rows
        (:mod:`privgate.validations.expectations._sample`), so it leaves out the row count,
        which only the whole table has.
    """
    g = gx_api()
    # A DP release has no k; it still needs at least one record.
    k = policy.privacy.k if policy.privacy is not None else 1
    low, high = row_bounds or (None, None)
    low = max(k, low or 1)
    expectations = [
        tagged_expectation(
            "ExpectTableColumnsToMatchSet",
            "columns",
            f"columns are exactly the {len(policy.columns)} declared in the policy",
            "policy: columns (an undeclared column may be an identifier nobody reviewed)",
            column_set=list(policy.columns),
            exact_match=True,
        ),
        tagged_expectation(
            "ExpectTableRowCountToBeBetween",
            "row_count_k",
            f"at least k = {low} rows" + (f", at most {high}" if high else ""),
            f"policy: privacy.k = {k}; a smaller table has no {k}-anonymous release"
            if policy.privacy is not None
            else "policy: differential_privacy; an empty table has nothing to release",
            min_value=low,
            max_value=high,
        ),
    ]
    if not whole_table:
        del expectations[1]  # the row count: a property of the whole table, not of a sample
    for name, spec in policy.columns.items():
        key = f"policy: columns.{name}"
        expectations.append(
            tagged_expectation(
                "ExpectColumnValuesToBeInTypeList",
                "type",
                f"column {name!r} is {spec.type.value}",
                f"{key}.type = {spec.type.value}",
                column=name,
                type_list=_TYPE_LISTS[spec.type],
            )
        )
        if not spec.allows_missing:
            expectations.append(
                tagged_expectation(
                    "ExpectColumnValuesToNotBeNull",
                    "not_null",
                    f"column {name!r} has no missing value",
                    f"{key}: a quasi-identifier (or nullable: false) is never missing",
                    column=name,
                )
            )
        if spec.minimum is not None or spec.maximum is not None:
            bounds = (
                f"{'' if spec.minimum is None else f'{spec.minimum:g} <= '}value"
                f"{'' if spec.maximum is None else f' <= {spec.maximum:g}'}"
            )
            expectations.append(
                tagged_expectation(
                    "ExpectColumnValuesToBeBetween",
                    "range",
                    f"column {name!r}: {bounds}",
                    f"{key}.minimum / maximum",
                    column=name,
                    min_value=spec.minimum,
                    max_value=spec.maximum,
                )
            )
        if spec.categories is not None:
            expectations.append(
                tagged_expectation(
                    "ExpectColumnValuesToBeInSet",
                    "categories",
                    f"column {name!r} in its {len(spec.categories)} declared categories",
                    f"{key}.categories",
                    column=name,
                    value_set=list(spec.categories),
                )
            )
        hierarchy = hierarchies.get(name)
        if isinstance(hierarchy, ARXHierarchy):
            domain: list = list(hierarchy.domain)
            if spec.is_numeric:
                domain = _numeric_domain(domain, spec.type)
            expectations.append(
                tagged_expectation(
                    "ExpectColumnValuesToBeInSet",
                    "hierarchy_domain",
                    f"column {name!r} in its hierarchy's domain ({len(domain)} values)",
                    f"{key}.hierarchy: a value it does not cover cannot be generalized",
                    column=name,
                    value_set=domain,
                )
            )
        elif isinstance(hierarchy, MaskingHierarchy) and spec.type in (
            ColumnType.CATEGORICAL,
            ColumnType.STRING,
        ):
            expectations.append(
                tagged_expectation(
                    "ExpectColumnValueLengthsToEqual",
                    "hierarchy_domain",
                    f"column {name!r}: codes of {hierarchy.length} characters",
                    f"{key}.hierarchy.length (masking): a shorter code lost a leading zero",
                    column=name,
                    value=hierarchy.length,
                )
            )
        person_key = policy.person_key
        if spec.role.value == "identifier" and name != person_key:  # a person key repeats
            expectations.append(
                tagged_expectation(
                    "ExpectColumnValuesToBeUnique",
                    "identifier_unique",
                    f"identifier {name!r} is unique",
                    f"{key}.role = identifier: one record per person (k counts records)",
                    column=name,
                )
            )
    return g.gx.ExpectationSuite(
        name=f"{policy.dataset}.input",
        expectations=expectations,
        meta={"privgate": {"policy_sha256": policy.fingerprint(), "kind": "input"}},
    )


def _labels(hierarchy: Hierarchy, level: int | None) -> list[str] | None:
    """Every label of a lookup hierarchy at ``level`` (``None``: at any level)."""
    if not isinstance(hierarchy, ARXHierarchy):
        return None
    table = hierarchy.generalize(hierarchy.domain)
    cells = table[:, level] if level is not None else table.reshape(-1)
    return sorted({str(v) for v in cells})


def _interval_domain(
    hierarchy: IntervalHierarchy, level: int | None, column_type: ColumnType | None = None
) -> tuple[str, Any]:
    """``("set", labels)`` or ``("regex", pattern)`` of an interval hierarchy at ``level``
    (``column_type``: the column's declared numeric type, ``None`` if not numeric)."""
    low, high = hierarchy.minimum, hierarchy.maximum
    integer = (
        all(float(b).is_integer() for b in hierarchy.bands) and float(hierarchy.start).is_integer()
    )
    if (
        level is not None
        and 0 < level < hierarchy.height
        and integer
        and low is not None
        and high is not None
        and high - low <= _ENUMERABLE
    ):
        values = list(range(math.ceil(low), math.floor(high) + 1))
        return "set", sorted({str(v) for v in hierarchy.generalize(values)[:, level]})
    number = _INTEGER if integer else _NUMBER
    if level == 0:
        return "regex", rf"^{number}$"
    if level is not None:
        if integer:
            return "regex", rf"^{number}-{number}$"
        return "regex", rf"^\[{number}, {number}\)$"
    # Local recoding (Mondrian): a value, a range of values, or a band label.
    if (
        integer
        and column_type is ColumnType.INTEGER
        and low is not None
        and high is not None
        and high - low < _RANGE_ENDS
    ):
        # An integer column's declared range, spelled out: a range's ends are values of the
        # input, inside it (a range ``200-300`` of ages 0-120 is no generalization of any).
        values = list(range(math.ceil(low), math.floor(high) + 1))
        ends = "|".join(str(v) for v in sorted(values, key=lambda v: (-len(str(v)), v)))
        bands = sorted({str(v) for v in hierarchy.generalize(values)[:, 1:].reshape(-1)})
        labels = "|".join(re.escape(b) for b in bands)
        return "regex", rf"^(?:(?:{ends})(?:-(?:{ends}))?|{labels})$"
    return "regex", rf"^(?:{number}(?:-{number})?|\[{number}, {number}\)|\*)$"


def _masking_regex(hierarchy: MaskingHierarchy, level: int | None) -> str:
    mask = re.escape(hierarchy.mask_char)
    plain = f"[^{mask}]" if len(hierarchy.mask_char) == 1 else "."
    if level is not None:
        return rf"^{plain}{{{hierarchy.length - level}}}{mask}{{{level}}}$"
    return rf"^(?:{plain}{{0,{hierarchy.length}}}{mask}{{0,{hierarchy.length}}}|\*)$"


def _range_ends(hierarchy: Hierarchy, column_type: ColumnType) -> list[str]:
    """The texts a local recoding range of a numeric column with a label hierarchy may start
    or end with: its domain's numbers written as the algorithms write them (``value_key``:
    ``39``, not ``39.0``). Why: each end is the smallest or largest value of a region, a value
    of the input, which the input suite keeps inside the domain; a number outside it (a range
    ``200-300`` of ages 17-90) is no generalization of any record. Empty (any number) for a
    domain larger than :data:`_RANGE_ENDS`."""
    domain = _numeric_domain(list(getattr(hierarchy, "domain", [])), column_type)
    if not domain or len(domain) > _RANGE_ENDS:
        return []
    return sorted({value_key(v) for v in domain}, key=lambda t: (-len(t), t))


def _domain_expectation(
    name: str, hierarchy: Hierarchy, level: int | None, numeric: ColumnType | None = None
) -> Any:
    """The expectation that column ``name`` stays inside its generalized domain.

    ``numeric``: the column's numeric type (``None``: not numeric). Local recoding (``level``
    None: Mondrian, greedy partition) then labels a region with the smallest and largest
    value it holds (``"28-32"``), whatever the column's hierarchy, so such ranges are in its
    domain too when both ends are values of the hierarchy's domain (:func:`_range_ends`).
    """
    where = (
        f"level {level} of {hierarchy.height}"
        if level is not None
        else "any level (local recoding)"
    )
    notes = f"hierarchy of {name!r}, {where}"
    if level is not None and level == hierarchy.height:
        return tagged_expectation(
            "ExpectColumnValuesToBeInSet",
            "generalized_domain",
            f"column {name!r} fully generalized to {SUPPRESSION_MARKER!r} ({where})",
            notes,
            column=name,
            value_set=[SUPPRESSION_MARKER],
        )
    labels = _labels(hierarchy, level)
    if labels is not None and level is None and numeric is not None:
        alternatives = "|".join(re.escape(label) for label in labels)
        ends = _range_ends(hierarchy, numeric)
        end = f"(?:{'|'.join(map(re.escape, ends))})" if ends else _NUMBER
        pattern = rf"^(?:{end}(?:-{end})?|{alternatives}|\*)$"
        which = "whose ends are values of its domain" if ends else "of values"
        return tagged_expectation(
            "ExpectColumnValuesToMatchRegex",
            "generalized_domain",
            f"column {name!r} inside its generalized domain ({where}: {len(labels)} labels "
            f"or a range {which})",
            notes,
            column=name,
            regex=pattern,
        )
    if labels is not None:
        if level is None:
            labels = sorted(set(labels) | {SUPPRESSION_MARKER})
        return tagged_expectation(
            "ExpectColumnValuesToBeInSet",
            "generalized_domain",
            f"column {name!r} inside its generalized domain ({where}: {len(labels)} labels)",
            notes,
            column=name,
            value_set=labels,
        )
    if isinstance(hierarchy, IntervalHierarchy):
        kind, domain = _interval_domain(hierarchy, level, numeric)
    elif isinstance(hierarchy, MaskingHierarchy):
        kind, domain = "regex", _masking_regex(hierarchy, level)
    else:
        return None
    if kind == "set":
        return tagged_expectation(
            "ExpectColumnValuesToBeInSet",
            "generalized_domain",
            f"column {name!r} inside its generalized domain ({where}: {len(domain)} labels)",
            notes,
            column=name,
            value_set=domain,
        )
    return tagged_expectation(
        "ExpectColumnValuesToMatchRegex",
        "generalized_domain",
        f"column {name!r} inside its generalized domain ({where}: labels like {domain})",
        notes,
        column=name,
        regex=domain,
    )


def build_release_suite(
    policy: ReleasePolicy,
    hierarchies: Mapping[str, Hierarchy],
    manifest: Mapping[str, Any],
    whole_table: bool = True,
) -> Any:
    """The release suite of ``policy`` for one release (a Great Expectations suite).

    Parameters
    ----------
    policy : ReleasePolicy
    hierarchies : mapping of str to Hierarchy
        The quasi-identifiers' hierarchies.
    manifest : mapping
        The release's manifest (:func:`privgate.core.manifest.build_manifest`): ``input.rows``,
        ``output.rows`` and ``transformation`` (the level chosen per quasi-identifier; empty for
        local recoding, where any level's labels may appear).
    whole_table : bool, default=True
        ``False``: the suite runs on a sample of the written rows, so it leaves out what only
        the whole file has (its row count against the manifest and the suppression limit, the
        smallest equivalence class); the gate checks those on the whole file.
    """
    g = gx_api()
    k = policy.privacy.k
    levels: Mapping[str, int] = manifest.get("transformation") or {}
    # With attacks, the release is made from the records left after the held-out control.
    input_rows = int(manifest["input"].get("released_from_rows", manifest["input"]["rows"]))
    release_rows = int(manifest["output"]["rows"])
    allowed = math.floor(policy.privacy.suppression_limit * input_rows + 1e-9)
    limit_source = (
        f"manifest: input.rows = {input_rows}; policy: privacy.suppression_limit = "
        f"{policy.privacy.suppression_limit:g}"
    )
    if policy.privacy.person_key is not None:
        # The limit is a share of the persons, and a suppressed person takes all of their
        # rows: the file alone cannot bound the rows (the gate checks the persons with the
        # private row-to-person mapping), only that no row was added.
        allowed = input_rows
        limit_source = (
            f"manifest: input.rows = {input_rows}; the suppression limit counts persons "
            f"(privacy.person_key {policy.privacy.person_key!r}), checked by the gate"
        )
    qis = policy.quasi_identifiers
    # A tiered release E is k-anonymous over tiers 1..E only (the manifest says which columns).
    covered = list(manifest.get("k_anonymity_covers") or qis)
    expectations = []
    if policy.identifiers:
        expectations.append(
            tagged_expectation(
                "ExpectTableColumnsToExclude",
                "no_identifier",
                f"no direct identifier column ({', '.join(policy.identifiers)})",
                "policy: columns with role identifier are always dropped",
                column_set=list(policy.identifiers),
            )
        )
    expectations += [
        tagged_expectation(
            "ExpectTableColumnsToMatchSet",
            "columns",
            f"columns are exactly the {len(policy.released_columns)} released ones",
            "policy: every declared column except the identifiers",
            column_set=list(policy.released_columns),
            exact_match=True,
        ),
        tagged_expectation(
            "ExpectTableRowCountToEqual",
            "row_count_manifest",
            f"{release_rows} rows, as the manifest records",
            "manifest: output.rows",
            value=release_rows,
        ),
        tagged_expectation(
            "ExpectTableRowCountToBeBetween",
            "row_count_suppression",
            f"between {input_rows - allowed} and {input_rows} rows (at most {allowed} suppressed)",
            limit_source,
            min_value=input_rows - allowed,
            max_value=input_rows,
        ),
    ][: None if whole_table else -2]  # without the row counts on a sample
    for name in qis:
        hierarchy = hierarchies[name]
        level = levels.get(name)
        spec = policy.columns[name]
        numeric = spec.type if spec.is_numeric else None
        domain = _domain_expectation(name, hierarchy, level, numeric)
        if domain is not None:
            expectations.append(domain)
        if numeric is not None:
            # The domain checks take a range's ends one at a time: "57-31" passed as an age.
            expectations.append(
                tagged_expectation(
                    "ExpectColumnRangesToBeOrdered",
                    "ordered_ranges",
                    f"column {name!r}: every range holds a number (lo <= hi, [lo, hi) with "
                    "lo < hi)",
                    "a range that holds no number states no record's value",
                    column=name,
                    labels=_labels(hierarchy, None) or [],
                )
            )
        if level is not None and level < hierarchy.height:
            expectations.append(
                tagged_expectation(
                    "ExpectColumnValuesToNotBeInSet",
                    "suppression_marker",
                    f"no suppression marker {SUPPRESSION_MARKER!r} in column {name!r} (level "
                    f"{level} of {hierarchy.height})",
                    "global recoding below the top level: suppressed records are removed, "
                    "never starred",
                    column=name,
                    value_set=[SUPPRESSION_MARKER],
                )
            )
    for name in policy.released_columns:
        spec = policy.columns[name]
        if name in qis or SUPPRESSION_MARKER in (spec.categories or []):
            continue
        expectations.append(
            tagged_expectation(
                "ExpectColumnValuesToNotBeInSet",
                "suppression_marker",
                f"no suppression marker {SUPPRESSION_MARKER!r} in column {name!r} "
                f"({spec.role.value})",
                "only quasi-identifiers are generalized; other columns are released as they are",
                column=name,
                value_set=[SUPPRESSION_MARKER],
            )
        )
    narrower = len(covered) < len(qis)
    if whole_table:  # the smallest class: a sample's classes are smaller
        expectations.append(
            tagged_expectation(
                "ExpectEquivalenceClassSizeToBeAtLeast",
                "min_class_size",
                f"every equivalence class over the {len(covered)} "
                f"{'covered ' if len(covered) < len(qis) else ''}quasi-identifiers holds at least "
                f"k = {k} records",
                f"policy: privacy.k = {k}"
                + (f"; manifest: k_anonymity_covers = {covered}" if narrower else ""),
                column_list=covered,
                min_value=k,
            )
        )
    return g.gx.ExpectationSuite(
        name=f"{policy.dataset}.release",
        expectations=expectations,
        meta={"privgate": {"policy_sha256": policy.fingerprint(), "kind": "release"}},
    )
