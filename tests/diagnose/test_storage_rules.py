"""Claims inside Helm's wait that never bind: what HS102 counts as a consumer, and HS117's
words for a claim that is never provisioned (shapes a sweep of Bitnami charts found)."""

from __future__ import annotations

from pathlib import Path

from helmsim.cluster.profile import load_profile
from helmsim.diagnose.check import run_check
from helmsim.release_inputs import build_inputs

CLAIM = """\
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: dumps
spec:
  accessModes: [ReadWriteOnce]
  {storage_class}
  resources:
    requests:
      storage: 1Gi
"""

CRONJOB = """\
apiVersion: batch/v1
kind: CronJob
metadata:
  name: dump
spec:
  schedule: "@daily"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
            - name: dump
              image: registry.example.com/dump:1
              volumeMounts: [{name: out, mountPath: /out}]
          volumes:
            - name: out
              persistentVolumeClaim: {claimName: dumps}
"""


def _chart(tmp_path: Path, storage_class: str = "") -> Path:
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: dumps\nversion: 0.1.0\n")
    (chart / "templates" / "claim.yaml").write_text(CLAIM.format(storage_class=storage_class))
    (chart / "templates" / "cronjob.yaml").write_text(CRONJOB)
    return chart


def _findings(chart: Path, profile: str) -> dict[str, str]:
    releases = build_inputs(str(chart), release_name="dumps", namespace="db")
    report = run_check(releases, [load_profile(profile)])
    return {f.rule: f.worst.message for f in report.findings}


def test_a_claim_only_a_cronjob_mounts_is_unconsumed_inside_the_wait(tmp_path: Path) -> None:
    # bitnami/postgresql backup.enabled: the @daily CronJob creates no pod while Helm waits, so
    # the WaitForFirstConsumer claim stays Pending (it counted as a consumer and HS102 was silent)
    found = _findings(_chart(tmp_path), "kind")
    assert "HS102" in found, found
    assert found["HS102"].startswith("PersistentVolumeClaim/db/dumps binds only when a pod mounts it")


def test_a_claim_of_a_class_that_does_not_exist_is_never_provisioned(tmp_path: Path) -> None:
    # bitnami/etcd disasterRecovery: storageClassName nfs on a cluster without it (a bare HS100)
    found = _findings(_chart(tmp_path, "storageClassName: nfs"), "kind")
    assert found["HS117"].startswith(
        'PersistentVolumeClaim/db/dumps is never provisioned: storageclass.storage.k8s.io "nfs" not found; it stays Pending'
    ), found
