"""Each released column's values against its input column's: gate facts of ``privgate anonymize``.

Why: the gate measures k and the other models on the quasi-identifier columns of the written
file, and nothing else of its content. A writer that put the wrong codes under a column name
(the original ages under ``salary-class``, two columns' names swapped) left a file the gate
passed: its named quasi-identifiers were k-anonymous while another column published what they
generalize. Every released row is one input record, so

* a column released as it is must hold a sub-multiset of its input column's values
  (:func:`text_counts` of both, :func:`excess_cells`: one pass over the column's codes);
* a quasi-identifier must hold only labels its hierarchy gives the input's values at the
  plan's level (:func:`generalized_texts`: its distinct texts only, no pass over the rows;
  its counts are the classes the models measure).

A missing cell and an empty text are one key (``None``): both are written as an empty cell.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["excess_cells", "generalized_texts", "text_counts", "unknown_texts"]


def _key(text: object) -> str | None:
    return None if text is None or text == "" else str(text)


def text_counts(codes: np.ndarray, values: np.ndarray) -> dict[str | None, int]:
    """How many cells hold each text (``None``: missing or empty) of a coded column."""
    counts = np.bincount(codes.astype(np.int64, copy=False) + 1, minlength=len(values) + 1)
    out: dict[str | None, int] = {}
    for text, count in zip([None, *values.tolist()], counts.tolist(), strict=True):
        if count:
            key = _key(text)
            out[key] = out.get(key, 0) + int(count)
    return out


def generalized_texts(values: np.ndarray, hierarchy: object, level: int) -> set[str | None]:
    """The labels at ``level`` of a quasi-identifier's distinct texts ``values``, and
    ``None`` (a missing cell: one the input holds, or the hierarchy's missing label)."""
    texts = [*values.tolist(), None]
    table = hierarchy.generalize(texts)  # type: ignore[attr-defined]
    return {_key(row[level]) for row in table}


def unknown_texts(written: np.ndarray, allowed: set[str | None]) -> list[str | None]:
    """The distinct written texts (``written``: a column's present texts) not in ``allowed``."""
    return [t for t in (_key(v) for v in written.tolist()) if t not in allowed]


def excess_cells(
    written: Mapping[str | None, int], allowed: Mapping[str | None, int]
) -> tuple[int, list[str | None]]:
    """Written cells beyond what the input allows, and up to three of the texts in excess."""
    excess, examples = 0, []
    for text, count in written.items():
        over = count - allowed.get(text, 0)
        if over > 0:
            excess += over
            if len(examples) < 3:
                examples.append(text)
    return excess, examples
