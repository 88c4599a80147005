"""Seeded generator of realistic, fully synthetic multi-visit hospital admissions.

A hospital's admissions table has several rows per patient: the table the person key exists
for (issue #16). Counting rows instead of people, a class of 17 admissions can hold 3
patients, 15 of the admissions one person's. This generator reproduces that shape:

* the number of admissions per patient is heavy-tailed (most patients come once, a few come
  back ten or twenty times: chronic conditions);
* a patient's gender, ethnicity and language never change; marital status and insurance may
  change between admissions; age at admission grows with the admission date;
* the diagnosis (the sensitive attribute) depends on age and on the patient's chronic
  condition, so a frequent patient's admissions repeat the same diagnosis.

Every record is invented: no row is derived from a real person. That is why a plain
:class:`numpy.random.Generator` is appropriate here; this module produces data, not
differential-privacy noise. ``policies/hospital.yaml`` releases this table with
``subject_id`` as the person key.
"""

from __future__ import annotations

import os
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = [
    "DIAGNOSES",
    "HOSPITAL_COLUMNS",
    "generate_admissions",
    "write_admissions_csv",
]

DEFAULT_PATIENTS = 2_000
DEFAULT_SEED = 20261124

#: Output columns, in order.
HOSPITAL_COLUMNS: tuple[str, ...] = (
    "admission_id",
    "subject_id",
    "gender",
    "age",
    "ethnicity",
    "marital_status",
    "insurance",
    "admission_type",
    "language",
    "admitted",
    "diagnosis",
)

GENDERS = ("F", "M")
ETHNICITIES = ("White", "Black", "Hispanic", "Asian", "Other")
_ETHNICITY_P = (0.62, 0.14, 0.12, 0.07, 0.05)
MARITAL = ("Single", "Married", "Divorced", "Widowed")
INSURANCE = ("Medicare", "Medicaid", "Private", "Self-pay")
ADMISSION_TYPES = ("Emergency", "Urgent", "Elective")
_ADMISSION_TYPE_P = (0.62, 0.13, 0.25)
LANGUAGES = ("English", "Spanish", "Other")

#: Diagnosis groups; the first four are chronic (a patient with one keeps coming back for it).
DIAGNOSES = (
    "Heart failure",
    "COPD",
    "Diabetes",
    "Kidney disease",
    "Pneumonia",
    "Sepsis",
    "Fracture",
    "Childbirth",
    "Stroke",
    "Appendicitis",
)
_CHRONIC = 4

_FIRST_DAY = date(2015, 1, 1)
_DAYS = 3_650  # ten years of admissions


def _admission_counts(rng: np.random.Generator, n: int) -> np.ndarray:
    """Admissions per patient: mostly one, a heavy tail up to about twenty."""
    counts = rng.geometric(0.55, n)
    frequent = rng.random(n) < 0.04  # chronic patients come back often
    counts[frequent] += rng.integers(5, 20, frequent.sum())
    return np.minimum(counts, 25)


def _diagnosis(rng: np.random.Generator, age: int, gender: str, chronic: int) -> str:
    if chronic >= 0 and rng.random() < 0.8:
        return DIAGNOSES[chronic]
    weights = np.ones(len(DIAGNOSES))
    weights[:_CHRONIC] = 0.3 + age / 60.0
    weights[DIAGNOSES.index("Stroke")] = age / 80.0
    weights[DIAGNOSES.index("Appendicitis")] = 1.5 if age < 35 else 0.3
    weights[DIAGNOSES.index("Childbirth")] = 2.0 if gender == "F" and 18 <= age <= 45 else 0.0
    weights[DIAGNOSES.index("Fracture")] = 1.0 + (age > 75)
    return str(rng.choice(DIAGNOSES, p=weights / weights.sum()))


def generate_admissions(
    n_patients: int = DEFAULT_PATIENTS, seed: int = DEFAULT_SEED
) -> pd.DataFrame:
    """The synthetic admissions of ``n_patients`` patients, one row per admission.

    Parameters
    ----------
    n_patients : int
        Number of distinct patients (``subject_id``); the table has more rows than that.
    seed : int
        The same seed gives the same table.

    Returns
    -------
    DataFrame
        Columns :data:`HOSPITAL_COLUMNS`: ``admission_id`` (unique, ``A0000001``...),
        ``subject_id`` (the patient, repeated per admission, ``S000001``...), ``age`` (integer
        age at admission, 0-99), ``admitted`` (ISO date), ``diagnosis`` (one of
        :data:`DIAGNOSES`) and the categorical demographics, admissions ordered by patient
        then date.
    """
    if n_patients < 1:
        raise ValueError(f"n_patients must be at least 1, got {n_patients}")
    rng = np.random.default_rng(seed)
    counts = _admission_counts(rng, n_patients)
    rows: list[tuple] = []
    for patient in range(n_patients):
        gender = str(rng.choice(GENDERS))
        ethnicity = str(rng.choice(ETHNICITIES, p=_ETHNICITY_P))
        language = "Spanish" if ethnicity == "Hispanic" and rng.random() < 0.5 else "English"
        if language == "English" and rng.random() < 0.04:
            language = "Other"
        born_age = int(min(max(rng.normal(58, 20), 0), 95))  # age at the first admission
        chronic = int(rng.integers(0, _CHRONIC)) if counts[patient] > 2 else -1
        marital = str(rng.choice(MARITAL, p=(0.35, 0.45, 0.12, 0.08)))
        insurance = str(rng.choice(INSURANCE, p=(0.42, 0.14, 0.40, 0.04)))
        days = np.sort(rng.integers(0, _DAYS, counts[patient]))
        for day in days:
            years = int((day - days[0]) / 365.25)
            age = min(born_age + years, 99)
            if rng.random() < 0.05:
                marital = str(rng.choice(MARITAL))
            if age >= 65 and rng.random() < 0.5:
                insurance = "Medicare"
            rows.append(
                (
                    f"S{patient + 1:06d}",
                    gender,
                    age,
                    ethnicity,
                    marital,
                    insurance,
                    str(rng.choice(ADMISSION_TYPES, p=_ADMISSION_TYPE_P)),
                    language,
                    (_FIRST_DAY + timedelta(days=int(day))).isoformat(),
                    _diagnosis(rng, age, gender, chronic),
                )
            )
    frame = pd.DataFrame(rows, columns=list(HOSPITAL_COLUMNS[1:]))
    frame.insert(0, "admission_id", [f"A{i + 1:07d}" for i in range(len(frame))])
    frame["age"] = frame["age"].astype("int64")
    return frame


def write_admissions_csv(
    path: str | os.PathLike[str],
    n_patients: int = DEFAULT_PATIENTS,
    seed: int = DEFAULT_SEED,
) -> Path:
    """Generate the admissions table and write it as a UTF-8 CSV with a header; returns the
    path (missing parent folders are created)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    generate_admissions(n_patients=n_patients, seed=seed).to_csv(
        out, sep=",", index=False, encoding="utf-8", lineterminator="\n"
    )
    return out
