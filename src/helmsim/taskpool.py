"""Run picklable tasks on local worker processes or on a Ray cluster; results stream back.

One interface for every parallel run of helmsim (``simulate/check/test --runs``, ``fleet``):
:func:`run_tasks` calls ``fn(item)`` for each item and returns the values in item order, so the
same items give the same values whatever the backend, the number of workers or the order in
which tasks finish. Each task also reports which worker ran it, whether it started Helm's engine
there and the peak memory of the worker and of its engine (:class:`PoolStats`); on Ray, a task
whose worker died is retried by Ray (``max_retries``) and the lost worker is reported.

Helm's engine (helm-python-sdk, Go) runs in a child process of each worker
(:mod:`helmsim.engine_worker`), started on the worker's first render and kept for every later
task the worker runs (Ray reuses worker processes for CPU tasks), so a worker loads Helm once.
Local workers come from a fork server that has imported the simulator and nothing of Helm's;
Ray workers are fresh processes started by the raylet. A Ray task runs in the driver's working
directory, so relative chart paths mean the same on both backends (the nodes need the driver's
files at the same paths; docs/fleet.md).
"""

from __future__ import annotations

import os
import pickle
import resource
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from msgspec import Struct, field

from helmsim import interrupts
from helmsim.errors import InputError

T = TypeVar("T")
R = TypeVar("R")

BackendName = Literal["local", "ray"]
BACKENDS: tuple[BackendName, ...] = ("local", "ray")

RAY_MAX_RETRIES = 3
"""Times Ray reruns a task whose worker process died (ray.remote ``max_retries``; Ray's own
default for tasks). Exceptions raised by the task itself are not retried: they are answers."""

class WorkerLost(InputError):
    """A task's worker died more often than Ray retries it: the run cannot complete."""


class Backend(Struct, frozen=True):
    """Where tasks run: ``local`` processes (``workers``: default the usable cores; 1 runs in
    this process) or ``ray`` at ``ray_address`` (None: ``RAY_ADDRESS`` if set, else a new
    local Ray instance; ``auto``: the cluster ``ray start`` runs on this machine;
    ``HOST:PORT``: a cluster's GCS; ``ray://HOST:10001``: Ray Client)."""

    name: BackendName = "local"
    workers: int | None = None
    ray_address: str | None = None
    upload: str | None = None
    """With Ray: a directory Ray uploads to the cluster (runtime_env ``working_dir``); tasks
    run inside the uploaded copy, so paths must be relative to it."""

    def __post_init__(self) -> None:
        if self.name not in BACKENDS:
            raise InputError(f"--backend {self.name!r}: expected local or ray")
        if self.ray_address is not None and self.name != "ray":
            raise InputError("--ray-address needs --backend ray")
        if self.upload is not None and self.name != "ray":
            raise InputError("--ray-upload needs --backend ray")


class Done(Struct, Generic[R], frozen=True):
    """One finished task: its position, its value and what it cost its worker."""

    index: int
    value: R
    worker: str
    """``HOST pid N`` of the process that ran it."""
    helm_loaded: bool
    """This task started its worker's Helm engine (the worker's first render)."""
    peak_rss: int
    """The worker's peak resident memory after the task, in bytes."""
    engine_peak_rss: int = 0
    """The peak resident memory of the worker's Helm engine process, in bytes (0: none)."""


class WorkerStat(Struct, frozen=True):
    """What one worker process did."""

    worker: str
    tasks: int
    helm_loads: int
    """Helm engines this worker started (1 when it rendered; more if one was replaced)."""
    peak_rss: int
    engine_peak_rss: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "worker": self.worker,
            "tasks": self.tasks,
            "helmLoads": self.helm_loads,
            "peakRssBytes": self.peak_rss,
            "helmEnginePeakRssBytes": self.engine_peak_rss,
        }


class Retry(Struct, frozen=True):
    """A task Ray ran again because the worker running it died."""

    index: int
    lost: tuple[str, ...]
    """Workers that started the task and died before finishing it."""
    finished_on: str

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.index, "lostWorkers": list(self.lost), "finishedOn": self.finished_on}


