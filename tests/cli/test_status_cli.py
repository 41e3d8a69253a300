"""``helmsim status`` on saved live objects."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from helmsim.cli import app

runner = CliRunner()

FAILED_JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: db-migrate
  namespace: shop
  generation: 1
  creationTimestamp: "2024-05-01T10:00:00Z"
spec:
  backoffLimit: 2
  completions: 1
  parallelism: 1
status:
  startTime: "2024-05-01T10:00:00Z"
  failed: 3
  conditions:
  - type: FailureTarget
    status: "True"
    reason: BackoffLimitExceeded
  - type: Failed
    status: "True"
    reason: BackoffLimitExceeded
    message: Job has reached the specified backoff limit
"""

PENDING_PVC = """\
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  namespace: shop
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
status:
  phase: Pending
"""

KUBECTL_LIST = """\
apiVersion: v1
kind: List
metadata:
  resourceVersion: ""
items:
- apiVersion: apps/v1
  kind: StatefulSet
  metadata: {name: db, namespace: shop, generation: 1}
  spec:
    replicas: 1
    selector: {matchLabels: {app: db}}
  status: {observedGeneration: 1, replicas: 1, readyReplicas: 0}
- apiVersion: v1
  kind: Pod
  metadata: {name: db-0, namespace: shop, labels: {app: db}}
  status:
    phase: Running
    containerStatuses:
    - name: db
      state: {waiting: {reason: CrashLoopBackOff}}
- apiVersion: v1
  kind: Secret
  metadata: {name: creds, namespace: shop}
  data: {password: c2VjcmV0LXZhbHVl}
"""


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def lines_of(output: str) -> list[list[str]]:
    return [line.split(None, 4) for line in output.strip().splitlines()]


def test_failed_job_prints_failed(tmp_path: Path) -> None:
    res = runner.invoke(app, ["status", write(tmp_path, "job.yaml", FAILED_JOB)])
    assert res.exit_code == 1, res.output  # an object is Failed (issue 18)
    header, row = lines_of(res.stdout)
    assert header == ["KIND", "NAMESPACE", "NAME", "STATUS", "MESSAGE"]
    assert row == ["Job", "shop", "db-migrate", "Failed", "Job Failed. failed: 3/1"]


def test_pending_pvc_prints_in_progress(tmp_path: Path) -> None:
    res = runner.invoke(app, ["status", write(tmp_path, "pvc.yaml", PENDING_PVC)])
    assert res.exit_code == 0, res.output
    assert lines_of(res.stdout)[1] == [
        "PersistentVolumeClaim", "shop", "data", "InProgress", "PVC is not Bound. phase: Pending"
    ]


def test_multi_document_json_output(tmp_path: Path) -> None:
    path = write(tmp_path, "both.yaml", FAILED_JOB + "---\n" + PENDING_PVC)
    res = runner.invoke(app, ["status", path, "--format", "json", "--reader", "flux-wait-jobs"])
    assert res.exit_code == 1, res.output  # the Job is Failed
    rows = json.loads(res.stdout)
    assert rows[0] == {
        "kind": "Job", "namespace": "shop", "name": "db-migrate", "status": "Failed",
        "message": "Job Failed. failed: 3/1",
        "conditions": [{"type": "Stalled", "status": "True", "reason": "JobFailed",
                        "message": "Job Failed. failed: 3/1"}],
    }
    assert rows[1]["status"] == "InProgress"
    assert rows[1]["conditions"][0]["reason"] == "NotBound"


@pytest.mark.parametrize(
    ("reader", "sts_status"), [("core", "InProgress"), ("flux-wait", "Failed")]
)
def test_kind_list_and_pods_from_the_input(tmp_path: Path, reader: str, sts_status: str) -> None:
    path = write(tmp_path, "list.yaml", KUBECTL_LIST)
    res = runner.invoke(app, ["status", path, "--reader", reader, "--format", "json"])
    assert res.exit_code == 1, res.output  # the Pod is Failed
    rows = {r["kind"]: r for r in json.loads(res.stdout)}
    assert rows["StatefulSet"]["status"] == sts_status
    assert rows["Pod"]["status"] == "Failed"
    assert rows["Secret"]["message"] == "Resource is always ready"
    assert "c2VjcmV0LXZhbHVl" not in res.stdout  # Secret data is never printed


