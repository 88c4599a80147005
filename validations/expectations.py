"""Great Expectations contracts of a release, derived from its policy.

pandera (:mod:`validations.schema`) is the fast in-code schema at ingest; the two expectation
suites built here are the documented, reviewable contract, rendered as Data Docs next to each
release:

* the **input suite** (``<dataset>.input``): the declared columns and their types, no missing
  value where the policy requires one, values inside each quasi-identifier's hierarchy and each
  column's declared categories and range, at least ``k`` rows, unique direct identifiers;
* the **release suite** (``<dataset>.release``), run on the release file as written and re-read
  as text: no direct identifier column, exactly the released columns, every quasi-identifier
  value inside its generalized domain (the labels of the level the algorithm chose), the
  suppression marker ``*`` only where generalization to the top level allows it, every
  equivalence class of at least ``k`` records (a custom expectation computed by Great
  Expectations itself, not by the gate), and row counts consistent with the manifest.

Every function takes a policy, frames or paths and returns plain dicts (JSON-ready summaries that
also carry the Great Expectations suite and result, so Data Docs can be written later, anywhere).
Great Expectations is imported lazily (about 3 s), runs fully offline with an ephemeral context,
and its usage analytics are switched off before it is imported.

Row numbers are 0-based data rows, as in :mod:`validations.schema` (for a CSV with a header,
line = row + 2).
"""

from __future__ import annotations

import functools
import logging
import math
import os
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd

from privgate.core.anonymize import check_k
from privgate.core.exceptions import GateBlockedError, SchemaValidationError
from privgate.core.hierarchy import (
    SUPPRESSED,
    ARXHierarchy,
    Hierarchy,
    IntervalHierarchy,
    MaskingHierarchy,
)
from privgate.core.policy import ColumnType, ReleasePolicy
from privgate.validations.schema import HierarchyCoverageError

__all__ = [
    "SITE_NAME",
    "SUPPRESSION_MARKER",
    "InputContractError",
    "ReleaseContractError",
    "build_input_suite",
    "build_release_suite",
    "check_policy_input",
    "describe_failures",
    "format_check",
    "format_validation",
    "raise_for_input",
    "raise_for_release",
    "report",
    "typed_view",
    "validate_input_expectations",
    "validate_release_expectations",
    "write_data_docs",
]

SUPPRESSION_MARKER = SUPPRESSED

#: The Data Docs site written next to a release (the ephemeral context already has a
#: ``local_site`` of its own, in a temporary folder, which is never built).
SITE_NAME = "privgate"

#: Unexpected values and rows kept per expectation in summaries and messages.
_QUOTED = 10

#: A value longer than this is quoted by its start and its length.
_QUOTED_CHARS = 60

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
}

_INTEGER = r"-?\d+"
_NUMBER = r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"


class InputContractError(SchemaValidationError):
    """The input table fails its expectation suite (``failures``: the failing expectations)."""


class ReleaseContractError(GateBlockedError):
    """The release as written fails its expectation suite, so it is not published.

    ``decision`` holds the suite's summary (every expectation and its result).
    """


# ---------------------------------------------------------------------------------------------
# Great Expectations, imported on first use, with the two custom expectations
# ---------------------------------------------------------------------------------------------


