"""Names a package exports but imports only when first used (PEP 562 module ``__getattr__``).

Why: ``privgate anonymize`` imports :mod:`privgate.core.privacy` and :mod:`privgate.core.scale`,
whose packages also export pandas- or Dask-bound names the command never uses; importing them
with the package would load pandas (about 48 MiB of the command's peak at 1M rows). A package
lists those names per module and sets ``__getattr__ = lazy_names(__name__, {...})``; the first
use imports the module and keeps the name in the package, so later uses cost nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from importlib import import_module

__all__ = ["lazy_names"]


def lazy_names(
    package: str, names_by_module: Mapping[str, Sequence[str]]
) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``package`` that imports each listed name on first use.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    names_by_module : mapping of str to sequence of str
        For each module (its full name), the names it provides.
    """
    module_of = {name: module for module, names in names_by_module.items() for name in names}

    def __getattr__(name: str) -> object:
        if name in module_of:
            value = getattr(import_module(module_of[name]), name)
            vars(sys.modules[package])[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
