"""Turn a cluster's objects (dumps or live) into a profile ``Draft`` with provenance.

What is read, and from where (docs/profiles.md, "Importing a cluster"):

* the server version (``kubectl version -o json``), else the kubelets' versions;
* Nodes: labels, taints, zone, InternalIP, ``status.allocatable``;
* StorageClasses (default annotation, binding mode, expansion) and CSIDrivers;
* CRDs (served versions) and APIServices (aggregated APIs);
* the ``default/kubernetes`` Service, its EndpointSlices (or Endpoints), ``kube-system/kube-dns``,
  ServiceCIDRs and kubeadm's ``kubeadm-config`` for the addresses;
* DaemonSets and ConfigMaps for the CNI (``cilium-config``, ``aws-node``, Calico, kindnet with
  kube-network-policies, k3s's embedded kube-router);
* CiliumClusterwideNetworkPolicies and kube-system's policies, as the platform's baseline.

Latencies are not in any object: they come from a *prior* profile (the closest built-in, or
``--prior``) and are marked as such; ``helmsim profiles calibrate`` replaces them with measured
distributions.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import yaml
from msgspec import Struct

from helmsim.cluster.controllers.storage import is_default_class
from helmsim.cluster.profile import ClusterProfile, Latencies
from helmsim.errors import InputError
from helmsim.profiletools.draft import Draft
from helmsim.profiletools.dumps import Dump, Located

ZONE = "topology.kubernetes.io/zone"


class Platform(Struct, frozen=True):
    """What kind of cluster the objects show, and the built-in profile closest to it."""

    name: str  # kind, eks, gke, aks, k3s, or "" when unknown
    evidence: str
    prior: str | None  # built-in profile name to take latencies from


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _str_map(value: Any, what: str, o: Located) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(f"{what} is not a mapping", file=o.source, line=o.line)
    out: dict[str, str] = {}
    for k, v in value.items():
        if not isinstance(k, str):
            raise InputError(f"{what}: key {k!r} is not a string", file=o.source, line=o.line)
        out[k] = (
            v
            if isinstance(v, str)
            else json.dumps(v)
            if not isinstance(v, (int, float))
            else str(v)
        )
    return dict(sorted(out.items()))


# --- entry point --------------------------------------------------------------------------------


def build_draft(
    dump: Dump,
    *,
    name: str,
    origin: str,
    prior: ClusterProfile | None,
    prior_label: str,
    name_note: str = "--name",
) -> Draft:
    """The profile draft for ``dump``; ``origin`` says where the objects came from."""
    draft = Draft()
    platform = detect_platform(dump)
    draft.header += [
        f"Imported by `helmsim profiles import` from {origin}.",
        "Each value names its source; INFERRED values are guesses to check, UNVERIFIED ones are",
        "assumptions (the latencies until `helmsim profiles calibrate` measures them).",
    ]
    if platform.name:
        draft.header.append(f"Platform: {platform.name} ({platform.evidence}).")
    draft.put(("name",), name, name_note)
    desc = f"imported from {origin}" + (f" ({platform.name})" if platform.name else "")
    draft.put(("description",), desc, "helmsim profiles import")
    _version(draft, dump)
    _apis(draft, dump)
    _cni(draft, dump, platform)
    _storage(draft, dump)
    _csi_drivers(draft, dump)
    _pod_security(draft, dump)
    _namespace_limits(draft, dump)
    _nodes(draft, dump)
    _latencies(draft, prior, prior_label)
    _addressing(draft, dump, platform)
    _load_balancer(draft, dump)
    _metadata_server(draft, platform)
    _kubelet_certificates(draft, dump)
    _policies(draft, dump)
    return draft


def _load_balancer(draft: Draft, dump: Dump) -> None:
    """``loadBalancer`` from the LoadBalancer Services of the dump: one with an address says a
    controller writes hostnames or IPs (k8s.io/api core/v1 LoadBalancerIngress); all pending says
    none runs. Without such a Service nothing is said (the default: none)."""
    services = [
        o for o in dump.of("Service") if str(_map(o.obj.get("spec")).get("type") or "") == "LoadBalancer"
    ]
    for o in sorted(services, key=lambda o: (o.namespace, o.name)):
        ingress = _list(_map(_map(o.obj.get("status")).get("loadBalancer")).get("ingress"))
        first = _map(ingress[0]) if ingress else {}
        if first.get("hostname") or first.get("ip"):
            kind = "hostname" if first.get("hostname") else "ip"
            draft.put(("loadBalancer",), kind, f"{o.cite()} has status.loadBalancer.ingress[0].{kind}")
            return
    if services:
        o = min(services, key=lambda o: (o.namespace, o.name))
        draft.put(
            ("loadBalancer",),
            "none",
            f"INFERRED: {len(services)} LoadBalancer Service(s), none with an address ({o.cite()} EXTERNAL-IP <pending>)",
        )


def _metadata_server(draft: Draft, platform: Platform) -> None:
    """``metadataServer: gce`` on GKE, whose metadata server answers every pod
    (cloud.google.com/kubernetes-engine/docs/concepts/workload-identity); elsewhere nothing is
    said (the default: none)."""
    if platform.name == "gke":
        draft.put(("metadataServer",), "gce", f"INFERRED: a GKE cluster ({platform.evidence})")


def _kubelet_certificates(draft: Draft, dump: Dump) -> None:
    """``kubeletServingCertificates`` of a kubeadm cluster: its kubelet-config ConfigMap's
    KubeletConfiguration says whether kubelets bootstrap CA-signed serving certificates
    (``serverTLSBootstrap``); without it, kubeadm's ClusterConfiguration alone says kubeadm built
    the cluster, whose default is self-signed (kubernetes/website
    docs/tasks/administer-cluster/kubeadm/kubeadm-certs.md). Other clusters: nothing said."""
    maps = {o.name: o for o in dump.of("ConfigMap", "kube-system")}
    kubelet = maps.get("kubelet-config")
    if kubelet is not None:
        try:
            config = yaml.safe_load(str(_map(kubelet.obj.get("data")).get("kubelet") or "")) or {}
        except yaml.YAMLError:
            config = {}
        bootstrap = bool(_map(config).get("serverTLSBootstrap"))
        draft.put(
            ("kubeletServingCertificates",),
            "cluster-ca" if bootstrap else "self-signed",
            f"{kubelet.cite()} serverTLSBootstrap: {str(bootstrap).lower()}",
        )
    elif "kubeadm-config" in maps:
        draft.put(
            ("kubeletServingCertificates",),
            "self-signed",
            f"INFERRED: {maps['kubeadm-config'].cite()} (kubeadm built it; its kubelets' serving certificates are self-signed by default)",
        )


# --- platform -----------------------------------------------------------------------------------


def detect_platform(dump: Dump) -> Platform:
    """The platform, from node providerIDs, the server version and the CNI's DaemonSets."""
    git = str(_map(dump.server_version).get("gitVersion") or "")
    providers = sorted(
        {
            str(_map(n.obj.get("spec")).get("providerID") or "").split(":", 1)[0]
            for n in dump.of("Node")
        }
        - {""}
    )
    cilium = _cilium_config(dump) is not None or _daemonset(dump, "cilium", "anetd") is not None
    mode = _cilium_mode(dump)
    if "kind" in providers:
        prior = (
            "kind" if not cilium else ("cilium-always" if mode == "always" else "cilium-default")
        )
        return Platform("kind", "node providerID kind://", prior)
    if "-eks-" in git or "aws" in providers:
        return Platform(
            "eks", "eks server version" if "-eks-" in git else "providerID aws://", "eks-vpc-cni"
        )
    if "-gke." in git or "gce" in providers:
        return Platform(
            "gke",
            "gke server version" if "-gke." in git else "providerID gce://",
            "gke-dataplane-v2",
        )
    if "azure" in providers:
        return Platform("aks", "providerID azure://", "aks-cilium")
    if "+k3s" in git or "k3s" in providers:
        return Platform(
            "k3s", "k3s server version" if "+k3s" in git else "providerID k3s://", "k3s"
        )
    return Platform("", "", None)


