"""Replayable noise: every draw of a release reserved, journaled and persisted before it is used.

A DP release is a sequence of noise draws (selections, split points, counts). Three things can
go wrong around them, and this accountant answers each through the ledger
(:class:`~privgate.core.dp.ledger.BudgetLedger`):

* **Concurrent releases overrunning a budget.** Before the first draw, the release's whole
  ``(epsilon, delta)`` is *reserved* under its release id, atomically under the account's lock.
  A run that cannot be paid for in full is refused before it has drawn anything, so eight
  concurrent runs on a budget for four publish four and burn nothing for the other four.
* **A crash mid-release.** Each draw is recorded as *started* before it is sampled and
  *completed* with its value (a DP output) before the value is used. A retry of the release,
  in any process, replays the completed draws in order instead of drawing again, so it spends
  nothing more and reproduces everything the crashed run derived from them. An attempt left
  started but not completed may have been sampled (and then lost with the process): it is
  charged to the account as a lost draw when the next attempt starts. The account therefore
  counts every draw that may ever have existed; the overspend is bounded by one draw per crash
  (the one in flight), and is stated in the ledger.
* **Noise that was never paid for.** The release records exactly which journaled draws it used
  (:attr:`JournaledAccountant.used_draws`); the DP gate re-reads them from the ledger and checks
  their composition against the policy, and that the published counts are the journaled ones.

The algorithm must be deterministic given its draws (DPHeter is: every random choice is an
OpenDP draw), so the n-th draw of a replay asks for the same step, mechanism and cost as the
n-th draw of the crashed run; the ledger refuses a replay that does not.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from privgate.core.dp._accountant import Accountant, Codec, Spend
from privgate.core.dp.ledger import BudgetLedger, DrawRecord

__all__ = ["JournaledAccountant", "input_fingerprint", "table_fingerprint"]


def table_fingerprint(frame: pd.DataFrame) -> str:
    """SHA-256 of a table's columns, dtypes and values, in row order (owner-side only).

    It identifies the exact table a DP mechanism read, so that a retry of the release can be
    checked to read the same one. It is stored in the private ledger and never published: it
    is an exact function of the data.
    """
    digest = hashlib.sha256()
    digest.update(repr([(str(c), str(t)) for c, t in frame.dtypes.items()]).encode())
    digest.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    return digest.hexdigest()


def input_fingerprint(frame: pd.DataFrame, hierarchies: Mapping[str, Any]) -> str:
    """SHA-256 of everything a DP release reads besides its policy's text (owner-side only).

    The table (:func:`table_fingerprint`), and every hierarchy read from a file: its
    generalization of each value it lists, level by level. The release id covers the policy's
    text, which names a hierarchy file but does not hold it; a file edited between two runs of
    one release (same id) would otherwise have the first run's draws replayed under the new
    labels — on Adult, Prof-school's noisy count published as Masters'. Hierarchies built from
    the policy's own text (taxonomies, bands, masking, dates) are covered by the id already;
    including the listed ones again changes nothing.
    """
    digest = hashlib.sha256(table_fingerprint(frame).encode())
    for name in sorted(hierarchies):
        hierarchy = hierarchies[name]
        listed = getattr(hierarchy, "domain", None)
        if listed is None:
            continue
        levels = hierarchy.generalize(list(listed)).tolist()
        digest.update(json.dumps([name, [[str(v) for v in row] for row in levels]]).encode())
    return digest.hexdigest()


class JournaledAccountant(Accountant):
    """An accountant whose draws are reserved, journaled and replayed through the ledger.

    Parameters
    ----------
    ledger : BudgetLedger
        The dataset's ledger (the account must exist).
    dataset, release_id, run_id : str
        Whose budget pays, for which release, in which run.
    budget : (float, float)
        The release's ``(epsilon, delta)``: the per-release cap, and the amount reserved in the
        ledger before the first draw.
    input_sha256 : str, optional
        A fingerprint of what the mechanism reads (:func:`input_fingerprint`). The ledger
        binds the release to it with its first draw and refuses a draw of the same release on
        another table: a replay is only the same release over the same input.
    """

    def __init__(
        self,
        ledger: BudgetLedger,
        dataset: str,
        release_id: str,
        run_id: str,
        budget: tuple[float, float],
        input_sha256: str | None = None,
    ) -> None:
        super().__init__(budget=budget)
        self._input_sha256 = input_sha256
        self._ledger = ledger
        self._dataset = dataset
        self._release_id = release_id
        self._run_id = run_id
        self._seq = 0
        self._used: list[DrawRecord] = []
        self._replayed = 0

    @property
    def used_draws(self) -> list[DrawRecord]:
        """The journaled draws this release used, in order (a copy)."""
        return list(self._used)

    @property
    def replayed(self) -> int:
        """How many of them were replayed from the journal rather than drawn by this run."""
        return self._replayed

    def _sample(self, spend: Spend, sample: Callable[[], Any], codec: Codec, group: str) -> Any:
        self._seq += 1
        record = self._ledger.begin_draw(
            self._dataset,
            release_id=self._release_id,
            run_id=self._run_id,
            seq=self._seq,
            spend=spend,
            parallel_group=group,
            reserve=self.budget,
            input_sha256=self._input_sha256,
        )
        if record.completed:
            self._replayed += 1
            value = codec.decode(record.value)
        else:
            value = sample()
            # Persisted before it is used: nothing exists that a retry could not reproduce.
            record = self._ledger.complete_draw(
                self._dataset,
                release_id=self._release_id,
                seq=record.seq,
                attempt=record.attempt,
                value=codec.encode(value),
            )
            value = codec.decode(record.value)
        self._used.append(record)
        return value
