"""Seeded generator of realistic, fully synthetic census-like microdata for demos and tests.

The columns and value spellings are those of UCI Adult as used by the ARX anonymization tool,
so ARX's standard Adult generalization hierarchies (``adult_hierarchy_*.csv``) apply unchanged.
The marginal distributions are close to Adult's training split (``adult.data``) and the main
dependencies are reproduced (marital status on age and sex, education on age, occupation on
education and sex, workclass on occupation and age, race on native country, and income on
age, education, hours, sex, marital status, occupation and capital gain), so anonymization
utility and classifier accuracy behave plausibly.

Every record is invented: no row is derived from a real person. That is why a plain
:class:`numpy.random.Generator` is appropriate here; this module produces data, not
differential-privacy noise. The value lists are hard-coded so the generator never needs the
ARX files at run time.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = [
    "CENSUS_COLUMNS",
    "DEFAULT_N_ROWS",
    "DEFAULT_SEED",
    "EDUCATION_NUM",
    "generate_census",
    "write_census_csv",
]

DEFAULT_N_ROWS = 30_000
DEFAULT_SEED = 20261122

#: Output columns, in order.
CENSUS_COLUMNS: tuple[str, ...] = (
    "person_id",
    "age",
    "sex",
    "race",
    "marital-status",
    "education",
    "education-num",
    "occupation",
    "workclass",
    "native-country",
    "hours-per-week",
    "capital-gain",
    "capital-loss",
    "income",
)

# --------------------------------------------------------------------------------------------
# Value sets (spelled exactly as in ARX's adult_hierarchy_*.csv)
# --------------------------------------------------------------------------------------------

SEXES = ("Male", "Female")
_SEX_P = (0.669, 0.331)

RACES = ("White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other")

MARITAL_STATUSES = (
    "Married-civ-spouse",
    "Never-married",
    "Divorced",
    "Separated",
    "Widowed",
    "Married-spouse-absent",
    "Married-AF-spouse",
)

#: Adult's ``education`` values and their ``education-num`` codes (1..16).
EDUCATION_NUM: dict[str, int] = {
    "Preschool": 1,
    "1st-4th": 2,
    "5th-6th": 3,
    "7th-8th": 4,
    "9th": 5,
    "10th": 6,
    "11th": 7,
    "12th": 8,
    "HS-grad": 9,
    "Some-college": 10,
    "Assoc-voc": 11,
    "Assoc-acdm": 12,
    "Bachelors": 13,
    "Masters": 14,
    "Prof-school": 15,
    "Doctorate": 16,
}
EDUCATIONS = tuple(EDUCATION_NUM)

OCCUPATIONS = (
    "Adm-clerical",
    "Armed-Forces",
    "Craft-repair",
    "Exec-managerial",
    "Farming-fishing",
    "Handlers-cleaners",
    "Machine-op-inspct",
    "Other-service",
    "Priv-house-serv",
    "Prof-specialty",
    "Protective-serv",
    "Sales",
    "Tech-support",
    "Transport-moving",
)

#: The 7 workclass values present in ARX's adult.csv (``Never-worked`` is absent there).
WORKCLASSES = (
    "Private",
    "Self-emp-not-inc",
    "Self-emp-inc",
    "Federal-gov",
    "Local-gov",
    "State-gov",
    "Without-pay",
)

#: Adult's 41 native-country values with weights close to their shares in adult.data.
_COUNTRY_WEIGHTS: dict[str, float] = {
    "United-States": 0.9122,
    "Mexico": 0.0201,
    "Philippines": 0.0062,
    "Germany": 0.0043,
    "Canada": 0.0038,
    "Puerto-Rico": 0.0036,
    "El-Salvador": 0.0033,
    "India": 0.0031,
    "Cuba": 0.0030,
    "England": 0.0028,
    "Jamaica": 0.0025,
    "South": 0.0025,
    "China": 0.0023,
    "Italy": 0.0023,
    "Dominican-Republic": 0.0022,
    "Vietnam": 0.0021,
    "Guatemala": 0.0020,
    "Japan": 0.0019,
    "Poland": 0.0019,
    "Columbia": 0.0018,
    "Taiwan": 0.0016,
    "Haiti": 0.0014,
    "Iran": 0.0013,
    "Portugal": 0.0012,
    "Nicaragua": 0.0011,
    "Peru": 0.0010,
    "France": 0.0009,
    "Greece": 0.0009,
    "Ecuador": 0.0009,
    "Ireland": 0.0008,
    "Hong": 0.0006,
    "Cambodia": 0.0006,
    "Trinadad&Tobago": 0.0006,
    "Thailand": 0.0006,
    "Laos": 0.0006,
    "Yugoslavia": 0.0005,
    "Outlying-US(Guam-USVI-etc)": 0.0004,
    "Honduras": 0.0004,
    "Hungary": 0.0004,
    "Scotland": 0.0004,
    "Holand-Netherlands": 0.00005,
}
COUNTRIES = tuple(_COUNTRY_WEIGHTS)

# Race distribution by origin group (White, Black, Asian-Pac-Islander, Amer-Indian-Eskimo,
# Other). With the country weights above this gives roughly Adult's race shares
# (85% / 10% / 3% / 1% / 1%).
_ASIAN_COUNTRIES = frozenset(
    {
        "Philippines", "India", "South", "China", "Vietnam", "Japan", "Taiwan", "Iran",
        "Hong", "Cambodia", "Thailand", "Laos",
    }
)  # fmt: skip
_CARIBBEAN_COUNTRIES = frozenset({"Jamaica", "Haiti", "Trinadad&Tobago"})
_LATIN_COUNTRIES = frozenset(
    {
        "Mexico", "Puerto-Rico", "El-Salvador", "Cuba", "Dominican-Republic", "Guatemala",
        "Columbia", "Nicaragua", "Peru", "Ecuador", "Honduras", "Outlying-US(Guam-USVI-etc)",
    }
)  # fmt: skip
_RACE_P_BY_ORIGIN: dict[str, tuple[float, ...]] = {
    "us": (0.866, 0.101, 0.013, 0.010, 0.010),
    "asian": (0.08, 0.01, 0.88, 0.00, 0.03),
    "caribbean": (0.08, 0.88, 0.01, 0.00, 0.03),
    "latin": (0.80, 0.05, 0.01, 0.01, 0.13),
    "other": (0.93, 0.04, 0.01, 0.00, 0.02),
}

# --------------------------------------------------------------------------------------------
# Conditional distributions (rounded from adult.data)
# --------------------------------------------------------------------------------------------

# Age: share of each 5-year band; ages are uniform within a band. Right-skewed like Adult.
_AGE_BANDS: tuple[tuple[int, int, float], ...] = (
    (17, 20, 0.0740),
    (21, 25, 0.1229),
    (26, 30, 0.1278),
    (31, 35, 0.1337),
    (36, 40, 0.1288),
    (41, 45, 0.1172),
    (46, 50, 0.0973),
    (51, 55, 0.0728),
    (56, 60, 0.0540),
    (61, 65, 0.0361),
    (66, 70, 0.0190),
    (71, 75, 0.0092),
    (76, 80, 0.0044),
    (81, 90, 0.0030),
)

# Education by age group, columns in EDUCATIONS order (Preschool .. Doctorate).
# Young people have not finished higher degrees yet: no Doctorate below 24.
_EDU_AGE_GROUPS: tuple[int, ...] = (20, 23, 29)  # upper bounds; last group is 30+
_EDU_P_BY_AGE: tuple[tuple[float, ...], ...] = (
    # Pre  1-4   5-6   7-8   9th   10th  11th  12th  HS    SomeC AVoc  AAcd  Bach  Mast  Prof  Doc
    (.001, .002, .005, .008, .021, .086, .173, .058, .275, .357, .005, .006, .003, 0.0, 0.0, 0.0),
    (.002, .003, .011, .011, .014, .022, .025, .015, .297, .406, .039, .036, .116, .003, 0.0, 0.0),
    (.001, .003, .009, .012, .013, .022, .029, .011, .330, .215, .048, .039, .222, .032, .010,
     .003),
    (.002, .006, .011, .024, .016, .025, .024, .009, .329, .192, .045, .034, .173, .069, .023,
     .018),
)  # fmt: skip

# Marital status by age band, columns in MARITAL_STATUSES order.
_MARITAL_AGE_GROUPS: tuple[int, ...] = (20, 25, 30, 35, 45, 55, 65, 75)  # last group 76+
_MARITAL_P_BY_AGE: tuple[tuple[float, ...], ...] = (
    # MarCiv Never  Divor  Separ  Widow  Absent AF
    (0.026, 0.958, 0.006, 0.006, 0.000, 0.004, 0.001),
    (0.153, 0.787, 0.029, 0.020, 0.001, 0.010, 0.0005),
    (0.378, 0.488, 0.085, 0.031, 0.003, 0.013, 0.002),
    (0.503, 0.289, 0.145, 0.042, 0.006, 0.014, 0.001),
    (0.572, 0.155, 0.204, 0.042, 0.013, 0.014, 0.0003),
    (0.625, 0.080, 0.203, 0.035, 0.040, 0.017, 0.0003),
    (0.635, 0.060, 0.161, 0.024, 0.109, 0.012, 0.0003),
    (0.569, 0.058, 0.098, 0.013, 0.249, 0.012, 0.001),
    (0.494, 0.112, 0.037, 0.008, 0.332, 0.017, 0.0003),
)
# Women in Adult are far less often "Married-civ-spouse" (the household head is usually
# recorded as the husband) and more often divorced, separated or widowed.
_MARITAL_SEX_FACTOR: dict[str, tuple[float, ...]] = {
    "Male": (1.35, 0.95, 0.70, 0.65, 0.30, 1.0, 1.0),
    "Female": (0.38, 1.10, 1.70, 1.80, 2.60, 1.0, 1.0),
}

# Occupation by education, rows in EDUCATIONS order, columns in OCCUPATIONS order.
_OCC_P_BY_EDU: tuple[tuple[float, ...], ...] = (
    # Adm  Armed Craft Exec  Farm  Handl Mach  OthSv PrivH Prof  Prot  Sales Tech  Trans
    (.04, 0.0, .09, .01, .20, .04, .24, .33, .04, .02, .00, .01, .00, .02),  # Preschool
    (.01, 0.0, .15, .03, .12, .10, .15, .26, .07, .03, .01, .05, .00, .05),  # 1st-4th
    (.02, 0.0, .14, .02, .12, .13, .18, .21, .05, .01, .01, .04, .00, .09),  # 5th-6th
    (.02, 0.0, .20, .03, .12, .08, .16, .17, .01, .02, .02, .05, .01, .10),  # 7th-8th
    (.03, 0.0, .21, .03, .06, .11, .16, .22, .02, .01, .01, .07, .00, .08),  # 9th
    (.05, 0.0, .20, .03, .05, .09, .12, .23, .01, .01, .01, .10, .00, .10),  # 10th
    (.06, 0.0, .17, .03, .04, .12, .09, .23, .01, .02, .01, .14, .01, .09),  # 11th
    (.10, 0.0, .15, .03, .04, .10, .09, .22, .01, .03, .02, .12, .01, .10),  # 12th
    (.14, .0004, .19, .08, .04, .06, .10, .13, .01, .02, .02, .11, .02, .08),  # HS-grad
    (.19, .0004, .13, .13, .03, .04, .05, .12, .00, .06, .03, .15, .04, .04),  # Some-college
    (.13, .0004, .19, .11, .04, .02, .05, .09, .00, .13, .04, .08, .10, .03),  # Assoc-voc
    (.19, .0004, .11, .14, .01, .02, .03, .08, .00, .14, .03, .14, .07, .03),  # Assoc-acdm
    (.10, .0004, .04, .26, .01, .01, .01, .03, .00, .29, .02, .16, .04, .01),  # Bachelors
    (.04, .0004, .01, .30, .01, .00, .00, .01, .00, .50, .01, .08, .02, .01),  # Masters
    (.02, 0.0, .01, .09, .01, .00, .00, .01, .00, .81, .00, .03, .01, .01),  # Prof-school
    (.01, 0.0, .01, .14, .00, .00, .00, .00, .00, .81, .00, .02, .01, .00),  # Doctorate
)  # fmt: skip
# Sex segregation of occupations in the 1994 data (multiplicative, renormalized).
_OCC_SEX_FACTOR: dict[str, tuple[float, ...]] = {
    #          Adm  Armed Craft Exec Farm Handl Mach OthSv PrivH Prof Prot Sales Tech Trans
    "Male": (0.55, 1.4, 1.35, 1.05, 1.3, 1.2, 1.05, 0.75, 0.15, 0.95, 1.35, 1.0, 0.95, 1.35),
    "Female": (2.4, 0.2, 0.15, 0.9, 0.3, 0.5, 0.9, 1.6, 6.0, 1.1, 0.3, 1.0, 1.1, 0.2),
}

# Workclass base weights (Private, SE-not-inc, SE-inc, Fed, Local, State, Without-pay)
# and per-occupation multipliers; Private is weighted up so that after the multipliers the
# marginal shares are close to adult.data (about 74% Private).
_WORKCLASS_P: tuple[float, ...] = (0.88, 0.083, 0.036, 0.031, 0.068, 0.042, 0.0005)
_WORKCLASS_OCC_FACTOR: dict[str, tuple[float, ...]] = {
    "Armed-Forces": (0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0),
    "Protective-serv": (0.5, 0.1, 0.1, 2.0, 6.0, 3.0, 0.0),
    "Prof-specialty": (0.8, 1.2, 1.0, 1.3, 2.5, 3.0, 0.5),
    "Adm-clerical": (0.9, 0.2, 0.3, 2.5, 1.5, 2.0, 1.0),
    "Exec-managerial": (0.9, 1.2, 2.6, 1.2, 0.8, 0.8, 0.2),
    "Farming-fishing": (0.6, 5.0, 1.0, 0.1, 0.3, 0.3, 12.0),
    "Craft-repair": (1.0, 1.3, 0.8, 0.5, 0.5, 0.3, 0.5),
    "Sales": (1.0, 1.0, 2.0, 0.05, 0.1, 0.1, 0.2),
    "Priv-house-serv": (1.0, 0.3, 0.0, 0.0, 0.0, 0.0, 0.0),
}

_PREMIUM_OCCUPATIONS = frozenset({"Exec-managerial", "Prof-specialty"})
_LOW_PAY_OCCUPATIONS = frozenset(
    {"Other-service", "Priv-house-serv", "Handlers-cleaners", "Farming-fishing"}
)
_MARRIED = frozenset({"Married-civ-spouse", "Married-AF-spouse"})

_TEXT_COLUMNS = (
    "person_id",
    "sex",
    "race",
    "marital-status",
    "education",
    "occupation",
    "workclass",
    "native-country",
    "income",
)

# Intercept of the income model; calibrated once (seed-independent) so that about 24% of
# records are ">50K", as in adult.data.
_INCOME_INTERCEPT = -3.47


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _normalized(weights: np.ndarray) -> np.ndarray:
    weights = np.asarray(weights, dtype=float)
    return weights / weights.sum(axis=-1, keepdims=True)


def _choose_rows(rng: np.random.Generator, probabilities: np.ndarray) -> np.ndarray:
    """Draw one category index per row from a row-wise probability matrix (n, k)."""
    cumulative = np.cumsum(probabilities, axis=1)
    cumulative[:, -1] = 1.0
    u = rng.random(len(probabilities))[:, None]
    return (u > cumulative).sum(axis=1)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


def generate_census(n_rows: int = DEFAULT_N_ROWS, seed: int = DEFAULT_SEED) -> pd.DataFrame:
    """Generate a synthetic, Adult-like census table.

    Parameters
    ----------
    n_rows : int, default 30_000
        Number of records (about the size of ARX's adult.csv, 30,162 rows).
    seed : int, default 20261122
        Seed of the :class:`numpy.random.Generator`. The same seed always gives an identical
        frame; different seeds give different frames.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`CENSUS_COLUMNS`:

        * ``person_id`` -- direct identifier ``"P000001"``, ``"P000002"``, ... (unique);
        * ``age`` -- int 17..90, right-skewed (median about 37);
        * ``sex``, ``race``, ``marital-status``, ``education``, ``occupation``, ``workclass``,
          ``native-country``, ``income`` -- strings spelled exactly as in ARX's Adult
          hierarchies (``income`` is ``"<=50K"`` / ``">50K"``, about 24% ``">50K"``);
        * ``education-num`` -- int 1..16, the Adult code of ``education``;
        * ``hours-per-week`` -- int 1..99, peaked at 40;
        * ``capital-gain``, ``capital-loss`` -- ints, about 92% / 95% zero and heavy-tailed
          otherwise; as in Adult, a record never has both.

    Raises
    ------
    ValueError
        If ``n_rows`` is negative.

    Notes
    -----
    Variables are drawn in causal order so the joint distribution is plausible: age and sex
    first; then marital status given age and sex, education given age, occupation given
    education and sex, workclass given occupation and age; race given native country; hours
    given age, sex and occupation; capital gain/loss given age and education; and finally the
    income label from a logistic model of age, education-num, hours, sex, marital status,
    occupation and capital gain/loss, so that a classifier can learn it.
    """
    if n_rows < 0:
        raise ValueError(f"n_rows must be >= 0, got {n_rows}")
    rng = np.random.default_rng(seed)
    n = int(n_rows)

    # Age: pick a band, then uniform within it.
    band_p = _normalized(np.array([b[2] for b in _AGE_BANDS]))
    band = rng.choice(len(_AGE_BANDS), size=n, p=band_p)
    lows = np.array([b[0] for b in _AGE_BANDS])
    highs = np.array([b[1] for b in _AGE_BANDS])
    age = rng.integers(lows[band], highs[band] + 1)

    # Sex.
    sex_idx = rng.choice(len(SEXES), size=n, p=_SEX_P)
    sex = np.array(SEXES, dtype=object)[sex_idx]
    male = sex_idx == 0

    # Marital status given age band and sex.
    marital_group = np.searchsorted(np.array(_MARITAL_AGE_GROUPS), age, side="left")
    marital_p = np.array(_MARITAL_P_BY_AGE)[marital_group]
    sex_factor = np.where(
        male[:, None],
        np.array(_MARITAL_SEX_FACTOR["Male"]),
        np.array(_MARITAL_SEX_FACTOR["Female"]),
    )
    marital_idx = _choose_rows(rng, _normalized(marital_p * sex_factor))
    marital = np.array(MARITAL_STATUSES, dtype=object)[marital_idx]

    # Education given age group.
    edu_group = np.searchsorted(np.array(_EDU_AGE_GROUPS), age, side="left")
    edu_idx = _choose_rows(rng, _normalized(np.array(_EDU_P_BY_AGE))[edu_group])
    education = np.array(EDUCATIONS, dtype=object)[edu_idx]
    education_num = edu_idx + 1  # EDUCATIONS is ordered by code

    # Occupation given education and sex.
    occ_p = np.array(_OCC_P_BY_EDU)[edu_idx] * np.where(
        male[:, None],
        np.array(_OCC_SEX_FACTOR["Male"]),
        np.array(_OCC_SEX_FACTOR["Female"]),
    )
    occ_idx = _choose_rows(rng, _normalized(occ_p))
    occupation = np.array(OCCUPATIONS, dtype=object)[occ_idx]

    # Workclass given occupation; self-employment becomes more common with age.
    occ_factor = np.ones((len(OCCUPATIONS), len(WORKCLASSES)))
    for name, factor in _WORKCLASS_OCC_FACTOR.items():
        occ_factor[OCCUPATIONS.index(name)] = factor
    wc_p = np.array(_WORKCLASS_P) * occ_factor[occ_idx]
    self_emp_boost = 1.0 + np.clip((age - 35) / 40.0, 0.0, 1.0)
    wc_p[:, 1] *= self_emp_boost
    wc_p[:, 2] *= self_emp_boost
    workclass = np.array(WORKCLASSES, dtype=object)[_choose_rows(rng, _normalized(wc_p))]

    # Native country, and race given the country's origin group.
    country_idx = rng.choice(
        len(COUNTRIES), size=n, p=_normalized(np.array(list(_COUNTRY_WEIGHTS.values())))
    )
    country = np.array(COUNTRIES, dtype=object)[country_idx]
    origin_of = {
        c: "us"
        if c == "United-States"
        else "asian"
        if c in _ASIAN_COUNTRIES
        else "caribbean"
        if c in _CARIBBEAN_COUNTRIES
        else "latin"
        if c in _LATIN_COUNTRIES
        else "other"
        for c in COUNTRIES
    }
    race_table = np.array([_RACE_P_BY_ORIGIN[origin_of[c]] for c in COUNTRIES])
    race_idx = _choose_rows(rng, _normalized(race_table)[country_idx])
    race = np.array(RACES, dtype=object)[race_idx]

    # Hours per week: about half exactly 40; the rest spread around a mean that depends on
    # age, sex and occupation, mostly rounded to a multiple of 5 as people report them.
    premium = np.isin(occupation, list(_PREMIUM_OCCUPATIONS))
    mean_hours = (
        41.0
        + 3.0 * male
        - 4.0 * (~male)
        + 5.0 * premium
        - 12.0 * (age < 22)
        - 8.0 * (age >= 65)
        + 1.5 * (education_num - 10).clip(-3, 5)
    )
    spread = np.rint(rng.normal(mean_hours, 13.0))
    rounded = np.rint(spread / 5.0) * 5.0
    spread = np.where(rng.random(n) < 0.7, rounded, spread)
    at_forty = rng.random(n) < np.where((age < 22) | (age >= 65), 0.25, 0.46)
    hours = np.where(at_forty, 40.0, spread).clip(1, 99).astype(np.int64)

    # Capital gain (about 8% non-zero) and loss (about 4.7% non-zero, never with a gain):
    # more likely for older, more educated people. Gains are log-normal with a point mass at
    # the 99,999 top code, as in Adult; losses cluster around 1,900.
    gain_logit = -2.75 + 0.03 * (age - 38) + 0.22 * (education_num - 10)
    has_gain = rng.random(n) < _sigmoid(gain_logit)
    gain_amount = np.rint(np.exp(rng.normal(8.9, 0.95, size=n))).clip(114, 99_999)
    gain_amount = np.where(rng.random(n) < 0.055, 99_999, gain_amount)
    capital_gain = np.where(has_gain, gain_amount, 0).astype(np.int64)
    loss_logit = -3.05 + 0.025 * (age - 38) + 0.12 * (education_num - 10)
    has_loss = (~has_gain) & (rng.random(n) < _sigmoid(loss_logit))
    loss_amount = np.rint(rng.normal(1870.0, 370.0, size=n)).clip(155, 4356)
    capital_loss = np.where(has_loss, loss_amount, 0).astype(np.int64)

    # Income from a logistic model; the age effect rises then flattens after about 50.
    married = np.isin(marital, list(_MARRIED))
    low_pay = np.isin(occupation, list(_LOW_PAY_OCCUPATIONS))
    logit = (
        _INCOME_INTERCEPT
        + 0.055 * (age.clip(17, 55) - 38)
        - 0.03 * (age - 62).clip(0, None)
        + 0.33 * (education_num - 10)
        + 0.035 * (hours - 40).clip(-30, 30)
        + 0.45 * male
        + 2.1 * married
        + 0.65 * premium
        - 0.80 * low_pay
        + 0.45 * np.log1p(capital_gain / 1000.0)
        + 2.5 * (capital_gain >= 7_000)
        + 0.9 * (capital_loss >= 1_800)
    )
    high = rng.random(n) < _sigmoid(logit)
    income = np.where(high, ">50K", "<=50K").astype(object)

    width = max(6, len(str(n)))
    person_id = [f"P{i:0{width}d}" for i in range(1, n + 1)]

    columns: dict[str, object] = {
        "person_id": person_id,
        "age": age.astype(np.int64),
        "sex": sex,
        "race": race,
        "marital-status": marital,
        "education": education,
        "education-num": education_num.astype(np.int64),
        "occupation": occupation,
        "workclass": workclass,
        "native-country": country,
        "hours-per-week": hours,
        "capital-gain": capital_gain,
        "capital-loss": capital_loss,
        "income": income,
    }
    frame = pd.DataFrame(columns, columns=list(CENSUS_COLUMNS))
    for name in _TEXT_COLUMNS:
        frame[name] = frame[name].astype("string")
    return frame


def write_census_csv(
    path: str | os.PathLike[str],
    n_rows: int = DEFAULT_N_ROWS,
    seed: int = DEFAULT_SEED,
) -> Path:
    """Generate the synthetic census table and write it as a CSV file.

    Parameters
    ----------
    path : str or os.PathLike
        Destination file. Missing parent directories are created.
    n_rows, seed : int
        Passed to :func:`generate_census`.

    Returns
    -------
    pathlib.Path
        The path written.

    Notes
    -----
    The file is comma-separated, UTF-8, with a header row, no index column and ``\\n`` line
    endings, so it reads back with ``pandas.read_csv(path)`` into the same values.
    """
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    generate_census(n_rows=n_rows, seed=seed).to_csv(
        out, sep=",", index=False, encoding="utf-8", lineterminator="\n"
    )
    return out