# --- version and APIs ---------------------------------------------------------------------------


def _version(draft: Draft, dump: Dump) -> None:
    if dump.server_version is not None:
        git = str(dump.server_version["gitVersion"])
        draft.put(
            ("kubernetesVersion",),
            git.removeprefix("v"),
            f"{dump.version_source}: serverVersion.gitVersion {git}",
        )
        return
    kubelets = sorted(
        {
            str(_map(_map(n.obj.get("status")).get("nodeInfo")).get("kubeletVersion") or "")
            for n in dump.of("Node")
        }
        - {""}
    )
    if kubelets:
        newest = max(kubelets, key=_version_key)
        draft.put(
            ("kubernetesVersion",),
            newest.removeprefix("v"),
            f"INFERRED from the newest kubelet (status.nodeInfo.kubeletVersion {newest}); "
            "no `kubectl version -o json` dump",
        )
        draft.warn(
            "kubernetesVersion is the newest kubelet's: add `kubectl version -o json > version.json`"
            " for the API server's own"
        )
        return
    draft.put(
        ("kubernetesVersion",), "1.31.0", "UNKNOWN: no version dump and no Node; helmsim default"
    )
    draft.warn("kubernetesVersion is unknown (helmsim's default 1.31.0): add version.json")


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", v.split("-")[0].split("+")[0])[:3])


def _apis(draft: Draft, dump: Dump) -> None:
    crds: list[tuple[tuple[str, str, str], dict[str, Any], str]] = []
    skipped: list[str] = []
    for o in dump.of("CustomResourceDefinition"):
        spec = _map(o.obj.get("spec"))
        names = _map(spec.get("names"))
        group, kind = spec.get("group"), names.get("kind")
        if not isinstance(group, str) or not isinstance(kind, str):
            raise InputError(
                f"CustomResourceDefinition {o.name}: spec.group or spec.names.kind missing",
                file=o.source,
                line=o.line,
            )
        conds = {
            c.get("type"): c.get("status")
            for c in _list(_map(o.obj.get("status")).get("conditions"))
            if isinstance(c, Mapping)
        }
        if conds and conds.get("Established") != "True":
            skipped.append(f"{o.name} (not Established)")
            continue
        for v in _list(spec.get("versions")):
            if not isinstance(v, Mapping) or not v.get("served"):
                continue
            entry = {
                "group": group,
                "version": str(v.get("name")),
                "kind": kind,
                "plural": str(names.get("plural") or ""),
                "scope": str(spec.get("scope") or "Namespaced"),
            }
            if not entry["plural"]:
                del entry["plural"]
            crds.append(
                (
                    (group, kind, entry["version"]),
                    entry,
                    f"{o.cite()} spec.versions[{v.get('name')}] served",
                )
            )
    crds.sort(key=lambda c: c[0])
    if crds:
        draft.put(("crds",), [], "")
        for i, (_, entry, note) in enumerate(crds):
            draft.put(("crds", i), entry, note)
    for s in skipped:
        draft.note_block(("crds",), f"not imported: CRD {s}")
    aggregated: list[tuple[str, str]] = []
    local = 0
    for o in dump.of("APIService"):
        spec = _map(o.obj.get("spec"))
        gv = (
            f"{spec.get('group')}/{spec.get('version')}"
            if spec.get("group")
            else str(spec.get("version") or "")
        )
        if not spec.get("service"):
            local += 1  # served by kube-apiserver itself: a built-in group or a CRD's
            continue
        conds = {
            c.get("type"): c.get("status")
            for c in _list(_map(o.obj.get("status")).get("conditions"))
            if isinstance(c, Mapping)
        }
        if conds.get("Available", "True") != "True":
            draft.note_block(
                ("apiVersions",), f"not imported: APIService {o.name} is not Available"
            )
            continue
        aggregated.append((gv, f"{o.cite()} (aggregated, Available)"))
    aggregated.sort()
    if aggregated:
        draft.put(("apiVersions",), [], "")
        for i, (gv, note) in enumerate(aggregated):
            draft.put(("apiVersions", i), gv, note)
    if local:
        draft.note_block(
            ("crds",) if crds else ("apiVersions",),
            f"{local} local APIServices (built-in groups and CRD groups) are served by the API server "
            "itself: Helm's defaults cover the built-in ones, the CRDs are listed under crds",
        )


