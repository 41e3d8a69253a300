"""`helmsim render` prints documents in `helm template`'s order and supports -s/--show-only
(issue 18 item 4; helm/helm pkg/action/action.go renderResources, pkg/cmd/template.go).

The manifest part is checked against Helm itself: helm-python-sdk's client-side dry-run install
returns the release manifest exactly as Helm builds it (`SortManifests` + InstallOrder), in a
subprocess so Go's runtime stays out of the test process."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from helmsim.cli import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]

TEMPLATES = {
    "a-deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {}\n",
    "b-svc.yaml": (
        "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\n"
    ),
    "c-ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n",
    "hooks.yaml": (
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  annotations: {helm.sh/hook: pre-install, helm.sh/hook-weight: '5'}\nspec: {}\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: after\n  annotations: {helm.sh/hook: post-install}\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dropped\n  annotations: {helm.sh/hook: pre-flight}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: smoke\n  annotations: {helm.sh/hook: test}\nspec: {}\n"
    ),
    "sub/z-custom.yaml": (
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n---\n"
        "apiVersion: example.com/v1\nkind: Aardvark\nmetadata: {name: a}\n---\n"
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: web}\n"
    ),
    "_helpers.tpl": '{{- define "x" -}}x{{- end -}}\n',
    "NOTES.txt": "thanks\n",
}
CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
"""


@pytest.fixture(scope="module")
def chart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("order") / "order"
    for name, text in TEMPLATES.items():
        (root / "templates" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "templates" / name).write_text(text)
    (root / "crds").mkdir()
    (root / "crds" / "widget.yaml").write_text(CRD)
    (root / "Chart.yaml").write_text("apiVersion: v2\nname: order\nversion: 0.1.0\n")
    return root


def render(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["render", *args])
    return result.exit_code, result.stdout, result.stderr


def heads(out: str) -> list[tuple[str, str, str]]:
    """(source, kind, name) of every printed document."""
    docs = []
    for chunk in out.split("---\n")[1:]:
        source = re.search(r"^# Source: (.+)$", chunk, re.M)
        kind = re.search(r"^kind: (\S+)$", chunk, re.M)
        name = re.search(r"name: (\S+?)[},\n]", chunk)
        assert source and kind and name, chunk
        docs.append((source.group(1), kind.group(1), name.group(1)))
    return docs


HELM_MANIFEST = """
import json, re, sys
import helm_python as helm
cfg = helm.Config(storage_driver="memory", kube_apiserver="https://127.0.0.1:1", namespace="default")
rel = cfg.install(sys.argv[1], "release-name", dry_run="client")
print(json.dumps(rel["manifest"]))
"""


def helm_manifest(chart: Path) -> list[tuple[str, str, str]]:
    done = subprocess.run([sys.executable, "-c", HELM_MANIFEST, str(chart)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return heads(json.loads(done.stdout))


def test_the_manifest_is_in_helms_own_order(chart: Path) -> None:
    code, out, err = render(str(chart))
    assert code == 0, err
    docs = heads(out)
    manifest = [d for d in docs if not d[0].endswith("hooks.yaml")]
    assert manifest == helm_manifest(chart)
    assert [k for _, k, _ in manifest] == [
        "Namespace", "ServiceAccount", "ConfigMap", "Service", "Deployment", "Aardvark", "Widget"
    ]


def test_crds_come_first_and_hooks_last_kind_sorted(chart: Path) -> None:
    code, out, _ = render(str(chart), "--include-crds")
    assert code == 0
    docs = heads(out)
    assert docs[0] == ("order/crds/widget.yaml", "CustomResourceDefinition", "widgets.example.com")
    # template.go prints rel.Hooks after the manifest: SortManifests' sortHooksByKind order
    assert [(k, n) for s, k, n in docs if s.endswith("hooks.yaml")] == [
        ("ConfigMap", "after"), ("Pod", "smoke"), ("Job", "migrate")
    ]
    assert docs[-3:] == [d for d in docs if d[0].endswith("hooks.yaml")]
    assert "dropped" not in out  # an unknown hook event: Helm drops the document
    assert "thanks" not in out and 'define "x"' not in out


def test_show_only_prints_the_matching_templates_in_pattern_order(chart: Path) -> None:
    code, out, _ = render(str(chart), "-s", "templates/sub/*.yaml", "--show-only", "templates/c-ns.yaml")
    assert code == 0
    assert heads(out) == [
        ("order/templates/sub/z-custom.yaml", "ServiceAccount", "web"),
        ("order/templates/sub/z-custom.yaml", "Aardvark", "a"),
        ("order/templates/sub/z-custom.yaml", "Widget", "w"),
        ("order/templates/c-ns.yaml", "Namespace", "shop"),
    ]
    code, out, _ = render(str(chart), "-s", "templates/hooks.yaml")
    assert [n for _, _, n in heads(out)] == ["after", "smoke", "migrate"]
    # Go's filepath.Match: * stops at a slash
    code, out, err = render(str(chart), "-s", "templates/*.yaml")
    assert code == 0 and "sub/z-custom.yaml" not in out and "c-ns.yaml" in out


def test_show_only_of_a_missing_template_is_one_line(chart: Path) -> None:
    code, out, err = render(str(chart), "-s", "templates/nope.yaml")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "could not find template templates/nope.yaml in chart" in err


def test_rendered_yaml_keeps_its_order(tmp_path: Path) -> None:
    f = tmp_path / "m.yaml"
    f.write_text(TEMPLATES["a-deploy.yaml"] + "---\n" + TEMPLATES["c-ns.yaml"])
    code, out, _ = render(str(f))
    assert code == 0 and [k for _, k, _ in heads(out)] == ["Deployment", "Namespace"]
