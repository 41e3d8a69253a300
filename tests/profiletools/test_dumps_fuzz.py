"""Property tests: the dump reader and the importer take any input to a profile or one InputError."""

from __future__ import annotations

import json
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiletools_helpers import DATA

from helmsim.errors import InputError
from helmsim.profiletools.dumps import Dump, add_text, read_dumps
from helmsim.profiletools.importer import import_profile

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 70000),
    st.floats(allow_nan=False, width=32),
    st.text(max_size=12),
    st.sampled_from(
        [
            "true",
            "false",
            "10.96.0.1",
            "10.0.0.0/16",
            "always",
            "",
            "https",
            "Established",
            "True",
            "v1",
        ]
    ),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.sampled_from(
                [
                    "name",
                    "spec",
                    "status",
                    "data",
                    "items",
                    "kind",
                    "metadata",
                    "labels",
                    "ports",
                    "port",
                    "addresses",
                    "clusterIP",
                    "group",
                    "versions",
                    "served",
                    "taints",
                    "key",
                    "effect",
                    "allocatable",
                    "provisioner",
                    "parameters",
                    "endpoints",
                    "conditions",
                    "type",
                ]
            ),
            inner,
            max_size=5,
        ),
    ),
    max_leaves=25,
)
_KINDS = [
    "Node",
    "StorageClass",
    "CSIDriver",
    "CustomResourceDefinition",
    "APIService",
    "Service",
    "EndpointSlice",
    "Endpoints",
    "ConfigMap",
    "DaemonSet",
    "Pod",
    "ServiceCIDR",
    "CiliumClusterwideNetworkPolicy",
    "NetworkPolicy",
    "Secret",
]


_KIND = read_dumps([DATA / "kind"])


@st.composite
def _objects(draw: st.DrawFn) -> dict[str, Any]:
    obj: dict[str, Any] = draw(
        st.dictionaries(
            st.sampled_from(
                [
                    "spec",
                    "status",
                    "data",
                    "provisioner",
                    "parameters",
                    "endpoints",
                    "ports",
                    "subsets",
                ]
            ),
            _values,
            max_size=4,
        )
    )
    obj["kind"] = draw(st.sampled_from(_KINDS))
    obj["apiVersion"] = "v1"
    obj["metadata"] = draw(
        st.one_of(
            st.fixed_dictionaries(
                {
                    "name": st.sampled_from(
                        [
                            "kubernetes",
                            "kube-dns",
                            "cilium-config",
                            "n1",
                            "kubeadm-config",
                            "aws-node",
                            "cilium",
                        ]
                    ),
                    "namespace": st.sampled_from(["default", "kube-system", ""]),
                },
                optional={"labels": _values, "annotations": _values, "creationTimestamp": _scalars},
            ),
            _values,
        )
    )
    return obj


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300))
def test_any_text_is_objects_or_one_input_error(text: str) -> None:
    dump = Dump()
    try:
        add_text(dump, text, "dump.yaml")
    except InputError as err:
        assert str(err).startswith("dump.yaml") and "\n" not in str(err).strip()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_objects(), max_size=8), st.booleans())
def test_any_objects_import_to_a_valid_profile_or_one_input_error(
    objects: list[dict[str, Any]], as_json: bool
) -> None:
    """Random objects next to a real kind dump: the importer never crashes."""
    dump = Dump(list(_KIND.objects), _KIND.server_version, _KIND.version_source)
    doc = {"apiVersion": "v1", "kind": "List", "items": objects}
    text = json.dumps(doc) if as_json else yaml.safe_dump(doc)
    try:
        add_text(dump, text, "extra.yaml")
        imported = import_profile(dump, name="fuzz", origin="fuzz")
    except InputError as err:
        assert "\n" not in str(err).strip()
        return
    assert imported.profile.name == "fuzz"