# --- CNI ----------------------------------------------------------------------------------------


def _cilium_config(dump: Dump) -> Located | None:
    return next((o for o in dump.of("ConfigMap") if o.name == "cilium-config"), None)


def _cilium_mode(dump: Dump) -> str:
    cm = _cilium_config(dump)
    data = _map(cm.obj.get("data")) if cm else {}
    return str(data.get("enable-policy") or "default").lower()


def _daemonset(dump: Dump, *names: str) -> Located | None:
    return next((o for o in dump.of("DaemonSet") if o.name in names), None)


def _containers(ds: Located) -> list[Mapping[str, Any]]:
    pod = _map(_map(_map(ds.obj.get("spec")).get("template")).get("spec"))
    return [c for c in _list(pod.get("containers")) if isinstance(c, Mapping)]


def _cni(draft: Draft, dump: Dump, platform: Platform) -> None:
    """Set ``cni.type`` and its Cilium settings from the CNI's DaemonSets and ConfigMaps."""
    cm = _cilium_config(dump)
    cilium_ds = _daemonset(dump, "cilium", "anetd")
    if cm is not None or cilium_ds is not None:
        _cilium(draft, cm, cilium_ds)
        return
    enforcers: list[str] = []
    non_enforcing: list[str] = []
    calico = _daemonset(dump, "calico-node")
    if calico is not None:
        enforcers.append(f"Calico ({calico.cite()})")
    knp = _daemonset(dump, "kube-network-policies")
    if knp is not None:
        # kubernetes-sigs/kind pkg/build/nodeimage/const_network_policy.go: the
        # kube-network-policies DaemonSet enforces NetworkPolicy next to kindnet (kind >= v0.24).
        enforcers.append(f"kube-network-policies ({knp.cite()})")
    npm = _daemonset(dump, "azure-npm")
    if npm is not None:
        enforcers.append(f"Azure Network Policy Manager ({npm.cite()})")
    aws = _daemonset(dump, "aws-node")
    if aws is not None:
        agent = next(
            (
                c
                for c in _containers(aws)
                if "--enable-network-policy=true" in [str(a) for a in _list(c.get("args"))]
            ),
            None,
        )
        vpc_cm = next((o for o in dump.of("ConfigMap") if o.name == "amazon-vpc-cni"), None)
        controller = (
            vpc_cm is not None
            and str(_map(vpc_cm.obj.get("data")).get("enable-network-policy-controller")) == "true"
        )
        if agent is not None:
            # aws/amazon-vpc-cni-k8s: the aws-eks-nodeagent container enforces NetworkPolicy when
            # started with --enable-network-policy=true (EKS user guide, cni-network-policy).
            enforcers.append(
                f"VPC CNI network policy agent ({aws.cite()} container {agent.get('name')} --enable-network-policy=true)"
            )
        elif controller:
            enforcers.append(
                f'VPC CNI network policy controller ({vpc_cm.cite() if vpc_cm else ""} enable-network-policy-controller: "true")'
            )
            draft.warn(
                "amazon-vpc-cni enables the policy controller but no node agent with --enable-network-policy=true was seen"
            )
        else:
            # charts/aws-vpc-cni/values.yaml enableNetworkPolicy defaults to "false".
            non_enforcing.append(f"VPC CNI without its network policy agent ({aws.cite()})")
    flannel = _daemonset(dump, "kube-flannel-ds", "kube-flannel")
    if flannel is not None:
        non_enforcing.append(f"flannel, which does not enforce NetworkPolicy ({flannel.cite()})")
    if platform.name == "k3s" and not enforcers:
        k3s_args = _k3s_node_args(dump)
        if "--disable-network-policy" in k3s_args:
            non_enforcing.append(
                "k3s started with --disable-network-policy (node annotation k3s.io/node-args)"
            )
        else:
            # docs.k3s.io networking/basic-network-options: k3s embeds kube-router's network
            # policy controller unless the server runs with --disable-network-policy.
            enforcers.append(
                "k3s's embedded kube-router network policy controller (k3s server version; no --disable-network-policy in k3s.io/node-args)"
            )
    kindnet = _daemonset(dump, "kindnet")
    if enforcers:
        draft.put(
            ("cni", "type"), "kubernetes", "NetworkPolicy enforced by " + "; ".join(enforcers)
        )
    elif non_enforcing:
        draft.put(
            ("cni", "type"), "none", "no NetworkPolicy enforcement: " + "; ".join(non_enforcing)
        )
    elif kindnet is not None:
        draft.put(
            ("cni", "type"),
            "kubernetes",
            f"UNVERIFIED: kindnet ({kindnet.cite()}) without kube-network-policies; assumed to enforce",
        )
        draft.warn(
            "kindnet without kube-network-policies: NetworkPolicy enforcement assumed, check your kind version"
        )
    else:
        draft.put(
            ("cni", "type"),
            "kubernetes",
            "UNDETECTED: no known CNI DaemonSet; NetworkPolicy enforcement assumed",
        )
        draft.warn(
            "no known CNI found (cilium, Calico, VPC CNI, kube-network-policies, flannel, k3s): "
            "cni.type kubernetes assumed (policies enforced); set it if wrong"
        )
    draft.put(("cni", "policyEnforcementMode"), "default", "Cilium only; NetworkPolicy semantics")


