"""Regenerate the recorded events and objects of a kind cluster's afternoon (see README.md).

Run from the repository root: ``.venv/bin/python tests/data/profiles/events/make_events.py``.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
T0 = datetime(2026, 1, 5, 14, 0, 0, tzinfo=UTC)

# (including-waiting figure, pull figure, kubelet message format) per pod
PULLS = [
    ("3.2s", "3.2s", "1.30"), ("1.2s", "1.187s", "1.30"), ("2.5s", "2.5s", "1.28"),
    ("12.5s", "12.4s", "1.30"), ("3.1s", "3.1s", "1.27"), ("4s", "3.9s", "1.30"),
    ("850ms", "850ms", "1.30"), ("6.3s", "6.1s", "1.28"), ("9.7s", "9.7s", "combined"),
    ("3.4s", "3.35s", "1.30"), ("1m2.5s", "1m2.5s", "1.30"), ("2.9s", "2.9s", "1.27"),
]
SCHEDULE_DELAYS = [0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 0, 0]  # whole seconds, creation → PodScheduled
START_DELAYS = [0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1]  # Pulled → Started (kubelet, whole seconds)
PROVISION = [2, 3, 3, 4, 2, 5, 3, 3, 4, 2, 3]  # Provisioning → ProvisioningSucceeded, seconds
PROPAGATION = [0.8, 1.3, 0.9, 2.1, 1.1, 0.7, 1.6, 3.9, 1.2, 1.0]  # CNP created → enforcing


def ts(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def micro(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def uid(*parts: object) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "/".join(map(str, parts))))


def kubelet_event(n: int, pod: dict, reason: str, message: str, at: datetime, container: str) -> dict:
    meta = pod["metadata"]
    return {
        "apiVersion": "v1", "kind": "Event", "count": 1, "type": "Normal", "reason": reason, "message": message,
        "eventTime": None, "firstTimestamp": ts(at), "lastTimestamp": ts(at),
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "namespace": meta["namespace"],
                           "uid": meta["uid"], "fieldPath": f"spec.containers{{{container}}}", "resourceVersion": "4012"},
        "metadata": {"name": f"{meta['name']}.{n:016x}", "namespace": meta["namespace"], "creationTimestamp": ts(at),
                     "uid": uid("event", meta["name"], n), "resourceVersion": str(5000 + n)},
        "reportingComponent": "kubelet", "reportingInstance": "kind-control-plane",
        "source": {"component": "kubelet", "host": "kind-control-plane"},
    }


def scheduler_event(n: int, pod: dict, at: datetime) -> dict:
    meta = pod["metadata"]
    # events.k8s.io/v1 recorder (pkg/scheduler/schedule_one.go): eventTime set, no first/lastTimestamp.
    return {
        "apiVersion": "v1", "kind": "Event", "action": "Binding", "type": "Normal", "reason": "Scheduled",
        "message": f"Successfully assigned {meta['namespace']}/{meta['name']} to kind-control-plane",
        "eventTime": micro(at), "firstTimestamp": None, "lastTimestamp": None,
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "namespace": meta["namespace"], "uid": meta["uid"], "resourceVersion": "4001"},
        "metadata": {"name": f"{meta['name']}.{n:016x}", "namespace": meta["namespace"], "creationTimestamp": ts(at),
                     "uid": uid("event", meta["name"], n), "resourceVersion": str(5000 + n)},
        "reportingComponent": "default-scheduler", "reportingInstance": "default-scheduler-kind-control-plane", "source": {},
    }


def pulled_message(image: str, total: str, pull: str, fmt: str) -> str:
    if fmt == "1.27":
        return f'Successfully pulled image "{image}" in {total}'
    if fmt == "1.28":
        return f'Successfully pulled image "{image}" in {pull} ({total} including waiting)'
    base = f'Successfully pulled image "{image}" in {pull} ({total} including waiting). Image size: 45012345 bytes.'
    return "(combined from similar events): " + base if fmt == "combined" else base


def main() -> None:
    events: list[dict] = []
    pods: list[dict] = []
    n = 0
    for i, (total, pull, fmt) in enumerate(PULLS):
        created = T0 + timedelta(minutes=3 * i, seconds=0.4 + 0.05 * i)
        name = f"web-{i:02d}"
        image = f"ghcr.io/example/web:1.{i}.0"
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": "shop", "uid": uid("pod", name), "creationTimestamp": ts(created)},
               "spec": {"nodeName": "kind-control-plane", "containers": [{"name": "web", "image": image}]},
               "status": {"phase": "Running", "conditions": []}}
        scheduled_at = created.replace(microsecond=0) + timedelta(seconds=SCHEDULE_DELAYS[i])
        pod["status"]["conditions"].append({"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": ts(scheduled_at)})
        pods.append(pod)
        events.append(scheduler_event(n := n + 1, pod, created + timedelta(milliseconds=120)))
        pulling_at = created + timedelta(seconds=1)
        events.append(kubelet_event(n := n + 1, pod, "Pulling", f'Pulling image "{image}"', pulling_at, "web"))
        from helmsim.cluster.latency import parse_duration
        pulled_at = pulling_at + timedelta(seconds=parse_duration(total))
        events.append(kubelet_event(n := n + 1, pod, "Pulled", pulled_message(image, total, pull, fmt), pulled_at, "web"))
        started_at = pulled_at.replace(microsecond=0) + timedelta(seconds=START_DELAYS[i])
        events.append(kubelet_event(n := n + 1, pod, "Created", "Created container: web", started_at, "web"))
        events.append(kubelet_event(n := n + 1, pod, "Started", "Started container web", started_at, "web"))
    for i, seconds in enumerate(PROVISION + [None]):
        claim = {"name": f"data-db-{i}", "namespace": "shop", "uid": uid("pvc", i)}
        start = T0 + timedelta(minutes=40 + 2 * i, seconds=0.2)
        def pvc_event(reason: str, message: str, at: datetime, kind: str = "Normal") -> dict:
            nonlocal n
            n += 1
            return {"apiVersion": "v1", "kind": "Event", "count": 1, "type": kind, "reason": reason, "message": message,
                    "eventTime": None, "firstTimestamp": ts(at), "lastTimestamp": ts(at),
                    "involvedObject": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", **claim, "resourceVersion": "6001"},
                    "metadata": {"name": f"{claim['name']}.{n:016x}", "namespace": "shop", "creationTimestamp": ts(at), "uid": uid("event", n)},
                    "reportingComponent": "rancher.io/local-path_local-path-provisioner-7dc846544d-4w6lx_3f8a0c52-6b1e-4a5e-9f39-2c1d0e7b8a64",
                    "source": {"component": "rancher.io/local-path_local-path-provisioner-7dc846544d-4w6lx_3f8a0c52-6b1e-4a5e-9f39-2c1d0e7b8a64"}}
        events.append(pvc_event("Provisioning", f'External provisioner is provisioning volume for claim "shop/{claim["name"]}"', start))
        if seconds is None:  # a failed first try: excluded from the latency
            events.append(pvc_event("ProvisioningFailed", "failed to provision volume with StorageClass \"standard\": configuration error, no node was specified", start + timedelta(seconds=1), "Warning"))
            events.append(pvc_event("ProvisioningSucceeded", f"Successfully provisioned volume pvc-{claim['uid']}", start + timedelta(seconds=30)))
        else:
            end = start.replace(microsecond=0) + timedelta(seconds=seconds)
            events.append(pvc_event("ProvisioningSucceeded", f"Successfully provisioned volume pvc-{claim['uid']}", end))
        if i < 3:  # only three attach records: too few, the prior is kept
            pod = {"metadata": {"name": f"db-{i}", "namespace": "shop", "uid": uid("dbpod", i)}}
            sched = start - timedelta(seconds=0.5)
            events.append(scheduler_event(n := n + 1, pod, sched))
            attach = {"apiVersion": "v1", "kind": "Event", "count": 1, "type": "Normal", "reason": "SuccessfulAttachVolume",
                      "message": f'AttachVolume.Attach succeeded for volume "pvc-{claim["uid"]}"',
                      "eventTime": None, "firstTimestamp": ts(start + timedelta(seconds=(seconds or 30) + 2)), "lastTimestamp": ts(start + timedelta(seconds=(seconds or 30) + 2)),
                      "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": f"db-{i}", "namespace": "shop", "uid": uid("dbpod", i)},
                      "metadata": {"name": f"db-{i}.{n:016x}", "namespace": "shop", "uid": uid("attach", i)},
                      "source": {"component": "attachdetach-controller"}}
            events.append(attach)
    cnps = []
    for i, seconds in enumerate(PROPAGATION):
        created = T0 + timedelta(minutes=70 + i)  # whole second
        nodes = {"kind-control-plane": {"enforcing": True, "ok": True, "localPolicyRevision": 10 + i,
                                        "lastUpdated": micro(created + timedelta(seconds=seconds + 0.5))}}
        cnps.append({"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
                     "metadata": {"name": f"allow-{i}", "namespace": "shop", "generation": 1, "creationTimestamp": ts(created), "uid": uid("cnp", i)},
                     "spec": {"endpointSelector": {"matchLabels": {"app": f"web-{i}"}}, "egress": [{"toEntities": ["kube-apiserver"]}]},
                     "status": {"nodes": nodes}})
    def dump(name: str, items: list[dict]) -> None:
        (HERE / name).write_text(json.dumps({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}, indent=2) + "\n")
    dump("events.json", events)
    dump("pods.json", pods)
    dump("cnps.json", cnps)


if __name__ == "__main__":
    main()
