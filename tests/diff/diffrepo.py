"""Helpers for the diff tests: a small chart in a throw-away git repository, committed in steps."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

CHART_YAML = "apiVersion: v2\nname: demo\nversion: 1.0.0\n"

VALUES = """\
image: a:1
password: hunter2
"""

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: x
  namespace: kagent
spec:
  backoffLimit: 2
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: main
          image: {{ .Values.image | quote }}
"""

SECRET = """\
apiVersion: v1
kind: Secret
metadata:
  name: creds
stringData:
  password: {{ .Values.password | quote }}
"""

SWITCH = """\
{{- if .Values.newSwitch }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: switched
data:
  on: "yes"
{{- end }}
"""


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` (with a fixed identity) and return its stdout."""
    proc = subprocess.run(
        [
            "git",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "commit.gpgsign=false",
            *args,
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout


def write(root: Path, files: Mapping[str, str | None]) -> None:
    """Write (or delete, for None) files under ``root``."""
    for rel, text in files.items():
        path = root / rel
        if text is None:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def base_chart() -> dict[str, str | None]:
    return {
        "chart/Chart.yaml": CHART_YAML,
        "chart/values.yaml": VALUES,
        "chart/templates/job.yaml": JOB,
        "chart/templates/secret.yaml": SECRET,
        "chart/ci/default-values.yaml": "image: a:1\n",
        "chart/ci/default-other-values.yaml": "password: s3cret-value\n",
    }


def switch_added() -> dict[str, str | None]:
    """A new switch (off by default) and the ci file that turns it on."""
    return {
        "chart/values.yaml": VALUES
        + "# New: off keeps every existing render unchanged.\nnewSwitch: false\n",
        "chart/templates/switch.yaml": SWITCH,
        "chart/ci/switch-values.yaml": "newSwitch: true\n",
    }


Commit = Callable[..., None]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """An empty git repository."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    return root


@pytest.fixture
def commit(repo: Path) -> Commit:
    """``commit(files, message)``: write files and commit them all."""

    def do(files: Mapping[str, str | None], message: str = "change") -> None:
        write(repo, files)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", message)

    return do
