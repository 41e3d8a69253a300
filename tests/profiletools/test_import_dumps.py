"""`helmsim profiles import DIR`: dumps → a profile that simulates like the built-in it mirrors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from profiletools_helpers import DATA, runner, simulate_json, without_profile_name

from helmsim.cli import app
from helmsim.cluster.profile import load_profile


def _import(tmp_path: Path, dump: str, *extra: str) -> tuple[Path, str]:
    out = tmp_path / f"{dump}.yaml"
    result = runner.invoke(app, ["profiles", "import", str(DATA / dump), "-o", str(out), *extra])
    assert result.exit_code == 0, result.output
    return out, result.stderr


# --- the imported profiles simulate as the built-ins do --------------------------------------


@pytest.mark.parametrize(
    ("dump", "builtin", "example", "values", "extra"),
    [
        ("kind", "kind", "seed2-hf-cache", None, ()),
        ("kind", "kind", "seed2-hf-cache", "ci/hook-values.yaml", ()),
        ("kind-cilium-always", "cilium-always", "seed1-migrate-race", None, ()),
        ("eks", "eks-gp3", "seed2-hf-cache", None, ("--prior", "eks-gp3")),
        ("eks", "eks-gp3", "seed2-hf-cache", "ci/hook-values.yaml", ("--prior", "eks-gp3")),
    ],
)
def test_imported_dump_simulates_the_seed_exactly_as_the_builtin(
    tmp_path: Path,
    dump: str,
    builtin: str,
    example: str,
    values: str | None,
    extra: tuple[str, ...],
) -> None:
    profile, _ = _import(tmp_path, dump, "--name", "imported", *extra)
    more = ("-f", f"examples/{example}/{values}") if values else ()
    want = simulate_json(example, builtin, *more)
    got = simulate_json(example, str(profile), *more)
    assert got["profile"] == "imported"
    assert without_profile_name(got, "imported", builtin) == without_profile_name(
        want, builtin, builtin
    )


def test_seed1_under_the_imported_cilium_profile_fails_like_cilium_always(tmp_path: Path) -> None:
    """Not only equal: the race the seed is about shows up (the upgrade's migrate Job fails)."""
    profile, _ = _import(tmp_path, "kind-cilium-always")
    seed1 = "examples/seed1-migrate-race"
    report = simulate_json(
        "seed1-migrate-race",
        str(profile),
        "-f",
        f"{seed1}/rehearsals/migration-fails-values.yaml",
        "--upgrade-from",
        seed1,
        "--upgrade-from-values",
        f"{seed1}/ci/previous-values.yaml",
    )
    assert "failed early due to stalled resources: [Job/kagent/" in json.dumps(report)


def test_imported_kind_matches_the_builtin_field_by_field(tmp_path: Path) -> None:
    profile, _ = _import(tmp_path, "kind")
    got = load_profile(str(profile)).to_data()
    want = load_profile("kind").to_data()
    node = got["nodes"][0]
    assert node["allocatable"] == {
        "cpu": "8",
        "ephemeral-storage": "243334020Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": "32797324Ki",
        "pods": "110",
    }
    assert set(want["nodes"][0]["labels"].items()) <= set(node["labels"].items())
    for key in ("kubernetesVersion", "cni", "storageClasses", "latencies", "addressing"):
        assert got[key] == want[key], key
    assert node["internalIP"] == "172.18.0.2" and node["taints"] == []


# --- provenance ----------------------------------------------------------------------------------

_VALUE_LINE = re.compile(r"^(?P<indent> *)(?:- )?(?P<key>[^#:]+|\"[^\"]+\"):(?P<value> .*)?$")


def _uncited(text: str) -> list[str]:
    """Value lines with no comment on them or on an enclosing line."""
    stack: list[tuple[int, bool]] = []  # (indent, cited) of the enclosing lines
    bad = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip(" "))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        cited = "  # " in line or any(c for _, c in stack)
        m = _VALUE_LINE.match(line)
        has_value = m is not None and (m.group("value") or "").split("  #")[0].strip() != ""
        if has_value and not cited:
            bad.append(line)
        stack.append((indent, cited))
    return bad


