"""Utility metrics: how much information a release keeps.

Each metric has its own module and its definition in its docstring.
"""

from __future__ import annotations

from core.metrics._precision import precision

__all__ = ["precision"]
