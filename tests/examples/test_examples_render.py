"""The example charts of the two seed incidents render each shape their ci/ values promise.

Each values file under ``examples/<chart>/ci/`` selects the broken shape or one proposed fix;
later stages (plan, simulate, check) rely on these shapes, so each is asserted here on the
objects Helm's engine renders.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from helmsim.errors import InputError
from helmsim.manifests import Resource, parse_documents
from helmsim.render import RenderOptions, load_values, render_chart

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SEED1 = EXAMPLES / "seed1-migrate-race"
SEED2 = EXAMPLES / "seed2-hf-cache"

RELEASE = "agent-platform-connectivity"
RELEASE_NS = "agent-platform"
CILIUM_CNP = "cilium.io/v2/CiliumNetworkPolicy"
MIGRATE = f"{RELEASE}-agent-manager-migrate"
HOOKS = f"{RELEASE}-hooks"
CACHE_JOB = f"{RELEASE}-model-serving-cache"
SSA_APPLY = f"kubectl apply --server-side --force-conflicts --field-manager={RELEASE} -f -"


def render(
    chart: Path,
    *values_files: str,
    api_versions: Iterable[str] = (),
    sets: Iterable[str] = (),
) -> list[Resource]:
    """Render ``chart`` as Flux would release it (agent-platform/agent-platform-connectivity)."""
    files = [chart / "ci" / name for name in values_files]
    opts = RenderOptions(
        release_name=RELEASE,
        namespace=RELEASE_NS,
        values=load_values(files, list(sets)),
        api_versions=tuple(api_versions),
    )
    rendered = render_chart(chart, opts)
    parsed = parse_documents([(f.path, f.content) for f in rendered.files], namespace=RELEASE_NS)
    assert parsed.dropped == [], "no document may be dropped for an unknown hook event"
    return parsed.resources


def find(resources: list[Resource], kind: str, name: str | None = None) -> list[Resource]:
    return [r for r in resources if r.kind == kind and (name is None or r.name == name)]


def one(resources: list[Resource], kind: str, name: str | None = None) -> Resource:
    found = find(resources, kind, name)
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {[r.ref for r in found]}"
    return found[0]


def pod_spec(res: Resource) -> dict[str, Any]:
    return res.body["spec"]["template"]["spec"]


def pod_labels(res: Resource) -> dict[str, str]:
    return res.body["spec"]["template"]["metadata"]["labels"]


def selects(match_labels: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in match_labels.items())


# --- seed 1: the migrate Job and its network policy ------------------------------------------

EXPECTED_JOB_HASH = hashlib.sha256(b"4.7.0/kagent.dev/v1alpha2/kagent.dev/v2").hexdigest()[:8]


def migrate_job(resources: list[Resource]) -> Resource:
    jobs = [r for r in find(resources, "Job") if r.name.startswith(f"{MIGRATE}-")]
    assert len(jobs) == 1, [r.ref for r in resources]
    return jobs[0]


def assert_migrate_job(resources: list[Resource]) -> Resource:
    """The migrate Job as seed 1 describes it, with an identity that talks to the apiserver."""
    job = migrate_job(resources)
    assert job.name == f"{MIGRATE}-{EXPECTED_JOB_HASH}"
    assert job.namespace == "kagent"
    assert job.body["spec"]["backoffLimit"] == 2
    spec = pod_spec(job)
    assert spec["restartPolicy"] == "Never"
    (container,) = spec["containers"]
    assert container["image"] == "ghcr.io/example/agent-manager:4.7.0"
    assert container["args"][0] == "migrate"
    assert "--request-timeout=32s" in container["args"]
    # Its ServiceAccount is bound to a Role over kagent.dev objects: it talks to the apiserver.
    assert spec["serviceAccountName"] == MIGRATE
    one(resources, "ServiceAccount", MIGRATE)
    binding = one(resources, "RoleBinding", MIGRATE)
    assert binding.body["subjects"] == [
        {"kind": "ServiceAccount", "name": MIGRATE, "namespace": "kagent"}
    ]
    role = one(resources, "Role", binding.body["roleRef"]["name"])
    kagent_rules = [r for r in role.body["rules"] if "kagent.dev" in r["apiGroups"]]
    assert kagent_rules and {"get", "list", "patch"} <= set(kagent_rules[0]["verbs"])
    return job


def assert_cilium_policy(resources: list[Resource], *, hook: bool) -> Resource:
    """The CNP seed 1 names: selects the Job's pods; DNS (with DNS rules), apiserver, FQDNs."""
    assert find(resources, "NetworkPolicy") == []
    cnp = one(resources, "CiliumNetworkPolicy", MIGRATE)
    assert cnp.api_version == "cilium.io/v2" and cnp.namespace == "kagent"
    assert cnp.is_hook is hook
    job = migrate_job(resources)
    assert selects(cnp.body["spec"]["endpointSelector"]["matchLabels"], pod_labels(job))
    egress = cnp.body["spec"]["egress"]
    dns = next(rule for rule in egress if "toEndpoints" in rule)
    assert dns["toEndpoints"][0]["matchLabels"]["k8s:k8s-app"] == "kube-dns"
    assert dns["toPorts"][0]["ports"][0]["port"] == "53"
    assert dns["toPorts"][0]["rules"]["dns"] == [{"matchPattern": "*"}]
    assert any(rule.get("toEntities") == ["kube-apiserver"] for rule in egress)
    fqdn = next(rule for rule in egress if "toFQDNs" in rule)
    assert {"matchName": "api.github.com"} in fqdn["toFQDNs"]
    assert fqdn["toPorts"][0]["ports"] == [{"port": "443", "protocol": "TCP"}]
    return cnp


