"""Deployments of the release flow: a nightly schedule per policy, served or run by a worker."""
