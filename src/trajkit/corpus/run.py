"""The one batch engine every many-run verb goes through.

``run(task, items, engine=...)`` applies a picklable ``task`` to every item
(usually a :class:`~trajkit.corpus.discover.RunRef`) and hands the results
back **per batch**, in input order, as :class:`Batch` objects. Batches are
the unit of work (a process or Ray worker gets a batch of runs, not one run:
the per-task overhead is paid once per batch) and the unit of commit (the
index writes one manifest per batch, so a killed index resumes at a batch
boundary).

Engines:

- ``serial``: in this process, one item after the other.
- ``process``: the default; ``jobs`` worker processes
  (:class:`concurrent.futures.ProcessPoolExecutor`), at most ``4 * jobs``
  batches in flight, so the driver's memory does not grow with the corpus
  (and a driver busy with a batch's results, as the index is while it
  commits, does not leave the workers without work).
  Workers come from a *forkserver* (where the platform has one), never from a
  plain ``fork`` of the driver: the driver runs threads (the index finds runs
  in a background thread while the first batches are read), and a child forked
  while another thread holds a lock (the import lock, a queue's) waits on it
  forever. The forkserver imports the task's module once, so each worker
  starts from a warm copy.
- ``ray``: Ray Data (``pip install 'trajkit[ray]'``, imported only here and
  only when asked). ``address`` joins a running cluster; otherwise a local
  ``ray.init(num_cpus=jobs)``.

A task is a picklable callable ``task(item) -> result``. It must not raise
on bad data (a run that cannot be read is a result saying so); an exception
anyway (a bug) is caught per item and handed back as a :class:`Failed`
result, so one bad run never stops the batch.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Sequence

SERIAL = "serial"
PROCESS = "process"
RAY = "ray"
ENGINES = (SERIAL, PROCESS, RAY)

#: Items per batch unless the caller says otherwise.
DEFAULT_BATCH = 64

RAY_MISSING = "the ray engine needs Ray Data: pip install 'trajkit[ray]'"


class EngineError(Exception):
    """The engine cannot run as asked (unknown engine, Ray not installed or unreachable)."""


@dataclass(slots=True)
class Failed:
    """What a task raised for one item (a bug: tasks report bad data as results)."""

    item: Any
    error: str


@dataclass(slots=True)
class Batch:
    """One batch: its number (0-based, in input order), its items, and one result per item."""

    number: int
    items: list[Any]
    results: list[Any] = field(default_factory=list)


def default_jobs() -> int:
    """The CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _apply(task: Callable[[Any], Any], items: Sequence[Any], pack: Callable[[list[Any]], list[Any]] | None = None) -> list[Any]:
    out = []
    for it in items:
        try:
            out.append(task(it))
        except Exception as e:  # a task bug must not lose the batch
            out.append(Failed(it, f"{type(e).__name__}: {e}"))
    return out if pack is None else pack(out)


