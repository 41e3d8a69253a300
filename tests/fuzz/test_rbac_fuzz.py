"""The RBAC reader (helmsim.kube.rbac.Policy) on generated, malformed RBAC objects: it never
raises, and a malformed field grants nothing."""

from __future__ import annotations

from typing import Any

from fuzz_inputs_helpers import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

from helmsim.kube import rbac

_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["", "*", "get", "pods", "apps", "team-b", "admin", "Role", "ClusterRole"]))
_VALUE = st.recursive(_SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["kind", "name", "namespace", "verbs", "apiGroups", "resources", "matchLabels", "x"]), inner, max_size=3)), max_leaves=8)
_OBJECT = st.fixed_dictionaries(
    {"kind": st.sampled_from(list(rbac.RBAC_KINDS)), "apiVersion": st.just("rbac.authorization.k8s.io/v1")},
    optional={"metadata": _VALUE, "rules": _VALUE, "subjects": _VALUE, "roleRef": _VALUE, "aggregationRule": _VALUE},
)
SA = rbac.service_account_user("team-b", "team-b")


@fuzz_settings(300)
@given(st.lists(_OBJECT, max_size=5), _OBJECT)
def test_policy_of_malformed_objects_answers(objects: list[dict[str, Any]], created: dict[str, Any]) -> None:
    policy = rbac.Policy([*rbac.bootstrap_objects(), *objects])
    attrs = rbac.Attributes("get", "", "pods", "team-b", "p")
    allowed, reason = policy.authorize(SA, attrs)
    assert isinstance(allowed, bool) and isinstance(reason, str)
    err = rbac.escalation_error(policy, SA, created)
    assert err is None or isinstance(err, str)