def assert_kubernetes_policy(resources: list[Resource], *, hook: bool) -> Resource:
    """The Kubernetes flavour: DNS, the apiserver endpoint on 6443 by ipBlock, 443 anywhere."""
    assert find(resources, "CiliumNetworkPolicy") == []
    netpol = one(resources, "NetworkPolicy", MIGRATE)
    assert netpol.api_version == "networking.k8s.io/v1" and netpol.namespace == "kagent"
    assert netpol.is_hook is hook
    spec = netpol.body["spec"]
    assert spec["policyTypes"] == ["Egress"]
    assert selects(spec["podSelector"]["matchLabels"], pod_labels(migrate_job(resources)))
    ports = {
        (p["port"], p["protocol"], peer.get("ipBlock", {}).get("cidr"))
        for rule in spec["egress"]
        for p in rule["ports"]
        for peer in rule["to"]
    }
    assert (53, "UDP", None) in ports and (53, "TCP", None) in ports
    assert (6443, "TCP", "172.18.0.2/32") in ports
    assert (443, "TCP", "0.0.0.0/0") in ports
    return netpol


def seed1_default_cilium() -> None:
    resources = render(SEED1, "default-values.yaml", api_versions=[CILIUM_CNP])
    job = assert_migrate_job(resources)
    assert not job.is_hook, "the migrate Job is deliberately not a hook"
    assert "initContainers" not in pod_spec(job)
    assert_cilium_policy(resources, hook=False)


def seed1_default_without_cilium() -> None:
    resources = render(SEED1, "default-values.yaml")
    assert not assert_migrate_job(resources).is_hook
    assert_kubernetes_policy(resources, hook=False)


def seed1_cilium_forced() -> None:
    resources = render(SEED1, "cilium-flavour-values.yaml")
    assert_cilium_policy(resources, hook=False)


def seed1_kubernetes_flavour() -> None:
    # Forced even where Cilium is served.
    resources = render(SEED1, "kubernetes-flavour-values.yaml", api_versions=[CILIUM_CNP])
    assert not assert_migrate_job(resources).is_hook
    assert_kubernetes_policy(resources, hook=False)


def seed1_init_wait() -> None:
    resources = render(SEED1, "init-wait-values.yaml", api_versions=[CILIUM_CNP])
    job = assert_migrate_job(resources)
    assert not job.is_hook
    (init,) = pod_spec(job)["initContainers"]
    command = init["command"]
    assert command[:4] == ["timeout", "120", "sh", "-c"], "the wait is bounded"
    assert "until kubectl get --raw /version" in command[4]
    assert_cilium_policy(resources, hook=False)


def seed1_policy_hook() -> None:
    resources = render(SEED1, "policy-hook-values.yaml", api_versions=[CILIUM_CNP])
    assert not assert_migrate_job(resources).is_hook
    cnp = assert_cilium_policy(resources, hook=True)
    assert cnp.hook is not None
    assert cnp.hook.events == ("pre-install", "pre-upgrade")
    assert cnp.hook.weight == -5
    assert cnp.hook.delete_policies == ("before-hook-creation",)


