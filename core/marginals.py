"""Each released column's values against its input column's: gate facts of ``privgate anonymize``
and of the release flow (:func:`privgate.core.gate.written_counts`).

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

from dataclasses import dataclass

import numpy as np

__all__ = ["TextCounts", "excess_cells", "generalized_texts", "text_counts", "unknown_texts"]


def _key(text: object) -> str | None:
    return None if text is None or text == "" else str(text)


@dataclass(frozen=True)
class TextCounts:
    """How many cells of a column hold each text, as arrays (a column of 10M distinct texts
    is two arrays here, not a dict of 10M entries).

    Attributes
    ----------
    texts : ndarray of object
        The distinct present, non-empty texts, sorted.
    counts : ndarray of int64
        The cells holding each.
    missing : int
        The cells that are missing or empty (both are written as an empty cell).
    """

    texts: np.ndarray
    counts: np.ndarray
    missing: int

    @classmethod
    def from_codes(
        cls, codes: np.ndarray, values: np.ndarray, weights: np.ndarray | None = None
    ) -> TextCounts:
        """The counts of a coded column (``values[codes]``; ``-1``: missing); ``weights``:
        how many cells each entry of ``codes`` stands for (a release's distinct lines and
        their counts of rows)."""
        index = codes.astype(np.int64, copy=False) + 1
        if weights is None:
            counts = np.bincount(index, minlength=len(values) + 1)
        else:
            counts = np.bincount(index, weights=weights, minlength=len(values) + 1)
            counts = counts.astype(np.int64)
        return cls.from_arrays(np.asarray(values, dtype=object), counts[1:], int(counts[0]))

    @classmethod
    def from_arrays(cls, texts: np.ndarray, counts: np.ndarray, missing: int = 0) -> TextCounts:
        """From distinct texts (``None`` and ``""`` counted as missing) and their counts."""
        texts = np.asarray(texts, dtype=object)
        counts = np.asarray(counts, dtype=np.int64)
        empty = np.array([t is None or t == "" for t in texts.tolist()], dtype=bool)
        missing += int(counts[empty].sum())
        keep = ~empty & (counts > 0)
        texts, counts = texts[keep], counts[keep]
        order = np.argsort(texts, kind="stable")
        return cls(texts[order], counts[order], missing)

    def to_dict(self) -> dict[str | None, int]:
        out: dict[str | None, int] = dict(
            zip(self.texts.tolist(), self.counts.tolist(), strict=True)
        )
        if self.missing:
            out[None] = self.missing
        return out


def text_counts(
    codes: np.ndarray, values: np.ndarray, weights: np.ndarray | None = None
) -> TextCounts:
    """:meth:`TextCounts.from_codes`."""
    return TextCounts.from_codes(codes, values, weights)


def generalized_texts(values: np.ndarray, hierarchy: object, level: int) -> set[str | None]:
    """The labels at ``level`` of a quasi-identifier's distinct texts ``values``, and
    ``None`` (a missing cell: one the input holds, or the hierarchy's missing label)."""
    texts = [*values.tolist(), None]
    table = hierarchy.generalize(texts)  # type: ignore[attr-defined]
    return {_key(row[level]) for row in table}


def unknown_texts(written: np.ndarray, allowed: set[str | None]) -> list[str | None]:
    """The distinct written texts (``written``: a column's present texts) not in ``allowed``."""
    return [t for t in (_key(v) for v in written.tolist()) if t not in allowed]


def excess_cells(written: TextCounts, allowed: TextCounts) -> tuple[int, list[str | None]]:
    """Written cells beyond what the input allows, and up to three of the texts in excess."""
    over = written.counts.copy()
    if len(allowed.texts) and len(written.texts):
        at = np.searchsorted(allowed.texts, written.texts).clip(0, len(allowed.texts) - 1)
        found = allowed.texts[at] == written.texts
        over -= np.where(found, allowed.counts[at], 0)
    beyond = np.flatnonzero(over > 0)
    excess = int(over[beyond].sum())
    examples: list[str | None] = written.texts[beyond[:3]].tolist()
    if written.missing > allowed.missing:
        excess += written.missing - allowed.missing
        if len(examples) < 3:
            examples.append(None)
    return excess, examples