def _cilium(draft: Draft, cm: Located | None, ds: Located | None) -> None:
    where = cm.cite() if cm else ""
    agent = ds.cite() if ds else "no agent DaemonSet seen"
    draft.put(("cni", "type"), "cilium", f"Cilium: {agent}" + (f"; {where}" if where else ""))
    data = _map(cm.obj.get("data")) if cm else {}
    if cm is None:
        draft.warn(
            "Cilium's DaemonSet without its cilium-config ConfigMap: policyEnforcementMode default assumed"
        )
    mode = str(data.get("enable-policy") or "").lower()
    # cilium/cilium pkg/option/config.go EnablePolicy = "enable-policy": default | always | never.
    if mode in ("default", "always", "never"):
        draft.put(("cni", "policyEnforcementMode"), mode, f"{where} data.enable-policy")
    else:
        draft.put(
            ("cni", "policyEnforcementMode"),
            "default",
            f"{where}: no enable-policy key; the agent's default (pkg/option/config.go)"
            if cm
            else "ASSUMED default",
        )
        if mode:
            draft.warn(
                f"cilium-config enable-policy {mode!r} is not default/always/never; default assumed"
            )
    # cilium-cli utils/features: CIDRMatchNodes when policy-cidr-match-mode contains "nodes".
    cidr = str(data.get("policy-cidr-match-mode") or "")
    draft.put(
        ("cni", "policyCIDRMatchMode"),
        "nodes" if "nodes" in cidr.split(",") or "nodes" in cidr.split() else "",
        f"{where} data.policy-cidr-match-mode {cidr!r}" if cm else "assumed unset",
    )
    unmodelled = [
        (k, data[k])
        for k in (
            "kube-proxy-replacement",
            "labels",
            "identity-allocation-mode",
            "enable-k8s-networkpolicy",
            "enable-l7-proxy",
            "routing-mode",
            "tunnel-protocol",
            "cluster-pool-ipv4-cidr",
            "ipam",
            "enable-host-firewall",
            "policy-deny-response",
        )
        if k in data
    ]
    for key, value in unmodelled:
        draft.note_block(("cni",), f"cilium-config {key}: {value!r} (recorded; no profile field)")
    if str(data.get("enable-k8s-networkpolicy", "true")).lower() == "false":
        draft.warn(
            "cilium-config enable-k8s-networkpolicy is false: Cilium ignores NetworkPolicy, "
            "which the profile cannot express (the simulator enforces it)"
        )


def _k3s_node_args(dump: Dump) -> list[str]:
    out: list[str] = []
    for n in dump.of("Node"):
        raw = _map(_meta(n.obj).get("annotations")).get("k3s.io/node-args")
        if isinstance(raw, str):
            try:
                args = json.loads(raw)
            except ValueError:
                continue
            out.extend(str(a) for a in _list(args))
    return out


# --- storage ------------------------------------------------------------------------------------


def _storage(draft: Draft, dump: Dump) -> None:
    classes = sorted(
        dump.of("StorageClass"),
        key=lambda o: (str(_meta(o.obj).get("creationTimestamp") or ""), o.name),
    )
    drivers = {o.name: o for o in dump.of("CSIDriver")}
    if classes:
        draft.put(("storageClasses",), [], "in creation order (the last default wins)")
    for i, o in enumerate(classes):
        obj = o.obj
        provisioner = obj.get("provisioner")
        if not isinstance(provisioner, str) or not provisioner:
            raise InputError(f"StorageClass {o.name}: no provisioner", file=o.source, line=o.line)
        entry: dict[str, Any] = {
            "name": o.name,
            "provisioner": provisioner,
            # kubernetes/api storage/v1/types.go: volumeBindingMode defaults to Immediate,
            # reclaimPolicy to Delete.
            "volumeBindingMode": str(obj.get("volumeBindingMode") or "Immediate"),
            "allowVolumeExpansion": bool(obj.get("allowVolumeExpansion") or False),
            "default": is_default_class(obj),
            "reclaimPolicy": str(obj.get("reclaimPolicy") or "Delete"),
        }
        params = _str_map(obj.get("parameters"), f"StorageClass {o.name} parameters", o)
        if params:
            entry["parameters"] = params
        draft.put(("storageClasses", i), entry, o.cite())
        for key, note in (
            ("provisioner", "provisioner"),
            (
                "volumeBindingMode",
                "volumeBindingMode" if obj.get("volumeBindingMode") else "unset: the API default",
            ),
            (
                "allowVolumeExpansion",
                "allowVolumeExpansion" if "allowVolumeExpansion" in obj else "unset: false",
            ),
            (
                "default",
                "annotation storageclass.kubernetes.io/is-default-class (or its beta form)",
            ),
            (
                "reclaimPolicy",
                "reclaimPolicy" if obj.get("reclaimPolicy") else "unset: the API default",
            ),
            ("parameters", "parameters"),
        ):
            if key in entry and key != "name":
                draft.notes[("storageClasses", i, key)] = note
        extra = [k for k in ("mountOptions", "allowedTopologies") if obj.get(k)]
        if extra:
            draft.note_block(
                ("storageClasses", i),
                f"{o.name}: {', '.join(extra)} recorded in the dump; no profile field",
            )
        if provisioner in drivers:
            spec = _map(drivers[provisioner].obj.get("spec"))
            # kubernetes/api storage/v1/types.go CSIDriverSpec: attachRequired defaults to true.
            attach = spec.get("attachRequired", True)
            draft.note_block(
                ("storageClasses", i),
                f"{o.name}: CSIDriver {provisioner} attachRequired {str(bool(attach)).lower()} "
                f"({drivers[provisioner].cite()}; in objects)",
            )
        elif not provisioner.startswith("kubernetes.io/") and drivers:
            draft.note_block(
                ("storageClasses", i),
                f"{o.name}: no CSIDriver {provisioner} in the dumps (a non-CSI provisioner, or not installed)",
            )


