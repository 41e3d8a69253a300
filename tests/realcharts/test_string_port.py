"""A port written as a string is a port name (IANA_SVC_NAME), which the API server validates:
the cases of k8s.io/apimachinery pkg/util/validation/validation_test.go TestIsValidPortName,
ported as data, and the objects refused for them (discourse's quoted NetworkPolicy port)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from realcharts_helpers import simulate_chart

from helmsim.cluster.admission import port_name_errors

GOOD = ["telnet", "re-mail-ck", "pop3", "a", "a-1", "1-a", "a-1-b-2-c", "1-a-2-b-3"]
BAD = ["longerthan15characters", "", "a" * 16, "12345", "1-2-3-4", "-begin", "end-", "two--hyphens", "whois++"]


@pytest.mark.parametrize("name", GOOD)
def test_valid_port_names(name: str) -> None:
    assert port_name_errors(name) == []


@pytest.mark.parametrize("name", BAD)
def test_invalid_port_names(name: str) -> None:
    assert port_name_errors(name)


@given(st.integers(min_value=0, max_value=10**9))
def test_a_number_written_as_a_string_is_never_a_port_name(n: int) -> None:
    assert "must contain at least one letter (a-z)" in port_name_errors(str(n))


def test_a_quoted_network_policy_port_fails_the_install() -> None:
    result = simulate_chart("string-port")
    (release,) = result.releases
    assert release.outcome == "Stalled"
    assert release.message.endswith(
        'NetworkPolicy.networking.k8s.io "app" is invalid: spec.egress[0].ports[0].port: '
        'Invalid value: "5432": must contain at least one letter (a-z)'
    )


def test_a_port_name_installs() -> None:
    result = simulate_chart("string-port", sets=("port=http",))
    assert result.releases[0].outcome == "Ready"


def test_a_service_target_port_of_digits_is_refused() -> None:
    from helmsim.cluster.admission import _validate_port_names
    from helmsim.cluster.store import ApiError

    svc = {"metadata": {"name": "tp-str"}, "spec": {"ports": [{"port": 80, "targetPort": "8080"}, {"port": 81, "targetPort": "http"}]}}
    with pytest.raises(ApiError) as err:
        _validate_port_names(svc, "Service", "v1")
    # kubectl apply --dry-run=server of targetPort: "8080"
    assert err.value.message == (
        'Service "tp-str" is invalid: spec.ports[0].targetPort: Invalid value: "8080": must contain at least one letter (a-z)'
    )


def test_check_points_at_the_refused_object_and_says_how_to_write_the_port() -> None:
    """HS100 named Chart.yaml:1 for the install Helm's apply error failed (bitnami odoo's quoted
    policy port)."""
    from realcharts_helpers import check_chart

    report = check_chart("string-port", "cilium-always", release_name="r")
    (finding,) = [f for f in report.findings if f.rule == "HS100"]
    assert finding.location.file.endswith("templates/np.yaml") and finding.location.line == 2
    assert [x.summary for x in finding.fixes] == [
        "write the port of NetworkPolicy/default/app as a number: quoted, it is a port name, which needs a letter"
    ]
