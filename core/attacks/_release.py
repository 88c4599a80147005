"""A policy's attacks on one release: the held-out control split and the attack run.

Anonymeter's risk is the attack's success on the records a release was made from *beyond* its
success on records of the same input the release does not contain. So the control records must
really be absent: :func:`split_control` draws them before anything else sees the input, the
release (and its ranking, its utility) is made from the other records only, and the held-out
records are never published. With a person key whole persons are held out, so that no person
has records on both sides.

The draw, stated so anyone holding the input can redo it. A k-anonymous release:
``numpy.random.default_rng(seed)``, one ``permutation`` of the units (the rows in input order,
or the distinct person keys as text in sorted order), and the first
``max(1, round(control_fraction * units))`` of it are held out. A differentially private
release: each record on its own values (:func:`record_coins`), so that the split is 1-stable
(the DP analysis's neighbours D and D + r keep neighbouring or equal released parts, which a
permutation of ``len(D)`` rows would not give): a record is held out when the first 8 bytes of
``sha256(seed, its cells as text)`` read as a fraction of 2^64 are below ``control_fraction``.
For a DP release the evidence is the data owner's only (:func:`write_owner_evidence`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from privgate.core.attacks._evidence import AttackEvidence, AttackSettings, run_attacks
from privgate.core.cell_text import cell_text
from privgate.core.exceptions import PolicyError
from privgate.core.locations import data_dir, ensure_private_dir, restrict_file
from privgate.core.retention import attack_evidence_root

if TYPE_CHECKING:
    from privgate.core.hierarchy import Hierarchy
    from privgate.core.policy import ReleasePolicy

__all__ = [
    "ControlSplit",
    "attack_release",
    "attacked_columns",
    "owner_evidence_path",
    "record_coins",
    "split_control",
    "write_owner_evidence",
]


@dataclass(frozen=True)
class ControlSplit:
    """The input divided into the records a release is made from and the held-out control.

    Attributes
    ----------
    kept : DataFrame
        The records the release is made from, in input order (index reset).
    control : DataFrame
        The held-out records, in input order (index reset): never published.
    facts : dict
        What the manifest states: rows on each side, the fraction, the seed, the unit.
    """

    kept: pd.DataFrame
    control: pd.DataFrame
    facts: dict = field(default_factory=dict)


def control_mask(n_units: int, fraction: float, seed: int) -> np.ndarray:
    """Which of ``n_units`` units are held out (the draw the module docstring states)."""
    n_control = max(1, round(fraction * n_units)) if n_units else 0
    held = np.zeros(n_units, dtype=bool)
    held[np.random.default_rng(seed).permutation(n_units)[:n_control]] = True
    return held


def record_coins(frame: pd.DataFrame, seed: int) -> np.ndarray:
    """Each record's coin in ``[0, 1)``, a function of the seed and the record's own cells only
    (``sha256`` of the seed and the cells as text, separated by a unit separator; a missing
    cell is empty). The text is :func:`~privgate.core.cell_text.cell_text`, which does not
    depend on the column's dtype: with ``str`` one added record with a missing value in a
    Parquet integer column turned every ``45`` of that column into ``45.0`` and moved a third of
    the records across the split."""
    coins = np.empty(len(frame), dtype=float)
    prefix = f"{seed}\x1e".encode()
    for i, row in enumerate(frame.itertuples(index=False, name=None)):
        text = "\x1f".join(cell_text(v) for v in row)
        digest = hashlib.sha256(prefix + text.encode()).digest()
        coins[i] = int.from_bytes(digest[:8], "big") / 2.0**64
    return coins


def split_control(frame: pd.DataFrame, policy: ReleasePolicy) -> ControlSplit:
    """Hold out the policy's control records (``attacks.control_fraction``, ``attacks.seed``).

    Raises
    ------
    ValueError
        The policy has no ``attacks`` section.
    PolicyError
        The split would leave either side empty (a clear refusal, before anything runs; a
        DP release goes on instead, its owner-side attack evidence left unmeasured).
    """
    spec = policy.attacks
    if spec is None:
        raise ValueError("the policy has no 'attacks' section")
    person_key = policy.person_key
    if policy.is_differentially_private:
        # Each coin depends only on one record (or, with a person key, only on the person's
        # key): the split is 1-stable at the policy's privacy unit.
        coined = frame if person_key is None else frame[[person_key]]
        held = record_coins(coined, spec.seed) < spec.control_fraction
        unit = "records" if person_key is None else "persons"
    elif person_key is None:
        held = control_mask(len(frame), spec.control_fraction, spec.seed)
        unit = "records"
    else:
        keys = frame[person_key].astype("string").to_numpy(dtype=object)
        persons, codes = np.unique(keys.astype(str), return_inverse=True)
        held = control_mask(len(persons), spec.control_fraction, spec.seed)[codes.reshape(-1)]
        unit = "persons"
    # For a DP release the split must not decide whether it is published (an exact function
    # of the private data): a side left empty only leaves the owner-side evidence unmeasured.
    one_sided = held.all() or not held.any()
    if one_sided and not policy.is_differentially_private:
        raise PolicyError(
            f"attacks.control_fraction = {spec.control_fraction}: the input has too few "
            f"{unit} ({len(frame)} rows) to hold some out and release the others"
        )
    kept = frame.loc[~held].reset_index(drop=True)
    control = frame.loc[held].reset_index(drop=True)
    facts = {
        "unit": unit,
        "control_fraction": spec.control_fraction,
        "seed": spec.seed,
        "input_rows": len(frame),
        "released_from_rows": len(kept),
        "control_rows": len(control),
        "published": False,
    }
    if person_key is not None:
        facts["control_persons"] = int(len(set(control[person_key].astype("string").tolist())))
    return ControlSplit(kept, control, facts)


def attacked_columns(policy: ReleasePolicy) -> tuple[list[str], list[str]]:
    """The attacked columns and the inference attack's secrets, as the policy sets them.

    Default: every released column; secrets the sensitive columns among them, or every
    attacked column when none is sensitive.
    """
    spec = policy.attacks
    assert spec is not None
    released = policy.dp_released_columns if policy.is_differentially_private else None
    released = released or policy.released_columns
    columns = list(spec.columns) if spec.columns is not None else released
    if spec.secrets is not None:
        secrets = list(spec.secrets)
    else:
        secrets = [c for c in policy.sensitive_columns if c in columns] or list(columns)
    return columns, secrets


def attack_release(
    release: pd.DataFrame,
    split: ControlSplit,
    policy: ReleasePolicy,
    hierarchies: Mapping[str, Hierarchy],
) -> AttackEvidence:
    """Every attack of the policy on ``release`` (the written file, read back as text)."""
    spec = policy.attacks
    assert spec is not None
    columns, secrets = attacked_columns(policy)
    missing = [c for c in columns if c not in release.columns]
    if missing:
        raise ValueError(f"attacked column(s) not in the release: {missing}")
    settings = AttackSettings(n_attacks=spec.n_attacks, secrets=tuple(secrets), seed=spec.seed)
    evidence = run_attacks(
        release[columns],
        split.kept[columns],
        split.control[columns],
        columns,
        numeric=[c for c in columns if policy.columns[c].is_numeric],
        hierarchies={c: h for c, h in hierarchies.items() if c in columns},
        settings=settings,
    )
    evidence.details["control"] = dict(split.facts)
    evidence.details["n_attacks"] = spec.n_attacks
    return evidence


def owner_evidence_path(dataset: str, release_id: str) -> Path:
    """Where a DP release's attack evidence is kept: ``<data dir>/attacks/<dataset>/<id>.json``,
    owner-only, never in a release folder."""
    return attack_evidence_root() / dataset / f"{release_id}.json"


def write_owner_evidence(evidence: AttackEvidence, dataset: str, release_id: str) -> Path:
    """Write the evidence for the data owner only (folders 0700, file 0600), atomically."""
    path = owner_evidence_path(dataset, release_id)
    for folder in (data_dir(), path.parent.parent, path.parent):
        ensure_private_dir(folder)
    tmp = path.with_name(f".{path.name}.tmp")
    text = json.dumps(evidence.to_dict(), indent=2, default=float)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # never readable by others
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    restrict_file(tmp)
    os.replace(tmp, path)
    return path
