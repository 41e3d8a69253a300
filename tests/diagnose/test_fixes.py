"""The mechanical fixes change exactly what they say, on copies of the rendered resources."""

from __future__ import annotations

from pathlib import Path

from helmsim.cluster.behaviour import BehaviourContext, model_pod
from helmsim.cluster.profile import load_profile
from helmsim.diagnose import fixes
from helmsim.diagnose.runner import render_all, tight_profile, upper_bound
from helmsim.flux.inputs import default_helmrelease
from helmsim.simulate import ChartSource, ReleaseInput

RULES = Path(__file__).resolve().parents[1] / "fixtures" / "rules"


def _chart(rule: str, variant: str = "failing"):
    hr = default_helmrelease(rule.lower(), "default")
    inp = ReleaseInput(hr, ChartSource(str(RULES / rule / variant)))
    rendered, _ = render_all(load_profile("cilium-always"), [inp])
    return hr.ref, rendered[hr.ref]


def test_policy_as_hook_adds_the_hook_annotations_only_to_the_policy() -> None:
    ref, chart = _chart("HS101")
    out = fixes.transform_for(
        fixes.key("policy-as-hook", "CiliumNetworkPolicy/default/migrate")
    ).charts(ref, chart)
    policy = next(r for r in out.resources if r.kind == "CiliumNetworkPolicy")
    assert (
        policy.hook is not None
        and policy.hook.events == ("pre-install", "pre-upgrade")
        and policy.hook.weight == -5
    )
    assert (
        policy.body["metadata"]["annotations"]["helm.sh/hook-delete-policy"]
        == "before-hook-creation"
    )
    assert all(r.hook is None for r in out.resources if r.kind != "CiliumNetworkPolicy")
    assert (
        next(r for r in chart.resources if r.kind == "CiliumNetworkPolicy").hook is None
    )  # input untouched


def test_init_wait_is_a_bounded_loop_the_behaviour_model_recognises() -> None:
    ref, chart = _chart("HS101")
    out = fixes.init_wait("Job/default/migrate", "kube-apiserver").charts(ref, chart)
    job = next(r for r in out.resources if r.kind == "Job")
    init = job.body["spec"]["template"]["spec"]["initContainers"][0]
    assert (
        init["command"][-1]
        == "timeout 120 sh -c 'until kubectl get --raw /version; do sleep 2; done'"
    )
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": job.body["spec"]["template"]["spec"],
    }
    model = model_pod(pod, BehaviourContext())
    wait = model.container("wait-for-network").wait
    assert wait is not None and wait.bound == 120 and str(wait.target) == "kube-apiserver"


def test_claim_via_hook_replaces_the_claim_by_a_post_hook_job() -> None:
    ref, chart = _chart("HS102")
    out = fixes.transform_for(
        fixes.key("claim-via-hook", "PersistentVolumeClaim/default/cache", "hs102", "default")
    ).charts(ref, chart)
    kinds = sorted((r.kind, r.hook.weight if r.hook else None) for r in out.resources)
    assert kinds == [
        ("ClusterRole", -5),
        ("ClusterRoleBinding", -5),
        ("Job", 0),
        ("ServiceAccount", -5),
    ]
    job = next(r for r in out.resources if r.kind == "Job")
    assert job.hook.events == ("post-install", "post-upgrade")
    assert (
        '"kind":"PersistentVolumeClaim"'
        in job.body["spec"]["template"]["spec"]["containers"][0]["args"][0]
    )


def test_raise_timeout_changes_the_helmrelease_only() -> None:
    hr = default_helmrelease("app", "default")
    other = default_helmrelease("other", "default")
    fx = fixes.transform_for(fixes.key("timeout", hr.ref, 660))
    assert fx.helmreleases(hr).spec.timeout == 660 and fx.helmreleases(other) == other


def test_tight_profile_takes_the_upper_bound_of_policy_propagation() -> None:
    prof = load_profile("cilium-always")
    assert upper_bound(prof.cni.policy_propagation_seconds) == 2.0
    assert tight_profile(prof).latency("policy_propagation").nominal() == 2.0
    assert prof.latency("policy_propagation").nominal() != 2.0  # the original is unchanged


def test_the_egress_fix_adds_dns_only_when_the_need_is_not_dns_itself() -> None:
    from helmsim.diagnose.rules.network import _allow_fix

    assert "allows egress to dns, created" in _allow_fix("Job/kc/cli", "dns").summary
    assert "svc/kc/db:5432 (and DNS), created" in _allow_fix("Job/kc/cli", "svc/kc/db:5432").summary
