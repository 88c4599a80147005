"""Prefect flows composing the tasks, and the ``privgate`` command line."""
