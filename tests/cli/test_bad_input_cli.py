"""Issue 12's bad-input and budget findings, end to end through the ``helmsim`` entry point.

Each test runs the CLI's ``main`` in-process (what a subprocess would see: exit code, stdout,
stderr) except the Helm engine cases, which need the real worker process anyway.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from helmsim import engine_worker, limits
from helmsim.cli import main

ROOT = Path(__file__).resolve().parents[2]
SEED2 = ROOT / "examples" / "seed2-hf-cache"


def run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["helmsim", *map(str, args)])
    monkeypatch.delenv("HELMSIM_DEBUG", raising=False)
    with pytest.raises(SystemExit) as exit_:
        main()
    out, err = capsys.readouterr()
    code = exit_.value.code
    return (code if isinstance(code, int) else 0), out, err


def one_error(code: int, err: str) -> str:
    assert code == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err.strip()


def chart(root: Path, name: str, templates: dict[str, str], values: str = "") -> Path:
    path = root / name
    (path / "templates").mkdir(parents=True)
    (path / "Chart.yaml").write_text(f"apiVersion: v2\nname: {name}\nversion: 0.1.0\n")
    (path / "values.yaml").write_text(values)
    for file, text in templates.items():
        (path / "templates" / file).write_text(text)
    return path


_DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
      - name: c
        image: nginx:1.27
"""


# --- readers --------------------------------------------------------------------------------------