@pytest.mark.parametrize("dump", ["kind", "kind-cilium-always", "eks"])
def test_every_value_names_its_source(tmp_path: Path, dump: str) -> None:
    profile, _ = _import(tmp_path, dump)
    text = profile.read_text()
    assert _uncited(text) == []
    assert "tests/data/profiles" in text  # the dumps' files are cited


def test_values_cite_the_file_and_object_they_came_from(tmp_path: Path) -> None:
    text = _import(tmp_path, "eks")[0].read_text()
    lines = {ln.split(":")[0].strip(): ln for ln in text.splitlines() if "  # " in ln}
    assert (
        "eks/version.json: serverVersion.gitVersion v1.31.4-eks-2d5f260"
        in lines["kubernetesVersion"]
    )
    assert "EndpointSlice/default/kubernetes" in lines["apiserverEndpoint"]
    assert "aws-eks-nodeagent --enable-network-policy=true" in lines["type"]
    assert "INFERRED" in lines["serviceCIDR"] and "INFERRED" in lines["podCIDR"]
    # the second control-plane ENI is recorded, not silently dropped
    assert "further apiserver endpoints: 10.0.101.10:443" in text


def test_inferred_values_are_warnings_on_stderr(tmp_path: Path) -> None:
    _, stderr = _import(tmp_path, "eks", "--prior", "eks-gp3")
    assert "warning: serviceCIDR 172.20.0.0/16 is inferred" in stderr
    assert "warning: podCIDR 10.0.0.0/16 is inferred from the node addresses (VPC CNI)" in stderr


def test_secrets_in_a_dump_are_never_read(tmp_path: Path) -> None:
    text = _import(tmp_path, "eks")[0].read_text()
    assert "must-not-be-read" not in text and "c2VjcmV0" not in text and "Secret" not in text


def test_import_is_deterministic_and_a_valid_profile(tmp_path: Path) -> None:
    first = runner.invoke(app, ["profiles", "import", str(DATA / "kind-cilium-always")])
    second = runner.invoke(app, ["profiles", "import", str(DATA / "kind-cilium-always")])
    assert first.exit_code == 0 and first.stdout == second.stdout
    data = yaml.safe_load(first.stdout)
    assert data["cni"] == {
        "type": "cilium",
        "policyEnforcementMode": "always",
        "policyCIDRMatchMode": "",
        "policyPropagationSeconds": {"dist": "uniform", "min": 0.1, "max": 2},
        "identityAllocationSeconds": 0,
    }
    assert [p["metadata"]["name"] for p in data["clusterPolicies"]] == [
        "platform-allow-kube-dns-ingress"
    ]
    assert (
        "# cilium-config kube-proxy-replacement: 'false' (recorded; no profile field)"
        in first.stdout
    )


# --- platform detection and the prior ---------------------------------------------------------


def test_auto_prior_is_the_closest_builtin(tmp_path: Path) -> None:
    text = _import(tmp_path, "kind-cilium-always")[0].read_text()
    assert "prior: profile cilium-always (UNVERIFIED" in text
    assert "# Platform: kind (node providerID kind://)." in text


def test_prior_can_be_a_file(tmp_path: Path) -> None:
    prior = tmp_path / "slow.yaml"
    prior.write_text("extends: kind\nlatencies: {imagePull: 42s}\n")
    profile, _ = _import(tmp_path, "kind", "--prior", str(prior))
    assert load_profile(str(profile)).latencies.image_pull.nominal() == 42.0
    assert f"prior: profile {prior}" in profile.read_text()


