"""A peer on the pod's own loopback (``127.0.0.1``, ``localhost``): only a sibling container of
the same pod can answer it, and no network policy applies. helmsim took ``127.0.0.1`` as an
address outside the cluster ("assumed to resolve and to answer": a false Ready for bitnami
wordpress with ``externalDatabase.host=127.0.0.1`` and no proxy), ``localhost`` as a Service
named localhost (HS116 "does not resolve": a false alarm for the Cloud SQL proxy sidecar), and
``127.0.0.1`` under a default-deny policy as dropped (HS113, another false alarm)."""

from __future__ import annotations

from realcharts_helpers import check_chart, simulate_chart

from helmsim.cluster.running import assumed_behaviours

CHART = "loopback-peer"


def test_nothing_on_the_loopback_refuses_at_once_and_the_release_stalls() -> None:
    result = simulate_chart(CHART)
    assert result.releases[0].outcome == "Stalled"
    refused = [e for e in result.trace if e.what == "connect-refused" and e.data.get("loopback")]
    assert refused and refused[0].data["error"] == "dial tcp 127.0.0.1:3306: connect: connection refused"
    assert not any("127.0.0.1:3306 is outside the cluster" in n for n in assumed_behaviours(result.trace))
    report = check_chart(CHART, release_name=CHART)
    (finding,) = [f for f in report.findings if f.rule == "HS116"]
    assert "needs 127.0.0.1:3306, which is the pod's own loopback, where no other container of the pod listens" in (
        finding.occurrences[0].message
    )
    assert finding.fixes[0].summary.startswith("point wordpress at its peer's Service instead of the pod's own loopback")


def test_a_sidecar_declaring_the_port_answers_once_it_serves() -> None:
    result = simulate_chart(CHART, values=("ci/proxy-values.yaml",))
    assert result.releases[0].outcome == "Ready"
    connected = [e for e in result.trace if e.what == "connected" and e.data.get("target") == "127.0.0.1:3306"]
    assert connected and "container cloud-sql-proxy listens on 3306" in connected[0].message


def test_localhost_is_the_loopback_and_no_policy_applies_to_it() -> None:
    # default-deny egress selects the pod; localhost is neither a Service nor a DNS lookup
    for profile in ("kind", "cilium-always"):
        result = simulate_chart(CHART, profile, values=("ci/localhost-proxy-values.yaml",))
        assert result.releases[0].outcome == "Ready", profile
        assert not [e for e in result.trace if e.what in ("connect-denied", "connect-timeout") and "localhost" in e.message]
        assert not [e for e in result.trace if e.data.get("lookup") == "localhost"]


def test_a_sidecar_without_ports_is_taken_to_listen_and_that_is_said() -> None:
    result = simulate_chart(CHART, values=("ci/silent-values.yaml",))
    assert result.releases[0].outcome == "Ready"
    assert "127.0.0.1:3306 is taken to be served by container cloud-sql-proxy of the same pod (it declares no ports; " \
        "container wordpress of Deployment/default/wp connects to it)" in assumed_behaviours(result.trace)


def test_the_unknown_note_names_the_container_when_a_sibling_of_its_image_is_known() -> None:
    """The wordpress image's entrypoint is a catalog entry; its prepare-base-dir init container
    runs a script nothing describes. "no behaviour known for image …wordpress" read as if the
    entry did not apply."""
    notes = [n for n in assumed_behaviours(simulate_chart(CHART, values=("ci/proxy-values.yaml",)).trace) if "bitnamilegacy/wordpress" in n]
    assert notes == [
        "no behaviour known for image docker.io/bitnamilegacy/wordpress:6.8.2-debian-12-r4: assumed to start and succeed "
        "(container prepare-base-dir of Deployment/default/wp; a catalog entry describes the pod's other container of this image)"
    ]
