"""The library of real platforms and `helmsim profiles diff`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from profiletools_helpers import ROOT, runner, simulate_json

from helmsim.cli import app
from helmsim.cluster.profile import load_profile

LIBRARY = ["eks-vpc-cni", "gke-dataplane-v2", "aks-cilium", "k3s"]


@pytest.mark.parametrize("name", LIBRARY)
def test_library_profile_cites_its_sources_and_marks_assumed_latencies(name: str) -> None:
    text = (ROOT / "src" / "helmsim" / "profiles" / f"{name}.yaml").read_text()
    assert "Sources:" in text and "UNVERIFIED" in text
    profile = load_profile(name)
    assert profile.default_storage_class() is not None


@pytest.mark.parametrize(
    ("name", "cni", "cidr_nodes", "default_class", "cnp_served"),
    [
        ("eks-vpc-cni", "kubernetes", "", "ebs-csi-default-sc", False),
        ("gke-dataplane-v2", "cilium", "", "standard-rwo", False),
        ("aks-cilium", "cilium", "", "managed-csi", True),
        ("k3s", "kubernetes", "", "local-path", False),
    ],
)
def test_library_profiles_encode_each_platforms_semantics(
    name: str, cni: str, cidr_nodes: str, default_class: str, cnp_served: bool
) -> None:
    p = load_profile(name)
    assert p.cni.type == cni and p.cni.policy_cidr_match_mode == cidr_nodes
    sc = p.default_storage_class()
    assert (
        sc is not None
        and sc.name == default_class
        and sc.volume_binding_mode == "WaitForFirstConsumer"
    )
    assert ("cilium.io/v2/CiliumNetworkPolicy" in p.helm_api_versions()) is cnp_served


def test_eks_vpc_cni_keeps_gp2_but_not_as_default() -> None:
    p = load_profile("eks-vpc-cni")
    gp2 = p.storage_class("gp2")
    assert gp2 is not None and not gp2.default and p.addressing.service_cidr == "10.100.0.0/16"


@pytest.mark.parametrize("name", LIBRARY)
def test_seed2_on_every_library_platform_times_out_on_the_unconsumed_claim(name: str) -> None:
    """Every platform's default class binds on first consumer, so seed 2 fails the same way."""
    report = simulate_json("seed2-hf-cache", name)
    first = report["releases"][0]  # type: ignore[index]
    assert first["outcome"] == "Stalled", first
    assert "PersistentVolumeClaim/model-serving/hf-cache status: 'InProgress'" in first["message"]


# --- diff ------------------------------------------------------------------------------------


def test_diff_text_lists_each_difference_and_exits_1() -> None:
    result = runner.invoke(app, ["profiles", "diff", "cilium-default", "cilium-always"])
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0] == "a: cilium-default (kind <- cilium-default)"
    assert lines[2] == "4 differences"
    body = "\n".join(lines[3:])
    assert re.search(r'cni.policyEnforcementMode +"default" -> "always"', body)
    assert (
        "clusterPolicies[CiliumClusterwideNetworkPolicy/platform-allow-kube-dns-ingress]  only in b:"
        in body
    )


def test_diff_json_and_identical_profiles(tmp_path: Path) -> None:
    result = runner.invoke(app, ["profiles", "diff", "kind", "k3s", "--format", "json"])
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    by_path = {d["path"]: d for d in data["differences"]}
    assert by_path["addressing.serviceCIDR"] == {
        "path": "addressing.serviceCIDR",
        "a": "10.96.0.0/16",
        "b": "10.43.0.0/16",
    }
    assert by_path["nodes[k3s-server]"]["only"] == "b"
    assert by_path["storageClasses[standard]"]["only"] == "a"
    same = tmp_path / "same.yaml"
    same.write_text("extends: kind\nname: kind\n")
    result = runner.invoke(app, ["profiles", "diff", "kind", str(same)])
    assert result.exit_code == 0 and result.stdout.endswith("no differences\n")


def test_diff_matches_lists_by_identity_not_position(tmp_path: Path) -> None:
    swapped = tmp_path / "swapped.yaml"
    swapped.write_text(
        "extends: eks-gp3\nname: eks-gp3\nstorageClasses:\n"
        "  - {name: gp3, provisioner: ebs.csi.aws.com, volumeBindingMode: WaitForFirstConsumer,"
        " allowVolumeExpansion: true, default: true, parameters: {type: gp3, fsType: ext4}}\n"
        "  - {name: gp2, provisioner: kubernetes.io/aws-ebs, volumeBindingMode: WaitForFirstConsumer,"
        " parameters: {type: gp2, fsType: ext4}}\n"
        "latencies: {imagePull: {dist: lognormal, median: 9, sigma: 0.8}}\n"
    )
    result = runner.invoke(app, ["profiles", "diff", "eks-gp3", str(swapped), "--format", "json"])
    paths = [d["path"] for d in json.loads(result.stdout)["differences"]]
    assert paths == ["storageClasses (order)", "latencies.imagePull"]


def test_diff_of_an_imported_cluster_against_its_builtin(tmp_path: Path) -> None:
    from profiletools_helpers import DATA

    out = tmp_path / "kind.yaml"
    assert (
        runner.invoke(app, ["profiles", "import", str(DATA / "kind"), "-o", str(out)]).exit_code
        == 0
    )
    result = runner.invoke(app, ["profiles", "diff", "kind", str(out), "--format", "json"])
    paths = {d["path"] for d in json.loads(result.stdout)["differences"]}
    # what a real kind node adds: beta labels and its hugepages (0); the built-in kind states the
    # reference dump's allocatable, which the scheduler decides on, so it is not a difference
    node = "nodes[kind-control-plane]"
    assert paths == {
        "description",
        f"{node}.labels.beta.kubernetes.io/arch",
        f"{node}.labels.beta.kubernetes.io/os",
        f"{node}.allocatable.hugepages-1Gi",
        f"{node}.allocatable.hugepages-2Mi",
    }


def test_diff_of_an_unknown_profile_is_bad_input() -> None:
    result = runner.invoke(app, ["profiles", "diff", "kind", "nope"])
    assert result.exit_code == 2 and "unknown profile 'nope'" in result.stderr
