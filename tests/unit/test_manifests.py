"""Rendered YAML to Resource objects: identity, namespaces, hooks, bad input."""

from __future__ import annotations

import pytest

from helmsim.errors import InputError
from helmsim.manifests import Hook, go_atoi, parse_documents, parse_hook

MANIFEST = """\
apiVersion: v1
kind: ServiceAccount
metadata:
  name: sa
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: cr
  namespace: ignored
---
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Cluster
  names: {kind: Widget, plural: widgets}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  namespace: other
  labels: {app: x, enabled: true}
  annotations:
    helm.sh/hook: " Pre-Install ,post-upgrade"
    helm.sh/hook-weight: "-5"
    helm.sh/hook-delete-policy: "Hook-Succeeded, before-hook-creation"
"""


def test_identity_source_and_namespace_defaults() -> None:
    res = parse_documents([("c/templates/a.yaml", MANIFEST)], namespace="rel").resources
    by_kind = {r.kind: r for r in res}
    sa = by_kind["ServiceAccount"]
    assert (sa.namespace, sa.ref, sa.key) == ("rel", "ServiceAccount/rel/sa", ("", "ServiceAccount", "rel", "sa"))
    assert str(sa.source) == "c/templates/a.yaml:1"
    # cluster-scoped built-in: namespace dropped
    assert by_kind["ClusterRole"].namespace is None and by_kind["ClusterRole"].ref == "ClusterRole/cr"
    # CRD in the same manifest declares Widget cluster-scoped
    assert by_kind["Widget"].namespace is None
    job = by_kind["Job"]
    assert job.namespace == "other" and job.group == "batch"
    assert job.source.index == 4 and job.source.line == 26
    assert job.labels == {"app": "x", "enabled": "true"}


def test_hook_annotations_parsed_like_helm() -> None:
    job = parse_documents([("a.yaml", MANIFEST)]).resources[-1]
    assert job.hook == Hook(
        events=("pre-install", "post-upgrade"),
        weight=-5,
        delete_policies=("hook-succeeded", "before-hook-creation"),
    )


@pytest.mark.parametrize(
    ("weight", "expected"),
    [("5", 5), ("-5", -5), ("+3", 3), (" 5", 0), ("1.5", 0), ("abc", 0), ("", 0), ("1_0", 0), ("99999999999999999999", 0)],
)
def test_non_integer_weight_is_zero(weight: str, expected: int) -> None:
    hook = parse_hook({"helm.sh/hook": "pre-install", "helm.sh/hook-weight": weight})
    assert isinstance(hook, Hook) and hook.weight == expected


def test_unknown_event_drops_the_document_and_test_success_is_test() -> None:
    text = MANIFEST.replace("post-upgrade", "crd-install")
    parsed = parse_documents([("a.yaml", text)])
    assert "Job" not in [r.kind for r in parsed.resources]
    assert parsed.dropped[0][1] == " Pre-Install ,crd-install"
    hook = parse_hook({"helm.sh/hook": "test-success"})
    assert isinstance(hook, Hook) and hook.events == ("test",)
    assert parse_hook({"helm.sh/hook": ""}) is False


def test_go_atoi() -> None:
    assert go_atoi("-12") == -12 and go_atoi("12 ") is None and go_atoi("9223372036854775807") == 2**63 - 1
    assert go_atoi("9223372036854775808") is None


def test_list_items_are_objects() -> None:
    text = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n"
    assert [r.name for r in parse_documents([("l.yaml", text)]).resources] == ["a"]


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("apiVersion: v1\nmetadata: {name: a}\n", "no kind", 1),
        ("kind: ConfigMap\nmetadata: {name: a}\n", "ConfigMap has no apiVersion", 1),
        ("a: 1\n---\n- 1\n- 2\n", "document is a list", 3),
        ("---\njust a string\n", "document is a string", 2),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n", "has no metadata.name", 1),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: [x]}\n", "labels must be a mapping", 1),
    ],
)
def test_bad_documents_name_file_and_line(text: str, message: str, line: int) -> None:
    with pytest.raises(InputError, match=message) as err:
        parse_documents([("bad.yaml", text)])
    assert (err.value.file, err.value.line) == ("bad.yaml", line)
