"""Prefect tasks: one thin wrapper per pipeline stage over ``core`` and ``validations``."""
