"""Resource quantities (k8s.io/apimachinery pkg/api/resource/quantity.go) and pod requests
(k8s.io/component-helpers resource/helpers.go PodRequests)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helmsim.kube.quantity import (
    FORMAT_ERROR,
    format_amount,
    milli_value,
    parse_quantity,
    scheduler_amount,
)
from helmsim.kube.requests import pod_requests


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("100m", Decimal("0.1")),
        ("1", Decimal(1)),
        ("1.5Gi", Decimal(1610612736)),
        ("16Gi", Decimal(17179869184)),
        ("512Mi", Decimal(536870912)),
        ("1k", Decimal(1000)),
        ("1M", Decimal(10**6)),
        ("2e3", Decimal(2000)),
        ("1E", Decimal(10**18)),
        (".5", Decimal("0.5")),
        (2, Decimal(2)),
        (0.25, Decimal("0.25")),
    ],
)
def test_quantities_parse_as_kubernetes_reads_them(text: object, expected: Decimal) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("bad", ["", "1Gb", "abc", "1.2.3", "--1", "1 Gi", True, None, [], "1e"])
def test_bad_quantities_are_refused_with_the_api_servers_text(bad: object) -> None:
    with pytest.raises(ValueError) as err:
        parse_quantity(bad)
    assert str(err.value) == FORMAT_ERROR


def test_scheduler_rounds_up_as_milli_value_and_value_do() -> None:
    assert milli_value(parse_quantity("1.0001m")) == 2
    assert scheduler_amount("cpu", parse_quantity("250m")) == 250
    assert scheduler_amount("memory", parse_quantity("0.5")) == 1
    assert format_amount("cpu", 1930) == "1930m" and format_amount("cpu", 2000) == "2"
    assert format_amount("memory", 6903 * 2**20) == "6903Mi"


@given(st.text(max_size=30))
def test_any_text_parses_or_fails_with_the_format_error(text: str) -> None:
    try:
        q = parse_quantity(text)
    except ValueError as err:
        assert str(err) == FORMAT_ERROR or "exponent" in str(err)
    else:
        assert isinstance(q, Decimal) and q.is_finite()


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(["", "m", "k", "Ki", "Mi", "Gi", "M", "G"]))
def test_integer_quantities_round_trip_through_their_suffix(n: int, suffix: str) -> None:
    q = parse_quantity(f"{n}{suffix}")
    assert q == parse_quantity(str(n)) * parse_quantity(f"1{suffix}")


def test_pod_requests_sum_containers_and_take_the_init_peak() -> None:
    spec = {
        "initContainers": [
            {"name": "migrate", "resources": {"requests": {"cpu": "2", "memory": "64Mi"}}},
            {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "100m"}}},
            {"name": "late", "resources": {"requests": {"cpu": "1"}}},
        ],
        "containers": [
            {"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "128Mi"}}},
            {"name": "b", "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}, "requests": {"memory": "256Mi"}}},
        ],
        "overhead": {"cpu": "10m"},
    }
    req = pod_requests(spec)
    # app: 250m + 500m (limit as request) + sidecar 100m = 850m; init peak: 2 (migrate alone)
    assert req["cpu"] == Decimal("2.01")
    assert req["memory"] == Decimal((128 + 256) * 2**20)


def test_pods_without_requests_request_nothing() -> None:
    assert pod_requests({"containers": [{"name": "a", "image": "x"}]}) == {}
