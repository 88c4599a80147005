"""The multivariate singling-out attacker's random draws, a block of attempts at a time.

Each attempt of the attacker (:mod:`~privgate.core.attacks._singling_out`) draws a released
row with ``rng.integers(n_rows)`` and its columns with ``rng.choice(n_columns, size=width,
replace=False)``. Made one attempt at a time, these two calls cost about 12 µs of the 30 µs an
attempt took (measured on Adult), more than everything else once the predicates are evaluated
in bulk, and an attack may try 100,000 predicates. :class:`AttemptDraws` returns the same rows
and columns for a whole block of attempts from one bulk read of the bit generator, and leaves
the generator exactly where the per-attempt calls would have left it, so that every later draw
of the attacks (the control-size correction, linkability, inference) stays the same.

How numpy 2's ``Generator`` makes those draws on a ``PCG64`` bit generator (numpy's
``_generator.pyx`` and ``distributions.c``):

* a bounded integer in ``[0, r]`` with ``0 < r < 2**32 - 1`` is Lemire's method on one 32-bit
  word ``u``: ``m = u * (r + 1)``, the result ``m >> 32``, and the word is rejected (another one
  drawn) only when ``m mod 2**32 < 2**32 mod (r + 1)``; ``r = 0`` draws nothing;
* 32-bit words come from 64-bit outputs, low half first; the high half waits in the
  generator's state (``has_uint32``, ``uinteger``) for the next word;
* ``choice(n, size=k, replace=False)`` with ``n <= 10,000`` is Floyd's algorithm (for ``j`` from
  ``n - k`` to ``n - 1``: ``v`` in ``[0, j]``, taken unless already taken, then ``j``) followed
  by a Fisher-Yates shuffle of the ``k`` picks (``i`` from ``k - 1`` down to 1 swaps with one of
  ``[0, i]``).

So an attempt reads a fixed number of words unless one is rejected (probability about
``n_rows / 2**32`` per row draw). A block is decoded from the words with numpy; an attempt with a
rejected word, and every attempt when the generator is not ``PCG64`` or the sizes are outside
the cases above, is drawn with the calls themselves. Before the first block the bulk decoding is
checked against the calls on a copy of the generator, and used only if both agree (a numpy whose
algorithms differ gets the calls): the replay can make the attack faster, never different.
``tests/core/attacks/test_attacks_unchanged.py`` pins it against the per-attempt calls.
"""

from __future__ import annotations

import copy

import numpy as np

__all__ = ["AttemptDraws"]

_LOW = np.uint64(0xFFFFFFFF)
_SHIFT = np.uint64(32)
#: Attempts drawn with the calls and compared with the bulk decoding before it is trusted.
_PROBE_ATTEMPTS = 16


