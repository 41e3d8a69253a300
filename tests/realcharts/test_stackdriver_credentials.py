"""The Stackdriver exporter builds its Google client at start from Application Default
Credentials and exits 1 without them (prometheus-community/stackdriver_exporter
stackdriver_exporter.go main, createMonitoringService): a key file named by
GOOGLE_APPLICATION_CREDENTIALS, or GKE's metadata server (golang/oauth2 google/default.go).
With no entry for the image, helmsim took it to start and serve anywhere:
prometheus-stackdriver-exporter's defaults (no key) were Ready under kind, a false Ready."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from helmsim.cluster.catalog import CheckSpec
from helmsim.cluster.profile import load_profile
from realcharts_helpers import catalog_entries, check_chart, restarts, simulate_chart

CHART = "stackdriver-credentials"


def test_without_a_key_off_google_cloud_it_crash_loops() -> None:
    result = simulate_chart(CHART, "kind")
    assert result.releases[0].outcome == "Stalled"
    assert catalog_entries(result, "exporter") == {"stackdriver-exporter"}
    assert max(restarts(result).values()) > 0
    report = check_chart(CHART, "kind", release_name="stackdriver-credentials")
    (hs116,) = [f for f in report.findings if f.rule == "HS116"]
    assert (
        "needs GOOGLE_APPLICATION_CREDENTIALS in its environment, or a GCE metadata server answering the pods "
        "(a fact of the cluster's setup), which its pod spec does not set and the cluster does not provide"
    ) in hs116.message
    assert "could not find default credentials" in hs116.message
    assert hs116.fixes[0].summary.startswith("set GOOGLE_APPLICATION_CREDENTIALS in the container's env")


@pytest.mark.parametrize("profile", ["gke-dataplane-v2", "gke-autopilot"])
def test_on_gke_the_metadata_server_gives_it_credentials(profile: str) -> None:
    assert load_profile(profile).metadata_server == "gce"
    result = simulate_chart(CHART, profile)
    assert result.releases[0].outcome == "Ready"
    assert all(v == 0 for v in restarts(result).values())


def test_a_mounted_key_is_enough_anywhere() -> None:
    assert load_profile("kind").metadata_server == "none"
    result = simulate_chart(CHART, "kind", values=("ci/key-values.yaml",))
    assert result.releases[0].outcome == "Ready"


def test_or_state_goes_with_an_env_check_only() -> None:
    assert CheckSpec.model_validate({"env": ["A"], "orState": "a fact"}).or_state == "a fact"
    with pytest.raises(ValidationError, match="orState goes with env"):
        CheckSpec.model_validate({"state": "x", "orState": "a fact"})
