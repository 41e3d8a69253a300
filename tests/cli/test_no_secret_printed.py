"""No secret is printed by any command in any format (issue 12; docs/security.md#secrets).

`tests/fixtures/charts/planted-secrets` renders every shape of secret the issue found printed;
each command runs in each of its formats (stdout, stderr and every file it writes) and the
outputs are grepped for the planted values. `render --show-secrets` is the one way to see them.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from helmsim.cli import app

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "tests/fixtures/charts/planted-secrets"

# Every planted secret: the PLNT marker, plus the base64 forms that do not contain it.
MARKER = "PLNT"
ENCODED = (
    "UExOVC1kYXRhLTAy",  # Secret data: base64 of PLNT-data-02
    "cm9ib3Q6UExOVC1kb2NrZXItMDc=",  # docker auth: robot:PLNT-docker-07
    "eyJhdXRocyI6eyJyZWdpc3RyeS5leGFtcGxlLmNvbSI6",  # a base64 .dockerconfigjson
    "YWRtaW46UExOVC1iYXNpYy0yMA==",  # Basic credentials: admin:PLNT-basic-20
    "eyJzdWIiOiJQTE5ULWp3dC0wOSJ9",  # the JWT's payload
)
PLANTED_IN_TEMPLATES = (
    "PLNT-stringdata-01", "UExOVC1kYXRhLTAy", "PLNT-list-03", "PLNT-lastapplied-04",
    "PLNT-dbpass-05", "PLNT-passkey-06", "cm9ib3Q6UExOVC1kb2NrZXItMDc=", "PLNT-url-08",
    "eyJzdWIiOiJQTE5ULWp3dC0wOSJ9", "PLNTpem10", "PLNT-bearer-11", "PLNT-curl-12",
    "PLNT-mysql-13", "PLNT-env-14", "PLNT-values-15", "PLNT-waiturl-16", "PLNT-waitbearer-17",
    "YWRtaW46UExOVC1iYXNpYy0yMA==", "PLNT-values-token-21",
)

runner = CliRunner()


def leaks(text: str) -> list[str]:
    """The planted secrets found in ``text``."""
    found = [MARKER] if MARKER in text else []
    return found + [e for e in ENCODED if e in text]


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    assert "Traceback" not in result.output
    return result.exit_code, result.stdout + result.stderr


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("secrets")
    (root / "saved.yaml").write_text(
        (CHART / "templates/secrets.yaml").read_text().replace("kind: List", "kind: List")
    )
    (root / "scenario.helmsim.yaml").write_text(
        f"""\
apiVersion: helmsim.dev/v1alpha1
kind: Scenario
metadata:
  name: planted
profile: kind
horizon: 3m
releases:
  - chart: {CHART}
faults:
  - containerExit:
      match: {{kind: Job, name: migrate}}
      exitCode: 1
      message: "POST /v1: 401 for Authorization: Bearer PLNT-fault-22"
expect:
  - event: container-log
    messageContains: "POST /v1: 401"
