"""HS116 does not blame a peer the program crash-looped on when a later run got through: in
bitnami redmine with two replicas under hard anti-affinity, redmine restarted until its MariaDB was
up and was then Ready, and the release was Stalled only for the replica no node could take
(HS115); HS116 was printed first, and HS110's fix said the release 'still ends Stalled: HS116'."""

from __future__ import annotations

from pathlib import Path

from helmsim.cluster.profile import load_profile
from helmsim.diagnose.check import CheckOptions, run_check
from helmsim.release_inputs import build_inputs

CHART = """apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
        - name: db
          image: registry.example.com/acme/db:1.0
          ports: [{name: tcp, containerPort: 5432}]
          readinessProbe: {tcpSocket: {port: tcp}, initialDelaySeconds: 30}
---
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  selector: {app: db}
  ports: [{port: 5432, targetPort: tcp}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
spec:
  replicas: 1
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      containers:
        - name: app
          image: registry.example.com/acme/app:1.0
          env: [{name: DATABASE_URL, value: "postgres://app@db:5432/app"}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: stuck}
spec:
  replicas: 1
  selector: {matchLabels: {app: stuck}}
  template:
    metadata: {labels: {app: stuck}}
    spec:
      nodeSelector: {{{selector}}}
      containers:
        - name: stuck
          image: registry.example.com/acme/stuck:1.0
"""


def _rules(tmp_path: Path, selector: str) -> list[str]:
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: recovered\nversion: 0.1.0\n")
    (chart / "templates" / "all.yaml").write_text(CHART.replace("{{{selector}}}", selector))
    inputs = build_inputs(
        str(chart), values=[], sets=[], helmrelease=[], charts=[], release_name="r", namespace="default",
        upgrade_from=None, upgrade_from_values=[], upgrade_from_set=[],
    )
    report = run_check(inputs, [load_profile("kind")], options=CheckOptions(verify_fixes=False))
    return [f.rule for f in report.findings]


def test_a_crash_loop_that_ended_is_not_the_cause(tmp_path: Path) -> None:
    rules = _rules(tmp_path, "{disk: ssd}")  # no node has it: the release is Stalled for that
    assert "HS115" in rules and "HS116" not in rules


def test_the_release_gets_ready_once_the_peer_is_up(tmp_path: Path) -> None:
    assert _rules(tmp_path, "{}") == []