class PoolStats(Struct):
    """How a run went: the backend, each worker's tasks and peak memory, and retried tasks.

    Not part of any report (it depends on the machine); the CLI prints it on a terminal and
    writes it with ``--stats FILE``.
    """

    backend: str
    tasks: int = 0
    workers: list[WorkerStat] = field(default_factory=list)
    retries: list[Retry] = field(default_factory=list)

    def lines(self, what: str = "task") -> list[str]:
        out = [f"{self.tasks} {what}(s) on {self.backend}, {len(self.workers)} worker(s)"]
        for w in self.workers:
            loads = {0: "Helm not loaded", 1: "Helm loaded once"}.get(
                w.helm_loads, f"Helm loaded {w.helm_loads} times"
            )
            engine = f" (+ Helm's engine {w.engine_peak_rss / 2**20:.0f} MiB)" if w.engine_peak_rss else ""
            out.append(
                f"  {w.worker}: {w.tasks} {what}(s), {loads}, peak RSS {w.peak_rss / 2**20:.0f} MiB{engine}"
            )
        for r in self.retries:
            out.append(
                f"  {what} {r.index}: worker {', '.join(r.lost)} died while running it; "
                f"Ray retried it on {r.finished_on} (nothing lost)"
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "tasks": self.tasks,
            "workers": [w.to_dict() for w in self.workers],
            "retries": [r.to_dict() for r in self.retries],
        }


Progress = Callable[[int, int], None]
"""``progress(done, total)`` after each finished task."""


# --- what runs in the worker ------------------------------------------------------------------------
def worker_id() -> str:
    """``HOST pid N`` of this process (the Ray node's address on Ray)."""
    host = os.uname().nodename
    if "ray" in sys.modules:
        try:
            import ray

            if ray.is_initialized():
                host = ray.util.get_node_ip_address()
        except Exception:  # noqa: BLE001 - an identifier only; never fail a task for it
            pass
    return f"{host} pid {os.getpid()}"


def peak_rss() -> int:
    """This process's peak resident set size in bytes (getrusage; Linux counts KiB)."""
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kib if sys.platform == "darwin" else kib * 1024


def engine_pid() -> int | None:
    """The pid of this process's Helm engine worker, if it has one."""
    if "helmsim.engine_worker" not in sys.modules:
        return None
    from helmsim import engine_worker

    return engine_worker.current_pid()


def process_peak_rss(pid: int) -> int:
    """Another process's peak resident set size in bytes (``VmHWM``; 0 when unknown)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def execute(fn: Callable[[T], R], index: int, item: T) -> Done[R]:
    """Run one task and describe its worker."""
    before = engine_pid()
    value = fn(item)
    after = engine_pid()
    engine = process_peak_rss(after) if after is not None else 0
    return Done(index, value, worker_id(), after is not None and after != before, peak_rss(), engine)


_UNPICKLED: list[tuple[bytes, Any]] = []


def _task_of(blob: bytes) -> Any:
    """The task a Ray worker was sent, unpickled once per worker and run (the same bytes come
    with every batch of a run)."""
    if _UNPICKLED and _UNPICKLED[0][0] == blob:
        return _UNPICKLED[0][1]
    task = pickle.loads(blob)
    _UNPICKLED[:] = [(blob, task)]
    return task


def execute_pickled(
    fn: bytes, batch: Sequence[tuple[int, bytes]], ledger: Any, cwd: str | None = None
) -> list[Done[Any]]:
    """A Ray task: a batch of items. Move to the driver's directory ``cwd`` (``None``: stay,
    e.g. in an uploaded working_dir); for each item tell ``ledger`` it started, unpickle and
    run it, tell ``ledger`` it is done. The start is told before unpickling (which imports the
    simulator in a fresh worker), so a worker killed at any point of an item is known."""
    if cwd is not None and os.getcwd() != cwd:
        try:
            os.chdir(cwd)
        except OSError:
            raise InputError(
                f"Ray worker {worker_id()} has no directory {cwd}: every node needs the driver's "
                "files at the same paths, or use --ray-upload (docs/fleet.md)"
            ) from None
    out = []
    for index, item in batch:
        # Not waited for: a task blocked in ray.get gives its CPU back, and Ray would start
        # another worker process to use it.
        ledger.started.remote(index, worker_id())
        done = execute(_task_of(fn), index, pickle.loads(item))
        ledger.done.remote(index, done.worker)
        out.append(done)
    return out


def _execute_many(fn: Callable[[T], R], batch: Sequence[tuple[int, T]], cwd: str) -> list[Done[R]]:
    """Local tasks, in the driver's current directory (the fork server keeps the one it
    started in)."""
    if os.getcwd() != cwd:
        os.chdir(cwd)
    return [execute(fn, i, item) for i, item in batch]


# --- running -------------------------------------------------------------------------------------------
def default_workers() -> int:
    """Local cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def mp_context() -> Any:
    """Worker processes that never inherit Helm's engine: a fork server that has imported the
    simulator but not loaded Helm's library (spawn where there is no fork server)."""
    import multiprocessing

    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["helmsim.taskpool", "helmsim.montecarlo", "helmsim.simulate"])
        return ctx
    return multiprocessing.get_context("spawn")


