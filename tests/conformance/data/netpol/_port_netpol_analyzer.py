"""Maintenance script: port np-guard/netpol-analyzer connlist scenarios into compact YAML.

Not a test. Run it against a git checkout of np-guard/netpol-analyzer to (re)generate the
``netpol_analyzer_*.yaml`` files next to it::

    python tests/conformance/data/netpol/_port_netpol_analyzer.py /path/to/netpol-analyzer.git

For each scenario it reads the manifests under ``tests/<dir>/`` and the expected text output
``test_outputs/connlist/<dir>_connlist_output.txt`` (format: ``SRC => DST : CONNS``), and keeps
only what the evaluator needs: namespaces with labels, one pod per workload (the workload's
pod-template labels and named container ports, named ``ns/name[Kind]`` as netpol-analyzer names
peers), the NetworkPolicies verbatim, and the expected lines verbatim. Lines with an
``{ingress-controller}`` peer (Ingress/Route analysis) are dropped.

Workload-to-peer rules mirror netpol-analyzer pkg/netpol/eval/internal/k8s/pod.go
(PodFromCoreObject: a pod is named after its controller ownerReference; pods read from files
get a fake IP when they have none, pkg/manifests/parser/k8sobj.go checkAndUpdatePodStatusIPsFields,
so every pod counts) and namespace.go (kubernetes.io/metadata.name is added).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

SCENARIOS = [
    "minimal_test_in_ns",
    "netpol-analysis-example-minimal",
    "onlineboutique_workloads",
    "new_online_boutique",
    "acs-security-demos",
    "ipblockstest",
    "ipblockstest_2",
    "ipblockstest_3",
    "test_with_named_ports",
    "with_end_port_example",
    "semanticDiff-same-topologies-new1",
    "semanticDiff-different-topologies-policy-a-with-ipblock",
    "netpol_named_port_test",
]
WORKLOADS = {
    "Deployment",
    "ReplicaSet",
    "DaemonSet",
    "StatefulSet",
    "Job",
    "ReplicationController",
    "CronJob",
}


def git(repo: str, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", repo, *args], check=True, capture_output=True, text=True
    ).stdout


def docs_of(repo: str, path: str) -> list[dict[str, Any]]:
    text = git(repo, "show", f"HEAD:{path}")
    raw = [json.loads(text)] if path.endswith(".json") else list(yaml.safe_load_all(text))
    out: list[dict[str, Any]] = []
    for d in raw:
        if not isinstance(d, dict):
            continue
        if d.get("kind", "").endswith("List") and isinstance(d.get("items"), list):
            item_kind = d["kind"][:-4]  # PodList items carry no kind of their own
            out.extend(
                {"kind": item_kind, **i} if item_kind and "kind" not in i else i
                for i in d["items"]
                if isinstance(i, dict)
            )
        else:
            out.append(d)
    return out


def named_ports(pod_spec: dict[str, Any]) -> list[dict[str, Any]]:
    ports = []
    for c in pod_spec.get("containers") or []:
        for p in c.get("ports") or []:
            # Go's encoding/json (behind sigs.k8s.io/yaml) matches field names case-insensitively.
            fields = {k.lower(): v for k, v in p.items()}
            if fields.get("name") and fields.get("containerport"):
                ports.append(
                    {
                        "name": fields["name"],
                        "port": fields["containerport"],
                        "protocol": fields.get("protocol", "TCP"),
                    }
                )
    return ports


def convert(repo: str, commit: str, scenario: str) -> dict[str, Any]:
    files = [
        f
        for f in git(repo, "ls-tree", "-r", "--name-only", "HEAD", f"tests/{scenario}/").split()
        if f.endswith((".yaml", ".yml", ".json")) and "connlist_output" not in f
    ]
    namespaces: dict[str, dict[str, str]] = {}
    pods: dict[str, dict[str, Any]] = {}
    policies: list[dict[str, Any]] = []
    for f in files:
        for d in docs_of(repo, f):
            kind = d.get("kind")
            meta = d.get("metadata") or {}
            ns = meta.get("namespace") or "default"
            if kind == "Namespace":
                namespaces[meta["name"]] = dict(meta.get("labels") or {})
            elif kind == "NetworkPolicy":
                policies.append(
                    {
                        "apiVersion": d["apiVersion"],
                        "kind": kind,
                        "metadata": {"name": meta["name"], "namespace": ns},
                        "spec": d.get("spec") or {},
                    }
                )
            elif kind in WORKLOADS or kind == "Pod":
                if kind == "Pod":
                    owner = next(
                        (
                            o
                            for o in meta.get("ownerReferences") or []
                            if o.get("controller") and o.get("kind") != "Node"
                        ),
                        None,
                    )
                    pid = (
                        f"{ns}/{owner['name']}[{owner['kind']}]"
                        if owner
                        else f"{ns}/{meta['name']}[Pod]"
                    )
                    labels, spec = meta.get("labels") or {}, d.get("spec") or {}
                else:
                    tpl = (d.get("spec") or {}).get("template") or {}
                    if kind == "CronJob":
                        tpl = d["spec"]["jobTemplate"]["spec"]["template"]
                    pid = f"{ns}/{meta['name']}[{kind}]"
                    labels, spec = (
                        (tpl.get("metadata") or {}).get("labels") or {},
                        tpl.get("spec") or {},
                    )
                entry = {"namespace": ns, "labels": dict(labels), "ports": named_ports(spec)}
                if pid in pods and pods[pid]["labels"] != entry["labels"]:
                    raise SystemExit(f"{scenario}: {pid} has pods with different labels")
                pods[pid] = entry
                namespaces.setdefault(ns, {})
    expected_path = f"test_outputs/connlist/{scenario}_connlist_output.txt"
    expected = [
        ln.strip()
        for ln in git(repo, "show", f"HEAD:{expected_path}").splitlines()
        if ln.strip() and "{ingress-controller}" not in ln
    ]
    return {
        "source": {
            "repo": "np-guard/netpol-analyzer",
            "commit": commit,
            "manifests": f"tests/{scenario}/",
            "expected": expected_path,
        },
        "namespaces": namespaces,
        "pods": [{"id": k, **v} for k, v in sorted(pods.items())],
        "policies": policies,
        "expected": expected,
    }


def main(repo: str) -> None:
    commit = git(repo, "rev-parse", "HEAD").strip()
    here = Path(__file__).parent
    for scenario in SCENARIOS:
        data = convert(repo, commit, scenario)
        out = here / f"netpol_analyzer_{scenario.replace('-', '_')}.yaml"
        header = (
            f"# Ported from np-guard/netpol-analyzer @ {commit}\n"
            f"# manifests: tests/{scenario}/ ; expected: {data['source']['expected']}\n"
            "# Generated by _port_netpol_analyzer.py; pods are one per workload.\n"
        )
        out.write_text(header + yaml.safe_dump(data, sort_keys=False, width=100))
        print(
            f"{out.name}: {len(data['pods'])} pods, {len(data['policies'])} policies, "
            f"{len(data['expected'])} expected lines"
        )


if __name__ == "__main__":
    main(sys.argv[1])
