"""The research subset: release only the records of the input a key file lists.

A data owner holds a whole table (a registry, a hospital's patients) and releases only a
declared subset of its records (a study's cohort). privgate uses ARX's definition of a
research subset for the k-family (``Inclusion`` with a ``DataSubset``): the subset *is* the
data. Every privacy model, the suppression limit (a share of the subset's records),
t-closeness's reference distribution, the search's metric and the gate are evaluated on the
subset's records; the other records are neither released nor counted. Selecting the subset
once, right after the input is read, gives the search and the gate that one definition: both
see only the subset, and the gate blocks a release with more rows than the subset has.

Why not count the rest of the table: ARX's ``HashGroupify.addInternal`` sets the count of a
record outside the subset to 0 (only ``pcount``, used by δ-presence, sees the whole table),
and its criteria and metrics read the subset's counts and distributions only, so ARX's
published expectations (``TestAnonymizationSubset``) are those of the subset alone;
``benchmarks/models_vs_arx.py`` reproduces them on Adult.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from privgate.core.exceptions import IngestError
from privgate.core.policy import ResearchSubsetSpec
from privgate.core.textcsv import read_text_columns

__all__ = ["SubsetFacts", "read_subset_keys", "select_research_subset", "subset_fingerprint"]


@dataclass(frozen=True)
class SubsetFacts:
    """What the manifest records about a research subset (never the keys themselves)."""

    path: str
    sha256: str
    key: str
    rows: int
    table_rows: int

    def to_dict(self) -> dict:
        return {
            "path": self.path,
            "sha256": self.sha256,
            "key": self.key,
            "rows": self.rows,
            "table_rows": self.table_rows,
        }


def subset_fingerprint(spec: ResearchSubsetSpec) -> str:
    """sha256 of the key file ("" when it does not exist; selecting then names the problem)."""
    path = Path(spec.path)
    if not path.is_file():
        return ""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_subset_keys(spec: ResearchSubsetSpec) -> set[str]:
    """The keys the file lists, as text (its column ``spec.key``; blank cells are refused).

    Raises
    ------
    IngestError
        The file cannot be read, has no column ``spec.key``, lists no key or a blank one.
    """
    try:
        columns = read_text_columns(spec.path, delimiter=spec.delimiter, encoding=spec.encoding)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise IngestError(f"privacy.research_subset: cannot read {spec.path}: {exc}") from exc
    if spec.key not in columns:
        raise IngestError(
            f"privacy.research_subset: {spec.path} has no column {spec.key!r} "
            f"(its columns: {', '.join(columns) or 'none'})"
        )
    values = ["" if v is None else str(v).strip() for v in columns[spec.key]]
    if not values:
        raise IngestError(f"privacy.research_subset: {spec.path} lists no record")
    if not all(values):
        raise IngestError(f"privacy.research_subset: {spec.path} has a blank {spec.key!r} cell")
    return set(values)


def select_research_subset(
    frame: pd.DataFrame, spec: ResearchSubsetSpec
) -> tuple[pd.DataFrame, SubsetFacts]:
    """The input's records whose ``spec.key`` the key file lists, in input order (with their
    original index), and the facts the manifest records.

    Every record carrying a listed key is selected (with several records per key, e.g. a
    person's visits, all of them). A listed key that no input record carries is refused: a
    declared cohort that does not match the table is an error, never a smaller release.

    Raises
    ------
    IngestError
        The key file cannot be read, or lists keys the input does not hold.
    """
    if spec.key not in frame.columns:
        raise IngestError(f"privacy.research_subset: the input has no column {spec.key!r}")
    keys = read_subset_keys(spec)
    cells = frame[spec.key].astype("string").str.strip()
    selected = cells.isin(keys).fillna(False).to_numpy(dtype=bool)
    unmatched = keys - set(cells[selected].tolist())
    if unmatched:
        shown = ", ".join(sorted(unmatched)[:5])
        raise IngestError(
            f"privacy.research_subset: {len(unmatched)} key(s) of {spec.path} match no record "
            f"of the input's column {spec.key!r}, e.g. {shown}"
        )
    facts = SubsetFacts(
        path=str(spec.path),
        sha256=subset_fingerprint(spec),
        key=spec.key,
        rows=int(selected.sum()),
        table_rows=len(frame),
    )
    return frame.loc[selected], facts
