"""A need on a port the Service does not serve: the name resolves (the Service exists), so the
client's error is a failed dial, not DNS's "no such host" (bitnami/charts bitnami/rabbitmq: amqps
5671 on a Service serving 5672)."""

from __future__ import annotations

from pathlib import Path

from helmsim.cluster.profile import load_profile
from helmsim.release_inputs import build_inputs
from helmsim.simulate import simulate

TEMPLATE = """
apiVersion: v1
kind: Service
metadata: {name: queue}
spec:
  selector: {app: queue}
  ports: [{name: amqp, port: 5672}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: queue}
spec:
  selector: {matchLabels: {app: queue}}
  template:
    metadata: {labels: {app: queue}}
    spec:
      containers: [{name: broker, image: example.com/broker:1}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: client}
spec:
  selector: {matchLabels: {app: client}}
  template:
    metadata:
      labels: {app: client}
      annotations: {helmsim.dev/needs: "svc/default/queue:5671"}
    spec:
      containers: [{name: client, image: example.com/client:1}]
"""


def test_a_port_the_service_lacks_is_a_failed_dial(tmp_path: Path) -> None:
    chart = tmp_path / "ports"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: ports\nversion: 0.1.0\n")
    (chart / "templates" / "all.yaml").write_text(TEMPLATE)
    result = simulate(load_profile("kind"), build_inputs(str(chart)), horizon=120.0)
    refused = [e.message for e in result.trace if e.what == "connect-refused" and e.message.startswith("client: ")]
    assert refused, [e.message for e in result.trace if e.obj.startswith("Pod/default/client")][:20]
    assert "no such host" not in refused[0]
    assert refused[0].startswith("client: dial tcp 10.96.")
    assert refused[0].endswith(": connect: connection refused (service default/queue:5671: the Service has no port 5671/TCP)")
