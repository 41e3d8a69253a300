"""Exporters of SaaS APIs and of Google Cloud, each read from its source:

- the Fastly exporter exits 1 without a token; its first fetches from api.fastly.com only warn
  when they fail (fastly/fastly-exporter cmd/fastly-exporter/main.go main, v10);
- the Pingdom exporter exits 1 without PINGDOM_API_TOKEN and calls Pingdom only on a scrape
  (kokuwaio/pingdom-exporter cmd/pingdom-exporter/main.go);
- prometheus-to-sd reads its GCE config from the metadata server unless --project-id is given,
  else glog.Fatalf, exit 255 (GoogleCloudPlatform/k8s-stackdriver prometheus-to-sd/main.go,
  config/gce_config.go).

With no entries, helmsim took each image to start and serve: prometheus-to-sd's chart defaults
were Ready under kind, a false Ready, and a missing token went unseen."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from helmsim.cluster.catalog import CheckSpec, EntrySpec
from realcharts_helpers import catalog_entries, check_chart, restarts, simulate_chart

SAAS = "saas-token-exporters"
PUSHER = "gce-metadata-pusher"


def _notes(result: object) -> list[str]:
    from helmsim.cluster.running import assumed_behaviours

    return assumed_behaviours(result.trace)  # type: ignore[attr-defined]


def test_with_tokens_both_serve_even_behind_default_deny() -> None:
    for profile in ("kind", "cilium-always"):
        result = simulate_chart(SAAS, profile)
        assert result.releases[0].outcome == "Ready", profile
        assert all(v == 0 for v in restarts(result).values())
        assert catalog_entries(result, "exporter") == {"fastly-exporter", "pingdom-exporter"}
        assert not any("no behaviour known" in n for n in _notes(result))


def test_an_entrys_assumption_is_said_once_in_the_report() -> None:
    result = simulate_chart("cloudsql-sidecar", "kind")
    said = [n for n in _notes(result) if "catalog entry cloud-sql-proxy-connection-test" in n]
    assert len(said) == 1
    assert said[0].startswith("the Cloud SQL instance and Google's token endpoint answer as the Admin API does")


def test_without_tokens_both_exit_at_once_and_hs116_names_each_variable() -> None:
    report = check_chart(SAAS, "kind", release_name=SAAS, values=("ci/no-token-values.yaml",))
    messages = sorted(f.message for f in report.findings if f.rule == "HS116")
    assert len(messages) == 2
    assert "needs FASTLY_API_TOKEN or FASTLY_EXPORTER_TOKEN in its environment, which its pod spec does not set" in messages[0]
    assert "-token or FASTLY_API_TOKEN is required" in messages[0]
    assert "needs PINGDOM_API_TOKEN in its environment" in messages[1]


def test_prometheus_to_sd_off_gke_dies_on_its_gce_config() -> None:
    result = simulate_chart(PUSHER, "kind")
    assert result.releases[0].outcome == "Stalled"
    assert catalog_entries(result, "pusher") == {"prometheus-to-sd"}
    assert max(restarts(result).values()) > 0
    # the check is decided from the profile, with no call to the API server: behind default-deny
    # it fails the same way (before, the check dialled the API server, dropped, and the pod,
    # without probes, counted as Ready while the dial hung)
    denied = simulate_chart(PUSHER, "cilium-always")
    assert denied.releases[0].outcome == "Stalled"
    assert not any(e.what == "connect-denied" for e in denied.trace)
    report = check_chart(PUSHER, "kind", release_name=PUSHER)
    (hs116,) = [f for f in report.findings if f.rule == "HS116"]
    assert (
        "needs a GCE metadata server answering the pods (a fact of the cluster's setup), which the cluster does not provide"
        in hs116.message
    )
    assert "Failed to get GCE config: Not running on GCE." in hs116.message and "exits 255" in hs116.message
    assert hs116.fixes[0].summary == (
        "run it on a cluster that provides a GCE metadata server answering the pods (a profile saying so), "
        "or configure the program so that it does not need it"
    )


def test_prometheus_to_sd_with_dynamic_sources_needs_the_api_server() -> None:
    result = simulate_chart(PUSHER, "gke-dataplane-v2", values=("ci/dynamic-values.yaml",))
    assert catalog_entries(result, "pusher") == {"prometheus-to-sd-dynamic-sources"}
    assert result.releases[0].outcome == "Ready"
    denied = simulate_chart(PUSHER, "cilium-always", values=("ci/dynamic-values.yaml",))
    assert any(e.what == "connect-denied" and "kube-apiserver" in e.message for e in denied.trace)


@pytest.mark.parametrize("profile", ["gke-dataplane-v2", "gke-autopilot"])
@pytest.mark.parametrize("values", [(), ("ci/project-values.yaml",)])
def test_prometheus_to_sd_on_gke_pushes(profile: str, values: tuple[str, ...]) -> None:
    result = simulate_chart(PUSHER, profile, values=values)
    assert result.releases[0].outcome == "Ready"
    assert all(v == 0 for v in restarts(result).values())


def test_prometheus_to_sd_with_a_project_needs_credentials_off_gke() -> None:
    report = check_chart(PUSHER, "kind", release_name=PUSHER, values=("ci/project-values.yaml",))
    (hs116,) = [f for f in report.findings if f.rule == "HS116"]
    assert "needs GOOGLE_APPLICATION_CREDENTIALS in its environment, or a GCE metadata server" in hs116.message
    assert simulate_chart(PUSHER, "kind", values=("ci/project-key-values.yaml",)).releases[0].outcome == "Ready"


def test_a_fact_check_stands_alone_and_assumes_is_a_list_of_sentences() -> None:
    assert CheckSpec.model_validate({"fact": "a GCE metadata server answering the pods"}).fact
    with pytest.raises(ValidationError, match="exactly one of"):
        CheckSpec.model_validate({"fact": "x", "env": ["A"]})
    with pytest.raises(ValidationError):
        EntrySpec.model_validate(
            {"name": "x", "summary": "x", "sources": ["a/b c: d"], "match": {"image": ["x"]}, "assumes": "not a list"}
        )
