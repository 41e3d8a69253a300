"""Helm's engine (helm-python-sdk) in a child process: bounded, quiet and replaceable.

helm-python-sdk runs Helm's Go code in-process. Three things make that unsafe for a tool that
must answer every input with one line: a ``tpl`` that calls itself recurses until Go's runtime
aborts the whole process with a goroutine dump (helm/helm pkg/engine/engine.go bounds
``include`` recursion with recursionMaxNums = 1000, but ``tplFun`` clones the template on every
call with no bound); a template can allocate without end (``until``, ``repeat``); and Helm logs to
file descriptor 2 (chart loading's "found symbolic link in path" INFO line from
internal/sympath/walk.go, the values warnings of pkg/chart/common/util/coalesce.go). The SDK's
render options (name, namespace, revision, is_install, is_upgrade, kube_version, api_versions,
strict, enable_dns) offer no time, depth or memory bound. So every call into the SDK is made by a
worker process (``python -m helmsim.engine_worker``): its stderr goes to a file, shown only with
``--debug``; a watchdog thread ends it past ``--max-render-memory``; the parent stops waiting
after ``--render-timeout``; when any of that happens, or Go aborts, the worker is replaced and the
caller gets one line.

The protocol is one JSON object per line: requests on the worker's stdin, answers on a copy of
its stdout (file descriptor 1 then points at stderr, so nothing Go prints can corrupt answers).
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from helmsim import interrupts, limits
from helmsim.errors import InputError

_MEMORY_EXIT = 70  # the worker's exit status when its watchdog ended it
_debug = False


@contextmanager
def debug(enabled: bool) -> Iterator[None]:
    """While active (``--debug``), what Helm's engine logs is copied to stderr."""
    global _debug
    previous, _debug = _debug, enabled or _debug
    try:
        yield
    finally:
        _debug = previous


class EngineError(Exception):
    """An error Helm's engine returned (its own text), raised in the parent."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


# --- the parent's side ----------------------------------------------------------------------------


class _Worker:
    """One worker process and the file its stderr goes to."""

    def __init__(self) -> None:
        self.log: IO[bytes] = tempfile.TemporaryFile(prefix="helmsim-engine-")  # noqa: SIM115
        self.logged = 0
        self.proc = subprocess.Popen(  # our own interpreter and module
            [sys.executable, "-m", "helmsim.engine_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            close_fds=True,
        )
        self.pid = os.getpid()
        self.buffer = b""
        self.used = False  # a request was sent (prestart() makes workers that may never be)

    def alive(self) -> bool:
        return self.pid == os.getpid() and self.proc.poll() is None

    def new_log(self) -> str:
        """What the worker wrote to stderr since the last call (bytes past ``logged``)."""
        size = os.fstat(self.log.fileno()).st_size
        data = os.pread(self.log.fileno(), max(0, size - self.logged), self.logged)
        self.logged = size
        return data.decode("utf-8", "replace")

    def stop(self) -> None:
        if self.pid != os.getpid():
            return
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()
        self.log.close()

    def close(self) -> None:
        """Let the worker end on EOF; kill it if it does not within a second."""
        if self.pid != os.getpid():
            return
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=1)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.stop()

    def read_line(self, deadline: float) -> bytes | None:
        """One answer line; ``None`` when the worker ended; ``TimeoutError`` past ``deadline``."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            ready, _, _ = select.select([fd], [], [], min(remaining, 0.5))
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line


_lock = threading.Lock()
_worker: _Worker | None = None


def _shutdown() -> None:
    global _worker
    if _worker is not None:
        if _worker.used:
            _worker.close()
        else:  # started ahead by prestart() and never asked: no need to wait for its start-up
            _worker.stop()
        _worker = None


atexit.register(_shutdown)


def _stop_now() -> None:
    """Ctrl-C or the pool's SIGTERM: end the worker at once, even mid-render."""
    global _worker
    if _worker is not None:
        _worker.stop()
        _worker = None


interrupts.on_stop(_stop_now)


def prestart() -> None:
    """Start this process's worker now, without waiting for it, so that Helm's engine loads on
    another core while the caller imports the simulator; the first :func:`call` then finds it
    ready. A worker never asked anything is killed at exit, not waited for."""
    global _worker
    with _lock:
        if _worker is None or not _worker.alive():
            if _worker is not None:
                _worker.stop()
                _worker = None
            try:
                _worker = _Worker()
            except OSError:  # best effort: the first call starts one and reports what fails
                _worker = None


