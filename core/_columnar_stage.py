"""The release flow's anonymize stage on the columnar engine ``privgate anonymize`` runs.

Why: the flow and the command made their releases on two engines (the flow on the row
engine's :class:`~privgate.core.anonymize.SearchInput`, the command on dictionary codes), so a
fix or a speed-up in one did not reach the other. Here the validated table's columns become
:class:`~privgate.core.columnar.TextCodes` (each column's codes by
:func:`privgate.core.encoding.factorize`, the function the row engine encodes with, so the
frequency set is the same array for array), and the search, the plan and the generalization
are :func:`privgate.core.scale.anonymize_codes`, the command's own call. What comes back is
the contract's :class:`~privgate.core.anonymize.AnonymizationResult`, so everything after the
stage (utility, gate on the written file, report, manifest) is unchanged.

Only a single full-domain release without a person key runs here
(:func:`columnar_applies`); Mondrian, local recoding, RFKA, tiered and person-keyed releases
stay on the row engine, which is what ``privgate anonymize`` refuses them for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from privgate.core.anonymize import AnonymizationResult, SearchSetup, is_single_full_domain
from privgate.core.columnar import TextCodes
from privgate.core.encoding import factorize
from privgate.core.exceptions import AnonymizationError
from privgate.core.scale import anonymize_codes

__all__ = ["columnar_anonymization", "columnar_applies"]


def columnar_applies(setup: SearchSetup) -> bool:
    """Whether the columnar engine makes this setup's release (one full-domain release,
    records as the unit)."""
    return setup.person_key is None and is_single_full_domain(setup.algorithm)


def _codes(rows: Mapping[str, Any], name: str) -> TextCodes:
    codes, values = factorize(rows[name])
    return TextCodes(codes.astype(np.int32, copy=False), values)


def columnar_anonymization(rows: Mapping[str, Any], setup: SearchSetup) -> AnonymizationResult:
    """The release of ``rows`` (a validated table) as the contract's result, made by
    :func:`privgate.core.scale.anonymize_codes` on its dictionary codes.

    The kept rows stay in input order (the flow permutes them once, when it writes the
    release); a recoded quasi-identifier's released text is the engine's label text, a
    missing cell kept at level 0 stays missing.

    Raises
    ------
    AnonymizationError
        A column the setup needs is missing, or no release can meet the models.
    HierarchyError
        A quasi-identifier value its hierarchy does not cover.
    """
    present = set(rows.columns if hasattr(rows, "columns") else rows)
    needed = [*setup.quasi_identifiers, *setup.sensitive]
    absent = [c for c in needed if c not in present]
    if absent:
        raise AnonymizationError(f"column(s) not in the table: {absent}")
    columns = {name: _codes(rows, name) for name in dict.fromkeys(needed)}
    n_rows = len(columns[needed[0]]) if needed else 0
    release = anonymize_codes(columns, setup, shuffle=False)
    suppressed = np.ones(n_rows, dtype=bool)
    suppressed[release.rows] = False
    qis = list(setup.quasi_identifiers)
    levels = dict(release.plan.levels)
    return AnonymizationResult(
        algorithm=release.algorithm,
        covered=tuple(qis),
        suppressed=suppressed,
        labels={q: release.columns[q].text() for q in qis},
        transformation={q: f"level {levels[q]}/{setup.hierarchies[q].height}" for q in qis},
        levels=levels,
        steps=release.steps,
        details=dict(release.details),
    )
