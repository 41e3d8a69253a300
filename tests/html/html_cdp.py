"""Test helpers: find (or install) Debian's Chromium and drive it headless.

Interaction goes over the Chrome DevTools Protocol on ``--remote-debugging-pipe`` (file
descriptors 3 and 4, NUL-separated JSON), so no websocket package is needed.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

# Flags from issue 9: headless, no sandbox (root in containers), nothing that reaches a network.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
)
_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    """``$HELMSIM_CHROMIUM`` or the first Chromium on PATH."""
    env = os.environ.get("HELMSIM_CHROMIUM")
    if env and Path(env).exists():
        return env
    for name in _NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def install_chromium() -> tuple[str | None, str]:
    """Install Debian's ``chromium`` with apt-get when we may (root, apt-get present).

    Returns the binary (None when it could not be installed) and why not.
    """
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None, "not root, so apt-get cannot install the chromium package"
    if shutil.which("apt-get") is None:
        return None, "apt-get is not available to install the chromium package"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    lock = ["-o", "DPkg::Lock::Timeout=300"]
    for cmd, timeout in (
        (["apt-get", *lock, "update"], 600),
        (["apt-get", *lock, "install", "-y", "--no-install-recommends", "chromium"], 1200),
    ):
        try:
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
        except (OSError, subprocess.TimeoutExpired) as err:
            return None, f"{' '.join(cmd)} failed: {err}"
        if done.returncode != 0:
            tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
            return None, f"{' '.join(cmd)} exited {done.returncode}: {tail}"
    found = find_chromium()
    return found, "" if found else "apt-get installed chromium but no binary is on PATH"


def dump_dom(binary: str, url: str, *, timeout: float = 60) -> str:
    """The DOM after the page's scripts ran (``--dump-dom``)."""
    with tempfile.TemporaryDirectory(prefix="helmsim-chromium-") as profile:
        done = subprocess.run(
            [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=2000", "--dump-dom", url],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(f"chromium --dump-dom exited {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout


class CDPError(RuntimeError):
    """A DevTools Protocol call failed."""


class Browser:
    """A headless Chromium with one page, driven over the DevTools pipe."""

    def __init__(self, binary: str, *, width: int = 1400, height: int = 1000) -> None:
        self._profile = tempfile.TemporaryDirectory(prefix="helmsim-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def wire() -> None:  # the child reads commands on fd 3 and writes replies on fd 4
            a, b = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [binary, *CHROMIUM_FLAGS, f"--user-data-dir={self._profile.name}", "--remote-debugging-pipe",
             f"--window-size={width},{height}", "about:blank"],
            pass_fds=(3, 4),
            preexec_fn=wire,  # noqa: PLW1509 - tests start Chromium from one thread
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Network"):
            self.call(f"{domain}.enable", session=True)
        self.viewport(width, height)

    # --- protocol ---------------------------------------------------------------------------
    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_child], [], [], left)[0]:
                raise CDPError("timed out waiting for Chromium")
            chunk = os.read(self._from_child, 1 << 16)
            if not chunk:
                raise CDPError("Chromium closed the DevTools pipe")
            self._buf += chunk
        raw, _, self._buf = self._buf.partition(b"\0")
        return json.loads(raw)

    def call(self, method: str, params: dict[str, Any] | None = None, *, session: bool = False,
             timeout: float = 30) -> dict[str, Any]:
        self._next += 1
        msg: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise CDPError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_event(self, method: str, timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        for i, ev in enumerate(self.events):
            if ev["method"] == method:
                return self.events.pop(i)
        while True:
            reply = self._read(deadline)
            if reply.get("method") == method:
                return reply
            if "method" in reply:
                self.events.append(reply)

    # --- page -------------------------------------------------------------------------------
    def open(self, url: str) -> None:
        self.events.clear()
        self.call("Page.navigate", {"url": url}, session=True)
        self.wait_event("Page.loadEventFired")

    def eval(self, expression: str) -> Any:
        result = self.call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}, session=True
        )
        if "exceptionDetails" in result:
            raise CDPError(f"{expression[:80]}…: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def viewport(self, width: int, height: int) -> None:
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session=True)

    def key(self, key: str) -> None:
        codes = {"Tab": 9, "ArrowRight": 39, "ArrowLeft": 37, "ArrowDown": 40, "ArrowUp": 38, "Escape": 27,
                 "+": 187, "-": 189}
        base = {"key": key, "code": key if len(key) > 1 else "", "windowsVirtualKeyCode": codes.get(key, 0)}
        if len(key) == 1:
            base["text"] = key
        self.call("Input.dispatchKeyEvent", {"type": "keyDown", **base}, session=True)
        self.call("Input.dispatchKeyEvent", {"type": "keyUp", **base}, session=True)

    def hover(self, x: float, y: float) -> None:
        self.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y}, session=True)

    def screenshot(self, path: Path, *, full_page: bool = True) -> None:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.call("Page.getLayoutMetrics", session=True)["cssContentSize"]
            params.update(captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1})
        data = self.call("Page.captureScreenshot", params, session=True, timeout=60)["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=10)
        except CDPError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        os.close(self._to_child)
        os.close(self._from_child)
        self._profile.cleanup()
