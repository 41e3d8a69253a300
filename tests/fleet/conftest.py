"""A real Ray cluster on 127.0.0.1 for the whole session (``ray start --head --block``), and
small fleet matrices of the rule fixtures."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

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
    under kind and a coin-flip policy profile."""
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
      target: {RULES / "HS101" / "failing"}
      values: [[], values/*-values.yaml]
    - name: claim
      target: {RULES / "HS102" / "failing"}
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


    def running_tasks(self) -> dict[str, int]:
        """``HOST pid N`` → the task it has started and not finished, from the ledger actor
        of the fleet running on this cluster (none: ``{}``)."""
        import ray

        from helmsim.taskpool import LEDGER_PREFIX

        for actor in ray.util.list_named_actors(all_namespaces=True):
            if actor["name"].startswith(LEDGER_PREFIX):
                try:
                    handle = ray.get_actor(actor["name"], namespace=actor["namespace"])
                    return dict(ray.get(handle.running.remote(), timeout=10))
                except (ValueError, ray.exceptions.RayError):
                    return {}
        return {}


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[RayCluster]:
    """A 2-CPU Ray head started for this session on 127.0.0.1; this process is connected to
    it (the CLI reuses the connection). Stopped by its process group."""
    if importlib.util.find_spec("ray") is None:
        pytest.skip("Ray is not installed: `make test` installs the ray extra (pip install -e '.[dev,ray]')")
    import secrets

    temp = Path(tempfile.mkdtemp(prefix="hsray", dir="/tmp"))  # Ray's socket paths must be short
    token = temp / "token"
    token.write_text(secrets.token_hex(32), encoding="utf-8")
    saved = {k: os.environ.get(k) for k in (*RAY_ENV, "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS")}
    os.environ.update(RAY_ENV, RAY_AUTH_TOKEN_PATH=str(token))
    os.environ.pop("RAY_ADDRESS", None)
    port, client = _free_port(), _free_port()
    ray_bin = Path(sys.executable).with_name("ray")
    log = (temp / "ray-start.log").open("w")
    proc = subprocess.Popen(
        [
            str(ray_bin), "start", "--head", "--block", "--num-cpus", "2",
            "--node-ip-address", "127.0.0.1", "--port", str(port),
            "--ray-client-server-port", str(client), "--include-dashboard=false",
            "--disable-usage-stats", "--temp-dir", str(temp / "t"),
        ],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        _wait_port(port, deadline)
        _wait_port(client, deadline)
        import ray

        ray.init(address=address, log_to_driver=False)
        yield RayCluster(address, f"ray://127.0.0.1:{client}", os.getsid(proc.pid))
    finally:
        try:
            import ray

            ray.shutdown()
        except ImportError:
            pass
        for sig in (signal.SIGTERM, signal.SIGKILL):  # only this cluster's process group
            try:
                os.killpg(proc.pid, sig)
                proc.wait(timeout=3)
                break
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # its workers, if the head went first
        except ProcessLookupError:
            pass
        log.close()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(temp, ignore_errors=True)