# --- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("kind: [unclosed\n", "nodes.yaml:2: invalid YAML"),
        ("- just\n- a list\n", "nodes.yaml:1: not a Kubernetes object or List (a mapping)"),
        ("apiVersion: v1\nitems: {}\nkind: List\n", "nodes.yaml:1: items of a List is not a list"),
        (
            "apiVersion: v1\nitems: [42]\nkind: List\n",
            "nodes.yaml:1: items[0]: not a Kubernetes object",
        ),
        ("apiVersion: v1\nmetadata: {name: x}\n", "nodes.yaml:1: object has no kind"),
        ('{"serverVersion": {"major": "1"}}', "nodes.yaml:1: serverVersion.gitVersion is missing"),
    ],
)
def test_malformed_dump_is_one_line_naming_the_file_exit_2(
    tmp_path: Path, content: str, message: str
) -> None:
    (tmp_path / "nodes.yaml").write_text(content)
    result = runner.invoke(app, ["profiles", "import", str(tmp_path)])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines


def test_dumps_without_nodes_or_apiserver_service_say_what_to_collect(tmp_path: Path) -> None:
    (tmp_path / "sc.yaml").write_text((DATA / "kind" / "storageclasses.yaml").read_text())
    result = runner.invoke(app, ["profiles", "import", str(tmp_path)])
    assert result.exit_code == 2
    assert "no Node in the dumps" in result.stderr and "kubectl get nodes -o yaml" in result.stderr
    (tmp_path / "nodes.yaml").write_text((DATA / "kind" / "nodes.yaml").read_text())
    result = runner.invoke(app, ["profiles", "import", str(tmp_path)])
    assert result.exit_code == 2
    assert "the default/kubernetes Service is not in the dumps" in result.stderr


def test_empty_directory_and_missing_path_are_bad_input(tmp_path: Path) -> None:
    result = runner.invoke(app, ["profiles", "import", str(tmp_path)])
    assert result.exit_code == 2 and "no .yaml, .yml or .json dump files" in result.stderr
    result = runner.invoke(app, ["profiles", "import", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "no such file or directory" in result.stderr


def test_dumps_and_kubeconfig_are_exclusive(tmp_path: Path) -> None:
    result = runner.invoke(app, ["profiles", "import", str(DATA / "kind"), "--context", "x"])
    assert result.exit_code == 2 and "not both" in result.stderr
    result = runner.invoke(app, ["profiles", "import"])
    assert result.exit_code == 2 and "give dump paths" in result.stderr


def test_dump_limits_are_the_common_limit_flags(tmp_path: Path) -> None:
    big = tmp_path / "nodes.yaml"
    big.write_text((DATA / "kind" / "nodes.yaml").read_text())
    two = tmp_path / "two.json"
    two.write_text('{"kind": "List", "items": [{"kind": "ConfigMap"}, {"kind": "ConfigMap"}]}')
    result = runner.invoke(app, ["profiles", "import", str(tmp_path), "--max-objects", "1"])
    assert result.exit_code == 2
    assert "2 objects in one file exceeds --max-objects 1" in result.stderr and "two.json" in result.stderr
    two.unlink()
    result = runner.invoke(app, ["profiles", "import", str(tmp_path), "--max-file-size", "1KiB"])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "exceeds --max-file-size 1 KiB" in lines[0] and "nodes.yaml" in lines[0]


# --- the load-balancer controller, from the dump's LoadBalancer Services ---------------------------


def _lb_service(name: str, ingress: list[dict[str, str]]) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "web"},
        "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]},
        "status": {"loadBalancer": {"ingress": ingress} if ingress else {}},
    }


