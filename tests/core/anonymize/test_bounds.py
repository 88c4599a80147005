"""Projection bounds prepared on threads (core/anonymize/_bounds.py)."""

from __future__ import annotations

import numpy as np
import pytest
from adult_reference import ADULT_POLICY

import privgate.core.anonymize._bounds as bounds_module
from privgate.core.anonymize import full_domain_setup
from privgate.core.anonymize._bounds import ProjectionBounds
from privgate.core.columnar import read_coded_csv
from privgate.core.policy import load_policy
from privgate.core.scale import tuples_from_codes


@pytest.mark.parametrize("arity", [1, 2, 3])
def test_projection_bounds_prepared_on_threads_are_the_serial_ones(shared_data, monkeypatch, arity):
    """Adult's frequency set (18k tuples; the threshold lowered so that its projections are
    counted one prefix per thread): the same groups, combinations and bounds for every node
    and k as counted on one thread, the projections in the same order."""
    policy = load_policy(ADULT_POLICY).with_overrides(
        **{"input.path": str(shared_data("arx/adult.csv"))}
    )
    setup = full_domain_setup(policy, "test")
    spec = policy.input
    columns = read_coded_csv(
        spec.path, spec.delimiter, spec.encoding, spec.header, spec.missing_values
    )
    freq = tuples_from_codes(columns, setup).freq
    monkeypatch.setattr(bounds_module, "PARALLEL_TUPLES", 1 << 40)
    serial = ProjectionBounds(freq, arity)
    pools = []
    threads = bounds_module.ThreadPoolExecutor
    monkeypatch.setattr(bounds_module, "PARALLEL_TUPLES", 0)
    monkeypatch.setattr(
        bounds_module, "ThreadPoolExecutor", lambda n: pools.append(n) or threads(n)
    )
    threaded = ProjectionBounds(freq, arity)
    assert pools == [2] or (pools == [] and arity == 1)  # one prefix: nothing to share
    assert threaded._projections == serial._projections
    np.testing.assert_array_equal(threaded._sizes, serial._sizes)
    np.testing.assert_array_equal(threaded._combo_of, serial._combo_of)
    heights = freq.table.heights
    for k in (2, 5, 50):
        np.testing.assert_array_equal(
            threaded.for_lattice(heights, k), serial.for_lattice(heights, k)
        )
