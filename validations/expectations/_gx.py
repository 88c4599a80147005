"""Great Expectations, imported on first use, with privgate's three custom expectations.

Great Expectations takes about 3 s to import, so nothing imports it until a suite runs; its
usage analytics are switched off before it is imported, and every context is ephemeral (in
memory, offline).
"""

from __future__ import annotations

import functools
import logging
import os
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

__all__ = ["SITE_NAME", "ephemeral_context", "gx_api", "is_ordered_range", "tagged_expectation"]

_NUMBER = r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
#: A closed range ``lo-hi`` (integers, local recoding's region labels) and a half-open one
#: ``[lo, hi)`` (a float interval hierarchy's bands).
_CLOSED = re.compile(rf"({_NUMBER})-({_NUMBER})")
_HALF_OPEN = re.compile(rf"\[({_NUMBER}), ({_NUMBER})\)")


def is_ordered_range(cell: object, labels: frozenset[str] | set[str] = frozenset()) -> bool:
    """``False`` for a numeric range that holds no number: ``lo-hi`` with ``lo > hi``, or
    ``[lo, hi)`` with ``lo >= hi``; ``True`` for any other cell and for one of ``labels`` (a
    hierarchy's own labels, whatever they look like).

    Why: the domain checks accept a range whose ends are values of the column's domain, in
    either order, so ``57-31`` passed as an age of a release: a range that states no value of
    the record it stands for. Whether a range holds the record's own value needs the input;
    this is what the written file alone can refute.
    """
    text = str(cell)
    if text in labels:
        return True
    closed = _CLOSED.fullmatch(text)
    if closed:
        return float(closed.group(1)) <= float(closed.group(2))
    half_open = _HALF_OPEN.fullmatch(text)
    if half_open:
        return float(half_open.group(1)) < float(half_open.group(2))
    return True


#: The Data Docs site written next to a release (the ephemeral context already has a
#: ``local_site`` of its own, in a temporary folder, which is never built).
SITE_NAME = "privgate"


@functools.cache
def gx_api() -> SimpleNamespace:
    """Import Great Expectations (analytics off) and register privgate's custom expectations."""
    os.environ["GX_ANALYTICS_ENABLED"] = "false"
    # Every ephemeral context logs at INFO the temporary folder of a docs site it never builds.
    logging.getLogger("great_expectations.data_context.types.base").setLevel(logging.WARNING)
    import great_expectations as gx
    from great_expectations.core.metric_domain_types import MetricDomainTypes
    from great_expectations.execution_engine import PandasExecutionEngine
    from great_expectations.expectations.expectation import (
        BatchExpectation,
        ColumnMapExpectation,
    )
    from great_expectations.expectations.metrics.map_metric_provider import (
        ColumnMapMetricProvider,
        column_condition_partial,
    )
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

    class ColumnValuesOrderedRange(ColumnMapMetricProvider):
        """Per cell: :func:`is_ordered_range`."""

        condition_metric_name = "column_values.privgate_ordered_range"
        condition_value_keys = ("labels",)

        @column_condition_partial(engine=PandasExecutionEngine)
        def _pandas(cls, column: Any, labels: list, **kwargs: Any) -> Any:
            exempt = frozenset(labels)
            return column.map(lambda cell: is_ordered_range(cell, exempt)).astype(bool)

    class ExpectColumnRangesToBeOrdered(ColumnMapExpectation):
        """Every numeric range in the column holds a number (:func:`is_ordered_range`);
        ``labels`` are the column's hierarchy labels, accepted as they are."""

        labels: list[str] = []

        map_metric = "column_values.privgate_ordered_range"
        success_keys = ("labels", "mostly")
        args_keys = ("column", "labels")

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
                "$column: every range lo-hi has lo <= hi, every [lo, hi) has lo < hi.",
                {"column": kw.get("column")},
                runtime_configuration,
            )

    return SimpleNamespace(
        gx=gx,
        E=gx.expectations,
        ExpectColumnRangesToBeOrdered=ExpectColumnRangesToBeOrdered,
        ExpectEquivalenceClassSizeToBeAtLeast=ExpectEquivalenceClassSizeToBeAtLeast,
        ExpectTableColumnsToExclude=ExpectTableColumnsToExclude,
    )


def ephemeral_context(site_dir: Path | None = None) -> Any:
    """A fresh ephemeral context: in memory, offline, quiet, analytics off."""
    g = gx_api()
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
                "site_index_builder": {
                    "class_name": "DefaultSiteIndexBuilder",
                    "view": _view("CachedIndexPageView"),
                },
                "site_section_builders": {
                    section: {"view": _view("CachedPageView")}
                    for section in ("expectations", "validations", "profiling")
                },
            },
        )
    return context


def _view(class_name: str) -> dict:
    """Great Expectations' own page views, compiling each template once per process."""
    return {"module_name": "privgate.validations.expectations._views", "class_name": class_name}


def tagged_expectation(name: str, check: str, text: str, notes: str, **kwargs: Any) -> Any:
    """One expectation, tagged with what it checks (``check``) and a one-line ``text``."""
    g = gx_api()
    cls = getattr(g.E, name, None) or getattr(g, name)
    return cls(**kwargs, meta={"privgate": {"check": check, "text": text}}, notes=notes)
