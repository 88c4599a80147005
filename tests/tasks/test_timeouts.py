"""Every Prefect task of privgate declares a timeout."""

from __future__ import annotations


def test_every_task_has_a_timeout():
    """A stage that hangs (a stuck file system, a runaway search) must end, not hold the
    nightly run forever: every Prefect task of privgate declares a timeout."""
    import importlib
    import pkgutil

    from prefect import Task

    import privgate.tasks

    found = {}
    for module in pkgutil.iter_modules(privgate.tasks.__path__):
        loaded = importlib.import_module(f"privgate.tasks.{module.name}")
        for value in vars(loaded).values():
            if isinstance(value, Task) and value.__module__ == loaded.__name__:
                found[value.name] = value.timeout_seconds
    assert len(found) >= 19, sorted(found)  # the walk finds them (tiers run in "anonymize")
    assert {name for name, seconds in found.items() if not seconds} == set(), found
