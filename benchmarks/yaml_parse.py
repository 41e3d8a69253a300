"""YAML parsing is the cost floor of every run: measure the parsers on 1,000 rendered objects.

Prints ms per 1,000 objects for PyYAML's C loader, yaml-rs, and helmsim's loader (yaml-rs fast
path, go-yaml-v2 fallback), plus the ratio of helmsim's loader to Helm's render of the same chart.
Run: .venv/bin/python benchmarks/yaml_parse.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import yaml
import yaml_rs

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from helmsim import render, yamlio  # noqa: E402

N = 1000

DOC = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-{i}
  namespace: team-{ns}
  labels:
    app.kubernetes.io/name: app-{i}
    app.kubernetes.io/instance: release
    app.kubernetes.io/managed-by: Helm
  annotations:
    checksum/config: "3f1d2a9b8c7e6d5f4a3b2c1d0e9f8a7b"
spec:
  replicas: 2
  selector:
    matchLabels:
      app.kubernetes.io/name: app-{i}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: app-{i}
    spec:
      serviceAccountName: app-{i}
      containers:
      - name: app
        image: "ghcr.io/example/app:1.{i}.0"
        ports:
        - containerPort: 8080
          name: http
        env:
        - name: LOG_LEVEL
          value: "info"
        resources:
          requests: {{cpu: 100m, memory: 128Mi}}
          limits: {{memory: 256Mi}}
        readinessProbe:
          httpGet: {{path: /healthz, port: http}}
          periodSeconds: 10
"""


# One object of a `kubectl get -o yaml` List (what `helmsim status` and `profiles import` read):
# quoted times, and a uid that starts with zeros, which once sent the whole List to the go-yaml
# path.
LIVE = """\
- apiVersion: v1
  kind: Pod
  metadata:
    creationTimestamp: "2026-01-01T00:00:0{d}Z"
    name: app-{i}
    namespace: team
    resourceVersion: "{i}"
    uid: 0{d}000000-0000-4000-8000-00000000{i:04d}
  status:
    conditions:
    - lastTransitionTime: "2026-01-01T00:00:0{d}Z"
      status: "True"
      type: Ready
    phase: Running
    podIP: 10.244.0.{d}
"""


def _best(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    text = "---\n".join(DOC.format(i=i, ns=i % 7) for i in range(N))
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    py = _best(lambda: list(yaml.load_all(text, Loader=loader)))
    rs = _best(lambda: yaml_rs.loads(text, parse_datetime=False))
    ours = _best(lambda: yamlio.load_documents(text, "bench.yaml"))
    slow = _best(lambda: [yamlio._load_goyaml(c, "b", 1) for c, _ in yamlio.split_documents(text)])
    with tempfile.TemporaryDirectory() as tmp:
        chart = Path(tmp) / "bench"
        (chart / "templates").mkdir(parents=True)
        (chart / "Chart.yaml").write_text("apiVersion: v2\nname: bench\nversion: 0.1.0\n")
        body = DOC.format(i="{{ $i }}", ns="{{ mod $i 7 }}")
        (chart / "templates" / "many.yaml").write_text(
            "{{- range $i := until %d }}\n---\n%s{{- end }}\n" % (N, body)
        )
        rendered = render.render_chart(chart, render.RenderOptions())
        helm = _best(lambda: render.render_chart(chart, render.RenderOptions()), repeat=3)
        n_docs = len(yamlio.load_documents(rendered.files[0].content, "r"))
    print(f"objects: {N} (rendered by Helm: {n_docs})")
    print(f"helm render (helm-python-sdk)   {helm * 1000:8.1f} ms")
    print(f"PyYAML C loader                 {py * 1000:8.1f} ms")
    print(f"yaml-rs                         {rs * 1000:8.1f} ms")
    print(f"helmsim loader (fast path)      {ours * 1000:8.1f} ms")
    print(f"helmsim loader (go-yaml path)   {slow * 1000:8.1f} ms")
    live = "apiVersion: v1\nkind: List\nitems:\n" + "".join(LIVE.format(i=i, d=i % 10) for i in range(N))
    live_ours = _best(lambda: yamlio.load_documents(live, "live.yaml"))
    live_slow = _best(lambda: yamlio._load_goyaml(live, "live.yaml", 1))
    print(f"kubectl List of {N} pods, helmsim loader {live_ours * 1000:8.1f} ms (go-yaml path {live_slow * 1000:.1f} ms)")
    print(f"ratio helmsim/PyYAML            {ours / py:8.2f}")
    print(f"ratio helmsim/helm-render       {ours / helm:8.2f}")


if __name__ == "__main__":
    main()