def batches(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """``items`` cut into lists of ``size`` (the last may be shorter)."""
    cur: list[Any] = []
    for it in items:
        cur.append(it)
        if len(cur) >= size:
            yield cur
            cur = []
    if cur:
        yield cur


def run(
    task: Callable[[Any], Any],
    items: Iterable[Any],
    engine: str = PROCESS,
    jobs: int | None = None,
    batch_size: int = DEFAULT_BATCH,
    address: str | None = None,
    pack: Callable[[list[Any]], list[Any]] | None = None,
) -> Iterator[Batch]:
    """``task`` over ``items``, yielded batch by batch in input order.

    ``pack``: a picklable ``pack(results) -> results`` applied to each
    batch's results where they are made (in the worker), before they are
    handed back: a task's results re-shaped for the trip (e.g. the index's
    rows as column buffers, one per table and batch, not a dict per row).

    ``jobs``: worker processes (process) or CPUs (local Ray); default: the
    CPUs available. ``process`` with one job, or with a single batch, runs
    serially (a pool would only add its start-up). Raises
    :class:`EngineError` for an unknown engine or a Ray that cannot start.
    """
    if engine not in ENGINES:
        raise EngineError(f"unknown engine {engine!r}; one of: {', '.join(ENGINES)}")
    jobs = max(1, jobs or default_jobs())
    size = max(1, batch_size)
    if engine == RAY:
        yield from _run_ray(task, items, jobs, size, address, pack)
        return
    chunks = batches(items, size)
    if engine == SERIAL or jobs == 1:
        for n, chunk in enumerate(chunks):
            yield Batch(n, chunk, _apply(task, chunk, pack))
        return
    first = next(chunks, None)
    if first is None:
        return
    second = next(chunks, None)
    if second is None:
        yield Batch(0, first, _apply(task, first, pack))
        return
    yield from _run_process(task, _chain(first, second, chunks), jobs, pack)


def _chain(a: list[Any], b: list[Any], rest: Iterator[list[Any]]) -> Iterator[list[Any]]:
    yield a
    yield b
    yield from rest


def _pool_context(*fns: Any) -> Any:
    """A multiprocessing context safe to start workers from a driver that runs
    threads: forkserver (preloading trajkit and the task's module) where there
    is one, else spawn."""
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    if "forkserver" not in methods:  # pragma: no cover - not POSIX
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    preload = ["trajkit", "trajkit.corpus.run"]
    for fn in fns:  # the task's module (and the pack's): imported once, in the forkserver
        mod = getattr(fn, "__module__", None) or getattr(type(fn), "__module__", None)
        if isinstance(mod, str) and mod.startswith("trajkit") and mod not in preload:
            preload.append(mod)
    ctx.set_forkserver_preload(preload)
    return ctx


def _run_process(task: Callable[[Any], Any], chunks: Iterator[list[Any]], jobs: int,
                 pack: Callable[[list[Any]], list[Any]] | None = None) -> Iterator[Batch]:
    from concurrent.futures import ProcessPoolExecutor

    pending: deque = deque()
    n = 0
    with ProcessPoolExecutor(max_workers=jobs, mp_context=_pool_context(task, pack)) as pool:
        for chunk in chunks:
            pending.append((n, chunk, pool.submit(_apply, task, chunk, pack)))
            n += 1
            while len(pending) >= 4 * jobs:
                k, items, fut = pending.popleft()
                yield Batch(k, items, fut.result())
        while pending:
            k, items, fut = pending.popleft()
            yield Batch(k, items, fut.result())


# ---------------------------------------------------------------- Ray Data

_ray_started_here = False


def ray_init(jobs: int, address: str | None = None) -> Any:
    """Import Ray and connect: to ``address`` when given, else a local
    ``ray.init(num_cpus=jobs)`` (once per process; later calls reuse it)."""
    global _ray_started_here
    try:
        import ray
    except ImportError as e:
        raise EngineError(f"{RAY_MISSING} ({e})") from None
    if not ray.is_initialized():
        try:
            if address:
                ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
            else:
                ray.init(num_cpus=jobs, ignore_reinit_error=True, include_dashboard=False, log_to_driver=False)
                _ray_started_here = True
        except Exception as e:  # a cluster that cannot be reached is an engine error, not a traceback
            raise EngineError(f"cannot start Ray{' at ' + address if address else ''}: {type(e).__name__}: {e}") from None
    return ray


class _RayBatch:
    """The Ray Data map function: one row per batch of items (pickled), one row of pickled results back."""

    def __init__(self, task: Callable[[Any], Any], pack: Callable[[list[Any]], list[Any]] | None = None) -> None:
        self.task = task
        self.pack = pack

    def __call__(self, row: dict[str, Any]) -> dict[str, Any]:
        import pickle

        items = pickle.loads(row["items"])
        return {"number": row["number"], "results": pickle.dumps(_apply(self.task, items, self.pack))}


def _run_ray(task: Callable[[Any], Any], items: Iterable[Any], jobs: int, size: int, address: str | None,
             pack: Callable[[list[Any]], list[Any]] | None = None) -> Iterator[Batch]:
    import pickle

    chunks = list(batches(items, size))
    if not chunks:
        # nothing to read (an empty ROOT, or a re-index that found every run unchanged): Ray is not
        # started (a local ray.init takes seconds), but a Ray that is not installed is still an error
        import importlib.util

        if importlib.util.find_spec("ray") is None:
            raise EngineError(RAY_MISSING)
        return
    ray = ray_init(jobs, address)
    import ray.data

    rows = [{"number": n, "items": pickle.dumps(c)} for n, c in enumerate(chunks)]
    ds = ray.data.from_items(rows, override_num_blocks=len(rows)).map(_RayBatch(task, pack))
    # Ray Data may finish blocks out of order: hold early ones until their turn.
    held: dict[int, list[Any]] = {}
    want = 0
    for row in ds.iter_rows():
        held[int(row["number"])] = pickle.loads(row["results"])
        while want in held:
            yield Batch(want, chunks[want], held.pop(want))
            want += 1
    while want in held:  # pragma: no cover - iter_rows gives every row
        yield Batch(want, chunks[want], held.pop(want))
        want += 1
