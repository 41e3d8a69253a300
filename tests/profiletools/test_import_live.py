"""`helmsim profiles import --kubeconfig`: the official client against a replaying API server.

The server (started here, on 127.0.0.1) answers from recorded responses and logs every request,
so the test can assert that only GETs were sent and that no Secret was asked for.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
import yaml
from profiletools_helpers import DATA, runner

from helmsim.cli import app
from helmsim.cluster.profile import load_profile

RECORDING = json.loads((DATA / "live-kind" / "api.json").read_text())
TOKEN = "replay-token-7f3a"


class _Replay(BaseHTTPRequestHandler):
    log: ClassVar[list[tuple[str, str, str]]] = []

    def _answer(self) -> None:
        self.log.append((self.command, self.path, self.headers.get("Authorization", "")))
        entry = RECORDING.get(self.path) if self.command == "GET" else None
        if entry is None:
            entry = {
                "status": 404 if self.command == "GET" else 405,
                "body": {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "status": "Failure",
                    "reason": "NotFound",
                    "code": 404,
                },
            }
        body = json.dumps(entry["body"]).encode()
        self.send_response(entry["status"])
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture()
def apiserver() -> Iterator[tuple[str, list[tuple[str, str, str]]]]:
    log: ClassVar[list[tuple[str, str, str]]] = []
    handler = type("Handler", (_Replay,), {"log": log})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", log
    finally:
        server.shutdown()
        server.server_close()


def _kubeconfig(tmp_path: Path, server: str, context: str = "kind-kind") -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": context,
                "clusters": [{"name": "kind-kind", "cluster": {"server": server}}],
                "users": [{"name": "kind-kind", "user": {"token": TOKEN}}],
                "contexts": [
                    {"name": context, "context": {"cluster": "kind-kind", "user": "kind-kind"}}
                ],
            }
        )
    )
    return path


def test_live_import_reads_only_with_get_and_never_a_secret(
    tmp_path: Path, apiserver: tuple[str, list[tuple[str, str, str]]]
) -> None:
    server, log = apiserver
    out = tmp_path / "live.yaml"
    result = runner.invoke(
        app,
        [
            "profiles",
            "import",
            "--kubeconfig",
            str(_kubeconfig(tmp_path, server)),
            "--context",
            "kind-kind",
            "--name",
            "kind",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert log, "the client sent no request"
    assert {method for method, _, _ in log} == {"GET"}
    assert not any("secret" in path.lower() for _, path, _ in log)
    assert {auth for _, _, auth in log} == {f"Bearer {TOKEN}"}  # the kubeconfig's credentials
    paths = [path for _, path, _ in log]
    assert "/version" in paths and "/api/v1/nodes" in paths

    live = load_profile(str(out)).to_data()
    dumped = tmp_path / "dumped.yaml"
    assert (
        runner.invoke(
            app, ["profiles", "import", str(DATA / "kind"), "--name", "kind", "-o", str(dumped)]
        ).exit_code
        == 0
    )
    want = load_profile(str(dumped)).to_data()
    live.pop("description"), want.pop("description")
    assert live == want
    text = out.read_text()
    assert (
        f"context kind-kind ({server}) GET /api/v1/nodes" in text
    )  # live values cite the API path
    assert TOKEN not in text


def test_live_profile_simulates_seed2_like_kind(
    tmp_path: Path, apiserver: tuple[str, list[tuple[str, str, str]]]
) -> None:
    from profiletools_helpers import simulate_json, without_profile_name

    server, _ = apiserver
    out = tmp_path / "live.yaml"
    assert (
        runner.invoke(
            app,
            [
                "profiles",
                "import",
                "--kubeconfig",
                str(_kubeconfig(tmp_path, server)),
                "--name",
                "live",
                "-o",
                str(out),
            ],
        ).exit_code
        == 0
    )
    got = simulate_json("seed2-hf-cache", str(out))
    want = simulate_json("seed2-hf-cache", "kind")
    assert without_profile_name(got, "live", "kind") == without_profile_name(want, "kind", "kind")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_context_is_one_line_exit_2(tmp_path: Path) -> None:
    config = _kubeconfig(tmp_path, f"http://127.0.0.1:{_closed_port()}")
    result = runner.invoke(app, ["profiles", "import", "--kubeconfig", str(config)])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: context kind-kind (http://127.0.0.1:")
    assert "cannot reach the cluster" in lines[0]


def test_unknown_context_and_broken_kubeconfig_are_one_line_exit_2(tmp_path: Path) -> None:
    config = _kubeconfig(tmp_path, "http://127.0.0.1:1")
    result = runner.invoke(
        app, ["profiles", "import", "--kubeconfig", str(config), "--context", "prod"]
    )
    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: {config}: no context 'prod' in the kubeconfig"
    config.write_text("clusters: [unclosed\n")
    result = runner.invoke(app, ["profiles", "import", "--kubeconfig", str(config)])
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith(f"error: {config}: cannot load the kubeconfig")


def test_forbidden_required_read_names_the_path(
    tmp_path: Path,
    apiserver: tuple[str, list[tuple[str, str, str]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server, _ = apiserver
    monkeypatch.setitem(
        RECORDING,
        "/api/v1/nodes",
        {
            "status": 403,
            "body": {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "reason": "Forbidden",
                "code": 403,
                "message": 'nodes is forbidden: User "dev" cannot list resource "nodes"',
            },
        },
    )
    result = runner.invoke(
        app, ["profiles", "import", "--kubeconfig", str(_kubeconfig(tmp_path, server))]
    )
    assert result.exit_code == 2
    assert "GET /api/v1/nodes: 403 Forbidden" in result.stderr
