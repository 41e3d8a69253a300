"""A release Ready while a container's every connection is still dropped (no probe waits for it):
HS113 warns, it does not pass silently (tests/realcharts/sidecar-denied-after-ready)."""

from __future__ import annotations

from helmsim.cluster.profile import load_profile
from helmsim.diagnose.check import CheckOptions, run_check
from helmsim.release_inputs import build_inputs
from realcharts_helpers import HERE


def _findings(profile: str) -> list:
    releases = build_inputs(str(HERE / "sidecar-denied-after-ready"))
    report = run_check(releases, [load_profile(profile)], options=CheckOptions())
    return [f for f in report.findings if f.rule == "HS113"]


def test_under_default_deny_the_ready_release_carries_a_warning() -> None:
    (finding,) = _findings("cilium-always")
    assert finding.severity.name == "warning"
    assert "dropped by t=" in finding.message and "when the release was already Ready" in finding.message
    assert finding.message.startswith("Deployment/default/dashboards needs kube-apiserver but under cilium-always")


def test_where_the_egress_is_allowed_there_is_nothing_to_say() -> None:
    assert _findings("kind") == []
