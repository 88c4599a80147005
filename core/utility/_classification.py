"""Classification utility: the same model, trained on the original and on the release.

For each model, stratified k-fold cross-validation is run twice with the *same folds*: once on
the original records, once on the same records as released (faithfully encoded, see
:mod:`privgate.core.utility._encoding`); ROC AUC and accuracy are averaged over the folds, and the
release's scores are set against the original's. The folds are drawn once on the original
records (``StratifiedKFold(shuffle=True, random_state=seed)``) and each released record keeps
its original's fold, so the comparison is paired; a suppressed record is simply absent from the
release's folds.

Sampling
--------
An RBF SVM costs ``O(n^2)`` to ``O(n^3)`` per fit, so on Adult's 30,162 records a 5-fold run
takes minutes. The comparison therefore runs on a **stratified, seeded sample of the original
records** (``sample_size``, default 5,000; ``None`` uses every record), drawn with
``train_test_split(stratify=target, random_state=seed)``; the release contributes the sampled
records it kept. The sample size and seed are reported with the scores.

Models
------
``svm``: ``SVC()`` (RBF kernel, scikit-learn defaults); ``random_forest``:
``RandomForestClassifier(random_state=seed)``; ``logistic_regression``:
``LogisticRegression(max_iter=1000)`` (the default 100 iterations stop before convergence on
one-hot features). Numeric features are scaled to [0, 1] by the encoding, so the SVM's default
``gamma="scale"`` sees comparable columns. A binary target is scored with ``roc_auc`` (decision
function or probability); a multi-class target with one-vs-rest ``roc_auc_ovr``, which needs
probabilities, so the SVM then gets ``probability=True`` (a ``RuntimeWarning`` says so).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from privgate.core.utility._encoding import AttributeDomain, encode_features, factorize_labels

__all__ = ["CLASSIFIERS", "ClassificationUtility", "ModelScore", "classification_utility"]

#: Models by policy name.
CLASSIFIERS = ("svm", "random_forest", "logistic_regression")


def _make_model(name: str, seed: int, multiclass: bool):
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import SVC

    if name == "svm":
        if multiclass:
            warnings.warn(
                "multi-class target: SVC gets probability=True so that one-vs-rest ROC AUC can "
                "be computed (scikit-learn's default is False)",
                RuntimeWarning,
                stacklevel=3,
            )
            return SVC(probability=True, random_state=seed)
        return SVC()
    if name == "random_forest":
        return RandomForestClassifier(random_state=seed)
    if name == "logistic_regression":
        return LogisticRegression(max_iter=1000)
    raise ValueError(
        f"The 'models' parameter of classification_utility must hold names from {CLASSIFIERS}. "
        f"Got {name!r} instead."
    )


@dataclass(frozen=True)
class ModelScore:
    """One model's cross-validated scores on the original and on the release.

    Attributes
    ----------
    model : str
    auc_original, auc_release : float
        Mean ROC AUC over the folds.
    accuracy_original, accuracy_release : float
        Mean accuracy over the folds.
    auc_std_original, auc_std_release, accuracy_std_original, accuracy_std_release : float
        Standard deviation over the folds.
    """

    model: str
    auc_original: float
    auc_release: float
    accuracy_original: float
    accuracy_release: float
    auc_std_original: float = 0.0
    auc_std_release: float = 0.0
    accuracy_std_original: float = 0.0
    accuracy_std_release: float = 0.0

    @property
    def auc_ratio(self) -> float:
        """Release AUC / original AUC."""
        return self.auc_release / self.auc_original if self.auc_original > 0 else float("nan")

    @property
    def accuracy_ratio(self) -> float:
        """Release accuracy / original accuracy."""
        if self.accuracy_original <= 0:
            return float("nan")
        return self.accuracy_release / self.accuracy_original

    def to_dict(self) -> dict:
        return {**asdict(self), "auc_ratio": self.auc_ratio, "accuracy_ratio": self.accuracy_ratio}


@dataclass(frozen=True)
class ClassificationUtility:
    """Classification scores of a release against its original.

    Attributes
    ----------
    target : str
    features : list of str
        The columns the models see.
    scores : list of ModelScore
    sample_rows : int
        Original records in the sample (with a target value).
    release_rows : int
        Of them, the records the release kept.
    folds : int
    seed : int
    majority_accuracy : float
        Accuracy of always predicting the sample's most frequent class (the floor to beat).
    seconds : float
    """

    target: str
    features: list[str]
    scores: list[ModelScore]
    sample_rows: int
    release_rows: int
    folds: int
    seed: int
    majority_accuracy: float
    seconds: float = 0.0

    def score(self, model: str) -> ModelScore:
        for s in self.scores:
            if s.model == model:
                return s
        raise KeyError(model)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["scores"] = [s.to_dict() for s in self.scores]
        return data


def _stratified_sample(y: np.ndarray, size: int | None, seed: int) -> np.ndarray:
    """Positions of a stratified, seeded sample of ``size`` records (all if ``None``)."""
    positions = np.arange(len(y))
    if size is None or size >= len(y):
        return positions
    from sklearn.model_selection import train_test_split

    sample, _ = train_test_split(positions, train_size=size, stratify=y, random_state=seed)
    return np.sort(sample)


def _cross_validate(model, X: np.ndarray, y: np.ndarray, folds: np.ndarray, auc: str):
    from sklearn.model_selection import PredefinedSplit, cross_validate

    result = cross_validate(
        model, X, y, cv=PredefinedSplit(folds), scoring={"auc": auc, "accuracy": "accuracy"}
    )
    return result["test_auc"], result["test_accuracy"]


def classification_utility(
    original: pd.DataFrame,
    release: pd.DataFrame,
    domains: Mapping[str, AttributeDomain],
    target: str,
    *,
    models: Sequence[str] = CLASSIFIERS,
    cv: int = 5,
    sample_size: int | None = 5000,
    seed: int = 0,
    numeric: str = "midpoint",
) -> ClassificationUtility:
    """Cross-validate each model on the original and on the release, on the same folds.

    Parameters
    ----------
    original : DataFrame
        The input before anonymization.
    release : DataFrame
        The release; each row's index is its original record's index (suppressed records are
        absent).
    domains : mapping of str to AttributeDomain
        The feature columns' domains (from the original); ``target`` must not be among them.
    target : str
        The column to predict; it must be released as is (not a quasi-identifier).
    models : sequence of str, default=("svm", "random_forest", "logistic_regression")
    cv : int, default=5
        Stratified folds.
    sample_size : int or None, default=5000
        Original records sampled (stratified by the target, seeded); ``None``: all.
    seed : int, default=0
        Seeds the sample, the folds and the random forest.
    numeric : {"midpoint", "bounds"}, default="midpoint"
        How numeric ranges are encoded (see :func:`~privgate.core.utility.encode_features`).

    Returns
    -------
    ClassificationUtility

    Raises
    ------
    ValueError
        Bad parameters, a target with fewer than two classes, or a class with fewer than ``cv``
        records in the sample.
    """
    started = time.perf_counter()
    if target in domains:
        raise ValueError(f"The target {target!r} must not also be a feature")
    for table, what in ((original, "original"), (release, "release")):
        if target not in table.columns:
            raise ValueError(f"target column {target!r} is not in the {what} table")
    if not models:
        raise ValueError("The 'models' parameter of classification_utility must name a model")
    for name in models:
        if name not in CLASSIFIERS:
            _make_model(name, seed, False)  # raises the parameter error
    if not isinstance(cv, int) or cv < 2:
        raise ValueError(
            f"The 'cv' parameter of classification_utility must be an int >= 2. Got {cv!r}."
        )
    positions = original.index.get_indexer(release.index)
    if (positions < 0).any() or not release.index.is_unique:
        raise ValueError(
            "every release row must carry the index of its original record (unique); "
            "as privgate.core.stages.anonymize returns it"
        )

    codes, labels = factorize_labels(original[target])
    has_target = np.array([labels[c] is not None for c in codes])
    y_all = np.array([labels[c] for c in codes], dtype=object)
    candidates = np.flatnonzero(has_target)
    classes, counts = np.unique(y_all[candidates].astype(str), return_counts=True)
    if len(classes) < 2:
        raise ValueError(f"target {target!r} has fewer than two classes: {classes.tolist()}")
    sample = candidates[_stratified_sample(y_all[candidates].astype(str), sample_size, seed)]
    y = y_all[sample].astype(str)
    _, per_class = np.unique(y, return_counts=True)
    if per_class.min() < cv:
        raise ValueError(
            f"target {target!r}: a class has {per_class.min()} record(s) in the sample, fewer "
            f"than the {cv} folds"
        )
    from sklearn.model_selection import StratifiedKFold

    folds = np.empty(len(sample), dtype=np.int64)
    splitter = StratifiedKFold(n_splits=cv, shuffle=True, random_state=seed)
    for fold, (_, test) in enumerate(splitter.split(np.zeros(len(y)), y)):
        folds[test] = fold

    # The released records of the sample, in sample order, with the fold of their original.
    in_release = np.full(len(original), -1, dtype=np.int64)
    in_release[positions] = np.arange(len(release))
    kept = in_release[sample] >= 0
    released_rows = release.iloc[in_release[sample][kept]]
    release_codes, release_labels = factorize_labels(released_rows[target])
    if None in release_labels:
        raise ValueError(
            f"target {target!r} is missing in released records whose original has a value: "
            "the target must be released as is"
        )
    y_release = np.array(release_labels, dtype=object)[release_codes].astype(str)
    X_original, _ = encode_features(original.iloc[sample], domains, numeric=numeric)
    X_release, _ = encode_features(released_rows, domains, numeric=numeric)

    multiclass = len(classes) > 2
    auc = "roc_auc_ovr" if multiclass else "roc_auc"
    scores = []
    for name in models:
        auc_o, acc_o = _cross_validate(
            _make_model(name, seed, multiclass), X_original, y, folds, auc
        )
        auc_r, acc_r = _cross_validate(
            _make_model(name, seed, multiclass), X_release, y_release, folds[kept], auc
        )
        scores.append(
            ModelScore(
                name,
                float(np.mean(auc_o)),
                float(np.mean(auc_r)),
                float(np.mean(acc_o)),
                float(np.mean(acc_r)),
                float(np.std(auc_o)),
                float(np.std(auc_r)),
                float(np.std(acc_o)),
                float(np.std(acc_r)),
            )
        )
    _, sample_counts = np.unique(y, return_counts=True)
    return ClassificationUtility(
        target=target,
        features=list(domains),
        scores=scores,
        sample_rows=len(sample),
        release_rows=int(kept.sum()),
        folds=cv,
        seed=seed,
        majority_accuracy=float(sample_counts.max() / len(y)),
        seconds=round(time.perf_counter() - started, 3),
    )