def test_a_mistyped_tag_in_a_manifest_is_one_line(tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "cm.yaml"
    f.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: !!int abc\n")
    err = one_error(*run(capsys, monkeypatch, "plan", f)[::2])
    assert err == f"error: {f}:6: invalid YAML: cannot decode !!str `abc` as a !!int"


@pytest.mark.parametrize(
    ("content", "line", "what"),
    [(b"profiles: [kind]\nfailOn: !!int abc\n", 2, "cannot decode"), (b"rules:\n  HS1\xff: off\n", 2, "not UTF-8")],
)
def test_a_bad_config_file_is_one_line(tmp_path, capsys, monkeypatch, content: bytes, line: int, what: str) -> None:  # type: ignore[no-untyped-def]
    cfg = tmp_path / ".helmsim.yaml"
    cfg.write_bytes(content)
    code, _, err = run(capsys, monkeypatch, "check", SEED2, "--helmrelease", SEED2 / "flux", "--config", cfg, "-p", "kind")
    assert one_error(code, err).startswith(f"error: {cfg}:{line}: ") and what in err


def test_a_helmrelease_whose_metadata_is_a_list(tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    hr = tmp_path / "hr.yaml"
    hr.write_text("apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: [a, b]\nspec:\n  interval: 5m\n")
    code, _, err = run(capsys, monkeypatch, "simulate", SEED2, "--helmrelease", hr)
    assert one_error(code, err) == f"error: {hr}:3: HelmRelease metadata must be a mapping, not a list"


def test_plan_and_status_both_accept_a_byte_order_mark(tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "cm.yaml"
    f.write_bytes(b"\xef\xbb\xbfapiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
    code, out, err = run(capsys, monkeypatch, "plan", f)
    assert (code, err) == (0, "") and "ConfigMap" in out
    code, out, err = run(capsys, monkeypatch, "status", f)
    assert (code, err) == (0, "") and "Current" in out


def test_a_bad_values_file_is_named_with_its_line_not_as_the_chart(tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    c = chart(tmp_path, "c", {"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"})
    values = tmp_path / "values-prod.yaml"
    values.write_text("replicas: 2\nlimits:\n  cpu: .inf\n")
    code, _, err = run(capsys, monkeypatch, "render", c, "-f", values)
    assert one_error(code, err).startswith(f"error: {values}:3: value limits.cpu: +Inf cannot be converted to JSON")


def test_a_values_file_that_is_not_yaml_is_named_with_its_line(tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    c = chart(tmp_path, "c", {"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"})
    values = tmp_path / "values-prod.yaml"
    values.write_text("replicas: 2\nimage:\n  tag: [1, 2\n")
    code, _, err = run(capsys, monkeypatch, "plan", c, "-f", values)
    assert one_error(code, err).startswith(f"error: {values}:")
    assert str(c) not in err.replace(str(values), "")  # the values file is named, not the chart


def test_keys_1_and_true_are_two_keys_in_a_manifest(tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Issue 12: they were reported as duplicates (go-yaml makes them the JSON keys "1", "true")."""
    f = tmp_path / "cm.yaml"
    f.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  1: one\n  true: yes\n")
    code, out, err = run(capsys, monkeypatch, "plan", f)
    assert (code, err) == (0, "") and "ConfigMap" in out
    # 1 and '1' are one JSON key: in a manifest the last value is what Helm's client sends
    # (tests/realcharts/test_duplicate_keys.py); in a file written for helmsim it is an error
    f.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  1: one\n  '1': uno\n")
    code, out, err = run(capsys, monkeypatch, "plan", f)
    assert (code, err) == (0, "") and "ConfigMap" in out
    values = tmp_path / "values.yaml"
    values.write_text("a:\n  1: one\n  '1': uno\n")
    c = chart(tmp_path, "web", {"d.yaml": _DEPLOYMENT.format(replicas=1)})
    assert "duplicate" in one_error(*run(capsys, monkeypatch, "plan", c, "-f", values)[::2])


# --- budgets --------------------------------------------------------------------------------------


def test_a_million_replicas_exceeds_max_pods(tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    c = chart(tmp_path, "web", {"d.yaml": _DEPLOYMENT.format(replicas=1_000_000)})
    code, _, err = run(capsys, monkeypatch, "simulate", c)
    assert one_error(code, err) == (
        f"error: web/templates/d.yaml:1: Deployment/default/web: 1,000,000 replicas exceeds --max-pods 20,000"
    )


def test_max_pods_is_a_flag(tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    c = chart(tmp_path, "web", {"d.yaml": _DEPLOYMENT.format(replicas=3)})
    code, _, err = run(capsys, monkeypatch, "simulate", c, "--max-pods", "2")
    assert "3 replicas exceeds --max-pods 2" in one_error(code, err)
    code, out, err = run(capsys, monkeypatch, "simulate", c, "--max-pods", "3")
    assert code == 0 and "Ready" in out


def test_plan_of_100k_objects_ends_with_the_limit(tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "many.yaml"
    f.write_text("".join(f"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{i}\n" for i in range(100_000)))
    code, _, err = run(capsys, monkeypatch, "plan", f)
    assert one_error(code, err) == f"error: {f}: 100,000 YAML documents exceeds --max-objects 10,000"


def test_a_50_mb_manifest_ends_with_the_limit(tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "big.yaml"
    with f.open("w") as out:
        out.write("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  a: ")
        out.write("x" * 50_000_000 + "\n")
    code, _, err = run(capsys, monkeypatch, "plan", f)
    assert one_error(code, err) == f"error: {f}: a 47.7 MiB file exceeds --max-file-size 32 MiB"


def test_a_chart_rendering_too_many_objects_ends_with_the_limit(tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    c = chart(tmp_path, "many", {"cm.yaml": "{{ range until 20000 }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{{ . }}\n{{ end }}\n"})
    code, _, err = run(capsys, monkeypatch, "plan", c)
    assert one_error(code, err) == "error: many/templates/cm.yaml: 20,000 YAML documents exceeds --max-objects 10,000"


def test_simulated_events_are_bounded(capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    code, _, err = run(capsys, monkeypatch, "simulate", SEED2, "--helmrelease", SEED2 / "flux", "--profile", "kind", "--max-events", "50")
    assert "events by t=" in one_error(code, err) and err.strip().endswith("exceeds --max-events 50")


def test_a_bad_limit_flag_is_one_line(capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    code, _, err = run(capsys, monkeypatch, "plan", SEED2, "--max-file-size", "huge")
    assert one_error(code, err).startswith("error: --max-file-size 'huge': expected")


# --- Helm's engine: a worker process, bounded and quiet -------------------------------------------


def test_tpl_recursion_is_stopped_by_the_memory_limit(tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    c = chart(
        tmp_path,
        "tplrec",
        {"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: {{ tpl .Values.loop . | quote }}\n"},
        values="loop: '{{ tpl .Values.loop . }}'\n",
    )
    code, _, err = run(capsys, monkeypatch, "render", c, "--max-render-memory", "300Mi")
    message = one_error(code, err)
    assert message.startswith(f"error: {c}: Helm's engine used ")
    assert "exceeds --max-render-memory 300 MiB (does a template recurse, e.g. tpl calling itself?)" in message
    # the worker was replaced: the next render in the same process works
    ok = chart(tmp_path, "ok", {"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"})
    code, out, err = run(capsys, monkeypatch, "render", ok)
    assert (code, err) == (0, "") and "kind: ConfigMap" in out


def test_a_template_that_loops_is_stopped_by_the_timeout(tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    loop = "{{ range until 20000 }}{{ range until 20000 }}{{ end }}{{ end }}"
    c = chart(tmp_path, "loop", {"cm.yaml": f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n# {loop}\n"})
    code, _, err = run(capsys, monkeypatch, "render", c, "--render-timeout", "1s")
    assert one_error(code, err) == (
        f"error: {c}: Helm's engine did not finish within --render-timeout 1s (does a template loop without end?)"
    )


def test_helm_engine_chatter_stays_off_stderr_unless_debug(tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    c = chart(tmp_path, "linked", {})
    (c / "extra").mkdir()
    (c / "extra" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
    os.symlink("../extra/cm.yaml", c / "templates" / "cm.yaml")
    code, out, err = run(capsys, monkeypatch, "render", c)
    assert (code, err) == (0, "") and "kind: ConfigMap" in out
    # Helm's loader logs the symlink (internal/sympath/walk.go); --debug shows it
    code, out, err = run(capsys, monkeypatch, "render", c, "--debug")
    assert code == 0 and "INFO found symbolic link in path" in err


def test_a_go_abort_becomes_one_line() -> None:
    log = "runtime: goroutine stack exceeds 1000000000-byte limit\nfatal error: stack overflow\n\nruntime stack:\n..."
    err = engine_worker._died(2, log, limits.Limits(), "chart")
    assert str(err) == "chart: Helm's engine aborted: fatal error: stack overflow (does a template recurse, e.g. tpl calling itself?)"


LONG = "x" * 300  # past NAME_MAX (255): the system refuses to look it up (ENAMETOOLONG)


@pytest.mark.parametrize(
    "args",
    [
        ["simulate", LONG],
        ["render", LONG],
        ["plan", LONG],
        ["simulate", str(SEED2), "--helmrelease", LONG],
        ["simulate", str(SEED2), "--helmrelease", str(SEED2 / "flux"), "-p", LONG],
        ["check", str(SEED2), "--helmrelease", str(SEED2 / "flux"), "--chart", f"x={LONG}"],
    ],
    ids=["target", "render", "plan", "helmrelease", "profile", "chart-map"],
)
def test_a_path_too_long_to_look_up_is_bad_input(capsys, monkeypatch, args: list[str]) -> None:  # type: ignore[no-untyped-def]
    text = one_error(*run(capsys, monkeypatch, *args)[::2])
    assert "File name too long" in text and "(300 characters)" in text and "internal error" not in text


def test_a_profile_extending_a_name_too_long_names_its_line(tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    profile = tmp_path / "p.yaml"
    profile.write_text(f"name: p\nextends: {LONG}\n")
    code, _out, err = run(capsys, monkeypatch, "simulate", SEED2, "--helmrelease", SEED2 / "flux", "-p", profile)
    assert one_error(code, err).startswith(f"error: {profile}:2: profile '") and "File name too long" in err