"""
    )
    return root


def test_the_planted_secrets_are_rendered_and_shown_only_on_request() -> None:
    code, shown = run("render", str(CHART), "--show-secrets")
    assert code == 0
    for secret in PLANTED_IN_TEMPLATES:
        assert secret in shown, secret
    code, out = run("render", str(CHART))
    assert code == 0 and leaks(out) == []
    assert out.count("<redacted:sha256:") >= 19


TEXT_COMMANDS = [
    ["plan", str(CHART)],
    ["plan", str(CHART), "--format", "json"],
    ["plan", str(CHART), "--upgrade-from", str(CHART), "--upgrade-from-set", "db.password=PLNT-old-23"],
    ["simulate", str(CHART), "--horizon", "3m", "--full-timeline"],
    ["simulate", str(CHART), "--horizon", "3m", "--format", "json"],
    ["simulate", str(CHART), "--horizon", "3m", "--format", "html", "--output", "-"],
    ["simulate", str(CHART), "--horizon", "3m", "--runs", "2"],
    ["simulate", str(CHART), "--horizon", "3m", "--runs", "2", "--format", "json"],
    ["check", str(CHART), "-p", "kind", "--horizon", "3m", "--no-verify"],
    ["check", str(CHART), "-p", "kind", "--horizon", "3m", "--no-verify", "--format", "json"],
    ["check", str(CHART), "-p", "kind", "--horizon", "3m", "--no-verify", "--format", "sarif"],
    ["check", str(CHART), "-p", "kind", "--horizon", "3m", "--no-verify", "--format", "junit"],
    ["check", str(CHART), "-p", "kind", "--horizon", "3m", "--no-verify", "--format", "html", "-o", "-"],
]


@pytest.mark.parametrize("args", TEXT_COMMANDS, ids=lambda a: " ".join(a[2:]) or a[0])
def test_no_command_prints_a_secret(args: list[str]) -> None:
    code, out = run(*args)
    assert code in (0, 1), out
    assert leaks(out) == []


def test_the_behaviour_note_that_quoted_a_probe_is_redacted() -> None:
    """The init container's wait probe is quoted in the trace (it leaked in the text timeline
    and the HTML report): it is still there, with its credentials hashed."""
    _, out = run("simulate", str(CHART), "--horizon", "3m", "--full-timeline", "--format", "html", "-o", "-")
    assert "polls `curl -sf -H &#x27;Authorization: Bearer &lt;redacted:sha256:" in out
    assert leaks(out) == []


@pytest.mark.parametrize(
    ("fmt", "suffix"), [("text", "txt"), ("json", "json"), ("sarif", "sarif"), ("junit", "xml"), ("html", "html")]
)
def test_no_report_file_holds_a_secret(work: Path, fmt: str, suffix: str) -> None:
    out = work / f"check.{suffix}"
    code, printed = run("check", str(CHART), "-p", "kind", "--horizon", "3m", "--no-verify", "--format", fmt, "-o", str(out))
    assert code in (0, 1), printed
    assert out.is_file() and leaks(out.read_text()) == [] and leaks(printed) == []


@pytest.mark.parametrize(("fmt", "suffix"), [("text", "txt"), ("json", "json"), ("html", "html")])
def test_no_simulate_file_holds_a_secret(work: Path, fmt: str, suffix: str) -> None:
    out = work / f"simulate.{suffix}"
    code, printed = run("simulate", str(CHART), "--horizon", "3m", "--full-timeline", "--format", fmt, "-o", str(out))
    assert code in (0, 1), printed
    assert leaks(out.read_text()) == [] and leaks(printed) == []


@pytest.mark.parametrize(("fmt", "suffix"), [("text", "txt"), ("junit", "xml"), ("html", "html")])
def test_no_scenario_report_holds_a_secret(work: Path, fmt: str, suffix: str) -> None:
    out = work / f"test.{suffix}"
    code, printed = run("test", str(work / "scenario.helmsim.yaml"), "--format", fmt, "-o", str(out))
    assert code == 0, printed
    text = out.read_text()
    if fmt == "html":  # the container's log line is on the timeline, its token hashed
        assert "POST /v1: 401 for Authorization: Bearer &lt;redacted:sha256:" in text
    assert leaks(text) == [] and leaks(printed) == []


def test_status_prints_no_secret(work: Path) -> None:
    for fmt in ("text", "json"):
        code, out = run("status", str(work / "saved.yaml"), "--format", fmt)
        assert code in (0, 1), out
        assert leaks(out) == [] and "creds" in out


@pytest.mark.parametrize(
    "args",
    [
        ["render", str(CHART), "--set", "db.password={PLNT-set-18"],
        ["render", str(CHART), "--set", "failWith=cannot log in: password=PLNT-fail-19"],
        ["render", str(CHART), "--set", "failWith=upstream says Authorization: Bearer PLNT-fail-24"],
        ["simulate", str(CHART), "--set", "failWith=token=PLNT-fail-26"],
        ["check", str(CHART), "-p", "kind", "--set", "db.password={PLNT-set-27"],
    ],
)
def test_errors_print_no_secret(args: list[str]) -> None:
    code, out = run(*args)
    assert code == 2 and out.count("\n") == 1 and out.startswith("error: "), out
    assert leaks(out) == []
    assert "<redacted:sha256:" in out


def test_diff_prints_no_secret(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(CHART, repo / "chart")

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@e", "-c", "commit.gpgsign=false", *args],
            cwd=repo, check=True, capture_output=True,
        )

    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-qm", "one")
    for rel, old, new in (
        ("templates/secrets.yaml", "PLNT-dbpass-05", "PLNT-dbpass-new-28"),
        ("templates/secrets.yaml", "PLNT-lastapplied-04", "PLNT-lastapplied-new-29"),
        ("templates/secrets.yaml", "PLNT-list-03", "PLNT-list-new-30"),
        ("templates/app.yaml", "PLNT-bearer-11", "PLNT-bearer-new-31"),
        ("templates/app.yaml", "PLNT-mysql-13", "PLNT-mysql-new-32"),
        ("values.yaml", "PLNT-values-15", "PLNT-values-new-33"),
        ("templates/secrets.yaml", "PLNT-url-08", "PLNT-url-new-34"),
    ):
        path = repo / "chart" / rel
        path.write_text(path.read_text().replace(old, new))
    for fmt in ("text", "json"):
        code, out = run("diff", str(repo / "chart"), "--against", "HEAD", "--format", fmt)
        assert code == 1, out
        assert leaks(out) == []
        assert out.count("<redacted:sha256:") >= 14  # each changed secret shows as two hashes
