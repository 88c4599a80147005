"""Why ARX's Grassberger entropy l-diversity suppresses more than its own formula (issue 19).

ARX's ``EntropyLDiversity.isAnonymous`` (``src/main/org/deidentifier/arx/criteria/
EntropyLDiversity.java`` lines 259-272, commit aacd487f) adds ``n * psi(n)`` over the buckets
of the class's sensitive-value hash table and rejects the class as soon as a partial sum exceeds
``C = N * (psi(N) - ln l)``. Grassberger's ``psi(1) = G_1 < 0``, so a partial sum can exceed
``C`` while the full sum does not, and the verdict depends on the bucket order. This replays
ARX on Adult, hash table and all, and reproduces ARX's published value for its
``TestAnonymizationEntropyLDiversity`` case 0 exactly: the rows EntropyL #0/#3 of the ARX
agreement table in ``benchmarks/BENCHMARKS.md`` are ARX's early exit, not a privgate verdict.
privgate keeps the formula (``test_grassberger.py``).
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pytest

from privgate.core.anonymize import NodeChecker
from privgate.core.encoding import encode_table
from privgate.core.hierarchy import ARXHierarchy
from privgate.core.metrics import make_metric
from privgate.core.privacy import EntropyLDiversity
from privgate.core.textcsv import read_text_columns

QIS = (
    *("sex", "age", "race", "marital-status"),
    *("education", "native-country", "workclass", "salary-class"),
)


@cache
def g(n: int) -> float:
    return -0.5772156649015329 - math.log(2) + sum(2 / (2 * k - 1) for k in range(1, n // 2 + 1))


class ArxDistribution:
    """ARX's ``framework.check.distribution.Distribution``: an open-addressing hash table of
    int codes (home bucket ``code & (capacity - 1)``, linear probing, capacity 8 doubling when
    more than 3/4 full). Its bucket order is the order ``isAnonymous`` sums in."""

    def __init__(self) -> None:
        self.slots: list[tuple[int, int] | None] = [None] * 8
        self.size = 0

    def add(self, code: int, count: int = 1) -> None:
        i = code & (len(self.slots) - 1)
        while self.slots[i] is not None and self.slots[i][0] != code:
            i = (i + 1) & (len(self.slots) - 1)
        if self.slots[i] is None:
            self.slots[i] = (code, count)
            self.size += 1
            if self.size > int(len(self.slots) * 0.75):
                old, self.slots = self.slots, [None] * (2 * len(self.slots))
                for slot in old:
                    if slot is not None:
                        j = slot[0] & (len(self.slots) - 1)
                        while self.slots[j] is not None:
                            j = (j + 1) & (len(self.slots) - 1)
                        self.slots[j] = slot
        else:
            self.slots[i] = (code, self.slots[i][1] + count)

    def buckets(self) -> list[tuple[int, int]]:
        return [slot for slot in self.slots if slot is not None]


def arx_is_anonymous(counts: list[int], l: float, early_exit: bool) -> bool:  # noqa: E741
    """ARX's check; ``early_exit=False`` is the same formula summed to the end."""
    if len(counts) < math.ceil(l):
        return False
    n = sum(counts)
    bound, partial = n * (g(n) - math.log(l)), 0.0
    for c in counts:
        partial += c * g(c)
        if early_exit and bound < partial:
            return False
    return bound >= partial


@pytest.fixture(scope="module")
def adult(shared_data):
    path = shared_data("arx/adult.csv")
    hierarchies = {
        q: ARXHierarchy.from_csv(q, path.parent / f"adult_hierarchy_{q}.csv", delimiter=";")
        for q in QIS
    }
    columns = read_text_columns(path, delimiter=";")
    return columns, encode_table(columns, hierarchies, ["occupation"]).frequency_set()


def _record_classes(freq, node) -> list[tuple[int, ...]]:
    rows = freq.qi_codes[freq.row_to_tuple]
    levels = [col.level_maps[lvl][rows[:, j]] for j, (col, lvl) in enumerate(
        zip(freq.table.columns, node, strict=True))]  # fmt: skip
    return [tuple(r) for r in np.column_stack(levels).tolist()]


def test_arx_case_0_value_is_its_early_exit_on_its_bucket_order(adult) -> None:
    columns, freq = adult
    arx_node, finer = [1, 0, 1, 0, 3, 2, 2, 0], [0, 0, 1, 0, 3, 2, 2, 0]
    # ARX's dictionary codes a value by its first appearance in the file (DataHandleInput)
    codes = {v: i for i, v in enumerate(dict.fromkeys(columns["occupation"]))}
    # The finer node's classes from the data, records added in file order (HashGroupify)...
    finer_classes: dict[tuple[int, ...], tuple[int, ArxDistribution]] = {}
    for row, (key, value) in enumerate(zip(_record_classes(freq, finer), columns["occupation"],
                                           strict=True)):  # fmt: skip
        finer_classes.setdefault(key, (row, ArxDistribution()))[1].add(codes[value])
    # ...rolled up to ARX's node (HashGroupify.addFromGroupify: the first part's table is
    # kept, the others' buckets merged into it in their bucket order)
    target = _record_classes(freq, arx_node)
    rolled: dict[tuple[int, ...], ArxDistribution] = {}
    for row, dist in finer_classes.values():
        if target[row] not in rolled:
            rolled[target[row]] = dist
        else:
            for code, count in dist.buckets():
                rolled[target[row]].add(code, count)

    model = EntropyLDiversity(column="occupation", l=5, estimator="grassberger")
    checker = NodeChecker(freq, [model], 0.04)
    outcome = checker.evaluate(arx_node)
    table = outcome.table
    index = {tuple(c): i for i, c in enumerate(np.column_stack(table.codes).tolist())}
    arx_ok = np.zeros(len(table.sizes), dtype=bool)
    formula_ok = np.zeros(len(table.sizes), dtype=bool)
    for key, dist in rolled.items():
        counts = [count for _, count in dist.buckets()]
        arx_ok[index[key]] = arx_is_anonymous(counts, 5, early_exit=True)
        formula_ok[index[key]] = arx_is_anonymous(counts, 5, early_exit=False)

    # summed to the end, ARX's formula is privgate's verdict on every class
    assert formula_ok.tolist() == (~outcome.failing).tolist()
    # the early exit only rejects more: 10 classes (102 records) that satisfy the formula
    flipped = formula_ok & ~arx_ok
    assert (arx_ok <= formula_ok).all()
    assert (int(flipped.sum()), int(table.sizes[flipped].sum())) == (10, 102)

    weights = freq.counts.astype(np.float64)
    frequencies = [
        np.bincount(freq.qi_codes[:, j], weights=weights, minlength=col.distinct_at(0))
        for j, col in enumerate(freq.table.columns)
    ]
    metric = make_metric("arx_entropy", monotonic=False).prepare(
        freq.table.columns, frequencies, freq.table.n_rows, checker.min_class_size
    )
    value = metric.value(np.asarray(arx_node), table.codes, table.sizes, ~arx_ok)
    assert value == pytest.approx(216092.124036387, rel=1e-12)  # ARX's published value