def _csi_drivers(draft: Draft, dump: Dump) -> None:
    """The CSIDriver object of each driver a StorageClass provisions with into ``objects`` (name
    and spec): whether its volumes are attached to a node before pods mount them
    (docs/storage.md). The simulation creates volumes only through classes, so the others are
    named in a comment."""
    used = {str(o.obj.get("provisioner") or "") for o in dump.of("StorageClass")}
    drivers = sorted(dump.of("CSIDriver"), key=lambda o: o.name)
    kept = [o for o in drivers if o.name in used]
    for i, o in enumerate(kept):
        if i == 0:
            draft.put(("objects",), [], "objects the cluster holds that the simulation reads")
        spec = _map(o.obj.get("spec"))
        entry = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIDriver",
            "metadata": {"name": o.name},
            # kubernetes/api storage/v1/types.go CSIDriverSpec: attachRequired defaults to true.
            "spec": {"attachRequired": spec.get("attachRequired", True) is not False},
        }
        draft.put(("objects", i), entry, o.cite() + ("" if "attachRequired" in spec else " (attachRequired unset: true)"))
    unused = [o.name for o in drivers if o.name not in used]
    if kept and unused:
        draft.note_block(("objects",), f"CSIDriver {', '.join(unused)}: no StorageClass provisions with it, not imported")


def _pod_security(draft: Draft, dump: Dump) -> None:
    """Namespaces whose ``pod-security.kubernetes.io/*`` labels set a Pod Security level, into
    ``objects`` (name and those labels: the simulation's admission reads them). The API
    server's cluster-wide defaults live in its AdmissionConfiguration file, which no API
    returns; a kube-apiserver static pod that names one is said, the defaults left to the user."""
    labelled = []
    for o in sorted(dump.of("Namespace"), key=lambda o: o.name):
        labels = _map(_meta(o.obj).get("labels"))
        kept = {str(k): str(v) for k, v in labels.items() if str(k).startswith("pod-security.kubernetes.io/")}
        if kept:
            labelled.append((o, kept))
    objects = draft.data.get("objects")
    start = len(objects) if isinstance(objects, list) else 0
    for i, (o, kept) in enumerate(labelled):
        if start == 0 and i == 0:
            draft.put(("objects",), [], "objects the cluster holds that the simulation reads")
        entry = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": o.name, "labels": kept}}
        draft.put(("objects", start + i), entry, o.cite() + " (its Pod Security labels)")
    config = _flag(dump, "kube-apiserver", "admission-control-config-file")
    if config is not None:
        draft.warn(
            f"kube-apiserver reads an admission configuration ({config[0]}, {config[1]}): if it configures "
            "PodSecurity defaults or exemptions, set podSecurity in the profile (the file is not readable through the API)"
        )


def _namespace_limits(draft: Draft, dump: Dump) -> None:
    """The dump's ResourceQuotas and LimitRanges into ``objects`` (name, namespace, spec): the
    simulation's admission refuses what they refuse. Their status is not copied: usage is
    recomputed from the simulated namespace."""
    kept = sorted(
        [o for kind in ("ResourceQuota", "LimitRange") for o in dump.of(kind)],
        key=lambda o: (o.namespace, o.kind, o.name),
    )
    objects = draft.data.get("objects")
    start = len(objects) if isinstance(objects, list) else 0
    for i, o in enumerate(kept):
        if start == 0 and i == 0:
            draft.put(("objects",), [], "objects the cluster holds that the simulation reads")
        entry = {
            "apiVersion": "v1",
            "kind": o.kind,
            "metadata": {"name": o.name, "namespace": o.namespace},
            "spec": _plain(_map(o.obj.get("spec"))),
        }
        draft.put(("objects", start + i), entry, o.cite())


# --- nodes --------------------------------------------------------------------------------------