@pytest.mark.parametrize(
    ("services", "want", "note"),
    [
        ([_lb_service("a", []), _lb_service("b", [{"hostname": "x.elb.amazonaws.com"}])], "hostname", "Service/web/b has status.loadBalancer.ingress[0].hostname"),
        ([_lb_service("a", [{"ip": "203.0.113.7"}])], "ip", "Service/web/a has status.loadBalancer.ingress[0].ip"),
        ([_lb_service("a", []), _lb_service("b", [])], "none", "INFERRED: 2 LoadBalancer Service(s), none with an address"),
        ([], "none", None),
    ],
)
def test_the_load_balancer_controller_is_read_from_the_dumps_services(
    tmp_path: Path, services: list[dict[str, object]], want: str, note: str | None
) -> None:
    dump = tmp_path / "dump"
    dump.mkdir()
    for f in (DATA / "kind").iterdir():
        (dump / f.name).write_bytes(f.read_bytes())
    if services:
        (dump / "services-web.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": services}))
    out = tmp_path / "imported.yaml"
    result = runner.invoke(app, ["profiles", "import", str(dump), "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert load_profile(str(out)).load_balancer == want
    if note is None:
        assert "loadBalancer:" not in text
    else:
        assert note in text


@pytest.mark.parametrize(
    ("kubelet_config", "expected"),
    [
        (None, "self-signed"),  # kind: kubeadm-config alone, kubeadm's default
        ("serverTLSBootstrap: true\n", "cluster-ca"),
        ("rotateCertificates: true\n", "self-signed"),
    ],
)
def test_kubelet_serving_certificates_come_from_the_kubeadm_configmaps(
    tmp_path: Path, kubelet_config: str | None, expected: str
) -> None:
    dump = tmp_path / "dump"
    dump.mkdir()
    for f in (DATA / "kind").iterdir():
        (dump / f.name).write_text(f.read_text())
    if kubelet_config is not None:
        # kubernetes/website docs/tasks/administer-cluster/kubeadm/kubeadm-certs.md: the
        # kubelet-config ConfigMap holds the cluster's KubeletConfiguration
        cm = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "kubelet-config", "namespace": "kube-system"},
            "data": {"kubelet": "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n" + kubelet_config},
        }
        (dump / "kubelet-config.yaml").write_text(yaml.safe_dump(cm))
    out = tmp_path / "imported.yaml"
    assert runner.invoke(app, ["profiles", "import", str(dump), "-o", str(out)]).exit_code == 0
    assert load_profile(str(out)).kubelet_serving_certificates == expected


def test_csidrivers_of_the_dumps_classes_become_objects(tmp_path: Path) -> None:
    """The EKS dumps hold the EBS and EFS CSIDrivers; only ebs.csi.aws.com provisions a class, so
    only its object (attachRequired true: its volumes are attached before pods mount them) is
    imported, and the EFS driver is named in a comment."""
    out, _ = _import(tmp_path, "eks", "--prior", "eks-gp3")
    text = out.read_text()
    drivers = [o for o in yaml.safe_load(text).get("objects") or () if o.get("kind") == "CSIDriver"]
    assert drivers == [
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "ebs.csi.aws.com"}, "spec": {"attachRequired": True}}
    ]
    assert "CSIDriver efs.csi.aws.com: no StorageClass provisions with it, not imported" in text
    assert "eks/csidrivers.yaml items[0] CSIDriver/ebs.csi.aws.com" in text  # its provenance