def seed1_post_upgrade_hook() -> None:
    resources = render(SEED1, "post-upgrade-hook-values.yaml", api_versions=[CILIUM_CNP])
    job = assert_migrate_job(resources)
    assert job.hook is not None
    assert job.hook.events == ("post-install", "post-upgrade")
    assert "hook-succeeded" in job.hook.delete_policies
    assert_cilium_policy(resources, hook=False)


def seed1_migration_disabled() -> None:
    resources = render(SEED1, "migration-disabled-values.yaml", api_versions=[CILIUM_CNP])
    assert find(resources, "Job") == []
    assert find(resources, "CiliumNetworkPolicy") == [] and find(resources, "NetworkPolicy") == []
    assert [r for r in resources if r.name == MIGRATE] == []
    one(resources, "Deployment", f"{RELEASE}-agent-manager")


def seed1_previous() -> None:
    resources = render(SEED1, "previous-values.yaml", api_versions=[CILIUM_CNP])
    assert find(resources, "Job") == []
    assert find(resources, "CiliumNetworkPolicy") == []
    deploy = one(resources, "Deployment", f"{RELEASE}-agent-manager")
    assert pod_spec(deploy)["containers"][0]["image"] == "ghcr.io/example/agent-manager:4.5.3"


# --- seed 2: the Hugging Face cache claim ----------------------------------------------------


def cache_job_script(job: Resource) -> str:
    (container,) = pod_spec(job)["containers"]
    return " ".join([*container.get("command", []), *container.get("args", [])])


def applied_claim(job: Resource) -> dict[str, Any]:
    """The one-line JSON claim the hook Job pipes into ``kubectl apply``."""
    match = re.search(r"claim=('[^'\n]*')", cache_job_script(job))
    assert match, "the hook carries the claim as an inline JSON manifest"
    return json.loads(shlex.split(match.group(1))[0])


def assert_no_consumer(resources: list[Resource], claim: str) -> None:
    for res in resources:
        template = res.body.get("spec", {}).get("template", {})
        for volume in template.get("spec", {}).get("volumes", []) or []:
            assert volume.get("persistentVolumeClaim", {}).get("claimName") != claim, res.ref


def assert_no_cache_objects(resources: list[Resource]) -> None:
    assert find(resources, "PersistentVolumeClaim") == []
    assert find(resources, "Job") == []
    assert [r for r in resources if r.name == HOOKS] == []


def serving_config(resources: list[Resource]) -> dict[str, str]:
    return one(resources, "ConfigMap", "model-serving-config").body["data"]