class AttemptDraws:
    """Rows and columns of the singling-out attempts, as the per-attempt calls draw them.

    Parameters
    ----------
    rng : numpy.random.Generator
        The attack's generator; :meth:`block` advances it exactly as ``n`` attempts of
        ``rng.integers(n_rows)`` then ``rng.choice(n_columns, size=width, replace=False)``.
    n_rows, n_columns, width : int
        The released rows to pick from, the attacked columns, the columns per predicate.
    """

    def __init__(self, rng: np.random.Generator, n_rows: int, n_columns: int, width: int) -> None:
        if not 0 <= width <= n_columns:
            raise ValueError(f"width must lie in [0, n_columns = {n_columns}]; got {width}")
        if n_rows < 1:
            raise ValueError(f"n_rows must be >= 1; got {n_rows}")
        self._rng = rng
        self._n_rows = n_rows
        self._n_columns = n_columns
        self._width = width
        # The bounds (r + 1) of each word an attempt reads, in the order it reads them.
        floyd = [j + 1 for j in range(n_columns - width, n_columns)]
        shuffle = [i + 1 for i in range(width - 1, 0, -1)]
        self._bounds = [b for b in (n_rows, *floyd, *shuffle) if b > 1]
        self._block_start: dict | None = None
        self._bulk = (
            type(rng.bit_generator) is np.random.PCG64
            and n_rows <= 0xFFFFFFFF
            and n_columns <= 10_000
            and self._probe()
        )

    @property
    def bulk(self) -> bool:
        """Whether blocks are decoded in bulk (False: drawn with the per-attempt calls)."""
        return self._bulk

    def block(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The next ``n`` attempts: row indices ``(n,)`` and column indices ``(n, width)``, the
        columns in the order ``rng.choice`` returns them."""
        self._block_start = copy.deepcopy(self._rng.bit_generator.state)
        return self._draw(n)

    def rewind_to(self, m: int) -> None:
        """Leave the generator as after the first ``m`` attempts of the last block."""
        if self._block_start is None:
            raise RuntimeError("rewind_to() needs a block drawn first")
        self._rng.bit_generator.state = copy.deepcopy(self._block_start)
        self._draw(m)

    # ------------------------------------------------------------------------------------------

    def _draw(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        if not self._bulk:
            return self._by_calls(n)
        rows = np.empty(n, dtype=np.int64)
        cols = np.empty((n, self._width), dtype=np.int64)
        done = 0
        while done < n:
            got, rejected = self._decode(n - done)
            rows[done : done + len(got[0])] = got[0]
            cols[done : done + len(got[0])] = got[1]
            done += len(got[0])
            if rejected:  # the attempt with a rejected word: drawn with the calls themselves
                r, c = self._by_calls(1)
                rows[done], cols[done] = r[0], c[0]
                done += 1
        return rows, cols

    def _by_calls(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        rows = np.empty(n, dtype=np.int64)
        cols = np.empty((n, self._width), dtype=np.int64)
        for i in range(n):
            rows[i] = self._rng.integers(self._n_rows)
            cols[i] = self._rng.choice(self._n_columns, size=self._width, replace=False)
        return rows, cols

    def _decode(self, n: int) -> tuple[tuple[np.ndarray, np.ndarray], bool]:
        """Decode up to ``n`` attempts from the generator's next words and advance it past them.

        Stops before the first attempt that reads a rejected word (then returns True).
        """
        bounds = np.array(self._bounds, dtype=np.uint64)
        d = len(bounds)
        state = self._rng.bit_generator.state
        words, raw = _words(state, n * d)
        m = words.reshape(n, d) * bounds
        rejected = (m & _LOW) < (np.uint64(2**32) % bounds)
        bad = np.flatnonzero(rejected.any(axis=1))
        ok = int(bad[0]) if bad.size else n
        values = (m[:ok] >> _SHIFT).astype(np.int64)
        self._rng.bit_generator.state = _advanced(state, ok * d, raw)
        return self._assemble(values), bool(bad.size)

    def _assemble(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = len(values)
        k = 0
        rows = np.zeros(n, dtype=np.int64)
        if self._n_rows > 1:
            rows = values[:, 0]
            k = 1
        cols = np.empty((n, self._width), dtype=np.int64)
        for t, j in enumerate(range(self._n_columns - self._width, self._n_columns)):
            if j == 0:
                v = np.zeros(n, dtype=np.int64)
            else:
                v = values[:, k]
                k += 1
            taken = (cols[:, :t] == v[:, None]).any(axis=1)
            cols[:, t] = np.where(taken, j, v)
        at = np.arange(n)
        for i in range(self._width - 1, 0, -1):
            j = values[:, k]
            k += 1
            picked_i, picked_j = cols[at, i].copy(), cols[at, j].copy()
            cols[at, i], cols[at, j] = picked_j, picked_i
        return rows, cols

    def _probe(self) -> bool:
        """Draw a few attempts on copies of the generator, in bulk and with the calls, and
        tell whether rows, columns and the generator's state afterwards all agree."""
        start = self._rng.bit_generator.state
        original = self._rng
        outcomes = []
        try:
            for bulk in (True, False):
                self._rng = np.random.Generator(np.random.PCG64())
                self._rng.bit_generator.state = copy.deepcopy(start)
                self._bulk = bulk
                rows, cols = self._draw(_PROBE_ATTEMPTS)
                outcomes.append((rows, cols, self._rng.bit_generator.state))
        finally:
            self._rng = original
        (rows_d, cols_d, state_d), (rows_c, cols_c, state_c) = outcomes
        return bool(
            np.array_equal(rows_c, rows_d) and np.array_equal(cols_c, cols_d) and state_d == state_c
        )


def _words(state: dict, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The next ``n`` 32-bit words of a PCG64 state (as uint64), and the 64-bit outputs read."""
    buffered = bool(state["has_uint32"])
    needed = max(n - buffered, 0)
    twin = np.random.PCG64()
    twin.state = state
    raw = twin.random_raw((needed + 1) // 2).astype(np.uint64)
    words = np.empty(2 * len(raw) + buffered, dtype=np.uint64)
    if buffered:
        words[0] = state["uinteger"]
    words[buffered::2] = raw & _LOW
    words[buffered + 1 :: 2] = raw >> _SHIFT
    return words[:n], raw


def _advanced(state: dict, used: int, raw: np.ndarray) -> dict:
    """The PCG64 state after ``used`` 32-bit words were read from ``state`` (``raw``: its next
    64-bit outputs, at least enough for them)."""
    if used == 0:
        return state
    after = copy.deepcopy(state)
    if state["has_uint32"]:
        used -= 1
        after["has_uint32"] = 0  # the buffered word is read; ``uinteger`` keeps its old value
    n_raw = (used + 1) // 2
    if n_raw:
        twin = np.random.PCG64()
        twin.state = state
        twin.advance(n_raw)
        after = twin.state
        after["has_uint32"] = used % 2
        after["uinteger"] = int(raw[n_raw - 1] >> _SHIFT)
    return after