def test_now_option_controls_the_unschedulable_window(tmp_path: Path) -> None:
    pod = """\
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: shop, creationTimestamp: "2024-05-01T10:00:00Z"}
status:
  phase: Pending
  conditions: [{type: PodScheduled, status: "False", reason: Unschedulable}]
"""
    path = write(tmp_path, "pod.yaml", pod)
    early = runner.invoke(app, ["status", path, "--now", "2024-05-01T10:00:10Z", "--format=json"])
    late = runner.invoke(app, ["status", path, "--now", "2024-05-01T10:00:20Z", "--format=json"])
    assert json.loads(early.stdout)[0]["message"] == "Pod has not been scheduled"
    assert json.loads(late.stdout)[0]["message"] == "Pod could not be scheduled"
    bad = runner.invoke(app, ["status", path, "--now", "yesterday"])
    assert bad.exit_code == 2
    assert "not an RFC3339 time" in bad.stderr


def test_bad_files_get_one_line_each_and_exit_2(tmp_path: Path) -> None:
    good = write(tmp_path, "pvc.yaml", PENDING_PVC)
    broken = write(tmp_path, "broken.yaml", "kind: Pod\nmetadata: [\n")
    no_kind = write(tmp_path, "nokind.yaml", "apiVersion: v1\nmetadata: {name: x}\n")
    missing = str(tmp_path / "missing.yaml")
    res = runner.invoke(app, ["status", good, broken, no_kind, missing])
    assert res.exit_code == 2
    assert "PVC is not Bound. phase: Pending" in res.stdout  # good files are still reported
    errors = res.stderr.strip().splitlines()
    assert len(errors) == 3
    assert errors[0].startswith(f"error: {broken}:")
    assert errors[1] == f"error: {no_kind}:1: object has no kind"
    assert errors[2] == f"error: {missing}: file not found"
    assert "Traceback" not in res.output


def test_wrongly_typed_status_is_unknown_not_a_crash(tmp_path: Path) -> None:
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nstatus: {phase: Lost}\n"
    res = runner.invoke(app, ["status", write(tmp_path, "pod.yaml", pod), "--format", "json"])
    assert res.exit_code == 0
    row = json.loads(res.stdout)[0]
    assert (row["status"], row["message"]) == ("Unknown", "unknown phase Lost")


# --- the plain layout is the Rich table's --------------------------------------------------------
_CELL = st.text(
    alphabet=st.sampled_from(list("abcXYZ09-./:=() ") + ["é", "ß", "日", "本", "🙂", "\u0301", "\u200b", "≥", "\x1b"]),
    max_size=14,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_CELL, min_size=5, max_size=5), min_size=1, max_size=6))
def test_the_plain_layout_is_what_the_rich_table_prints(rows: list[list[str]]) -> None:
    """``status`` prints its table without Rich when no cell holds a line break or a tab
    (1.9 s → 0.5 s for 5,000 objects): the lines must be the Rich table's at the width that
    keeps every cell on one line, wide and zero-width characters included."""
    import io

    from helmsim.cli.status import _plain_lines, _span, _table, _widths
    from helmsim.report.safe import SafeConsole, safe_text

    cells = [[safe_text(c) for c in line] for line in rows]
    widths = _widths(cells)
    out = io.StringIO()
    SafeConsole(file=out, width=_span(widths), color_system=None).print(_table(cells))
    assert _plain_lines(cells, widths) == [line.rstrip() for line in out.getvalue().splitlines()]


def test_a_cell_with_a_line_break_is_left_to_rich() -> None:
    from helmsim.cli.status import _plain_lines, _widths

    broken, plain = [["Pod", "ns", "p", "Failed", "a\nb"]], [["Pod", "ns", "p", "Failed", "a b"]]
    assert _plain_lines(broken, _widths(broken)) is None
    assert _plain_lines(plain, _widths(plain)) is not None


@pytest.mark.parametrize("width", [200, 76, 30])
def test_on_a_terminal_names_are_never_cut(tmp_path: Path, width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Wide enough: the plain lines, the header bold; narrower, Rich folds the message column;
    too narrow for the other columns and 20 more, the lines are printed whole (Rich would cut
    ``PersistentVolumeClaim`` to ``PersistentVolumeCl`` and drop the message)."""
    import io

    from rich.console import Console

    import helmsim.cli.status as status

    out = io.StringIO()
    monkeypatch.setattr(status, "console", Console(file=out, width=width, force_terminal=True, color_system="standard"))
    (tmp_path / "pvc.yaml").write_text(PENDING_PVC, encoding="utf-8")
    result = runner.invoke(app, ["status", str(tmp_path / "pvc.yaml")])
    assert result.exit_code == 0
    text = out.getvalue()
    visible = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", text).split())
    assert "PersistentVolumeClaim shop data InProgress PVC is not Bound. phase: Pending" in visible
    assert text.startswith("\x1b[1m")  # the header is bold
    rows = [ln for ln in re.sub(r"\x1b\[[0-9;]*m", "", text).splitlines() if ln.strip()]
    assert len(rows) == (3 if width == 76 else 2)  # the message folded only at 76 columns
