"""Argument checks shared by the importance measures, with messages that name the setting."""

from __future__ import annotations

import pandas as pd

from privgate.core.exceptions import PolicyError


def check_features(X: object, y: object) -> None:
    """``X`` is a non-empty frame with unique column names and one label per row."""
    if not isinstance(X, pd.DataFrame):
        raise PolicyError(f"X must be a pandas DataFrame, got {type(X).__name__}")
    if X.shape[1] == 0:
        raise PolicyError("X has no columns: there is no attribute to rank")
    if len(X) < 2:
        raise PolicyError(f"X has {len(X)} row(s): at least 2 are needed to fit a forest")
    duplicated = X.columns[X.columns.duplicated()].tolist()
    if duplicated:
        raise PolicyError(f"X has duplicated column names {duplicated}: each must be unique")
    n_labels = len(y)  # type: ignore[arg-type]
    if n_labels != len(X):
        raise PolicyError(f"y has {n_labels} labels but X has {len(X)} rows")


def check_positive(name: str, value: object) -> None:
    """``value`` is an integer >= 1 (``bool`` is refused: ``True`` trees is a mistake)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PolicyError(f"The {name!r} parameter must be an integer >= 1. Got {value!r}.")
