"""The API server's field validation as Helm v4 meets it (helmsim.kube.fieldcheck / typed).

Texts: sigs.k8s.io/structured-merge-diff typed/validate.go and helpers.go (this port's source),
k8s.io/apimachinery managedfields structuredmerge.go (``failed to create typed patch object``),
apierrors NewInvalid and field.Required, helm/helm pkg/kube/client.go patchResourceServerSide.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helmsim.kube.fieldcheck import apply_error, helm_apply_error
from helmsim.kube.typed import _go_float

K = "1.31.0"
DEPLOY: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "apps", "labels": {"app": "web"}},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": "x", "ports": [{"containerPort": 80}]}]},
        },
    },
}
PREFIX = "failed to create typed patch object (apps/web; apps/v1, Kind=Deployment): "


def _with(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    obj = copy.deepcopy(DEPLOY)
    target: Any = obj
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return obj


def test_a_valid_deployment_passes() -> None:
    assert apply_error(DEPLOY, kube_version=K) is None


@pytest.mark.parametrize(
    ("path", "value", "error"),
    [
        (("spec", "replicas"), "three", ".spec.replicas: expected numeric (int or float), got string"),
        (("spec", "replicas"), [1, 2], ".spec.replicas: expected numeric (int or float), got []interface {}"),
        (("spec", "replicas"), True, ".spec.replicas: expected numeric (int or float), got bool"),
        (("spec", "paused"), "yes", ".spec.paused: expected boolean, got &{yes}"),
        (("metadata", "labels", "app"), 1, ".metadata.labels.app: expected string, got &value.valueUnstructured{Value:1}"),
        (("spec", "template"), [1], ".spec.template: expected map, got &{[1]}"),
        (("spec", "template", "spec", "containers"), {"name": "a"}, ".spec.template.spec.containers: expected list, got &{map[name:a]}"),
        (("spec", "template", "spec", "containers", 0), 5,
         ".spec.template.spec.containers: element 0: associative list with keys may not have non-map elements"),
        (("spec", "template", "spec", "containers", 0), None,
         ".spec.template.spec.containers: element 0: associative list with keys may not have a null element"),
        (("spec", "template", "spec", "containers", 0, "name"), KeyError,
         '.spec.template.spec.containers: element 0: associative list with keys has an element that omits all '
         'key fields ["name"] (and doesn\'t have default values for any key fields)'),
        (("spec", "template", "spec", "containers", 0, "ports", 0, "containerPort"), "http",
         '.spec.template.spec.containers[name="app"].ports[containerPort="http",protocol="TCP"].containerPort: '
         "expected numeric (int or float), got string"),
        (("spec", "replica"), 2, ".spec.replica: field not declared in schema"),
        (("spec", "strategy"), {"rollingUpdate": {"maxSurge": [1]}},
         ".spec.strategy.rollingUpdate.maxSurge: expected any scalar, got &{[1]}"),
    ],
)
def test_typed_patch_errors(path: tuple[Any, ...], value: Any, error: str) -> None:
    obj = _with(path, value)
    assert apply_error(obj, kube_version=K) == PREFIX + error


def test_int_or_string_and_quantity_take_either() -> None:
    obj = _with(("spec", "strategy"), {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}})
    obj["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"cpu": 1, "memory": "1Gi"}}
    assert apply_error(obj, kube_version=K) is None


def test_several_errors_are_listed_one_per_line() -> None:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "a"}, "data": {"a": 1, "b": True}}
    assert apply_error(obj, kube_version=K) == (
        "failed to create typed patch object (a/c; /v1, Kind=ConfigMap): errors:\n"
        "  .data.a: expected string, got &value.valueUnstructured{Value:1}\n"
        "  .data.b: expected string, got &value.valueUnstructured{Value:true}"
    )


def test_missing_required_fields_are_the_validation_error() -> None:
    assert apply_error(_with(("spec", "selector"), KeyError), kube_version=K) == (
        'Deployment.apps "web" is invalid: spec.selector: Required value'
    )
    assert apply_error(_with(("spec",), KeyError), kube_version=K) == (
        'Deployment.apps "web" is invalid: [spec.selector: Required value, spec.template.spec.containers: Required value]'
    )
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"image": "x"}]}}
    # the core group has no suffix; a keyed list item without its key fails the typed conversion first
    assert apply_error(pod, kube_version=K).startswith("failed to create typed patch object (/p; /v1, Kind=Pod): ")


def test_helm_wraps_the_server_error() -> None:
    err = apply_error(_with(("spec", "replicas"), "x"), kube_version=K)
    assert err is not None
    assert helm_apply_error(DEPLOY, err) == "server-side apply failed for object apps/web apps/v1, Kind=Deployment: " + err


def test_custom_resources_are_checked_against_their_crd_schema() -> None:
    crd = {
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget"},
            "versions": [{"name": "v1", "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}},
                                        "x-kubernetes-preserve-unknown-fields": True}},
            }}}],
        }
    }
    cr = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "a"}, "spec": {"size": "big", "extra": 1}}
    assert apply_error(cr, kube_version=K, crd=crd) == (
        "failed to create typed patch object (a/w; example.com/v1, Kind=Widget): .spec.size: expected numeric (int or float), got string"
    )
    assert apply_error(cr, kube_version=K, crd=None) is None  # no schema known: not checked


@pytest.mark.parametrize(
    ("value", "text"),
    [(3, "3"), (1.5, "1.5"), (100000, "100000"), (1000000, "1e+06"), (1234567, "1.234567e+06"), (0.0001, "0.0001"), (0.00001, "1e-05")],
)
def test_go_float_formatting(value: float, text: str) -> None:
    assert _go_float(value) == text


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(spec=JSON, meta=JSON)
def test_any_shape_gives_a_text_or_none_never_an_exception(spec: Any, meta: Any) -> None:
    obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec}
    result = apply_error(obj, kube_version=K)
    assert result is None or isinstance(result, str)