def iter_tasks(
    fn: Callable[[T], R], items: Sequence[T], backend: Backend, stats: PoolStats | None = None
) -> Iterator[Done[R]]:
    """Each task's :class:`Done` as soon as it finishes (any order); ``stats`` is filled in."""
    stats = stats if stats is not None else PoolStats(backend.name)
    stats.backend = backend.name if backend.name == "local" else f"ray ({backend.ray_address or os.environ.get('RAY_ADDRESS') or 'local instance'})"
    if backend.name == "ray":
        yield from _iter_ray(fn, items, backend, stats)
        return
    n = min(backend.workers or default_workers(), len(items))
    if n <= 1:
        for i, item in enumerate(items):
            yield execute(fn, i, item)
        return
    # Several items per submission keep the pipe busy; small enough to balance uneven tasks.
    size = max(1, len(items) // (n * 4))
    numbered = list(enumerate(items))
    batches = [numbered[k : k + size] for k in range(0, len(numbered), size)]
    with LocalPool(n) as pool:
        pending = {pool.submit_batch(fn, b) for b in batches}
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                yield from fut.result()


class LocalPool:
    """Local worker processes kept across rounds of tasks (a check's profile passes, then its
    fixed runs, each submitted as soon as it is known), from :func:`mp_context`'s fork server.

    Workers ignore Ctrl-C: the parent stops them. Leaving the block on an exception (Ctrl-C, a
    failed task, a caller that stopped iterating) ends them at once (:func:`interrupts.stop_pool`);
    otherwise the block ends once they have finished.
    """

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.cwd = os.getcwd()
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> LocalPool:
        ctx = mp_context()
        # a Ctrl-C while the workers start waits until they have, so none is left half-started
        # by the teardown
        with interrupts.deferred():
            interrupts.start_fork_server(ctx)
            self._pool = ProcessPoolExecutor(
                max_workers=self.workers, mp_context=ctx, initializer=interrupts.ignore_in_worker
            )
        return self

    def submit_batch(self, fn: Callable[[T], R], batch: Sequence[tuple[int, T]]) -> Future[list[Done[R]]]:
        """``fn`` on each ``(index, item)`` of ``batch``, in one worker."""
        assert self._pool is not None, "submit inside the with block"
        with interrupts.deferred():
            return self._pool.submit(_execute_many, fn, batch, self.cwd)

    def submit(self, fn: Callable[[T], R], item: T) -> Future[list[Done[R]]]:
        """``fn(item)`` on a worker; the future's one :class:`Done` holds the value."""
        return self.submit_batch(fn, [(0, item)])

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if kind is not None:
            interrupts.stop_pool(pool)
        pool.shutdown(wait=True, cancel_futures=True)


def value_of(future: Future[list[Done[R]]]) -> R:
    """The value of a task :meth:`LocalPool.submit` sent (its exception, raised here)."""
    return future.result()[0].value


def run_tasks(
    fn: Callable[[T], R],
    items: Sequence[T],
    backend: Backend,
    *,
    progress: Progress | None = None,
    stats: PoolStats | None = None,
) -> list[R]:
    """``[fn(item) for item in items]`` on ``backend``: the same list whatever ran where."""
    stats = stats if stats is not None else PoolStats(backend.name)
    done: dict[int, Done[R]] = {}
    for d in iter_tasks(fn, items, backend, stats):
        done[d.index] = d
        if progress is not None:
            progress(len(done), len(items))
    ordered = [done[i] for i in range(len(items))]
    stats.tasks = len(ordered)
    stats.workers = _worker_stats(ordered)
    return [d.value for d in ordered]


def _worker_stats(done: Sequence[Done[Any]]) -> list[WorkerStat]:
    by: dict[str, list[Done[Any]]] = {}
    for d in done:
        by.setdefault(d.worker, []).append(d)
    return [
        WorkerStat(
            w,
            len(ds),
            sum(d.helm_loaded for d in ds),
            max(d.peak_rss for d in ds),
            max(d.engine_peak_rss for d in ds),
        )
        for w, ds in sorted(by.items())
    ]


# --- Ray ---------------------------------------------------------------------------------------------
LEDGER_PREFIX = "helmsim-ledger-"
"""Name prefix of the Ray actor that records task starts (one per run)."""


class Ledger:
    """A Ray actor recording which worker started which task: a task started twice lost its
    first worker (Ray retried it after the worker died)."""

    def __init__(self) -> None:
        self.starts: dict[int, list[str]] = {}
        self.finished: set[tuple[int, str]] = set()

    def started(self, index: int, worker: str) -> None:
        self.starts.setdefault(index, []).append(worker)

    def done(self, index: int, worker: str) -> None:
        self.finished.add((index, worker))

    def all(self) -> dict[int, list[str]]:
        return self.starts

    def running(self) -> dict[str, int]:
        """Worker → the task it has started and not finished."""
        return {w: i for i, ws in self.starts.items() for w in ws if (i, w) not in self.finished}

    def has_finished(self, index: int, worker: str) -> bool:
        return (index, worker) in self.finished


def import_ray() -> Any:
    """The ``ray`` module, or one line saying how to install it."""
    try:
        import ray
    except ImportError:
        raise InputError(
            "--backend ray needs Ray: pip install 'helmsim[ray]' (or use the default --backend local)"
        ) from None
    return ray


UPLOAD_EXCLUDES = ("__pycache__", ".pytest_cache", ".hypothesis", ".mypy_cache")
"""Never uploaded with ``--ray-upload`` (Ray itself skips .git, .venv and what .gitignore names)."""


def connect(address: str | None, upload: str | None = None) -> Any:
    """Connect this process to Ray once (later calls reuse the connection); with ``upload``,
    Ray ships that directory to the cluster and runs every task in its copy."""
    import logging

    ray = import_ray()
    if ray.is_initialized():
        if upload is not None:
            raise InputError("--ray-upload: this process is already connected to Ray without it")
        return ray
    target = address or os.environ.get("RAY_ADDRESS")
    kwargs: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING}
    if upload is not None:
        kwargs["runtime_env"] = {"working_dir": upload, "excludes": list(UPLOAD_EXCLUDES)}
    if target is None:
        kwargs.update(address="local", include_dashboard=False)
    else:
        kwargs.update(address=target)
    try:
        ray.init(**kwargs)
    except (ConnectionError, RuntimeError, ValueError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise InputError(f"--ray-address {target}: cannot connect to a Ray cluster: {first}") from None
    return ray


def _iter_ray(
    fn: Callable[[T], R], items: Sequence[T], backend: Backend, stats: PoolStats
) -> Iterator[Done[R]]:
    ray = connect(backend.ray_address, backend.upload)
    # named, so an operator (or a test) can ask which worker runs which task
    name = f"{LEDGER_PREFIX}{os.getpid()}-{os.urandom(4).hex()}"
    ledger = ray.remote(num_cpus=0)(Ledger).options(name=name).remote()
    remote = ray.remote(max_retries=RAY_MAX_RETRIES, retry_exceptions=False)(execute_pickled)
    fn_ref = ray.put(pickle.dumps(fn))
    cwd = None if backend.upload else os.getcwd()
    # Batches of items per task, as on the local pool: a task costs Ray a few milliseconds,
    # a rehearsal of a small chart not much more. Four batches per CPU keep the load even.
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    size = max(1, len(items) // (cpus * 4))
    numbered = [(i, pickle.dumps(item)) for i, item in enumerate(items)]
    pending = {
        remote.remote(fn_ref, numbered[k : k + size], ledger, cwd): numbered[k][0]
        for k in range(0, len(numbered), size)
    }
    finished: dict[int, str] = {}
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                index = pending.pop(ref)
                try:
                    batch = ray.get(ref)
                except ray.exceptions.RayTaskError as err:
                    cause = getattr(err, "cause", None)
                    if isinstance(cause, BaseException):
                        raise cause from None
                    raise
                except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError) as err:
                    raise WorkerLost(
                        f"task {index}: its Ray worker died {RAY_MAX_RETRIES + 1} times "
                        f"(Ray retries a lost task {RAY_MAX_RETRIES} times): {type(err).__name__}"
                    ) from None
                for done in batch:
                    finished[done.index] = done.worker
                    yield done
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
    starts = ray.get(ledger.all.remote())
    ray.kill(ledger)
    for index in sorted(starts):
        attempts = starts[index]
        if len(attempts) > 1 and index in finished:
            lost = list(attempts)
            lost.remove(finished[index])
            stats.retries.append(Retry(index, tuple(lost), finished[index]))


__all__ = [
    "BACKENDS",
    "Backend",
    "BackendName",
    "Done",
    "LEDGER_PREFIX",
    "Ledger",
    "PoolStats",
    "Progress",
    "RAY_MAX_RETRIES",
    "Retry",
    "WorkerLost",
    "WorkerStat",
    "connect",
    "default_workers",
    "execute",
    "execute_pickled",
    "import_ray",
    "iter_tasks",
    "mp_context",
    "peak_rss",
    "run_tasks",
    "worker_id",
]
