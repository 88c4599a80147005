"""Great Expectations on large tables: a seeded sample of rows, stated wherever results are.

Why: Great Expectations validates a pandas frame row by row, and the release suite reads the
written file back as one Python string per cell. On a 10M-row nightly table that is minutes
and gigabytes for checks whose point is to catch a bad column, an undeclared value or a
leftover marker. Above ``PRIVGATE_EXPECTATIONS_MAX_ROWS`` rows (default 1,000,000) both suites
run on a uniform random sample of that many rows drawn with ``PRIVGATE_EXPECTATIONS_SEED``
(default 0), so a rerun checks the same rows. The sample's size, the table's size and the seed
are in the suite's summary (``expectations.json``, the manifest, the run's artifacts) and in
the release report.

What a sample cannot check is not checked on it: the row counts and the smallest equivalence
class are properties of the whole table. They stay exact elsewhere: ``k`` against the whole
input's rows in the anonymize stage (it refuses a table smaller than ``k``), and the release's
rows, suppression and every class's size by the privacy gate, which re-reads the whole written
file. A value that occurs only outside the sample is not seen by the sampled suite (a
quasi-identifier value outside its hierarchy is still refused by the search, which maps every
distinct value).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from privgate.core.exceptions import PolicyError

__all__ = [
    "DEFAULT_MAX_ROWS",
    "DEFAULT_SEED",
    "MAX_ROWS_VARIABLE",
    "SEED_VARIABLE",
    "ExpectationSample",
    "expectation_sample",
]

MAX_ROWS_VARIABLE = "PRIVGATE_EXPECTATIONS_MAX_ROWS"
SEED_VARIABLE = "PRIVGATE_EXPECTATIONS_SEED"
DEFAULT_MAX_ROWS = 1_000_000
DEFAULT_SEED = 0


@dataclass(frozen=True)
class ExpectationSample:
    """The rows a suite ran on when the table was larger than the limit.

    Attributes
    ----------
    rows : ndarray of intp
        The sampled row positions, ascending.
    of_rows : int
        The whole table's rows.
    seed : int
    """

    rows: np.ndarray
    of_rows: int
    seed: int

    def to_dict(self) -> dict:
        return {"rows": int(len(self.rows)), "of_rows": self.of_rows, "seed": self.seed}

    def describe(self, kind: str) -> str:
        return (
            f"the {kind} expectations ran on a seeded random sample of {len(self.rows):,} of "
            f"{self.of_rows:,} rows (seed {self.seed}; {MAX_ROWS_VARIABLE}); row counts and "
            "class sizes are checked on the whole table by the anonymize stage and the gate"
        )


def _setting(name: str, default: int, minimum: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise PolicyError(f"{name} must be an integer >= {minimum}, got {raw!r}")
    return value


def expectation_sample(n_rows: int) -> ExpectationSample | None:
    """The seeded sample of a table of ``n_rows`` rows, or ``None`` when it is within the limit
    (the suites then run on every row).

    Raises
    ------
    PolicyError
        A setting that is not a positive integer (a seed below 0).
    """
    limit = _setting(MAX_ROWS_VARIABLE, DEFAULT_MAX_ROWS, 1)
    seed = _setting(SEED_VARIABLE, DEFAULT_SEED, 0)
    if n_rows <= limit:
        return None
    rows = np.random.default_rng(seed).choice(n_rows, size=limit, replace=False)
    rows.sort()
    return ExpectationSample(rows.astype(np.intp), n_rows, seed)
