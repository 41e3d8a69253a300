"""Which volumes of a pod are attached first, and which one node at a time
(kubernetes pkg/volume/csi/csi_plugin.go skipAttach; pkg/controller/volume/attachdetach
reconciler.go isMultiAttachForbidden)."""

from __future__ import annotations

from typing import Any

import pytest

from helmsim.cluster.controllers.attach import Volume, volumes_to_attach


class _Store:
    def __init__(self, *objects: dict[str, Any]) -> None:
        self.objects = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in objects}

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self.objects.get((kind, namespace, name))


def _pv(source: dict[str, Any], modes: list[str] | None) -> dict[str, Any]:
    spec: dict[str, Any] = dict(source)
    if modes is not None:
        spec["accessModes"] = modes
    return {"kind": "PersistentVolume", "metadata": {"name": "pv-1"}, "spec": spec}


CLAIM = {"kind": "PersistentVolumeClaim", "metadata": {"namespace": "ns", "name": "data"}, "spec": {"volumeName": "pv-1"}}
POD = {"metadata": {"namespace": "ns", "name": "p"}, "spec": {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}}
EBS = {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-1"}}


def _driver(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "CSIDriver", "metadata": {"name": name}, "spec": spec}


@pytest.mark.parametrize(
    ("source", "modes", "driver", "want"),
    [
        # CSIDriver attachRequired true or unset: attached; without one, attached and said
        (EBS, ["ReadWriteOnce"], {"attachRequired": True}, Volume("d", "pv-1", True)),
        (EBS, ["ReadWriteOnce"], {}, Volume("d", "pv-1", True)),
        (EBS, ["ReadWriteOnce"], None, Volume("d", "pv-1", True, "ebs.csi.aws.com")),
        (EBS, ["ReadWriteOnce"], {"attachRequired": False}, None),
        # ReadWriteMany or ReadOnlyMany among the modes: several nodes; no modes: left to the attacher
        (EBS, ["ReadWriteOnce", "ReadOnlyMany"], {"attachRequired": True}, Volume("d", "pv-1", False)),
        (EBS, ["ReadWriteMany"], {"attachRequired": True}, Volume("d", "pv-1", False)),
        (EBS, None, {"attachRequired": True}, Volume("d", "pv-1", False)),
        (EBS, ["ReadWriteOncePod"], {"attachRequired": True}, Volume("d", "pv-1", True)),
        # in-tree attachable sources; vSphere never forbids a second node
        ({"awsElasticBlockStore": {"volumeID": "vol-1"}}, ["ReadWriteOnce"], None, Volume("d", "pv-1", True)),
        ({"vsphereVolume": {"volumePath": "[ds] v"}}, ["ReadWriteOnce"], None, Volume("d", "pv-1", False)),
        # nothing to attach
        ({"hostPath": {"path": "/var/local-path-provisioner/x"}}, ["ReadWriteOnce"], None, None),
        ({"nfs": {"server": "nfs", "path": "/"}}, ["ReadWriteMany"], None, None),
    ],
)
def test_volumes_to_attach(source: dict[str, Any], modes: list[str] | None, driver: dict[str, Any] | None, want: Volume | None) -> None:
    objects = [CLAIM, _pv(source, modes)]
    if driver is not None:
        objects.append(_driver("ebs.csi.aws.com", driver))
    got = volumes_to_attach(_Store(*objects), POD)
    assert got == ([want] if want else [])


def test_an_unbound_or_missing_claim_has_nothing_to_attach() -> None:
    unbound = {**CLAIM, "spec": {}}
    assert volumes_to_attach(_Store(unbound), POD) == []
    assert volumes_to_attach(_Store(), POD) == []
