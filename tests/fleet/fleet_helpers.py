"""Helpers of the fleet tests: small matrices of the rule fixtures, the CLI in a directory, and
what the session's Ray cluster is running."""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "tests" / "fixtures" / "rules"
COIN_PROFILE = """\
name: coin-flip-policy
description: cilium-always, policy propagation 0.5 s or 150 s (test)
extends: cilium-always
cni:
  policyPropagationSeconds: {dist: empirical, samples: [0.5, 150], nominal: 0.5}
"""


def write_matrix(tmp: Path, *, runs: int = 4, extra: str = "") -> Path:
    """Two releases (a Job racing its policy, a claim nothing consumes), three rehearsals,
    under kind and a coin-flip policy profile; the charts are copied next to the file and
    named by relative paths."""
    import shutil

    for rule in ("HS101", "HS102"):
        if not (tmp / "charts" / rule).exists():
            shutil.copytree(RULES / rule / "failing", tmp / "charts" / rule)
    (tmp / "coin.yaml").write_text(COIN_PROFILE, encoding="utf-8")
    (tmp / "values").mkdir(exist_ok=True)
    (tmp / "values" / "slow-values.yaml").write_text("image: {tag: slow}\n", encoding="utf-8")
    config = tmp / ".helmsim.yaml"
    config.write_text(
        f"""\
fleet:
  profiles: [kind, coin.yaml]
  runs: {runs}
  seed: 1
  releases:
    - name: race
      target: charts/HS101
      values: [[], values/*-values.yaml]
    - name: claim
      target: charts/HS102
{extra}""",
        encoding="utf-8",
    )
    return config


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, deadline: float) -> None:
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"Ray did not listen on 127.0.0.1:{port}")


RAY_ENV = {
    # ray/_private/services.py get_node_ip_address: with clusters "disabled" the node address is
    # the loopback one, so every Ray process listens on and talks to 127.0.0.1 only.
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_AUTH_MODE": "token",
}


@dataclass(frozen=True)
class RayCluster:
    """The session's Ray head: its GCS address and the session id its processes share."""

    address: str
    client: str
    """Ray Client's address (``ray://127.0.0.1:PORT``)."""
    sid: int

    def busy_workers(self) -> list[int]:
        """Pids of this cluster's workers running a helmsim task (process title ``ray::execute``)."""
        out = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                title = (proc / "cmdline").read_bytes().split(b"\0")[0]
                if title.startswith(b"ray::execute") and os.getsid(int(proc.name)) == self.sid:
                    out.append(int(proc.name))
            except (OSError, IndexError):
                continue
        return out


    def ledger(self) -> Any:
        """The ledger actor of the fleet running on this cluster, or ``None``."""
        import ray

        from helmsim.taskpool import LEDGER_PREFIX

        for actor in ray.util.list_named_actors(all_namespaces=True):
            if actor["name"].startswith(LEDGER_PREFIX):
                try:
                    return ray.get_actor(actor["name"], namespace=actor["namespace"])
                except ValueError:
                    return None
        return None

    def running_tasks(self) -> dict[str, int]:
        """``HOST pid N`` → the task it has started and not finished (none: ``{}``)."""
        import ray

        handle = self.ledger()
        try:
            return dict(ray.get(handle.running.remote(), timeout=10)) if handle else {}
        except ray.exceptions.RayError:
            return {}

    def finished(self, index: int, worker: str) -> bool:
        """Whether ``worker`` finished task ``index`` (a kill after that loses nothing)."""
        import ray

        handle = self.ledger()
        try:
            return bool(ray.get(handle.has_finished.remote(index, worker), timeout=10)) if handle else False
        except ray.exceptions.RayError:
            return False


def run(args: list[str], cwd: Path) -> tuple[int, str, str]:
    """``helmsim ARGS`` in ``cwd``: exit code, stdout, stderr."""
    from typer.testing import CliRunner

    from helmsim.cli import app

    old = Path.cwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(app, args, catch_exceptions=False)
    finally:
        os.chdir(old)
    return result.exit_code, result.stdout, result.stderr