def _nodes(draft: Draft, dump: Dump) -> None:
    nodes = sorted(dump.of("Node"), key=lambda o: o.name)
    if not nodes:
        raise InputError(
            "no Node in the dumps: a profile needs at least one (kubectl get nodes -o yaml)"
        )
    draft.put(("nodes",), [], "")
    for i, o in enumerate(nodes):
        if not o.name:
            raise InputError("a Node without metadata.name", file=o.source, line=o.line)
        status = _map(o.obj.get("status"))
        labels = _str_map(_meta(o.obj).get("labels"), f"Node {o.name} metadata.labels", o)
        entry: dict[str, Any] = {"name": o.name}
        zone = labels.get(ZONE)
        if zone:
            entry["zone"] = zone
        addresses = [a for a in _list(status.get("addresses")) if isinstance(a, Mapping)]
        internal = [str(a.get("address")) for a in addresses if a.get("type") == "InternalIP"]
        ip = next(
            (a for a in internal if _is_ip(a, 4)), next((a for a in internal if _is_ip(a, 6)), None)
        )
        if ip:
            entry["internalIP"] = ip
        if labels:
            entry["labels"] = labels
        taints = []
        for t in _list(_map(o.obj.get("spec")).get("taints")):
            if not isinstance(t, Mapping) or not isinstance(t.get("key"), str):
                raise InputError(
                    f"Node {o.name}: a taint without a key", file=o.source, line=o.line
                )
            taint = {"key": t["key"], "effect": str(t.get("effect") or "")}
            if t.get("value"):
                taint = {"key": t["key"], "value": str(t["value"]), "effect": taint["effect"]}
            taints.append(taint)
        if taints:
            entry["taints"] = taints
        alloc = _str_map(status.get("allocatable"), f"Node {o.name} status.allocatable", o)
        if alloc:
            entry["allocatable"] = alloc
        draft.put(("nodes", i), entry, o.cite())
        if zone:
            draft.notes[("nodes", i, "zone")] = f"label {ZONE}"
        if ip:
            draft.notes[("nodes", i, "internalIP")] = "status.addresses InternalIP"
        if labels:
            draft.notes[("nodes", i, "labels")] = "metadata.labels"
        if taints:
            draft.notes[("nodes", i, "taints")] = "spec.taints (timeAdded dropped)"
        if alloc:
            draft.notes[("nodes", i, "allocatable")] = "status.allocatable"
        others = [
            f"{a.get('type')} {a.get('address')}" for a in addresses if str(a.get("address")) != ip
        ]
        if others:
            draft.note_block(
                ("nodes", i),
                f"{o.name} other addresses: {', '.join(others)} (recorded; the profile keeps one InternalIP)",
            )


def _is_ip(text: str, version: int) -> bool:
    try:
        return ipaddress.ip_address(text).version == version
    except ValueError:
        return False


# --- latencies ----------------------------------------------------------------------------------


def _latencies(draft: Draft, prior: ClusterProfile | None, label: str) -> None:
    defaults = ClusterProfile.model_validate({"name": "defaults", "nodes": [{"name": "n"}]})
    base = prior.to_data() if prior is not None else defaults.to_data()
    how = (
        f"prior: profile {label} (UNVERIFIED, not measured; helmsim profiles calibrate)"
        if prior is not None
        else "helmsim default (UNVERIFIED, not measured; helmsim profiles calibrate)"
    )
    for field, info in Latencies.model_fields.items():
        key = info.alias or field
        draft.put(("latencies", key), base["latencies"][key], how)
    for key in ("policyPropagationSeconds", "identityAllocationSeconds"):
        draft.put(("cni", key), base["cni"][key], how)
    for key in (
        "jobBackoffInitialSeconds",
        "jobBackoffCapSeconds",
        "kubeletBackoffInitialSeconds",
        "kubeletBackoffCapSeconds",
    ):
        draft.put(
            (key,), base[key], f"prior: profile {label}" if prior is not None else "helmsim default"
        )


# --- addressing ---------------------------------------------------------------------------------


def _kubeadm_networking(dump: Dump) -> tuple[Mapping[str, Any], str]:
    cm = dump.get("ConfigMap", "kube-system", "kubeadm-config")
    if cm is None:
        return {}, ""
    text = _map(cm.obj.get("data")).get("ClusterConfiguration")
    if not isinstance(text, str):
        return {}, ""
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError:
        raise InputError(
            "kubeadm-config data.ClusterConfiguration is not valid YAML",
            file=cm.source,
            line=cm.line,
        ) from None
    return _map(_map(config).get("networking")), f"{cm.cite()} ClusterConfiguration.networking"


def _flag(dump: Dump, component: str, flag: str) -> tuple[str, str] | None:
    """``--flag=value`` of a kube-system static Pod (``kube-apiserver-<node>``)."""
    for o in dump.of("Pod", "kube-system"):
        if _map(_meta(o.obj).get("labels")).get("component") != component:
            continue
        for c in _list(_map(o.obj.get("spec")).get("containers")):
            for arg in _list(_map(c).get("command")) + _list(_map(c).get("args")):
                if isinstance(arg, str) and arg.startswith(f"--{flag}="):
                    return arg.split("=", 1)[1], f"{o.cite()} {arg.split('=', 1)[0]}"
    return None


def _addressing(draft: Draft, dump: Dump, platform: Platform) -> None:
    networking, kubeadm_src = _kubeadm_networking(dump)
    api_svc = dump.get("Service", "default", "kubernetes")
    dns_svc = dump.get("Service", "kube-system", "kube-dns")
    api_ip = _cluster_ip(api_svc)
    dns_ip = _cluster_ip(dns_svc)
    if api_svc is None or not api_ip:
        raise InputError(
            "the default/kubernetes Service is not in the dumps (kubectl get svc -n default kubernetes -o yaml)"
        )
    draft.put(("addressing", "apiserverClusterIP"), api_ip, f"{api_svc.cite()} spec.clusterIP")
    if dns_svc is not None and dns_ip:
        draft.put(("addressing", "kubeDNSClusterIP"), dns_ip, f"{dns_svc.cite()} spec.clusterIP")
    else:
        draft.warn("no kube-system/kube-dns Service in the dumps: kubeDNSClusterIP inferred")
    _endpoint(draft, dump, api_svc)
    _service_cidr(draft, dump, networking, kubeadm_src, api_ip, dns_ip)
    _pod_cidr(draft, dump, networking, kubeadm_src, platform)
    domain = networking.get("dnsDomain")
    if isinstance(domain, str) and domain:
        draft.put(("addressing", "clusterDomain"), domain, f"{kubeadm_src}.dnsDomain")
    else:
        found = _corefile_domain(dump)
        if found:
            draft.put(("addressing", "clusterDomain"), found[0], found[1])
        else:
            draft.put(
                ("addressing", "clusterDomain"),
                "cluster.local",
                "ASSUMED: the kubelet's usual clusterDomain (no kubeadm-config or CoreDNS Corefile)",
            )