@functools.cache
def _gx() -> SimpleNamespace:
    """Import Great Expectations (analytics off) and register privgate's custom expectations."""
    os.environ["GX_ANALYTICS_ENABLED"] = "false"
    # Every ephemeral context logs at INFO the temporary folder of a docs site it never builds.
    logging.getLogger("great_expectations.data_context.types.base").setLevel(logging.WARNING)
    import great_expectations as gx
    from great_expectations.core.metric_domain_types import MetricDomainTypes
    from great_expectations.execution_engine import PandasExecutionEngine
    from great_expectations.expectations.expectation import BatchExpectation
    from great_expectations.expectations.metrics.metric_provider import metric_value
    from great_expectations.expectations.metrics.table_metric_provider import (
        TableMetricProvider,
    )
    from great_expectations.render import LegacyRendererType, RenderedStringTemplateContent
    from great_expectations.render.renderer.renderer import renderer

    def template(text: str, params: dict, runtime_configuration: dict | None) -> list:
        styling = (runtime_configuration or {}).get("styling", {})
        return [
            RenderedStringTemplateContent(
                content_block_type="string_template",
                string_template={"template": text, "params": params, "styling": styling},
            )
        ]

    def kwargs_of(configuration: Any, result: Any) -> dict:
        config = configuration or (result.expectation_config if result else None)
        return dict(config.kwargs) if config is not None else {}

    class TableClassSizes(TableMetricProvider):
        """How many equivalence classes (rows sharing every listed column) have each size."""

        metric_name = "table.privgate_class_sizes"
        value_keys = ("column_list",)

        @metric_value(engine=PandasExecutionEngine)
        def _pandas(
            cls,
            execution_engine: Any,
            metric_domain_kwargs: dict,
            metric_value_kwargs: dict,
            metrics: dict,
            runtime_configuration: dict,
        ) -> dict[int, int]:
            df, _, _ = execution_engine.get_compute_domain(
                domain_kwargs=metric_domain_kwargs, domain_type=MetricDomainTypes.TABLE
            )
            columns = list(metric_value_kwargs["column_list"])
            sizes = df.groupby(columns, dropna=False, sort=False).size()
            return {int(size): int(n) for size, n in sizes.value_counts().items()}

    class ExpectEquivalenceClassSizeToBeAtLeast(BatchExpectation):
        """Every equivalence class over ``column_list`` holds at least ``min_value`` records.

        The release's k-anonymity, measured by Great Expectations with a plain group-by on the
        table it was given (missing cells form a value of their own), independently of the gate.
        """

        column_list: list[str]
        min_value: int

        metric_dependencies = ("table.privgate_class_sizes",)
        success_keys = ("column_list", "min_value")
        args_keys = ("column_list", "min_value")

        def _validate(
            self,
            metrics: dict,
            runtime_configuration: dict | None = None,
            execution_engine: Any = None,
        ) -> dict:
            counts = metrics["table.privgate_class_sizes"]
            smallest = min(counts) if counts else 0
            small = {size: n for size, n in counts.items() if size < self.min_value}
            return {
                "success": bool(counts) and smallest >= self.min_value,
                "result": {
                    "observed_value": smallest,
                    "details": {
                        "classes": sum(counts.values()),
                        "classes_below_k": sum(small.values()),
                        "records_in_classes_below_k": sum(s * n for s, n in small.items()),
                    },
                },
            }

        @classmethod
        @renderer(renderer_type=LegacyRendererType.PRESCRIPTIVE)
        def _prescriptive_renderer(
            cls,
            configuration: Any = None,
            result: Any = None,
            runtime_configuration: dict | None = None,
            **kwargs: Any,
        ) -> list:
            kw = kwargs_of(configuration, result)
            return template(
                "Every equivalence class over $columns must hold at least $min_value records "
                "(smallest class size, k-anonymity).",
                {"columns": ", ".join(kw.get("column_list", [])), "min_value": kw.get("min_value")},
                runtime_configuration,
            )

    class ExpectTableColumnsToExclude(BatchExpectation):
        """None of ``column_set`` is a column of the table (direct identifiers never leave)."""

        column_set: list[str]

        metric_dependencies = ("table.columns",)
        success_keys = ("column_set",)
        args_keys = ("column_set",)

        def _validate(
            self,
            metrics: dict,
            runtime_configuration: dict | None = None,
            execution_engine: Any = None,
        ) -> dict:
            present = [c for c in metrics["table.columns"] if c in set(self.column_set)]
            return {"success": not present, "result": {"observed_value": present}}

        @classmethod
        @renderer(renderer_type=LegacyRendererType.PRESCRIPTIVE)
        def _prescriptive_renderer(
            cls,
            configuration: Any = None,
            result: Any = None,
            runtime_configuration: dict | None = None,
            **kwargs: Any,
        ) -> list:
            kw = kwargs_of(configuration, result)
            return template(
                "Must not have any of the columns $columns (direct identifiers).",
                {"columns": ", ".join(kw.get("column_set", []))},
                runtime_configuration,
            )

    return SimpleNamespace(
        gx=gx,
        E=gx.expectations,
        ExpectEquivalenceClassSizeToBeAtLeast=ExpectEquivalenceClassSizeToBeAtLeast,
        ExpectTableColumnsToExclude=ExpectTableColumnsToExclude,
    )


def _context(site_dir: Path | None = None) -> Any:
    """A fresh ephemeral context: in memory, offline, quiet, analytics off."""
    g = _gx()
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = g.gx.get_context(mode="ephemeral")
    context.enable_analytics(False)
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    if site_dir is not None:
        context.add_data_docs_site(
            site_name=SITE_NAME,
            site_config={
                "class_name": "SiteBuilder",
                "show_how_to_buttons": False,
                "store_backend": {
                    "class_name": "TupleFilesystemStoreBackend",
                    "base_directory": str(site_dir),
                },
                "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
            },
        )
    return context