def test_namespaces_pod_security_labels_become_objects_and_the_admission_file_is_said(tmp_path: Path) -> None:
    """A namespace labelled to enforce a Pod Security level is copied into ``objects`` (its
    pod-security labels only), so the imported profile refuses what the cluster refuses; a
    kube-apiserver that reads an admission configuration file is a warning (its PodSecurity
    defaults are not readable through the API)."""
    dump = tmp_path / "dump"
    dump.mkdir()
    for f in (DATA / "kind").iterdir():
        (dump / f.name).write_text(f.read_text())
    namespaces = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": "tenant-a",
                    "labels": {
                        "kubernetes.io/metadata.name": "tenant-a",
                        "pod-security.kubernetes.io/enforce": "restricted",
                        "pod-security.kubernetes.io/warn": "restricted",
                        "team": "a",
                    },
                },
            },
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "plain", "labels": {"team": "b"}}},
        ],
    }
    (dump / "namespaces.yaml").write_text(yaml.safe_dump(namespaces))
    apiserver = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "kube-apiserver-cp", "namespace": "kube-system", "labels": {"component": "kube-apiserver"}},
        "spec": {"containers": [{"name": "kube-apiserver", "command": ["kube-apiserver", "--admission-control-config-file=/etc/kubernetes/psa.yaml"]}]},
    }
    (dump / "apiserver.yaml").write_text(yaml.safe_dump(apiserver))
    out = tmp_path / "imported.yaml"
    result = runner.invoke(app, ["profiles", "import", str(dump), "-o", str(out)])
    assert result.exit_code == 0, result.output
    objects = [o for o in yaml.safe_load(out.read_text()).get("objects") or () if o.get("kind") == "Namespace"]
    assert objects == [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": "tenant-a",
                "labels": {"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "restricted"},
            },
        }
    ]
    assert "/etc/kubernetes/psa.yaml" in result.output and "set podSecurity in the profile" in result.output
    profile = load_profile(str(out))
    assert profile.pod_security.defaults.enforce == "privileged"


def test_resource_quotas_and_limit_ranges_are_imported_without_their_status(tmp_path: Path) -> None:
    """A tenant namespace's ResourceQuota and LimitRange become profile objects (spec only:
    the simulation counts usage itself), so the imported profile refuses what they refuse."""
    dump = tmp_path / "dump"
    dump.mkdir()
    for f in (DATA / "kind").iterdir():
        (dump / f.name).write_text(f.read_text())
    items = [
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "compute", "namespace": "team-a", "uid": "1", "resourceVersion": "9"},
            "spec": {"hard": {"requests.cpu": "4", "pods": "20"}},
            "status": {"hard": {"requests.cpu": "4"}, "used": {"requests.cpu": "1"}},
        },
        {
            "apiVersion": "v1",
            "kind": "LimitRange",
            "metadata": {"name": "defaults", "namespace": "team-a"},
            "spec": {"limits": [{"type": "Container", "default": {"cpu": "500m"}}]},
        },
    ]
    (dump / "tenants.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    out = tmp_path / "imported.yaml"
    result = runner.invoke(app, ["profiles", "import", str(dump), "-o", str(out)])
    assert result.exit_code == 0, result.output
    objects = [o for o in yaml.safe_load(out.read_text()).get("objects") or () if o.get("kind") in ("ResourceQuota", "LimitRange")]
    assert objects == [
        {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "defaults", "namespace": "team-a"}, "spec": items[1]["spec"]},
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "compute", "namespace": "team-a"}, "spec": items[0]["spec"]},
    ]
    assert load_profile(str(out)).objects  # loads


def test_a_gke_cluster_is_imported_with_its_metadata_server(tmp_path: Path) -> None:
    """GKE's metadata server answers every pod (its Google credentials need no key file): a dump
    whose nodes are GCE instances imports with ``metadataServer: gce``; EKS's does not."""
    dump = tmp_path / "gke"
    dump.mkdir()
    for f in (DATA / "eks").iterdir():
        text = f.read_text()
        if f.name == "nodes.yaml":
            text = re.sub(r"aws:///([a-z0-9-]+)/(i-[0-9a-f]+)", r"gce://acme-prod/\1/gke-pool-\2", text)
        if f.name == "version.json":
            text = re.sub(r"-eks-[0-9a-f]+", "-gke.1200000", text)
        (dump / f.name).write_text(text)
    out = tmp_path / "gke.yaml"
    result = runner.invoke(app, ["profiles", "import", str(dump), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert load_profile(str(out)).metadata_server == "gce"
    assert "INFERRED: a GKE cluster (gke server version)" in out.read_text()
    eks, _ = _import(tmp_path, "eks", "--prior", "eks-gp3")
    assert load_profile(str(eks)).metadata_server == "none" and "metadataServer" not in eks.read_text()
