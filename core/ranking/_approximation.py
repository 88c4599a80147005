"""Approximation degree of an attribute: how unevenly its values are spread over the records.

The measure is the one the multi-attribute Datafly breaks ties with
(:func:`core.anonymize.approximation_degree`): the standard deviation of the frequencies of the
attribute's values. A skewed attribute (a few common values, many rare ones) has a high degree,
and its rare values are what makes small equivalence classes; reporting it next to an
attribute's importance shows which important attributes will be costly to generalize.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from privgate.core.anonymize import approximation_degree
from privgate.core.exceptions import PolicyError

__all__ = ["approximation_degree_of"]


def approximation_degree_of(frame: pd.DataFrame, columns: Iterable[str]) -> dict[str, float]:
    """Standard deviation of each column's value frequencies (record counts per value).

    Parameters
    ----------
    frame : DataFrame
    columns : iterable of str
        Columns of ``frame``.

    Returns
    -------
    dict of str to float
        In the order of ``columns``. Frequencies are absolute record counts and the standard
        deviation is the population one (``ddof=0``), as in Datafly's tie-break. A missing cell
        is not a value and is not counted; a column with no value scores ``0.0``.

    Raises
    ------
    PolicyError
        A column is not in ``frame``.

    Examples
    --------
    >>> approximation_degree_of(pd.DataFrame({"a": ["x", "x", "x", "y"]}), ["a"])
    {'a': 1.0}
    """
    names = list(columns)
    missing = [c for c in names if c not in frame.columns]
    if missing:
        raise PolicyError(f"columns {missing} are not in the table")
    out: dict[str, float] = {}
    for name in names:
        codes, _ = pd.factorize(frame[name], use_na_sentinel=True)
        codes = codes[codes >= 0]
        out[name] = approximation_degree(codes, np.ones(len(codes))) if len(codes) else 0.0
    return out
