"""Cluster profiles: built-ins, extends resolution, validation errors with file:line."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from helmsim.cluster.latency import Constant, Uniform
from helmsim.cluster.profile import (
    ClusterProfile,
    builtin_names,
    guess_plural,
    list_profiles,
    load_profile,
    profile_from_mapping,
)
from helmsim.errors import InputError

BUILTINS = [
    "aks-cilium", "capa-cilium", "cilium-always", "cilium-default", "eks-gp3", "eks-vpc-cni", "gke-autopilot", "gke-dataplane-v2",
    "k3s", "kind",
]


def _write(dir_: Path, name: str, text: str) -> Path:
    path = dir_ / name
    path.write_text(dedent(text).lstrip("\n"))
    return path


def _error(ref: str | Path) -> InputError:
    with pytest.raises(InputError) as info:
        load_profile(str(ref))
    return info.value


# --- built-ins ----------------------------------------------------------------------------------


def test_builtins_are_listed_with_descriptions() -> None:
    assert builtin_names() == BUILTINS
    listed = dict(list_profiles())
    assert list(listed) == BUILTINS
    assert all(desc for desc in listed.values())


@pytest.mark.parametrize("name", BUILTINS)
def test_every_builtin_loads_and_is_consistent(name: str) -> None:
    profile = load_profile(name)
    assert profile.name == name
    assert profile.nodes, "a cluster needs a node"
    default = profile.default_storage_class()
    assert default is not None and default.volume_binding_mode == "WaitForFirstConsumer"
    assert profile.job_backoff_cap_seconds == 600
    assert profile.kubelet_backoff_cap_seconds == 300
    # Every nominal latency is a usable, finite, non-negative number of seconds.
    for lat in (profile.cni.policy_propagation_seconds, profile.latencies.image_pull):
        assert 0 <= lat.nominal() < 3600


def test_kind() -> None:
    kind = load_profile("kind")
    assert (kind.cni.type, kind.cni.policy_enforcement_mode) == ("kubernetes", "default")
    assert kind.cni.enforces_policies
    standard = kind.storage_class("standard")
    assert standard is not None
    assert standard.provisioner == "rancher.io/local-path"
    assert standard.volume_binding_mode == "WaitForFirstConsumer"
    assert standard.allow_volume_expansion is False and standard.default is True
    assert standard.reclaim_policy == "Delete"
    assert [n.name for n in kind.nodes] == ["kind-control-plane"]
    node = kind.nodes[0]
    assert "node-role.kubernetes.io/control-plane" in node.labels
    assert node.labels["kubernetes.io/hostname"] == "kind-control-plane"
    assert node.taints == []  # single-node kind removes the control-plane taint
    assert kind.crds == [] and kind.helm_api_versions() == []
    a = kind.addressing
    assert (a.service_cidr, a.apiserver_cluster_ip, a.kube_dns_cluster_ip) == (
        "10.96.0.0/16",
        "10.96.0.1",
        "10.96.0.10",
    )
    assert (a.apiserver_host, a.apiserver_port) == ("172.18.0.2", 6443)
    assert isinstance(kind.cni.policy_propagation_seconds, Uniform)
    assert kind.cni.policy_propagation_seconds.nominal() == pytest.approx(1.05)


def test_cilium_default_serves_the_cilium_crds() -> None:
    cilium = load_profile("cilium-default")
    assert cilium.sources == ("kind", "cilium-default")
    assert (cilium.cni.type, cilium.cni.policy_enforcement_mode) == ("cilium", "default")
    cnp = cilium.crd("cilium.io", "CiliumNetworkPolicy")
    ccnp = cilium.crd("cilium.io", "CiliumClusterwideNetworkPolicy")
    assert cnp is not None and cnp.scope == "Namespaced" and cnp.resource == "ciliumnetworkpolicies"
    assert ccnp is not None and ccnp.scope == "Cluster"
    versions = cilium.helm_api_versions()
    for expected in (
        "cilium.io/v2",
        "cilium.io/v2/CiliumNetworkPolicy",
        "cilium.io/v2/CiliumClusterwideNetworkPolicy",
        "cilium.io/v2alpha1/CiliumCIDRGroup",
    ):
        assert expected in versions
    assert len(versions) == len(set(versions))
    # Inherited from kind: storage and nodes.
    assert cilium.default_storage_class().name == "standard"  # type: ignore[union-attr]
    assert cilium.nodes == load_profile("kind").nodes


def test_cilium_always_only_changes_the_mode() -> None:
    always = load_profile("cilium-always")
    default = load_profile("cilium-default")
    assert always.cni.policy_enforcement_mode == "always"
    assert always.sources == ("kind", "cilium-default", "cilium-always")
    assert always.crds == default.crds
    assert always.cni.policy_propagation_seconds == default.cni.policy_propagation_seconds
    assert always.cni.type == "cilium"


def test_eks_gp3() -> None:
    eks = load_profile("eks-gp3")
    gp3 = eks.default_storage_class()
    assert gp3 is not None and gp3.name == "gp3"
    assert gp3.provisioner == "ebs.csi.aws.com"
    assert gp3.volume_binding_mode == "WaitForFirstConsumer"
    assert gp3.allow_volume_expansion is True
    assert gp3.parameters["type"] == "gp3"
    assert [c.name for c in eks.default_storage_classes()] == ["gp3"]
    assert eks.cni.type == "kubernetes"
    zones = {n.zone for n in eks.nodes}
    assert len(eks.nodes) >= 3 and len(zones) >= 3
    assert all(n.labels["topology.kubernetes.io/zone"] == n.zone for n in eks.nodes)
    assert eks.addressing.apiserver_port == 443
    assert eks.kubernetes_version.startswith("1.31.")


def test_plural_guess_follows_apimachinery() -> None:
    assert guess_plural("CiliumNetworkPolicy") == "ciliumnetworkpolicies"
    assert guess_plural("Ingress") == "ingresses"
    assert guess_plural("CiliumNode") == "ciliumnodes"


# --- extends ------------------------------------------------------------------------------------


def test_file_extends_builtin_with_deep_merge_and_list_replacement(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "mine.yaml",
        """
        extends: cilium-always
        cni:
          policyPropagationSeconds: 5s
        latencies:
          imagePull: 1m30s
        nodes:
          - name: worker-1
            zone: z1
        """,
    )
    profile = load_profile(str(path))
    assert profile.name == "mine"  # a file without name: is named after the file
    assert profile.sources == ("kind", "cilium-default", "cilium-always", str(path))
    # Mappings merge: the mode still comes from cilium-always, the delay from the file.
    assert profile.cni.policy_enforcement_mode == "always"
    assert profile.cni.policy_propagation_seconds == Constant(value=5.0)
    assert profile.latencies.image_pull.nominal() == 90.0
    assert profile.latencies.container_start.nominal() == 0.5  # inherited from kind
    # Lists replace: only the file's node is left.
    assert [n.name for n in profile.nodes] == ["worker-1"]
    assert profile.nodes[0].labels["topology.kubernetes.io/zone"] == "z1"
    assert len(profile.crds) == len(load_profile("cilium-default").crds)


def test_a_distribution_replaces_the_inherited_one_whole(tmp_path: Path) -> None:
    # kind's imagePull is lognormal; a uniform one must not inherit median/sigma.
    path = _write(
        tmp_path,
        "u.yaml",
        """
        extends: kind
        latencies:
          imagePull: {dist: uniform, min: 1, max: 2}
          volumeProvisioning: 3s
        """,
    )
    profile = load_profile(str(path))
    assert profile.latencies.image_pull == Uniform(dist="uniform", min=1.0, max=2.0)
    assert profile.latencies.volume_provisioning == Constant(value=3.0)


def test_relative_extends_resolve_from_the_extending_file(tmp_path: Path) -> None:
    base_dir = tmp_path / "base"
    base_dir.mkdir()
    _write(base_dir, "base.yaml", "extends: kind\nname: base\nkubernetesVersion: '1.29.3'\n")
    sub = tmp_path / "teams"
    sub.mkdir()
    leaf = _write(sub, "leaf.yaml", "extends: ../base/base.yaml\nname: leaf\n")
    profile = load_profile(str(leaf))
    assert profile.name == "leaf" and profile.kubernetes_version == "1.29.3"
    assert profile.sources[0] == "kind"


def test_extends_cycle_is_reported_with_the_loop(tmp_path: Path) -> None:
    _write(tmp_path, "a.yaml", "name: a\nextends: b.yaml\n")
    _write(tmp_path, "b.yaml", "# b\nextends: ./a.yaml\n")
    err = _error(tmp_path / "a.yaml")
    assert "cycle" in err.message
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    assert err.message.endswith(f"{a} -> {b} -> {a}")
    assert err.file == str(tmp_path / "b.yaml") and err.line == 2


def test_self_extension_is_a_cycle(tmp_path: Path) -> None:
    path = _write(tmp_path, "self.yaml", "extends: self.yaml\n")
    assert "cycle" in _error(path).message


def test_unknown_extends_names_the_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "x.yaml", "name: x\nextends: kindd\n")
    err = _error(path)
    assert (err.file, err.line) == (str(path), 2)
    assert "unknown profile 'kindd'" in err.message and "kind" in err.message


def test_missing_profile_file(tmp_path: Path) -> None:
    err = _error(tmp_path / "absent.yaml")
    assert err.message.startswith("profile file") and "not found" in err.message


def test_unknown_profile_name() -> None:
    err = _error("nope")
    assert "unknown profile 'nope'" in err.message
    for name in BUILTINS:
        assert name in err.message


def test_inline_mapping_with_extends(tmp_path: Path) -> None:
    profile = profile_from_mapping(
        {"extends": "kind", "name": "inline", "cni": {"type": "none"}}, source="scenario.yaml"
    )
    assert profile.name == "inline" and profile.cni.type == "none"
    assert not profile.cni.enforces_policies
    assert profile.storage_class("standard") is not None
    unnamed = profile_from_mapping({"extends": "kind"}, source="scenarios/seed1.yaml")
    assert unnamed.name == "seed1"  # not "kind": it is a different cluster
    with pytest.raises(InputError) as info:
        profile_from_mapping({"extends": "kind", "cni": {"type": "flannel"}}, source="s.yaml")
    assert str(info.value).startswith("s.yaml: cni.type: Input should be")


# --- validation errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (
            """
            # my cluster
            extends: cilium-default
            name: mine
            cni:
              type: cilium
              policyEnforcementMode: sometimes
            """,
            6,
            "cni.policyEnforcementMode: Input should be 'default', 'always' or 'never'",
        ),
        ("extends: kind\nbogus: 1\n", 2, "bogus: Extra inputs are not permitted"),
        (
            "extends: kind\nlatencies:\n  imagePull: {dist: uniform, min: 3, max: 1}\n",
            3,
            "latencies.imagePull: min (3) is greater than max (1)",
        ),
        (
            "extends: kind\nlatencies:\n  scheduling:\n    dist: lognormal\n    median: 2\n",
            3,
            "latencies.scheduling.sigma: Field required",
        ),
        (
            "extends: kind\nlatencies:\n  crdEstablish:\n    dist: empirical\n    samples: []\n",
            3,
            "latencies.crdEstablish: samples must not be empty",
        ),
        ("extends: kind\nlatencies:\n  apiWrite: -1\n", 3, "latencies.apiWrite: -1 is negative"),
        (
            "extends: kind\nnodes:\n  - name: n1\n  - name: n2\n"
            "    labels:\n      ok: x\n      bad: true\n",
            7,
            "nodes[1].labels.bad: Input should be a valid string "
            "(got the boolean true; quote the value)",
        ),
        ("name: e\nnodes: []\n", 2, "nodes: List should have at least 1 item"),
        ("name: e\n", None, "nodes: Field required"),
        (
            "extends: kind\nstorageClasses:\n  - name: x\n    provisioner: p\n"
            "    volumeBindingMode: Later\n",
            5,
            "storageClasses[0].volumeBindingMode: "
            "Input should be 'Immediate' or 'WaitForFirstConsumer'",
        ),
        (
            "extends: kind\ncni:\n  type: kubernetes\n  policyEnforcementMode: always\n",
            2,
            "cni: policyEnforcementMode applies only to cni.type cilium",
        ),
        (
            "extends: kind\naddressing:\n  kubeDNSClusterIP: 10.97.0.10\n",
            2,
            "addressing: kubeDNSClusterIP 10.97.0.10 is not inside serviceCIDR 10.96.0.0/16",
        ),
        (
            "extends: kind\napiVersions: [cilium.io/v2, not a version]\n",
            2,
            "apiVersions: 'not a version' is not group/version",
        ),
        ("extends: kind\nkubernetesVersion: latest\n", 2, "kubernetesVersion: 'latest' is not"),
        (
            "extends: kind\ncrds:\n  - {group: example.com, version: v1, kind: Foo}\n",
            3,
            "crds[0].scope: Field required",
        ),
        (
            "extends: kind\njobBackoffCapSeconds: '600'\n",
            2,
            "jobBackoffCapSeconds: Input should be a valid number",
        ),
    ],
)
def test_errors_name_the_file_and_line_of_the_key(
    tmp_path: Path, text: str, line: int | None, message: str
) -> None:
    path = _write(tmp_path, "my.yaml", text)
    err = _error(path)
    assert (err.file, err.line) == (str(path), line)
    assert err.message.startswith(message), err.message
    assert "\n" not in str(err)


def test_error_points_into_the_parent_file_that_holds_the_key(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "base.yaml",
        "extends: kind\nname: base\nlatencies:\n  imagePull: 5\n  scheduling: 2x\n",
    )
    child = _write(tmp_path, "child.yaml", "extends: base.yaml\nlatencies:\n  imagePull: 1\n")
    err = _error(child)
    assert (err.file, err.line) == (str(tmp_path / "base.yaml"), 5)
    assert err.message.startswith("latencies.scheduling: invalid duration '2x'")


def test_replaced_list_errors_point_at_the_child(tmp_path: Path) -> None:
    _write(tmp_path, "base.yaml", "name: base\nnodes:\n  - name: a\n  - name: b\n")
    child = _write(
        tmp_path,
        "child.yaml",
        "extends: base.yaml\n\nnodes:\n  - name: a\n  - {name: b, zone: 1}\n",
    )
    err = _error(child)
    assert (err.file, err.line) == (str(child), 5)
    assert err.message.startswith("nodes[1].zone: Input should be a valid string")


def test_yaml_syntax_and_shape_errors(tmp_path: Path) -> None:
    bad = _write(tmp_path, "bad.yaml", "name: x\nnodes: [\n")
    assert _error(bad).file == str(bad)
    seq = _write(tmp_path, "seq.yaml", "- a\n- b\n")
    assert "must be a YAML mapping" in _error(seq).message
    empty = _write(tmp_path, "empty.yaml", "# nothing\n")
    assert "empty" in _error(empty).message
    dup = _write(tmp_path, "dup.yaml", "extends: kind\nname: a\nname: b\n")
    err = _error(dup)
    assert err.line == 3 and "duplicate" in err.message


def test_yaml_11_booleans_follow_kubernetes(tmp_path: Path) -> None:
    # `y` is a boolean for Kubernetes (go-yaml v2); quoting keeps it a string.
    path = _write(
        tmp_path,
        "p.yaml",
        "extends: kind\nstorageClasses:\n"
        "  - {name: s, provisioner: 'y', allowVolumeExpansion: yes}\n",
    )
    cls = load_profile(str(path)).storage_class("s")
    assert cls is not None and cls.provisioner == "y" and cls.allow_volume_expansion is True


# --- model behaviour ------------------------------------------------------------------------------


def test_newest_default_storage_class_wins(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "two.yaml",
        """
        extends: kind
        storageClasses:
          - {name: old, provisioner: a, default: true}
          - {name: plain, provisioner: b}
          - {name: new, provisioner: c, default: true}
        """,
    )
    profile = load_profile(str(path))
    assert [c.name for c in profile.default_storage_classes()] == ["old", "new"]
    assert profile.default_storage_class().name == "new"  # type: ignore[union-attr]
    plain = profile.storage_class("plain")
    assert plain is not None
    # API defaults for omitted fields (kubernetes/api storage/v1/types.go).
    assert (plain.volume_binding_mode, plain.reclaim_policy, plain.allow_volume_expansion) == (
        "Immediate",
        "Delete",
        False,
    )


def test_helm_api_versions_merge_explicit_and_crds() -> None:
    profile = profile_from_mapping(
        {
            "name": "p",
            "nodes": [{"name": "n"}],
            "apiVersions": ["monitoring.coreos.com/v1", "example.com/v1/Foo"],
            "crds": [
                {"group": "example.com", "version": "v1", "kind": "Foo", "scope": "Namespaced"},
                {"group": "example.com", "version": "v1", "kind": "Bar", "scope": "Cluster"},
            ],
        },
        source="inline",
    )
    assert profile.helm_api_versions() == [
        "monitoring.coreos.com/v1",
        "example.com/v1/Foo",
        "example.com/v1",
        "example.com/v1/Bar",
    ]
    assert profile.crd("example.com", "Bar").resource == "bars"  # type: ignore[union-attr]


def test_defaults_of_a_minimal_profile() -> None:
    profile = ClusterProfile.model_validate({"name": "min", "nodes": [{"name": "n"}]})
    assert profile.kubernetes_version == "1.31.0"
    assert profile.cni.type == "kubernetes" and profile.cni.policy_enforcement_mode == "default"
    assert profile.addressing.service_cidr == "10.96.0.0/12"
    assert profile.addressing.apiserver_cluster_ip == "10.96.0.1"
    assert profile.addressing.kube_dns_cluster_ip == "10.96.0.10"
    assert profile.addressing.apiserver_port == 6443
    assert (profile.job_backoff_initial_seconds, profile.job_backoff_cap_seconds) == (10, 600)
    kubelet = (profile.kubelet_backoff_initial_seconds, profile.kubelet_backoff_cap_seconds)
    assert kubelet == (10, 300)
    assert profile.default_storage_class() is None
    assert profile.nodes[0].labels == {
        "kubernetes.io/hostname": "n",
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
    }


def test_zone_and_zone_label_must_agree() -> None:
    with pytest.raises(InputError) as info:
        profile_from_mapping(
            {
                "name": "p",
                "nodes": [
                    {"name": "n", "zone": "a", "labels": {"topology.kubernetes.io/zone": "b"}}
                ],
            },
            source="inline",
        )
    assert "nodes[0]: zone 'a' disagrees" in info.value.message


def test_duplicate_names_are_refused() -> None:
    with pytest.raises(InputError) as info:
        profile_from_mapping(
            {"name": "p", "nodes": [{"name": "n"}, {"name": "n"}]}, source="inline"
        )
    assert "nodes: duplicate name 'n'" in info.value.message


def test_show_data_round_trips(tmp_path: Path) -> None:
    import yaml

    for name in BUILTINS:
        profile = load_profile(name)
        data = profile.to_data()
        assert "extends" not in data
        path = tmp_path / f"{name}-resolved.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        again = load_profile(str(path))
        assert again.to_data() == data


def test_every_latency_is_reachable_by_name() -> None:
    profile = load_profile("cilium-always")
    assert profile.latency("image_pull") is profile.latencies.image_pull
    assert profile.latency("imagePull") is profile.latencies.image_pull
    assert profile.latency("pod_deletion_grace").nominal() == 1.0
    # The CNI's latencies are latencies too (the engine asks for them by name).
    assert profile.latency("policy_propagation") == profile.cni.policy_propagation_seconds
    assert profile.latency("policyPropagationSeconds") == profile.cni.policy_propagation_seconds
    assert profile.latencies.policy_propagation == profile.cni.policy_propagation_seconds
    assert profile.latency("identity_allocation").nominal() == 0.0
    with pytest.raises(KeyError):
        profile.latency("coffee_break")


def test_the_documented_example_profile_loads(tmp_path: Path) -> None:
    import re

    docs = Path(__file__).resolve().parents[2] / "docs" / "profiles.md"
    text = docs.read_text()
    match = re.search(r"<!-- example: my-cluster.yaml -->\n```yaml\n(.*?)```", text, re.S)
    assert match, "docs/profiles.md lost its example"
    path = tmp_path / "my-cluster.yaml"
    path.write_text(match.group(1))
    profile = load_profile(str(path))
    assert profile.name == "my-cluster"
    assert profile.sources[:3] == ("kind", "cilium-default", "cilium-always")
    assert profile.cni.policy_enforcement_mode == "always"
    assert profile.cni.policy_propagation_seconds.nominal() == pytest.approx(1.0)  # median of 6
    assert "monitoring.coreos.com/v1/ServiceMonitor" in profile.helm_api_versions()
    assert "cilium.io/v2/CiliumNetworkPolicy" in profile.helm_api_versions()
    assert profile.default_storage_class().name == "fast"  # type: ignore[union-attr]
    assert profile.nodes[1].taints[0].effect == "NoSchedule"