def _cluster_ip(svc: Located | None) -> str:
    if svc is None:
        return ""
    ip = _map(svc.obj.get("spec")).get("clusterIP")
    return (
        ip
        if isinstance(ip, str) and _is_ip(ip, 4) or (isinstance(ip, str) and _is_ip(ip, 6))
        else ""
    )


def _endpoint(draft: Draft, dump: Dump, api_svc: Located) -> None:
    addresses: list[tuple[str, int, str]] = []
    for o in dump.of("EndpointSlice", "default"):
        if _map(_meta(o.obj).get("labels")).get("kubernetes.io/service-name") != "kubernetes":
            continue
        ports = [p for p in _list(o.obj.get("ports")) if isinstance(p, Mapping)]
        port = next(
            (p.get("port") for p in ports if p.get("name") == "https"),
            ports[0].get("port") if ports else None,
        )
        for ep in _list(o.obj.get("endpoints")):
            for addr in _list(_map(ep).get("addresses")):
                if isinstance(addr, str) and isinstance(port, int):
                    addresses.append(
                        (addr, port, f"{o.cite()} endpoints[].addresses, ports[https]")
                    )
    if not addresses:
        ep = dump.get("Endpoints", "default", "kubernetes")
        for subset in _list(_map(ep.obj if ep else {}).get("subsets")):
            ports = [p for p in _list(_map(subset).get("ports")) if isinstance(p, Mapping)]
            port = next(
                (p.get("port") for p in ports if p.get("name") == "https"),
                ports[0].get("port") if ports else None,
            )
            for a in _list(_map(subset).get("addresses")):
                ip = _map(a).get("ip")
                if isinstance(ip, str) and isinstance(port, int) and ep is not None:
                    addresses.append((ip, port, f"{ep.cite()} subsets[].addresses, ports[https]"))
    if not addresses:
        port = next(
            (
                p.get("targetPort")
                for p in _list(_map(api_svc.obj.get("spec")).get("ports"))
                if isinstance(p, Mapping)
            ),
            6443,
        )
        draft.put(
            ("addressing", "apiserverEndpoint"),
            f"172.18.0.2:{port if isinstance(port, int) else 6443}",
            "INFERRED: no EndpointSlice or Endpoints of default/kubernetes; host is kind's first address",
        )
        draft.warn(
            "the apiserver's endpoints are not in the dumps (kubectl get endpointslices -n default -o yaml)"
        )
        return
    host, port, note = addresses[0]
    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    draft.put(("addressing", "apiserverEndpoint"), shown, note)
    if len(addresses) > 1:
        rest = ", ".join(f"{h}:{p}" for h, p, _ in addresses[1:])
        draft.note_block(
            ("addressing", "apiserverEndpoint"),
            f"further apiserver endpoints: {rest} (recorded; the simulator models one endpoint)",
        )


