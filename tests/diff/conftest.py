"""Fixtures of the diff tests (defined in diffrepo.py)."""

from diffrepo import commit, repo  # noqa: F401
