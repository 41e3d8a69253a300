"""The Kustomization reader (helmsim.flux.kustomization.parse_kustomization) on generated
objects: a Kustomization or a one-line InputError, never another exception."""

from __future__ import annotations

from typing import Any

from fuzz_inputs_helpers import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

from helmsim.errors import InputError
from helmsim.flux.kustomization import parse_kustomization

_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-3, 100), st.sampled_from(["", "1m", "10m", "x", "./apps", "true"]))
_KEYS = st.sampled_from(["interval", "path", "wait", "timeout", "retryInterval", "dependsOn", "healthChecks",
                         "healthCheckExprs", "name", "kind", "current", "apiVersion", "bogus"])
_VALUE = st.recursive(_SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=4)), max_leaves=10)


@fuzz_settings(300)
@given(st.dictionaries(_KEYS, _VALUE, max_size=6), _VALUE)
def test_reads_or_refuses(spec: dict[str, Any], meta: Any) -> None:
    obj = {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization", "metadata": meta, "spec": spec}
    try:
        ks = parse_kustomization(obj, source="ks.yaml", line=3)
    except InputError as err:
        assert "\n" not in str(err) and err.file == "ks.yaml"
        return
    assert ks.timeout >= 30.0
