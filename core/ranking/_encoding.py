"""Turning a mixed-type table into the numeric matrix a scikit-learn forest needs.

Why ordinal codes and not one-hot: permutation and drop-column importance score *attributes*,
so each attribute must stay one feature. One-hot would spread a categorical attribute over many
columns, and permuting or dropping one indicator would measure a value, not the attribute.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from privgate.core.exceptions import PolicyError

__all__ = ["encode_labels", "ordinal_matrix"]


def _sorted_codes(column: pd.Series) -> np.ndarray:
    """Codes of the sorted distinct values (as text when the values do not compare)."""
    try:
        codes, _ = pd.factorize(column, sort=True)
    except TypeError:  # mixed types in an object column: order them by their text
        codes, _ = pd.factorize(column.map(str, na_action="ignore"), sort=True)
    out = codes.astype(np.float64)
    out[codes < 0] = np.nan
    return out


def ordinal_matrix(X: pd.DataFrame) -> np.ndarray:
    """Encode every column of ``X`` as one float feature.

    * A numeric column (bool, int, float, nullable ``Int64``/``Float64``) keeps its values.
    * Any other column (object, ``string``, ``category``) becomes the rank of its value among
      the column's sorted distinct values (``0, 1, 2, ...``; values that do not compare with
      each other are sorted by their text). Trees split on thresholds, so a rank is as good
      as any other order-preserving code, and the codes do not depend on row order.
    * A missing cell becomes ``NaN``. scikit-learn's forests (>= 1.4) route ``NaN`` to the
      better child at every split, so missing values are neither dropped nor given an invented
      position in the order.

    Parameters
    ----------
    X : DataFrame, shape (n_rows, n_columns)

    Returns
    -------
    ndarray of float64, shape (n_rows, n_columns)
    """
    columns = []
    for name in X.columns:
        column = X[name]
        if pd.api.types.is_bool_dtype(column) or pd.api.types.is_numeric_dtype(column):
            columns.append(column.astype("Float64").to_numpy(dtype=np.float64, na_value=np.nan))
        else:
            columns.append(_sorted_codes(column))
    if not columns:
        return np.empty((len(X), 0), dtype=np.float64)
    return np.column_stack(columns)


def encode_labels(y: object, name: str = "target") -> tuple[np.ndarray, np.ndarray]:
    """Class indices ``0..n_classes-1`` (sorted classes, as scikit-learn orders them).

    Raises
    ------
    PolicyError
        The target has a missing value or fewer than two classes: nothing can be ranked by how
        well it predicts a constant.
    """
    labels = pd.Series(y).reset_index(drop=True)
    missing = int(labels.isna().sum())
    if missing:
        raise PolicyError(
            f"target {name!r} has {missing} missing value(s); drop or fill them before ranking"
        )
    codes, classes = pd.factorize(labels, sort=True)
    if len(classes) < 2:
        raise PolicyError(
            f"target {name!r} has a single class ({classes[0]!r} in every row): no attribute "
            "can be ranked by how well it predicts it"
            if len(classes)
            else f"target {name!r} is empty"
        )
    return codes.astype(np.int64), np.asarray(classes, dtype=object)