def _network(text: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    if not isinstance(text, str):
        return None
    first = text.split(",")[0].strip()
    try:
        return ipaddress.ip_network(first, strict=False)
    except ValueError:
        return None


def _service_cidr(
    draft: Draft,
    dump: Dump,
    networking: Mapping[str, Any],
    kubeadm_src: str,
    api_ip: str,
    dns_ip: str,
) -> None:
    path = ("addressing", "serviceCIDR")
    candidates: list[tuple[Any, str]] = []
    for o in dump.of("ServiceCIDR"):
        for cidr in _list(_map(o.obj.get("spec")).get("cidrs")):
            candidates.append((cidr, f"{o.cite()} spec.cidrs"))
    candidates.append((networking.get("serviceSubnet"), f"{kubeadm_src}.serviceSubnet"))
    flag = _flag(dump, "kube-apiserver", "service-cluster-ip-range")
    if flag:
        candidates.append(flag)
    needed = [ipaddress.ip_address(ip) for ip in (api_ip, dns_ip) if ip]
    for text, note in candidates:
        net = _network(text)
        if net is not None and all(ip.version == net.version and ip in net for ip in needed):
            draft.put(path, str(net), note)
            if not dns_ip:
                draft.put(
                    ("addressing", "kubeDNSClusterIP"),
                    str(net.network_address + 10),
                    "INFERRED: kubeadm's GetDNSIP (index 10 of the service subnet)",
                )
            return
    api = ipaddress.ip_address(api_ip)
    dns = ipaddress.ip_address(dns_ip) if dns_ip else None
    bits = 32 if api.version == 4 else 128
    for prefix in (16, 20, 24, 12, 28) if api.version == 4 else (112, 108, 120, 64):
        net = ipaddress.ip_network(f"{api}/{prefix}", strict=False)
        if dns is None or dns in net:
            draft.put(
                path,
                str(net),
                f"INFERRED: the /{prefix} around the apiserver ClusterIP {api} (no ServiceCIDR, kubeadm-config or kube-apiserver flag)",
            )
            draft.warn(
                f"serviceCIDR {net} is inferred: check it (kubectl get servicecidr -o yaml on 1.33+)"
            )
            if dns is None:
                draft.put(
                    ("addressing", "kubeDNSClusterIP"),
                    str(net.network_address + 10),
                    "INFERRED: kubeadm's GetDNSIP (index 10 of the service subnet)",
                )
            return
    draft.put(path, f"{api}/{bits}", "INFERRED")


def _pod_cidr(
    draft: Draft, dump: Dump, networking: Mapping[str, Any], kubeadm_src: str, platform: Platform
) -> None:
    path = ("addressing", "podCIDR")
    candidates: list[tuple[Any, str]] = [(networking.get("podSubnet"), f"{kubeadm_src}.podSubnet")]
    proxy = dump.get("ConfigMap", "kube-system", "kube-proxy")
    if proxy is not None:
        conf = _map(proxy.obj.get("data")).get("config.conf")
        if isinstance(conf, str):
            m = re.search(r"^clusterCIDR:\s*\"?([0-9a-fA-F.:/,]+)\"?\s*$", conf, re.MULTILINE)
            if m:
                candidates.append((m.group(1), f"{proxy.cite()} config.conf clusterCIDR"))
    cm = _cilium_config(dump)
    if cm is not None:
        candidates.append(
            (
                _map(cm.obj.get("data")).get("cluster-pool-ipv4-cidr"),
                f"{cm.cite()} data.cluster-pool-ipv4-cidr",
            )
        )
    flag = _flag(dump, "kube-controller-manager", "cluster-cidr")
    if flag:
        candidates.append(flag)
    for text, note in candidates:
        net = _network(text)
        if net is not None and net.version == 4:
            draft.put(path, str(net), note)
            return
    node_cidrs = [_network(_map(n.obj.get("spec")).get("podCIDR")) for n in dump.of("Node")]
    nets = [n for n in node_cidrs if n is not None and n.version == 4]
    if nets:
        net = nets[0]
        while not all(n.subnet_of(net) for n in nets):
            net = net.supernet()
        if net.prefixlen > 16:
            net = net.supernet(new_prefix=16)
        draft.put(path, str(net), "INFERRED: a supernet of the Nodes' spec.podCIDR")
        draft.warn(f"podCIDR {net} is inferred from the nodes' podCIDRs")
        return
    ips = [
        ipaddress.ip_address(str(_map(draft.data.get("nodes", [{}])[i]).get("internalIP")))
        for i in range(len(draft.data.get("nodes", [])))
        if _map(draft.data["nodes"][i]).get("internalIP")
    ]
    ips4 = [ip for ip in ips if ip.version == 4]
    if platform.name == "eks" and ips4:
        net = ipaddress.ip_network(f"{ips4[0]}/16", strict=False)
        draft.put(
            path,
            str(net),
            "INFERRED: the VPC CNI gives pods addresses from the nodes' VPC subnets; the /16 around the first node",
        )
        draft.warn(f"podCIDR {net} is inferred from the node addresses (VPC CNI)")
        return
    draft.put(path, "10.244.0.0/16", "ASSUMED: kind's default pod subnet (no source in the dumps)")
    draft.warn("podCIDR unknown: 10.244.0.0/16 assumed")


def _corefile_domain(dump: Dump) -> tuple[str, str] | None:
    cm = dump.get("ConfigMap", "kube-system", "coredns")
    if cm is None:
        return None
    corefile = _map(cm.obj.get("data")).get("Corefile")
    if not isinstance(corefile, str):
        return None
    # coredns/coredns plugin/kubernetes: `kubernetes ZONES...`; the first zone is the cluster's.
    m = re.search(r"^\s*kubernetes\s+([A-Za-z0-9.-]+)", corefile, re.MULTILINE)
    if not m:
        return None
    return m.group(1).rstrip("."), f"{cm.cite()} Corefile kubernetes plugin zone"


# --- platform policies --------------------------------------------------------------------------

_POLICY_KINDS = ("CiliumClusterwideNetworkPolicy", "CiliumNetworkPolicy", "NetworkPolicy")


def _policies(draft: Draft, dump: Dump) -> None:
    taken: list[tuple[dict[str, Any], str]] = []
    elsewhere = 0
    for o in dump.objects:
        if o.kind not in _POLICY_KINDS:
            continue
        if o.kind != "CiliumClusterwideNetworkPolicy" and o.namespace != "kube-system":
            elsewhere += 1
            continue
        meta: dict[str, Any] = {"name": o.name}
        if o.namespace:
            meta["namespace"] = o.namespace
        labels = _meta(o.obj).get("labels")
        if isinstance(labels, Mapping) and labels:
            meta["labels"] = dict(labels)
        policy: dict[str, Any] = {
            "apiVersion": o.obj.get("apiVersion"),
            "kind": o.kind,
            "metadata": meta,
        }
        for key in ("spec", "specs"):
            if key in o.obj:
                policy[key] = o.obj[key]
        taken.append((policy, o.cite()))
    taken.sort(
        key=lambda p: (
            p[0]["kind"],
            p[0]["metadata"].get("namespace", ""),
            p[0]["metadata"]["name"],
        )
    )
    if taken:
        draft.put(
            ("clusterPolicies",), [], "the platform's policies: cluster-wide ones and kube-system's"
        )
        for i, (policy, note) in enumerate(taken):
            draft.put(("clusterPolicies", i), _plain(policy), note)
    if elsewhere:
        draft.note_block(
            ("clusterPolicies",) if taken else ("addressing",),
            f"{elsewhere} policies in other namespaces were not imported (a release's namespaces are its own; "
            "add the ones that exist before your releases to clusterPolicies)",
        )


def _plain(value: Any) -> Any:
    """JSON-compatible copy (dumps are already plain; this guards the live client's objects)."""
    return json.loads(json.dumps(value, default=str))


def prior_name_for(dump: Dump) -> str | None:
    """The built-in profile whose latencies serve as the prior for ``dump``."""
    return detect_platform(dump).prior


def cited(values: Sequence[str]) -> str:
    """Join citations for a comment."""
    return "; ".join(v for v in values if v)
