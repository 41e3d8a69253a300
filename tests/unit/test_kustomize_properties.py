"""Properties of helmsim.kustomize and the label-selector reader on generated input: they
either succeed or fail with their own error type (kustomize's text), never anything else."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from helmsim.kube import labels
from helmsim.kustomize import KustomizeError, json6902, patches, smp
from helmsim.kustomize.select import Selector

DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "labels": {"app": "web"}},
    "spec": {
        "replicas": 1,
        "template": {
            "spec": {
                "containers": [
                    {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}], "ports": [{"containerPort": 80}]}
                ]
            }
        },
    },
}
SCHEMA = smp.schema_for("1.31.0", "apps/v1", "Deployment")

scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=5))
keys = st.sampled_from(["name", "image", "env", "value", "ports", "containerPort", "$patch", "spec", "x"])
values: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text(alphabet="ab=!,() inotx-", max_size=24))
def test_selector_parse_is_total(text: str) -> None:
    try:
        parsed = labels.parse(text)
    except labels.SelectorError:
        return
    assert isinstance(parsed.matches({"a": "b"}), bool)


def test_selector_semantics() -> None:
    sel = labels.parse("app=web,tier!=db,env in (prod, stage),!legacy,owner")
    assert sel.matches({"app": "web", "env": "prod", "owner": "x"})
    assert not sel.matches({"app": "web", "env": "prod", "owner": "x", "legacy": "1"})
    assert not sel.matches({"app": "web", "env": "dev", "owner": "x"})
    assert labels.parse("").matches({})


@settings(max_examples=300, deadline=None, derandomize=True)
@given(values)
def test_strategic_merge_is_total(patch: Any) -> None:
    obj = copy.deepcopy(DEPLOYMENT)
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": patch}
    try:
        out = smp.apply(obj, body, SCHEMA)
    except KustomizeError:
        return
    assert obj == DEPLOYMENT, "the object given is not changed"
    if out is not None:
        assert out["kind"] == "Deployment" and out["metadata"]["name"] == "web"


def test_empty_patch_changes_nothing() -> None:
    out = smp.apply(copy.deepcopy(DEPLOYMENT), {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}, SCHEMA)
    assert out == DEPLOYMENT


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.text(max_size=60))
def test_patch_text_is_total(text: str) -> None:
    try:
        patches.apply([copy.deepcopy(DEPLOYMENT)], patches.Patch(text, Selector(kind="Deployment")), lambda a, k: SCHEMA)
    except KustomizeError:
        pass


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.fixed_dictionaries({"op": st.sampled_from(["add", "remove", "replace", "test", "move", "copy", "x"]),
                                       "path": st.sampled_from(["", "/spec", "/spec/replicas", "/spec/x/y", "/metadata/labels/app", "/spec/template/spec/containers/0", "/spec/template/spec/containers/9", "bad"]),
                                       "from": st.sampled_from(["/spec/replicas", "/nope"]),
                                       "value": scalars}), max_size=3))
def test_json6902_is_total(ops: list[dict[str, Any]]) -> None:
    try:
        out = json6902.apply(DEPLOYMENT, ops)
    except KustomizeError as err:
        assert str(err)
        return
    assert isinstance(out, dict)