def current_pid() -> int | None:
    """The pid of this process's live engine worker (``None`` before the first render)."""
    worker = _worker
    return worker.proc.pid if worker is not None and worker.alive() else None


def call(op: str, *, subject: str, **args: Any) -> dict[str, Any]:
    """Ask the worker to do ``op``; ``subject`` names the chart (or flag) in error lines.

    Helm's own errors come back as :class:`EngineError`; a limit hit is
    :class:`helmsim.limits.LimitExceeded`; a worker that died is an ``InputError``.
    """
    global _worker
    bounds = limits.current()
    request = {"op": op, "max_rss": bounds.max_render_memory, "cwd": os.getcwd(), **args}
    data = json.dumps(request).encode() + b"\n"
    timeout = bounds.render_timeout or float("inf")
    with _lock:
        if _worker is None or not _worker.alive():
            if _worker is not None:
                _worker.stop()
            _worker = _Worker()
        worker = _worker
        worker.used = True
        try:
            assert worker.proc.stdin is not None
            worker.proc.stdin.write(data)
            worker.proc.stdin.flush()
            line = worker.read_line(time.monotonic() + timeout)
        except TimeoutError:
            _retire(worker)
            raise limits.LimitExceeded(
                f"Helm's engine did not finish within --render-timeout "
                f"{limits.show('render_timeout', timeout)} (does a template loop without end?)",
                file=subject,
            ) from None
        except (BrokenPipeError, ConnectionResetError):
            line = None
        if line is None:
            log = _retire(worker)
            raise _died(worker.proc.returncode, log, bounds, subject)
        _flush_log(worker)
    answer: dict[str, Any] = json.loads(line)
    if "memory" in answer:
        with _lock:
            _retire(worker)
        raise _memory_error(answer["memory"], subject)
    if "error" in answer:
        raise EngineError(str(answer["error"]), str(answer.get("kind", "")))
    return answer


def _retire(worker: _Worker) -> str:
    """End ``worker`` (it hit a limit or died) and forget it; returns the rest of its log.
    Called with the lock held."""
    global _worker
    if worker.proc.poll() is None:
        worker.proc.kill()
    worker.proc.wait()
    log = _flush_log(worker)
    worker.stop()
    if _worker is worker:
        _worker = None
    return log


def _flush_log(worker: _Worker) -> str:
    text = worker.new_log()
    if text and _debug:
        from helmsim.report.safe import safe_text  # Helm's warnings can quote values

        shown = safe_text(text)
        sys.stderr.write(shown if shown.endswith("\n") else shown + "\n")
        sys.stderr.flush()
    return text


def _memory_error(rss: int, subject: str) -> limits.LimitExceeded:
    limit = limits.current().max_render_memory
    return limits.LimitExceeded(
        f"Helm's engine used {limits.size_text(int(rss))} rendering the chart, which exceeds "
        f"--max-render-memory {limits.size_text(limit)} (does a template recurse, e.g. tpl "
        "calling itself?)",
        file=subject,
    )


def _died(code: int | None, log: str, bounds: limits.Limits, subject: str) -> InputError:
    """The one line for a worker that ended without answering: Go's own reason when it gave one
    (``fatal error: stack overflow``, ``runtime: out of memory``, ``panic: …``)."""
    if code == _MEMORY_EXIT:
        return _memory_error(bounds.max_render_memory, subject)
    reason = next(
        (
            line.strip()
            for line in log.splitlines()
            if line.startswith(("fatal error:", "panic:", "runtime: out of memory"))
        ),
        f"exit status {code}",
    )
    return InputError(
        f"Helm's engine aborted: {reason[:200]} (does a template recurse, e.g. tpl calling itself?)",
        file=subject,
    )


# --- the worker's side ----------------------------------------------------------------------------


