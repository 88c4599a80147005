"""One OpenDP budget search per public setting, for tests that release twice with the same one.

``synthetic._budgeted_measurement(columns, keys, config)`` searches ρ and MST's measure split
with OpenDP's own maps and rehearses on an empty table: the costly part of a small release, and
a function of public inputs only (it is never given the data). A test that draws a release and
then replays its journal on a neighbouring input, with the same declared domains and settings,
may reuse the first measurement (OpenDP measurements keep no state between invocations);
every other setting searches as before.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

from privgate.core.dp import synthetic


@contextmanager
def one_budget_search_per_setting() -> Iterator[dict]:
    """Memoize the budget search inside the block; yields the searches made, by setting."""
    real = synthetic._budgeted_measurement
    built: dict = {}

    def once(columns, keys, config):
        key = (tuple(columns), json.dumps(keys, sort_keys=True), config)
        if key not in built:
            built[key] = real(columns, keys, config)
        return built[key]

    synthetic._budgeted_measurement = once
    try:
        yield built
    finally:
        synthetic._budgeted_measurement = real