def _expectation(name: str, check: str, text: str, notes: str, **kwargs: Any) -> Any:
    """One expectation, tagged with what it checks (``check``) and a one-line ``text``."""
    g = _gx()
    cls = getattr(g.E, name, None) or getattr(g, name)
    return cls(**kwargs, meta={"privgate": {"check": check, "text": text}}, notes=notes)


# ---------------------------------------------------------------------------------------------
# Suites
# ---------------------------------------------------------------------------------------------


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
    """
    g = _gx()
    # A DP release has no k; it still needs at least one record.
    k = policy.privacy.k if policy.privacy is not None else 1
    low, high = row_bounds or (None, None)
    low = max(k, low or 1)
    expectations = [
        _expectation(
            "ExpectTableColumnsToMatchSet",
            "columns",
            f"columns are exactly the {len(policy.columns)} declared in the policy",
            "policy: columns (an undeclared column may be an identifier nobody reviewed)",
            column_set=list(policy.columns),
            exact_match=True,
        ),
        _expectation(
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
    for name, spec in policy.columns.items():
        key = f"policy: columns.{name}"
        expectations.append(
            _expectation(
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
                _expectation(
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
                _expectation(
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
                _expectation(
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
                _expectation(
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
                _expectation(
                    "ExpectColumnValueLengthsToEqual",
                    "hierarchy_domain",
                    f"column {name!r}: codes of {hierarchy.length} characters",
                    f"{key}.hierarchy.length (masking): a shorter code lost a leading zero",
                    column=name,
                    value=hierarchy.length,
                )
            )
        if spec.role.value == "identifier":
            expectations.append(
                _expectation(
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


def _interval_domain(hierarchy: IntervalHierarchy, level: int | None) -> tuple[str, Any]:
    """``("set", labels)`` or ``("regex", pattern)`` of an interval hierarchy at ``level``."""
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
    return "regex", rf"^(?:{number}(?:-{number})?|\[{number}, {number}\)|\*)$"


def _masking_regex(hierarchy: MaskingHierarchy, level: int | None) -> str:
    mask = re.escape(hierarchy.mask_char)
    plain = f"[^{mask}]" if len(hierarchy.mask_char) == 1 else "."
    if level is not None:
        return rf"^{plain}{{{hierarchy.length - level}}}{mask}{{{level}}}$"
    return rf"^(?:{plain}{{0,{hierarchy.length}}}{mask}{{0,{hierarchy.length}}}|\*)$"


def _domain_expectation(name: str, hierarchy: Hierarchy, level: int | None) -> Any:
    """The expectation that column ``name`` stays inside its generalized domain."""
    where = (
        f"level {level} of {hierarchy.height}"
        if level is not None
        else "any level (local recoding)"
    )
    notes = f"hierarchy of {name!r}, {where}"
    if level is not None and level == hierarchy.height:
        return _expectation(
            "ExpectColumnValuesToBeInSet",
            "generalized_domain",
            f"column {name!r} fully generalized to {SUPPRESSION_MARKER!r} ({where})",
            notes,
            column=name,
            value_set=[SUPPRESSION_MARKER],
        )
    labels = _labels(hierarchy, level)
    if labels is not None:
        if level is None:
            labels = sorted(set(labels) | {SUPPRESSION_MARKER})
        return _expectation(
            "ExpectColumnValuesToBeInSet",
            "generalized_domain",
            f"column {name!r} inside its generalized domain ({where}: {len(labels)} labels)",
            notes,
            column=name,
            value_set=labels,
        )
    if isinstance(hierarchy, IntervalHierarchy):
        kind, domain = _interval_domain(hierarchy, level)
    elif isinstance(hierarchy, MaskingHierarchy):
        kind, domain = "regex", _masking_regex(hierarchy, level)
    else:
        return None
    if kind == "set":
        return _expectation(
            "ExpectColumnValuesToBeInSet",
            "generalized_domain",
            f"column {name!r} inside its generalized domain ({where}: {len(domain)} labels)",
            notes,
            column=name,
            value_set=domain,
        )
    return _expectation(
        "ExpectColumnValuesToMatchRegex",
        "generalized_domain",
        f"column {name!r} inside its generalized domain ({where}: labels like {domain})",
        notes,
        column=name,
        regex=domain,
    )


def build_release_suite(
    policy: ReleasePolicy, hierarchies: Mapping[str, Hierarchy], manifest: Mapping[str, Any]
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
    """
    g = _gx()
    k = policy.privacy.k
    levels: Mapping[str, int] = manifest.get("transformation") or {}
    input_rows = int(manifest["input"]["rows"])
    release_rows = int(manifest["output"]["rows"])
    allowed = math.floor(policy.privacy.suppression_limit * input_rows + 1e-9)
    qis = policy.quasi_identifiers
    # A tiered release E is k-anonymous over tiers 1..E only (the manifest says which columns).
    covered = list(manifest.get("k_anonymity_covers") or qis)
    expectations = []
    if policy.identifiers:
        expectations.append(
            _expectation(
                "ExpectTableColumnsToExclude",
                "no_identifier",
                f"no direct identifier column ({', '.join(policy.identifiers)})",
                "policy: columns with role identifier are always dropped",
                column_set=list(policy.identifiers),
            )
        )
    expectations += [
        _expectation(
            "ExpectTableColumnsToMatchSet",
            "columns",
            f"columns are exactly the {len(policy.released_columns)} released ones",
            "policy: every declared column except the identifiers",
            column_set=list(policy.released_columns),
            exact_match=True,
        ),
        _expectation(
            "ExpectTableRowCountToEqual",
            "row_count_manifest",
            f"{release_rows} rows, as the manifest records",
            "manifest: output.rows",
            value=release_rows,
        ),
        _expectation(
            "ExpectTableRowCountToBeBetween",
            "row_count_suppression",
            f"between {input_rows - allowed} and {input_rows} rows (at most {allowed} suppressed)",
            f"manifest: input.rows = {input_rows}; policy: privacy.suppression_limit = "
            f"{policy.privacy.suppression_limit:g}",
            min_value=input_rows - allowed,
            max_value=input_rows,
        ),
    ]
    for name in qis:
        hierarchy = hierarchies[name]
        level = levels.get(name)
        domain = _domain_expectation(name, hierarchy, level)
        if domain is not None:
            expectations.append(domain)
        if level is not None and level < hierarchy.height:
            expectations.append(
                _expectation(
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
            _expectation(
                "ExpectColumnValuesToNotBeInSet",
                "suppression_marker",
                f"no suppression marker {SUPPRESSION_MARKER!r} in column {name!r} "
                f"({spec.role.value})",
                "only quasi-identifiers are generalized; other columns are released as they are",
                column=name,
                value_set=[SUPPRESSION_MARKER],
            )
        )
    expectations.append(
        _expectation(
            "ExpectEquivalenceClassSizeToBeAtLeast",
            "min_class_size",
            f"every equivalence class over the {len(covered)} "
            f"{'covered ' if len(covered) < len(qis) else ''}quasi-identifiers holds at least "
            f"k = {k} records",
            f"policy: privacy.k = {k}"
            + (f"; manifest: k_anonymity_covers = {covered}" if len(covered) < len(qis) else ""),
            column_list=covered,
            min_value=k,
        )
    )
    return g.gx.ExpectationSuite(
        name=f"{policy.dataset}.release",
        expectations=expectations,
        meta={"privgate": {"policy_sha256": policy.fingerprint(), "kind": "release"}},
    )


# ---------------------------------------------------------------------------------------------
# Validation and summaries
# ---------------------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """A JSON-ready copy: numpy scalars to Python, long text and lists shortened."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [_plain(v) for v in value[:_QUOTED]]
        return items + ([f"... {len(value) - _QUOTED} more"] if len(value) > _QUOTED else [])
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        try:
            return value.item()
        except (ValueError, AttributeError):
            return str(value)
    if isinstance(value, float) and math.isnan(value):
        return None
    if value is pd.NA:
        return None
    if isinstance(value, str) and len(value) > _QUOTED_CHARS:
        return f"{value[:40]}... ({len(value)} characters)"
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _entry(expectation: Any, result: Any) -> dict:
    tag = (expectation.meta or {}).get("privgate", {})
    entry = {
        "expectation": expectation.expectation_type,
        "column": getattr(expectation, "column", None),
        "check": tag.get("check"),
        "text": tag.get("text", expectation.expectation_type),
        "success": bool(result.success) if result is not None else False,
        "observed": None,
        "unexpected_count": None,
        "unexpected_values": [],
        "unexpected_rows": [],
        "error": None,
    }
    if result is None:
        entry["error"] = "not evaluated"
        return entry
    info = result.exception_info or {}
    messages = [info.get("exception_message")] if "raised_exception" in info else []
    messages += [v.get("exception_message") for v in info.values() if isinstance(v, dict)]
    messages = [m for m in messages if m]
    if messages:
        entry["error"] = messages[0]
    res = result.result or {}
    entry["observed"] = _plain(res.get("observed_value"))
    if res.get("details"):
        entry["details"] = _plain(res["details"])
    if res.get("unexpected_count") is not None:
        entry["unexpected_count"] = int(res["unexpected_count"])
        entry["unexpected_values"] = [_plain(v) for v in res.get("partial_unexpected_list") or []]
        entry["unexpected_rows"] = [
            _plain(i) for i in res.get("partial_unexpected_index_list") or []
        ]
    return entry


def _run_suite(suite: Any, frame: pd.DataFrame, kind: str, run_name: str | None) -> dict:
    """Validate ``frame`` against ``suite`` in a fresh ephemeral context; a plain summary."""
    g = _gx()
    context = _context()
    batch_definition = (
        context.data_sources.add_pandas("privgate")
        .add_dataframe_asset(kind)
        .add_batch_definition_whole_dataframe("whole table")
    )
    suite = context.suites.add(suite)
    result = batch_definition.get_batch(batch_parameters={"dataframe": frame}).validate(
        suite, result_format={"result_format": "SUMMARY", "partial_unexpected_count": _QUOTED}
    )
    by_id = {r.expectation_config.id: r for r in result.results}
    entries = [_entry(e, by_id.get(e.id)) for e in suite.expectations]
    failed = sum(not e["success"] for e in entries)
    run_time = datetime.now(UTC)
    return {
        "kind": kind,
        "suite": suite.name,
        "success": failed == 0,
        "rows": len(frame),
        "columns": [str(c) for c in frame.columns],
        "evaluated": len(entries),
        "successful": len(entries) - failed,
        "failed": failed,
        "expectations": entries,
        "run_name": run_name or run_time.strftime("%Y%m%dT%H%M%SZ"),
        "run_time": run_time.isoformat(),
        "gx_version": g.gx.__version__,
        "gx_suite": _json_ready(suite.to_json_dict()),
        "gx_result": _json_ready(result.to_json_dict()),
    }


def _json_ready(value: Any) -> Any:
    from great_expectations.util import convert_to_json_serializable

    return convert_to_json_serializable(value)


def typed_view(frame: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """The ingested text table with each numeric column parsed where it can be.

    For the input suite when the pandera schema has refused the table (``privgate validate``
    still reports every expectation): a numeric column whose every cell parses becomes
    ``Int64`` / ``Float64``; one with an unparseable cell stays an object column of numbers and
    the offending text, so the type expectation names exactly those cells.
    """
    columns = {}
    for name in frame.columns:
        column = frame[name]
        spec = policy.columns.get(str(name))
        numeric = spec is not None and spec.is_numeric
        if not numeric or pd.api.types.is_numeric_dtype(column.dtype):
            columns[name] = column
            continue
        parsed = pd.to_numeric(column.astype("object"), errors="coerce")
        bad = parsed.isna() & column.notna()
        if spec.type is ColumnType.INTEGER:
            bad |= parsed.notna() & (parsed % 1 != 0)
        if not bad.any():
            columns[name] = parsed.astype("Int64" if spec.type is ColumnType.INTEGER else "Float64")
            continue
        cast = int if spec.type is ColumnType.INTEGER else float
        values = [
            None if pd.isna(raw) else (raw if wrong else cast(number))
            for raw, number, wrong in zip(column.astype("object"), parsed, bad, strict=True)
        ]
        columns[name] = pd.Series(values, index=frame.index, dtype="object")
    return pd.DataFrame(columns, index=frame.index)


def _na_strings(frame: pd.DataFrame) -> pd.DataFrame:
    """Text columns as ``string`` (NA-backed), the dtype the type expectations name.

    pandera coerces to pandas 3's NaN-backed ``str`` dtype, which Great Expectations' type
    names cannot express.
    """
    text = [
        name
        for name, dtype in frame.dtypes.items()
        if isinstance(dtype, pd.StringDtype) and dtype != pd.StringDtype()
    ]
    return frame.astype(dict.fromkeys(text, "string")) if text else frame


def validate_input_expectations(
    frame: pd.DataFrame,
    policy: ReleasePolicy,
    hierarchies: Mapping[str, Hierarchy],
    *,
    run_name: str | None = None,
    row_bounds: tuple[int | None, int | None] | None = None,
) -> dict:
    """Run the input suite on ``frame`` (pandera's coerced table, or :func:`typed_view`).

    Returns a summary: ``success``, counts, one entry per expectation (``text``, ``success``,
    ``observed``, ``unexpected_count``, up to 10 ``unexpected_values`` / ``unexpected_rows``,
    ``error``), and the Great Expectations suite and result for :func:`write_data_docs`.
    """
    suite = build_input_suite(policy, hierarchies, row_bounds)
    summary = _run_suite(suite, _na_strings(frame), "input", run_name)
    summary["k"] = policy.privacy.k if policy.privacy is not None else None
    return summary


def validate_release_expectations(
    release_file: str | Path,
    policy: ReleasePolicy,
    hierarchies: Mapping[str, Hierarchy],
    manifest: Mapping[str, Any],
    *,
    run_name: str | None = None,
) -> dict:
    """Run the release suite on the file as written, every cell read back as text.

    See :func:`build_release_suite` for what ``manifest`` must hold. An unreadable file raises
    ``VerificationError`` (as the gate does).
    """
    from privgate.core.gate import read_release

    columns = read_release(release_file)
    frame = pd.DataFrame({name: pd.Series(v, dtype="object") for name, v in columns.items()})
    suite = build_release_suite(policy, hierarchies, manifest)
    summary = _run_suite(suite, frame, "release", run_name or manifest.get("release_id"))
    summary["k"] = policy.privacy.k if policy.privacy is not None else None
    summary["file"] = str(release_file)
    return summary


# ---------------------------------------------------------------------------------------------
# Messages and errors
# ---------------------------------------------------------------------------------------------


def _quote(value: Any) -> str:
    return repr(value) if not isinstance(value, str) or not value.startswith("... ") else value


def format_check(entry: Mapping[str, Any]) -> str:
    """One expectation's outcome in one line: what was expected and what was found."""
    text = entry["text"]
    if entry["success"]:
        return text
    if entry.get("error"):
        error = entry["error"]
        if "must either be None or of the same type" in error:
            error = "the column holds values that are not numbers"
        return f"{text}: could not be evaluated ({error})"
    count = entry.get("unexpected_count")
    if count:
        rows = entry.get("unexpected_rows") or []
        values = entry.get("unexpected_values") or []
        where = f" at row(s) {', '.join(str(r) for r in rows)}" if rows else ""
        more = "..." if count > len(rows) else ""
        quoted = ", ".join(_quote(v) for v in values)
        return f"{text}: {count} unexpected value(s){where}{more}: {quoted}{more}"
    return f"{text}: observed {entry.get('observed')!r}"


def describe_failures(summary: Mapping[str, Any]) -> str:
    """Every failed expectation of a summary, ``; ``-separated."""
    return "; ".join(format_check(e) for e in summary["expectations"] if not e["success"])


def raise_for_input(summary: Mapping[str, Any]) -> None:
    """Raise the error that fits the input suite's failures (nothing if it passed).

    Only too few rows: ``AnonymizationError`` (no k-anonymous release exists). Only values
    outside a hierarchy: ``HierarchyCoverageError``. Anything else: ``InputContractError``.
    """
    if summary["success"]:
        return
    failed = [e for e in summary["expectations"] if not e["success"]]
    checks = {e["check"] for e in failed}
    k, rows = summary.get("k"), summary["rows"]
    if checks == {"row_count_k"} and k is not None and rows < k:
        check_k(k, rows)  # raises AnonymizationError: no k-anonymous release exists
    message = (
        f"input fails {len(failed)} of {summary['evaluated']} expectation(s) of suite "
        f"{summary['suite']!r}: {describe_failures(summary)}"
    )
    error = HierarchyCoverageError if checks == {"hierarchy_domain"} else InputContractError
    raise error(message, failures=failed)


def raise_for_release(summary: Mapping[str, Any]) -> None:
    """Raise :class:`ReleaseContractError` if the release suite failed."""
    if summary["success"]:
        return
    raise ReleaseContractError(
        f"release fails {summary['failed']} of {summary['evaluated']} expectation(s) of suite "
        f"{summary['suite']!r}: {describe_failures(summary)}",
        summary,
    )


def report(summaries: Sequence[Mapping[str, Any]]) -> dict:
    """The summaries without the Great Expectations payloads: for a JSON report or a manifest."""
    return {s["kind"]: {k: v for k, v in s.items() if not k.startswith("gx_")} for s in summaries}


# ---------------------------------------------------------------------------------------------
# Data Docs
# ---------------------------------------------------------------------------------------------


def write_data_docs(summaries: Sequence[Mapping[str, Any]], directory: str | Path) -> dict:
    """Write one Data Docs site per summary, in ``directory/<kind>/``.

    Each site holds the suite's page (every expectation, as Great Expectations renders it) and
    the validation result's page (each expectation with its observed value and, when it failed,
    the unexpected values). Returns ``{kind: path of the site's index.html}``.
    """
    g = _gx()
    from great_expectations.core.expectation_validation_result import (
        expectationSuiteValidationResultSchema,
    )
    from great_expectations.core.run_identifier import RunIdentifier
    from great_expectations.data_context.types.resource_identifiers import (
        ExpectationSuiteIdentifier,
        ValidationResultIdentifier,
    )

    directory = Path(directory)
    written = {}
    for summary in summaries:
        site_dir = directory / summary["kind"]
        site_dir.mkdir(parents=True, exist_ok=True)
        context = _context(site_dir)
        suite_dict = dict(summary["gx_suite"])
        suite_dict.pop("id", None)
        context.suites.add(g.gx.ExpectationSuite(**suite_dict))
        result = expectationSuiteValidationResultSchema.load(summary["gx_result"])
        key = ValidationResultIdentifier(
            expectation_suite_identifier=ExpectationSuiteIdentifier(name=summary["suite"]),
            run_id=RunIdentifier(
                run_name=summary["run_name"],
                run_time=datetime.fromisoformat(summary["run_time"]),
            ),
            batch_identifier=summary["kind"],
        )
        result.meta["run_id"] = key.run_id
        context.validation_results_store.set(key, result)
        context.build_data_docs(site_names=[SITE_NAME])
        _make_readable_offline(site_dir, summary)
        written[summary["kind"]] = str(site_dir / "index.html")
    return written


#: Data Docs take their icon font, styles and scripts from CDNs. Offline, the status icons are
#: blank and the index page's tables (filled by JavaScript) are empty; these styles and the
#: static summary below keep every page readable without any network access.
_OFFLINE_CSS = """
<style id="privgate-offline">
i.fa-check-circle::before { content: "\\2714  PASS"; color: #1a7f37; }
i.fa-times::before { content: "\\2718  FAIL"; color: #c62828; }
i.fa-exclamation-triangle::before { content: "\\26A0  ERROR"; color: #b26a00; }
i.fa-check-circle::before, i.fa-times::before, i.fa-exclamation-triangle::before {
  font-family: sans-serif !important; font-style: normal; font-weight: bold; white-space: nowrap;
}
#privgate-summary table { border-collapse: collapse; margin: 0.5em 0 1.5em 0; }
#privgate-summary th, #privgate-summary td {
  border: 1px solid #ccc; padding: 2px 8px; text-align: left; vertical-align: top;
}
#privgate-summary .pass { color: #1a7f37; font-weight: bold; }
#privgate-summary .fail { color: #c62828; font-weight: bold; }
</style>
"""

_INDEX_ANCHOR = '<div id="section-1-content-block-2"'


def _summary_html(site_dir: Path, summary: Mapping[str, Any]) -> str:
    """A static table of the suite's expectations and their results, for the index page."""
    from html import escape

    pages = sorted((site_dir / "validations").rglob("*.html"))
    link = pages[-1].relative_to(site_dir).as_posix() if pages else ""
    suite_page = "expectations/" + "/".join(summary["suite"].split(".")) + ".html"
    status = "PASSED" if summary["success"] else "FAILED"
    rows = []
    for entry in summary["expectations"]:
        mark = (
            '<span class="pass">PASS</span>'
            if entry["success"]
            else '<span class="fail">FAIL</span>'
        )
        found = "" if entry["success"] else format_check(entry).removeprefix(entry["text"] + ": ")
        observed = entry.get("observed")
        if entry["success"] and observed is not None:
            found = f"observed {observed}"
        elif entry["success"] and entry.get("unexpected_count") == 0:
            found = "0 unexpected values"
        rows.append(
            f"<tr><td>{mark}</td><td>{escape(entry['text'])}</td>"
            f"<td><code>{escape(entry['expectation'])}</code></td><td>{escape(str(found))}</td></tr>"
        )
    return (
        f'<section id="privgate-summary" class="container-fluid pl-3">'
        f"<h3>{escape(summary['suite'])}: {status}, {summary['successful']} of "
        f"{summary['evaluated']} expectations met</h3>"
        f"<p>{summary['rows']} rows, run {escape(str(summary['run_name']))} at "
        f"{escape(summary['run_time'])}. "
        f'<a href="{escape(link)}">Validation result page</a> | '
        f'<a href="{escape(suite_page)}">Expectation suite page</a></p>'
        "<table><tr><th>Status</th><th>Expectation</th><th>Type</th><th>Found</th></tr>"
        + "".join(rows)
        + "</table></section>"
    )


def _make_readable_offline(site_dir: Path, summary: Mapping[str, Any]) -> None:
    """Add offline styles to every page and a static results table to the index page."""
    for page in site_dir.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        if 'id="privgate-offline"' in html:
            continue
        html = html.replace("</head>", _OFFLINE_CSS + "</head>", 1)
        if page == site_dir / "index.html":
            block = _summary_html(site_dir, summary)
            if _INDEX_ANCHOR in html:
                html = html.replace(_INDEX_ANCHOR, block + _INDEX_ANCHOR, 1)
            else:
                html = html.replace("</body>", block + "</body>", 1)
        page.write_text(html, encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# ``privgate validate``: ingest + pandera + the input suite, without Prefect
# ---------------------------------------------------------------------------------------------


def check_policy_input(policy: ReleasePolicy, docs_dir: str | Path | None = None) -> dict:
    """Ingest the policy's input and run both the pandera schema and the input suite.

    Raises what ingest raises (``IngestError``) and what building the hierarchies raises
    (``HierarchyError``); a table that fails the schema or the suite is reported, not raised.

    Returns
    -------
    dict
        ``valid``, ``input`` (path, sha256, rows, columns), ``schema`` (pandera: ``success``,
        ``problems``, ``message``, ``error``: the error type it raised) and ``expectations``
        (the input suite's summary); ``data_docs`` when ``docs_dir`` is given.
    """
    from privgate.core import stages
    from privgate.validations.schema import validate_input

    ingested = stages.ingest(policy)
    hierarchies = stages.load_hierarchies(policy)
    schema: dict[str, Any] = {"success": True, "problems": 0, "message": "", "error": None}
    try:
        frame = validate_input(ingested.frame, policy, hierarchies)
    except SchemaValidationError as exc:
        schema = {
            "success": False,
            "problems": len(exc.failures) or 1,
            "message": str(exc),
            "error": type(exc).__name__,
        }
        frame = typed_view(ingested.frame, policy)
    summary = validate_input_expectations(frame, policy, hierarchies)
    outcome = {
        "valid": schema["success"] and summary["success"],
        "dataset": policy.dataset,
        "input": {
            "path": ingested.path,
            "sha256": ingested.sha256,
            "rows": ingested.rows,
            "columns": [str(c) for c in ingested.frame.columns],
        },
        "schema": schema,
        "expectations": summary,
    }
    if docs_dir is not None:
        outcome["data_docs"] = write_data_docs([summary], docs_dir)
    return outcome


def format_validation(outcome: Mapping[str, Any]) -> str:
    """A readable report of :func:`check_policy_input`: input, schema, every expectation."""
    source = outcome["input"]
    summary = outcome["expectations"]
    schema = outcome["schema"]
    columns = source["columns"]
    lines = [
        f"dataset:  {outcome['dataset']}",
        f"input:    {source['path']}",
        f"sha256:   {source['sha256']}",
        f"rows:     {source['rows']}",
        f"columns:  {len(columns)}: {', '.join(columns)}",
    ]
    if schema["success"]:
        lines.append(f"schema:   OK (pandera): {len(columns)} columns match the policy")
    else:
        lines.append(f"schema:   FAILED (pandera, {schema['error']}): {schema['message']}")
    lines.append(
        f"expectations: {summary['successful']} of {summary['evaluated']} passed "
        f"(Great Expectations suite {summary['suite']})"
    )
    for entry in summary["expectations"]:
        lines.append(f"  {'PASS' if entry['success'] else 'FAIL'}  {format_check(entry)}")
    for kind, path in (outcome.get("data_docs") or {}).items():
        lines.append(f"data docs ({kind}): {path}")
    if outcome["valid"]:
        lines.append("result:   VALID")
    else:
        problems = []
        if not schema["success"]:
            problems.append(f"schema: {schema['problems']} problem(s)")
        if not summary["success"]:
            problems.append(f"expectations: {summary['failed']} of {summary['evaluated']} failed")
        lines.append("result:   INVALID (" + "; ".join(problems) + ")")
    return "\n".join(lines)
