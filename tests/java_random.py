"""``java.util.Random`` in Python, to draw exactly the research subsets of ARX's tests.

Java's ``Random`` is a 48-bit linear congruential generator (its Javadoc specifies the
algorithm, unchanged since Java 1.0): ``setSeed`` scrambles the seed as
``(seed ^ 0x5DEECE66D) & (2**48 - 1)``; ``next(bits)`` steps
``seed = (seed * 0x5DEECE66D + 0xB) & (2**48 - 1)`` and returns the top ``bits`` of the 48;
``nextInt(bound)`` takes ``next(31)``, and for a bound that is not a power of two rejects the
draws at the top of the int range that would bias ``r % bound``.

One trap: ARX seeds with ``new Random(0xDEADBEEF)``, and ``0xDEADBEEF`` is a Java *int*
literal, negative (-559038737), sign-extended to the long ``0xFFFFFFFFDEADBEEF``. Seeding
with the positive number 3735928559 draws other subsets (on which ARX's expected nodes do not
hold): :data:`ARX_TEST_SEED` is the value Java passes.
"""

from __future__ import annotations

__all__ = ["ARX_TEST_SEED", "JavaRandom", "arx_test_subset"]

_MULTIPLIER = 0x5DEECE66D
_MASK = (1 << 48) - 1

#: ``new Random(0xDEADBEEF)`` in ARX's tests: the int literal, negative, as Java widens it.
ARX_TEST_SEED = 0xDEADBEEF - (1 << 32)


class JavaRandom:
    """The sequence of ``java.util.Random(seed)``: ``next_int()`` and ``next_int(bound)``."""

    def __init__(self, seed: int) -> None:
        self._seed = (seed ^ _MULTIPLIER) & _MASK

    def _next(self, bits: int) -> int:
        self._seed = (self._seed * _MULTIPLIER + 0xB) & _MASK
        return self._seed >> (48 - bits)

    def next_int(self, bound: int | None = None) -> int:
        """``nextInt()`` (a signed 32-bit int) or ``nextInt(bound)`` (in ``[0, bound)``)."""
        if bound is None:
            value = self._next(32)
            return value - (1 << 32) if value >= 1 << 31 else value
        if bound <= 0:
            raise ValueError("bound must be positive")
        r = self._next(31)
        if bound & (bound - 1) == 0:  # a power of two: the top bits
            return (bound * r) >> 31
        u = r
        while True:
            r = u % bound
            if u - r + (bound - 1) < 1 << 31:  # Java: no int overflow
                return r
            u = self._next(31)


def arx_test_subset(size: int, seed: int = ARX_TEST_SEED) -> list[int]:
    """The sorted row indices of ARX's ``TestAnonymizationSubset.getSubset(size)``: ``size``
    draws of ``nextInt(size)`` into a set (so fewer than ``size`` distinct rows, all among
    the first ``size``)."""
    rnd = JavaRandom(seed)
    return sorted({rnd.next_int(size) for _ in range(size)})
