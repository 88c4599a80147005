"""The lazy names of :mod:`privgate.core.risk` and :mod:`privgate.core.scale` (PEP 562)."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_a_lazy_name_is_its_module_object_and_is_kept_in_the_package() -> None:
    import privgate.core.risk as risk
    from privgate.core.risk._analysis import analyse

    assert risk.analyse is analyse
    assert vars(risk)["analyse"] is analyse  # looked up once, then an ordinary attribute


def test_an_unknown_name_is_an_attribute_error_naming_the_package() -> None:
    import privgate.core.scale as scale

    with pytest.raises(AttributeError, match="'privgate.core.scale' has no attribute 'nope'"):
        scale.nope  # noqa: B018


def test_importing_the_packages_loads_no_lazy_module() -> None:
    """In a fresh process: the packages import, their pandas-bound modules stay unloaded."""
    code = (
        "import sys, privgate.core.risk, privgate.core.scale\n"
        "print(sorted(m for m in ('pandas', 'dask', 'privgate.core.risk._analysis') "
        "if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
