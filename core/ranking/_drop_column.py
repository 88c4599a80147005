"""Drop-column importance: how much accuracy a forest loses when it never sees an attribute.

Permutation importance asks a fitted forest to do without an attribute it learned to use;
drop-column importance refits the forest without it, so correlated attributes can stand in for
each other (dropping ``education`` costs little while ``education-num`` is there). It is the
more honest answer to "what does releasing this attribute add", at the price of one forest per
attribute and run.

Accuracy is the forest's out-of-bag accuracy (each row voted on by the trees that did not see
it), so every row is used for training and testing, and no split has to be chosen. Within one
run the full and the reduced forests share the seed, hence the same bootstrap samples, so the
difference is paired; averaging over ``runs`` seeds removes most of the remaining noise.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from privgate.core.ranking._checks import check_features, check_positive
from privgate.core.ranking._encoding import encode_labels, ordinal_matrix

__all__ = ["drop_column_importance", "oob_accuracy"]


def oob_accuracy(matrix: np.ndarray, codes: np.ndarray, n_estimators: int, seed: int) -> float:
    """Out-of-bag accuracy of a forest on ``matrix``; with no columns, the majority share.

    Rows that no tree left out of its bootstrap sample (possible with very few trees) have no
    out-of-bag vote and are not counted.
    """
    if matrix.shape[1] == 0:  # nothing to learn from: the best constant guess
        return float(np.bincount(codes).max() / len(codes))
    from sklearn.ensemble import RandomForestClassifier  # here: importing sklearn costs ~2.5 s

    forest = RandomForestClassifier(
        n_estimators=n_estimators, oob_score=True, random_state=seed, n_jobs=1
    )
    with warnings.catch_warnings():
        # "Some inputs do not have OOB scores": handled below by skipping those rows.
        warnings.filterwarnings("ignore", message="Some inputs do not have OOB scores")
        forest.fit(matrix, codes)
    votes = forest.oob_decision_function_
    voted = ~np.isnan(votes).any(axis=1)
    predicted = forest.classes_[np.argmax(votes[voted], axis=1)]
    return float(np.mean(predicted == codes[voted]))


def drop_column_importance(
    X: pd.DataFrame,
    y: object,
    *,
    runs: int = 20,
    n_estimators: int = 100,
    random_state: int = 0,
) -> pd.Series:
    """Out-of-bag accuracy with every attribute minus accuracy without one, averaged over runs.

    Parameters
    ----------
    X : DataFrame, shape (n_rows, n_columns)
        Attributes of any dtype, encoded as in :func:`oob_permutation_importance`.
    y : array-like, shape (n_rows,)
        Class labels (at least two classes, none missing).
    runs : int, default=20
        Number of seeds ``random_state, random_state + 1, ...``; each run fits
        ``n_columns + 1`` forests.
    n_estimators : int, default=100
        Trees per forest.
    random_state : int, default=0

    Returns
    -------
    Series of float
        Index = column names, sorted by decreasing importance (ties in column order); the mean
        over the runs of ``accuracy(all) - accuracy(all but the column)``. Negative when the
        forest does better without the attribute.

    Raises
    ------
    PolicyError
        Bad ``X``/``y`` (as for :func:`oob_permutation_importance`), or ``runs`` or
        ``n_estimators`` not a positive integer.
    """
    check_features(X, y)
    check_positive("runs", runs)
    check_positive("n_estimators", n_estimators)
    matrix = ordinal_matrix(X)
    codes, _ = encode_labels(y)
    differences = np.zeros((runs, matrix.shape[1]))
    for run in range(runs):
        seed = random_state + run
        full = oob_accuracy(matrix, codes, n_estimators, seed)
        for j in range(matrix.shape[1]):
            reduced = oob_accuracy(np.delete(matrix, j, axis=1), codes, n_estimators, seed)
            differences[run, j] = full - reduced
    series = pd.Series(differences.mean(axis=0), index=X.columns, name="drop_column_importance")
    return series.sort_values(ascending=False, kind="stable")
