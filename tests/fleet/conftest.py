"""A real Ray cluster on 127.0.0.1 for the whole session (``ray start --head --block``)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fleet_helpers import RAY_ENV, RayCluster, _free_port, _wait_port


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
