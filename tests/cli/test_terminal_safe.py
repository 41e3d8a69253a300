"""No command writes a raw control character to the terminal (issue 12: object names with ESC
sequences reached the terminal raw; docs/security.md#terminal-safe-text).

A chart whose object names, image, data and fault messages hold escape sequences (an OSC that
retitles the terminal, a CSI that clears it, a bidi override) runs through every command in
text form; stdout and stderr must hold none of them raw, and show them as ``\\x1b`` text.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from helmsim.cli import app

runner = CliRunner()
# What a terminal acts on: C0 but tab and newline, DEL, C1, bidi overrides and isolates.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
TITLE = "\\e]0;owned\\a"  # YAML double-quoted escapes: ESC ] 0 ; owned BEL
SHOWN = "\\x1b]0;owned\\x07"  # how the outputs print it

CHART = {
    "Chart.yaml": "apiVersion: v2\nname: esc\nversion: 0.1.0\n",
    "templates/cm.yaml": f"""\
apiVersion: v1
kind: ConfigMap
metadata:
  name: "cm{TITLE}\\e[2J"
data:
  note: "hello\\e[31mred\\u202eright-to-left {{{{ .Values.tag }}}}"
""",
    "templates/job.yaml": f"""\
apiVersion: batch/v1
kind: Job
metadata:
  name: "job{TITLE}"
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: main
          image: busybox
""",
    # an image the kubelet cannot parse: its InvalidImageName text quotes the sequences
    "templates/deploy.yaml": f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: "web{TITLE}"
spec:
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers:
        - name: main
          image: "busybox{TITLE}"
""",
    "values.yaml": "tag: one\n",
}

SAVED = f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: "web{TITLE}"
  namespace: default
  generation: 1
spec:
  replicas: 1
status:
  observedGeneration: 1
  replicas: 1
  updatedReplicas: 1
  readyReplicas: 0
  availableReplicas: 0
  conditions:
    - type: Progressing
      status: "False"
      reason: ProgressDeadlineExceeded
      message: "ReplicaSet \\"web{TITLE}\\" has timed out progressing."
"""


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@e", "-c", "commit.gpgsign=false", *args],
        cwd=repo, check=True, capture_output=True,
    )


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository holding the chart (committed, then its values changed for `diff`), the
    saved objects of `status` and a scenario whose fault message holds the sequences."""
    root = tmp_path_factory.mktemp("esc")
    for rel, text in CHART.items():
        (root / "chart" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "chart" / rel).write_text(text, encoding="utf-8")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "one")
    (root / "chart" / "values.yaml").write_text("tag: two\n", encoding="utf-8")
    (root / "saved.yaml").write_text(SAVED, encoding="utf-8")
    (root / "esc.helmsim.yaml").write_text(
        f"""\
apiVersion: helmsim.dev/v1alpha1
kind: Scenario
metadata:
  name: esc
profile: kind
horizon: 3m
releases:
  - chart: chart
faults:
  - containerExit:
      match: {{kind: Job}}
      exitCode: 1
      message: "boom{TITLE}"
expect:
  - release: default/esc
    outcome: Ready
""",
        encoding="utf-8",
    )
    return root


def run(work: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, [a.replace("{W}", str(work)) for a in args])
    assert "Traceback" not in result.output
    return result.exit_code, result.stdout + result.stderr


COMMANDS = [
    ["plan", "{W}/chart"],
    ["plan", "{W}/chart", "--upgrade-from", "{W}/chart", "--upgrade-from-set", "tag=zero"],
    ["simulate", "{W}/chart", "--horizon", "2m"],
    ["simulate", "{W}/chart", "--horizon", "2m", "--full-timeline"],
    ["simulate", "{W}/chart", "--horizon", "2m", "--runs", "2"],
    ["check", "{W}/chart", "-p", "kind", "--no-verify"],
    ["fleet", "{W}/chart", "-p", "kind", "--no-verify"],
    ["status", "{W}/saved.yaml"],
    ["diff", "{W}/chart", "--against", "HEAD"],
    ["test", "{W}/esc.helmsim.yaml"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(x.replace("{W}/", "") for x in a))
def test_no_command_prints_a_raw_control_character(work: Path, args: list[str]) -> None:
    code, out = run(work, *args)
    assert code in (0, 1), out
    assert RAW.findall(out) == []
    assert SHOWN in out  # the name is still there, readable


def test_render_prints_the_manifest_as_rendered_without_raw_controls(work: Path) -> None:
    """`render` prints Helm's text, where YAML's own escapes (`\\e`) already stand for ESC."""
    code, out = run(work, "render", "{W}/chart")
    assert code == 0 and RAW.findall(out) == [] and TITLE in out


@pytest.mark.parametrize(
    "args",
    [
        ["check", "{W}/chart", "-p", "no\x1b]0;owned\x07such"],  # an unknown profile, named
        ["render", "{W}/chart", "-f", "{W}/no\x1b[2J.yaml"],  # a missing values file, named
        ["status", "{W}/missing\x1b]0;owned\x07.yaml"],  # a missing file, named
    ],
)
def test_errors_quoting_the_input_escape_it(work: Path, args: list[str]) -> None:
    code, out = run(work, *args)
    assert code == 2 and out.count("\n") == 1 and out.startswith("error: "), out
    assert RAW.findall(out) == [] and "\\x1b" in out


def test_a_template_writing_raw_escapes_is_one_escaped_error(work: Path, tmp_path: Path) -> None:
    """A raw ESC in a rendered document (`printf "%c" 27`) is a character YAML forbids: one line
    naming the file and line, with the character escaped."""
    chart = tmp_path / "raw"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(CHART["Chart.yaml"], encoding="utf-8")
    (chart / "templates" / "cm.yaml").write_text(
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: "{{ printf "%c]0;owned%c" 27 7 }}"\n',
        encoding="utf-8",
    )
    for command in ("render", "plan"):
        code, out = run(work, command, str(chart))
        assert code == 2 and out.count("\n") == 1 and RAW.findall(out) == [], out
        assert "cm.yaml:6" in out
