"""Packaging glue: the repository root is the ``privgate`` package.

The project keeps its top-level folders (core, tasks, flows, validations, deployments) in the
repository, but installs them under one import name, so site-packages gains exactly one
top-level package, ``privgate``, and none of the generic names. Everything else is declared in
``pyproject.toml``.
"""

from setuptools import find_packages, setup

FOLDERS = ["core", "tasks", "flows", "validations", "deployments"]

setup(
    packages=["privgate"]
    + [f"privgate.{name}" for name in find_packages(include=[f"{f}*" for f in FOLDERS])],
)
