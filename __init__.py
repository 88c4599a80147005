"""privgate: a privacy publishing pipeline for tabular microdata.

The repository's top-level folders are this package's subpackages: ``privgate.core`` (the
engine, no Prefect), ``privgate.validations``, ``privgate.tasks``, ``privgate.flows`` and
``privgate.deployments``.
"""
