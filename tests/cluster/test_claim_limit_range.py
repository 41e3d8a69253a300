"""LimitRanger on PersistentVolumeClaims (plugin/pkg/admission/limitranger/admission.go
PersistentVolumeClaimValidateLimitFunc): a ``type: PersistentVolumeClaim`` item's ``min`` and
``max`` bound a claim's storage request on create and on update, with upstream's text; a claim
inside them, or a namespace without such an item, is admitted as before."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helmsim.cluster.cluster import build_cluster
from helmsim.cluster.engine import Simulation
from helmsim.cluster.profile import load_profile
from helmsim.cluster.store import ApiError

GI = 1024**3


def _sim(*limit_ranges: list[dict[str, Any]]) -> Simulation:
    sim = build_cluster(load_profile("kind"), namespaces=["apps"])
    for i, items in enumerate(limit_ranges):
        sim.store.create(
            {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": f"lr{i}", "namespace": "apps"}, "spec": {"limits": items}},
            actor="test",
        )
    return sim


def _claim(name: str, requests: dict[str, str] | None) -> dict[str, Any]:
    resources = {} if requests is None else {"requests": requests}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "apps"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": resources},
    }


def _item(min_: str = "", max_: str = "") -> dict[str, Any]:
    item: dict[str, Any] = {"type": "PersistentVolumeClaim"}
    if min_:
        item["min"] = {"storage": min_}
    if max_:
        item["max"] = {"storage": max_}
    return item


def _refused(sim: Simulation, obj: dict[str, Any]) -> str | None:
    try:
        sim.store.create(obj, actor="test")
    except ApiError as err:
        assert err.reason == "Forbidden"
        return err.message
    return None


# kubernetes/kubernetes plugin/pkg/admission/limitranger/admission_test.go
# TestPersistentVolumeClaimLimitFunc: its success and error cases (claim, min, max), as data.
UPSTREAM_CASES = [
    ("pvc-is-min-storage-request", "1Gi", "1Gi", "", True),
    ("pvc-is-max-storage-request", "1Gi", "", "1Gi", True),
    ("pvc-no-minmax-storage-request", "100Gi", "", "", True),
    ("pvc-within-minmax-storage-request", "5Gi", "1Gi", "10Gi", True),
    ("pvc-below-min-storage-request", "500Mi", "1Gi", "", False),
    ("pvc-exceeds-max-storage-request", "100Gi", "1Gi", "1Gi", False),
]


@pytest.mark.parametrize(("name", "request_", "min_", "max_", "admitted"), UPSTREAM_CASES)
def test_upstreams_claim_cases(name: str, request_: str, min_: str, max_: str, admitted: bool) -> None:
    refused = _refused(_sim([_item(min_, max_)]), _claim(name, {"storage": request_}))
    assert (refused is None) is admitted, refused


def test_the_refusals_read_as_the_api_server_writes_them() -> None:
    sim = _sim([_item("1Gi", "5Gi")])
    assert _refused(sim, _claim("big", {"storage": "8Gi"})) == (
        'persistentvolumeclaims "big" is forbidden: maximum storage usage per PersistentVolumeClaim is 5Gi, but request is 8Gi'
    )
    assert _refused(sim, _claim("small", {"storage": "512Mi"})) == (
        'persistentvolumeclaims "small" is forbidden: minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 512Mi'
    )
    # a claim with no storage request is invalid before any admission plugin sees it
    # (validation.go ValidatePersistentVolumeClaimSpec), so LimitRanger's "No request is specified" never shows
    try:
        _sim([_item("1Gi", "5Gi")]).store.create(_claim("none", {}), actor="test")
    except ApiError as err:
        assert (err.reason, err.message) == (
            "Invalid", 'PersistentVolumeClaim "none" is invalid: spec.resources[storage]: Required value'
        )
    else:
        raise AssertionError("a claim without a storage request was created")
    assert sim.store.get("PersistentVolumeClaim", "apps", "big") is None


def test_other_limit_types_and_other_namespaces_do_not_bound_claims() -> None:
    sim = _sim([{"type": "Container", "max": {"memory": "1Gi"}}, {"type": "Pod", "max": {"storage": "1Gi"}}])
    assert _refused(sim, _claim("data", {"storage": "100Gi"})) is None
    elsewhere = _sim([_item(max_="1Gi")])
    other = _claim("data", {"storage": "100Gi"})
    other["metadata"]["namespace"] = "default"
    assert _refused(elsewhere, other) is None


def test_the_first_limit_range_that_refuses_answers() -> None:
    sim = _sim([_item(max_="10Gi")], [_item(max_="5Gi")], [_item(max_="2Gi")])
    assert _refused(sim, _claim("data", {"storage": "8Gi"})) == (
        'persistentvolumeclaims "data" is forbidden: maximum storage usage per PersistentVolumeClaim is 5Gi, but request is 8Gi'
    )


def test_a_resize_beyond_the_maximum_is_refused_on_update() -> None:
    sim = _sim([_item(max_="5Gi")])
    assert _refused(sim, _claim("data", {"storage": "4Gi"})) is None
    with pytest.raises(ApiError) as err:
        sim.store.apply(_claim("data", {"storage": "8Gi"}), actor="helm")
    assert err.value.message.endswith("maximum storage usage per PersistentVolumeClaim is 5Gi, but request is 8Gi")
    assert sim.store.get("PersistentVolumeClaim", "apps", "data")["spec"]["resources"]["requests"]["storage"] == "4Gi"  # type: ignore[index]
    sim.store.apply(_claim("data", {"storage": "5Gi"}), actor="helm")  # at the bound is within it


@settings(max_examples=200, deadline=None)
@given(
    request_=st.integers(min_value=1, max_value=64 * GI),
    low=st.one_of(st.none(), st.integers(min_value=1, max_value=64 * GI)),
    high=st.one_of(st.none(), st.integers(min_value=1, max_value=64 * GI)),
)
def test_a_claim_is_refused_exactly_when_its_request_is_outside_the_bounds(request_: int, low: int | None, high: int | None) -> None:
    item: dict[str, Any] = {"type": "PersistentVolumeClaim"}
    if low is not None:
        item["min"] = {"storage": str(low)}
    if high is not None:
        item["max"] = {"storage": str(high)}
    refused = _refused(_sim([item]), _claim("data", {"storage": str(request_)}))
    outside = (low is not None and request_ < low) or (high is not None and request_ > high)
    assert (refused is not None) is outside
    if refused is not None:
        # the first bound broken is named (min before max), the request in canonical form (625000 is 625k)
        below = low is not None and request_ < low
        above = high is not None and request_ > high
        reason = refused.removeprefix('persistentvolumeclaims "data" is forbidden: ')
        # both bounds broken (min > max): both are listed, as NewAggregate joins them
        assert reason.startswith("[") is (below and above)
        assert ("minimum storage usage per PersistentVolumeClaim is " in reason) is below
        assert ("maximum storage usage per PersistentVolumeClaim is " in reason) is above
        assert ", but request is " in reason
