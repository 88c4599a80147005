"""Data Docs views whose Jinja templates are compiled once per process, not once per page set.

Why: every Great Expectations view builds its own Jinja ``Environment``, and a new environment
parses and compiles every template it renders again; a Data Docs site has four views (suite
pages, validation pages, profiling pages, index), and a release writes two sites. Compiling
was about three quarters of the time ``write_data_docs`` took, on every release. These views
are Great Expectations' own (same templates, filters and output, byte for byte), given one
process-wide Jinja bytecode cache: an environment that meets a template another one already
compiled loads the compiled code instead. Jinja checks each cached entry against the
template's source checksum, so a changed template is compiled again; and the cache is only
attached to environments configured alike (Great Expectations' own template folders, no custom
views or styles), so compiled code is never shared between differently configured ones.

The classes are named in the site configuration (:func:`._gx.ephemeral_context`), the way
Great Expectations lets a site choose its views; this module imports Great Expectations, so
only Great Expectations imports it, when it builds a site.
"""

from __future__ import annotations

import threading

from great_expectations.render.view import DefaultJinjaIndexPageView, DefaultJinjaPageView
from jinja2 import BytecodeCache
from jinja2.bccache import Bucket

__all__ = ["CachedIndexPageView", "CachedPageView"]


class _ProcessBytecodeCache(BytecodeCache):
    """Compiled templates, in memory, shared by every view of the process."""

    def __init__(self) -> None:
        self._code: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def load_bytecode(self, bucket: Bucket) -> None:
        with self._lock:
            code = self._code.get(bucket.key)
        if code is not None:
            bucket.bytecode_from_string(code)  # discarded if the source's checksum differs

    def dump_bytecode(self, bucket: Bucket) -> None:
        code = bucket.bytecode_to_string()
        with self._lock:
            self._code[bucket.key] = code


_CACHE = _ProcessBytecodeCache()


def _share_compiled_templates(view: DefaultJinjaPageView) -> None:
    if view.custom_styles_directory is None and view.custom_views_directory is None:
        view.env.bytecode_cache = _CACHE


class CachedPageView(DefaultJinjaPageView):
    """Great Expectations' page view (suite, validation and profiling pages), cached."""

    def __init__(self, custom_styles_directory=None, custom_views_directory=None) -> None:
        super().__init__(custom_styles_directory, custom_views_directory)
        _share_compiled_templates(self)


class CachedIndexPageView(DefaultJinjaIndexPageView):
    """Great Expectations' index page view, cached."""

    def __init__(self, custom_styles_directory=None, custom_views_directory=None) -> None:
        super().__init__(custom_styles_directory, custom_views_directory)
        _share_compiled_templates(self)