def _rss() -> int:
    """This process's resident memory in bytes (Linux /proc; the peak elsewhere)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


class _Watchdog(threading.Thread):
    """Ends the worker when it holds more memory than the current request allows."""

    def __init__(self, out: IO[bytes], lock: threading.Lock) -> None:
        super().__init__(daemon=True)
        self.out, self.lock = out, lock
        self.limit = 0

    def run(self) -> None:
        parent = os.getppid()
        while True:
            time.sleep(0.02)
            if os.getppid() != parent:  # helmsim is gone: nobody will read the answer
                os._exit(1)
            limit = self.limit
            if limit and (rss := _rss()) > limit:
                with self.lock:
                    self.out.write(json.dumps({"memory": rss}).encode() + b"\n")
                    self.out.flush()
                os._exit(_MEMORY_EXIT)


def _serve() -> None:
    """The worker's loop: one request per line on stdin, one answer per line on fd 1's copy."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and ends us
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything Go or a library prints goes to the captured stderr
    lock = threading.Lock()
    watchdog = _Watchdog(out, lock)
    watchdog.start()
    state: dict[str, Any] = {}
    try:  # load Helm's engine before the first request (prestart() overlaps this with the parent)
        import helm_python  # noqa: F401

        from helmsim.helm import record  # noqa: F401 - the "record" request's code, loaded ahead
    except Exception:  # noqa: BLE001 - the first request's own import reports it as its answer
        pass
    for raw in sys.stdin.buffer:
        request = json.loads(raw)
        watchdog.limit = int(request.pop("max_rss", 0) or 0)
        try:
            os.chdir(request.pop("cwd"))  # relative chart paths mean what they mean to helmsim
            answer = _handle(request, state)
        except Exception as err:  # noqa: BLE001 - every SDK error is an answer
            answer = {"error": str(err).strip() or type(err).__name__, "kind": type(err).__name__}
        watchdog.limit = 0
        data = json.dumps(answer).encode() + b"\n"
        with lock:
            out.write(data)
            out.flush()


def _lookup_config(state: dict[str, Any]) -> tuple[Any, Any]:
    """The worker's lookup server and a Helm client configured for it alone, made once."""
    if "lookup" not in state:
        import helm_python as sdk

        from helmsim.helm.lookup_server import LookupServer

        server = LookupServer()
        state["lookup"] = (server, sdk.Config(kubeconfig_content=server.kubeconfig()))
    found: tuple[Any, Any] = state["lookup"]
    return found


def _handle(request: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    import helm_python as sdk

    op = request["op"]
    if op == "load":
        previous = state.pop("chart", None)
        if previous is not None:
            previous.close()
        chart = sdk.Chart.load(request["path"])
        state["chart"], state["path"] = chart, request["path"]
        return {
            "metadata": chart.metadata,
            "dependencies": chart.dependencies,
            "crds": chart.crds if request.get("crds") else [],
        }
    if op == "merge":
        # chartutil.CoalesceValues of the loaded chart and the release's values (Helm's own)
        return {"values": state["chart"].merge_values(json.loads(request["values"]))}
    if op == "record":
        # the chart's part of Helm's release record (helmsim.helm.record), from Helm's loader
        from helmsim.helm import record

        chart = state["chart"]
        part = record.chart_record(
            state["path"], chart.metadata or {}, chart.templates or [], chart.values or {}, chart.files or [],
            chart.schema is not None,
        )
        return {"json": part.json, "largest": part.largest}
    if op == "render":
        chart = state["chart"]
        if request.get("cluster") is None:  # as helm template: lookup answers an empty map
            raw = sdk._native.call_string("helm_render", chart._raw(), request["values"], request["options"])
            return {"rendered": json.loads(raw)}
        # as helm-controller: lookup reads the cluster, here the objects the request names
        # (helm/helm pkg/engine/lookup_func.go through a client of helmsim.helm.lookup_server)
        server, config = _lookup_config(state)
        options = json.loads(request["options"])
        server.serve(request["cluster"], options.get("api_versions") or ())
        raw = sdk._native.call_string(
            "helm_render_with_config", config._raw(), chart._raw(), request["values"], request["options"]
        )
        return {"rendered": json.loads(raw)}
    if op == "pull":
        # helm/helm pkg/action/pull.go Pull.Run: an oci:// reference, or a chart name in --repo
        from helm_python import registry

        pulled = registry.pull(
            request["ref"],
            destination=request["dest"],
            version=request.get("version"),
            repo_url=request.get("repo"),
            plain_http=bool(request.get("plain_http")),
            insecure_skip_tls_verify=bool(request.get("insecure")),
        )
        return {"output": str(pulled.get("output", ""))}
    if op == "set":
        # helm/helm pkg/strvals/parser.go: Parse (--set), ParseString (--set-string), ParseJSON
        # (--set-json), ParseLiteral (--set-literal); --set-file is parsed as --set-string and
        # its files read by the caller (helmsim.render).
        parse = {
            "--set": sdk.parse_set_string,
            "--set-string": sdk.parse_set_string_values,
            "--set-json": sdk.parse_set_json,
            "--set-literal": sdk.parse_set_literal,
        }[request.get("flag", "--set")]
        return {"value": parse(request["expression"])}
    raise ValueError(f"unknown request {op!r}")


if __name__ == "__main__":
    _serve()