def seed2_release_resource() -> None:
    resources = render(SEED2, "default-values.yaml")
    pvc = one(resources, "PersistentVolumeClaim", "hf-cache")
    assert pvc.namespace == "model-serving"
    assert not pvc.is_hook
    assert pvc.keep_policy
    assert pvc.body["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert pvc.body["spec"]["resources"]["requests"]["storage"] == "500Gi"
    assert "storageClassName" not in pvc.body["spec"], "unset: the cluster's default class"
    assert "volumeName" not in pvc.body["spec"]
    # Nothing of the release consumes it: under WaitForFirstConsumer it cannot bind.
    assert_no_consumer(resources, "hf-cache")
    assert find(resources, "Job") == [] and [r for r in resources if r.name == HOOKS] == []
    one(resources, "Deployment", f"{RELEASE}-model-gateway")


def seed2_hook() -> None:
    resources = render(SEED2, "hook-values.yaml")
    assert find(resources, "PersistentVolumeClaim") == []
    job = one(resources, "Job", CACHE_JOB)
    assert job.namespace == RELEASE_NS
    assert job.hook is not None
    assert job.hook.events == ("post-install", "post-upgrade")
    assert set(job.hook.delete_policies) == {"before-hook-creation", "hook-succeeded"}
    assert SSA_APPLY in cache_job_script(job)
    assert pod_spec(job)["serviceAccountName"] == HOOKS
    # The applied claim is exactly the one the release-resource shape renders.
    pvc = one(render(SEED2, "default-values.yaml"), "PersistentVolumeClaim", "hf-cache")
    claim = applied_claim(job)
    assert claim["kind"] == "PersistentVolumeClaim"
    assert claim["metadata"]["name"] == "hf-cache"
    assert claim["metadata"]["namespace"] == "model-serving"
    assert claim["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"}
    assert claim["spec"] == pvc.body["spec"]
    # The hook identity: hooks of an earlier weight, get/create/patch on claims, never delete.
    identity = [r for r in resources if r.name == HOOKS]
    kinds = sorted(r.kind for r in identity)
    assert kinds == ["ClusterRole", "ClusterRoleBinding", "ServiceAccount"]
    for res in identity:
        assert res.hook is not None and set(job.hook.events) <= set(res.hook.events)
        assert res.hook.weight < job.hook.weight
    (rule,) = one(resources, "ClusterRole", HOOKS).body["rules"]
    assert rule["resources"] == ["persistentvolumeclaims"]
    assert sorted(rule["verbs"]) == ["create", "get", "patch"]
    binding = one(resources, "ClusterRoleBinding", HOOKS)
    assert binding.body["subjects"] == [
        {"kind": "ServiceAccount", "name": HOOKS, "namespace": RELEASE_NS}
    ]


def seed2_hook_all_fields() -> None:
    resources = render(SEED2, "hook-empty-class-values.yaml")
    assert find(resources, "PersistentVolumeClaim") == []
    spec = applied_claim(one(resources, "Job", CACHE_JOB))["spec"]
    assert spec["storageClassName"] == "", '"-" is the empty class'
    assert spec["volumeName"] == "hf-cache-pv"
    assert spec["accessModes"] == ["ReadWriteMany"]
    assert spec["resources"]["requests"]["storage"] == "200Gi"


def seed2_cache_disabled() -> None:
    resources = render(SEED2, "cache-disabled-values.yaml")
    assert_no_cache_objects(resources)
    assert "cacheClaim" not in serving_config(resources)


def seed2_existing_claim() -> None:
    resources = render(SEED2, "existing-claim-values.yaml")
    assert_no_cache_objects(resources)
    assert serving_config(resources)["cacheClaim"] == "shared-hf-cache"


def seed2_serving_disabled() -> None:
    resources = render(SEED2, "serving-disabled-values.yaml")
    assert [r.ref for r in resources] == [f"ConfigMap/{RELEASE_NS}/{RELEASE}-connectivity"]


SHAPES: dict[str, Callable[[], None]] = {
    "seed1-migrate-race/default-values.yaml+cilium": seed1_default_cilium,
    "seed1-migrate-race/default-values.yaml": seed1_default_without_cilium,
    "seed1-migrate-race/cilium-flavour-values.yaml": seed1_cilium_forced,
    "seed1-migrate-race/kubernetes-flavour-values.yaml": seed1_kubernetes_flavour,
    "seed1-migrate-race/init-wait-values.yaml": seed1_init_wait,
    "seed1-migrate-race/policy-hook-values.yaml": seed1_policy_hook,
    "seed1-migrate-race/post-upgrade-hook-values.yaml": seed1_post_upgrade_hook,
    "seed1-migrate-race/migration-disabled-values.yaml": seed1_migration_disabled,
    "seed1-migrate-race/previous-values.yaml": seed1_previous,
    "seed2-hf-cache/default-values.yaml": seed2_release_resource,
    "seed2-hf-cache/hook-values.yaml": seed2_hook,
    "seed2-hf-cache/hook-empty-class-values.yaml": seed2_hook_all_fields,
    "seed2-hf-cache/cache-disabled-values.yaml": seed2_cache_disabled,
    "seed2-hf-cache/existing-claim-values.yaml": seed2_existing_claim,
    "seed2-hf-cache/serving-disabled-values.yaml": seed2_serving_disabled,
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_values_file_renders_its_shape(shape: str) -> None:
    SHAPES[shape]()


def test_every_ci_values_file_has_a_shape_check() -> None:
    ci_files = {f"{p.parent.parent.name}/{p.name}" for p in EXAMPLES.glob("*/ci/*.yaml")}
    checked = {key.split("+")[0] for key in SHAPES}
    assert ci_files == checked


def test_chart_defaults_are_the_shapes_that_failed() -> None:
    """Without values files each chart renders its seed's broken shape."""
    seed1 = render(SEED1, api_versions=[CILIUM_CNP])
    assert not assert_migrate_job(seed1).is_hook
    assert_cilium_policy(seed1, hook=False)
    pvc = one(render(SEED2), "PersistentVolumeClaim", "hf-cache")
    assert not pvc.is_hook and pvc.keep_policy


def test_migrate_job_name_follows_the_chart_version_not_the_fix() -> None:
    """Toggling a fix keeps the Job's name; only the chart version or the migration changes it."""
    names = {
        migrate_job(render(SEED1, f, api_versions=[CILIUM_CNP])).name
        for f in ("default-values.yaml", "init-wait-values.yaml", "policy-hook-values.yaml")
    }
    assert names == {f"{MIGRATE}-{EXPECTED_JOB_HASH}"}
    other = migrate_job(render(SEED1, sets=["agentManager.migration.toApiVersion=kagent.dev/v3"]))
    assert other.name != f"{MIGRATE}-{EXPECTED_JOB_HASH}"


def test_policy_hook_applies_to_the_kubernetes_flavour_too() -> None:
    resources = render(SEED1, "kubernetes-flavour-values.yaml", "policy-hook-values.yaml")
    netpol = assert_kubernetes_policy(resources, hook=True)
    assert netpol.hook is not None and netpol.hook.weight == -5


def test_auto_flavour_also_accepts_the_bare_group_version() -> None:
    assert_cilium_policy(render(SEED1, api_versions=["cilium.io/v2"]), hook=False)


def test_unknown_network_policy_flavour_is_a_one_line_input_error() -> None:
    expected = "networkPolicy.flavour must be auto, cilium or kubernetes"
    with pytest.raises(InputError, match=expected):
        render(SEED1, sets=["networkPolicy.flavour=calico"])


# --- Flux inputs -----------------------------------------------------------------------------


def flux_objects(example: Path) -> dict[tuple[str, str], dict[str, Any]]:
    objects: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted((example / "flux").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            key = (doc["kind"], doc["metadata"]["name"])
            assert key not in objects, f"{key} defined twice in {example.name}/flux"
            assert doc["metadata"]["namespace"] == RELEASE_NS
            objects[key] = doc
    return objects


@pytest.mark.parametrize(
    ("example", "dependents", "retries"),
    [
        (SEED1, {"substrate", "kagent", "agent-manager"}, 3),
        (SEED2, {"substrate", "kagent", "agent-manager", "model-manager"}, 4),
    ],
    ids=["seed1", "seed2"],
)
def test_flux_tree_releases_the_example_chart_with_its_dependents(
    example: Path, dependents: set[str], retries: int
) -> None:
    objects = flux_objects(example)
    chart_meta = yaml.safe_load((example / "Chart.yaml").read_text(encoding="utf-8"))
    hr = objects[("HelmRelease", RELEASE)]
    assert hr["apiVersion"] == "helm.toolkit.fluxcd.io/v2"
    assert "targetNamespace" not in hr["spec"] and "releaseName" not in hr["spec"]
    chart = hr["spec"]["chart"]["spec"]
    # The HelmRelease asks for this chart, so --chart NAME=PATH can map it to the example.
    assert (chart["chart"], chart["version"]) == (chart_meta["name"], chart_meta["version"])
    assert hr["spec"]["install"]["remediation"]["retries"] == retries
    depending = {
        name
        for (kind, name), doc in objects.items()
        if kind == "HelmRelease"
        and {"name": RELEASE} in doc["spec"].get("dependsOn", [])
    }
    assert depending == dependents
    for (kind, name), doc in objects.items():
        if kind != "HelmRelease":
            continue
        ref = doc["spec"].get("chartRef") or doc["spec"]["chart"]["spec"]["sourceRef"]
        assert (ref["kind"], ref["name"]) in objects, f"{name}: source {ref} not in the tree"


def test_seed1_release_does_not_wait_for_jobs() -> None:
    spec = flux_objects(SEED1)[("HelmRelease", RELEASE)]["spec"]
    assert spec["install"]["disableWaitForJobs"] is True
    assert spec["upgrade"]["disableWaitForJobs"] is True


# --- the documented command ------------------------------------------------------------------


def test_readme_render_command_renders_the_failing_shape() -> None:
    from helmsim.cli import app

    result = CliRunner().invoke(
        app,
        [
            "render", str(SEED1), "-f", str(SEED1 / "ci" / "default-values.yaml"),
            "--api-versions", CILIUM_CNP, "--release-name", RELEASE, "--namespace", RELEASE_NS,
        ],
    )
    assert result.exit_code == 0, result.output
    assert "kind: CiliumNetworkPolicy" in result.output
    assert f"name: {MIGRATE}-{EXPECTED_JOB_HASH}" in result.output
