"""The rule families; importing this package registers every rule (see ``registry``)."""

from __future__ import annotations

from helmsim.diagnose.rules import (
    hooks,
    images,
    jobs,
    network,
    platform,
    pods,
    podsecurity,
    programs,
    quota,
    rbac,
    releases,
    storage,
    upgrade,
)

__all__ = ["hooks", "images", "jobs", "network", "platform", "pods", "podsecurity", "programs", "quota", "rbac", "releases", "storage", "upgrade"]
