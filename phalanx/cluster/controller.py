"""Controllers and the Manager that runs them, in the style of controller-runtime.

    async def reconcile(key: str) -> Result | None:
        ns, name = split_key(key)
        clique = cliques.get(key)          # read from the informer cache
        ...                                # converge the cluster towards clique.spec
        return Result(requeue_after=30)    # or None when done

    mgr = Manager(client)
    cliques = mgr.informer(PodClique)
    ctrl = mgr.add(Controller("podclique", reconcile, workers=4))
    ctrl.watch(cliques)                                    # own kind -> its key
    ctrl.watch(mgr.informer(Pod), map_to_owner(PodClique)) # pod -> owning clique's key
    ctrl.watch(mgr.informer(Node), lambda node: [...])     # anything -> keys
    await mgr.start()        # informers synced before any worker starts
    await mgr.wait_idle()    # simulations/tests: everything settled, no sleeps
    await mgr.stop()

A reconcile that raises is retried with per-key exponential backoff; a successful one
resets the backoff. A key is never reconciled by two workers at once. What is logged
depends on the error:

- permanent (`PermanentError`, `Invalid`, `Forbidden`, or any exception whose class sets
  `permanent_reason`, e.g. an unknown scheduler backend or a configuration error): retrying
  cannot fix it until someone changes the object or the configuration. It is reported once
  through the controller's `ErrorReporter` (a condition and an Event on the object), retried
  with a backoff doubling from `permanent_min_delay` (1 s), and logged as one line per retry;
  the report is cleared by the next successful reconcile;
- expected (any other `ApiError`, a timeout, a connection error): one line per retry
  (a `Conflict`, optimistic concurrency losing a race, only at debug level);
- unexpected (anything else: a bug): the traceback once per key, then one line per retry.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from phalanx.api.base import Resource
from phalanx.api.errors import short_cause

from .client import ApiError, Client, Conflict, Forbidden, Invalid
from .clock import VirtualTimeLoop
from .informer import Informer
from .informer_factory import InformerFactory
from .objects import object_key
from .workqueue import ExponentialBackoff, ShutDown, WorkQueue

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Result:
    """What a reconcile asks for: run again after `requeue_after` seconds, or with backoff
    (`requeue=True`). `None` or `Result()` means done until the next event."""

    requeue_after: float | None = None
    requeue: bool = False


class PermanentError(Exception):
    """A reconcile failure that retrying cannot fix by itself: `reason` (CamelCase) and a
    message naming what to change (e.g. the offending field)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.permanent_reason = reason
        self.message = message


def permanent_reason(err: BaseException) -> str | None:
    """The CamelCase reason of a permanent error; None for errors worth a plain retry."""
    reason = getattr(err, "permanent_reason", None)
    if isinstance(reason, str) and reason:
        return reason
    if isinstance(err, Invalid):
        return "Invalid"
    if isinstance(err, Forbidden):
        return "Forbidden"
    return None


def _message(err: BaseException) -> str:
    # Bounded: the cause once, without values the server echoed back (phalanx.api.errors).
    return short_cause(err)


class ErrorReporter(Protocol):
    """Where a controller reports permanent errors: on the object the key names."""

    async def report(self, key: str, reason: str, message: str) -> None: ...

    async def clear(self, key: str) -> None: ...


Reconcile = Callable[[str], Awaitable[Result | None]]
KeyMapper = Callable[[Any], Iterable[str] | str | None]
UpdatePredicate = Callable[[Any, Any], bool]


def own_key(obj: Resource) -> str:
    return obj.key


def map_to_owner(owner_kind: type[Resource] | str, *, controller_only: bool = True) -> KeyMapper:
    """Map an object to the key of its owner of `owner_kind` (via ownerReferences). A
    namespaced owner lives in its dependent's namespace; pass the class (not the kind name)
    for a cluster-scoped owner so its key has no namespace."""
    kind = owner_kind if isinstance(owner_kind, str) else owner_kind.KIND
    namespaced = isinstance(owner_kind, str) or owner_kind.NAMESPACED

    def mapper(obj: Resource) -> list[str]:
        ns = obj.metadata.namespace if namespaced else None
        return [object_key(ns, ref.name) for ref in obj.metadata.owner_references
                if ref.kind == kind and (ref.controller or not controller_only)]

    return mapper


def map_from_label(label: str) -> KeyMapper:
    """Map an object to `namespace/<value of label>` (e.g. pods to their PodGang)."""

    def mapper(obj: Resource) -> list[str]:
        value = obj.metadata.labels.get(label)
        return [object_key(obj.metadata.namespace, value)] if value else []

    return mapper


def generation_changed(old: Resource, new: Resource) -> bool:
    """Predicate: only spec changes (controller-runtime's GenerationChangedPredicate)."""
    return old.metadata.generation != new.metadata.generation


class Controller:
    def __init__(
        self,
        name: str,
        reconcile: Reconcile,
        *,
        workers: int = 1,
        rate_limiter: ExponentialBackoff[str] | None = None,
        reporter: ErrorReporter | None = None,
        permanent_min_delay: float = 1.0,
    ) -> None:
        if workers < 1:
            raise ValueError(f"controller {name}: workers must be >= 1, got {workers}")
        self.name = name
        self.reconcile = reconcile
        self.workers = workers
        self.queue: WorkQueue[str] = WorkQueue(name, rate_limiter)
        self._tasks: list[asyncio.Task[None]] = []
        self.informers: list[Informer[Any]] = []
        self.reporter = reporter
        self.permanent_min_delay = permanent_min_delay
        # key -> (reason, message) reported and not yet cleared
        self._reported: dict[str, tuple[str, str]] = {}
        # keys whose unexpected failure was logged with its traceback (until a success)
        self._traced: dict[str, None] = {}
        # Counters for tests and reports.
        self.reconciles = 0
        self.errors = 0
        self.permanent_errors = 0

    def __repr__(self) -> str:
        return f"<Controller {self.name}: {self.queue!r}>"

    def watch(self, informer: Informer[Any], mapper: KeyMapper = own_key, *,
              predicate: UpdatePredicate | None = None) -> None:
        """Enqueue `mapper(obj)` for every add, update (old and new) and delete.
        `predicate(old, new)` filters updates."""
        def keys(obj: Any) -> Iterable[str]:
            out = mapper(obj)
            return () if out is None else (out,) if isinstance(out, str) else out

        def on_add(obj: Any) -> None:
            for k in keys(obj):
                self.queue.add(k)

        def on_update(old: Any, new: Any) -> None:
            if predicate is not None and not predicate(old, new):
                return
            for k in keys(old):
                self.queue.add(k)
            for k in keys(new):
                self.queue.add(k)

        informer.add_handler(on_add, on_update, on_add)
        self.informers.append(informer)

    # ------------------------------------------------------------------ running

    @property
    def running(self) -> bool:
        return any(not t.done() for t in self._tasks)

    def start(self) -> None:
        if self.running:
            return
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._worker(), name=f"{self.name} worker {i}")
                       for i in range(self.workers)]

    async def stop(self) -> None:
        self.queue.shutdown()
        tasks, self._tasks = self._tasks, []
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _worker(self) -> None:
        queue = self.queue
        while True:
            try:
                key = await queue.get()
            except ShutDown:
                return
            try:
                self.reconciles += 1
                result = await self.reconcile(key)
            except asyncio.CancelledError:
                queue.done(key)
                raise
            except Exception as err:
                self.errors += 1
                try:
                    await self._failed(key, err)
                except asyncio.CancelledError:
                    queue.done(key)
                    raise
            else:
                self._traced.pop(key, None)
                if key in self._reported:
                    await self._clear(key)
                if result is not None and result.requeue_after is not None:
                    queue.forget(key)
                    queue.add_after(key, result.requeue_after)
                elif result is not None and result.requeue:
                    queue.add_rate_limited(key)
                else:
                    queue.forget(key)
            queue.done(key)

    async def _failed(self, key: str, err: Exception) -> None:
        """Requeue with backoff; report and log as the module docstring says."""
        queue = self.queue
        attempt = queue.num_requeues(key) + 1
        reason = permanent_reason(err)
        limiter = queue.rate_limiter
        delay = limiter.when(key)
        if reason is not None:  # doubling from permanent_min_delay, not from 5 ms
            floor = self.permanent_min_delay * 2.0 ** min(attempt - 1, 40)
            delay = min(max(delay, floor), max(limiter.max_delay, self.permanent_min_delay))
        queue.add_after(key, delay)
        message = _message(err)
        if reason is not None:
            self.permanent_errors += 1
            await self._report(key, reason, message)
            log.warning("%s: %s: %s: %s; retrying in %.3gs (attempt %d)", self.name, key,
                        reason, message, delay, attempt)
        elif isinstance(err, Conflict):  # optimistic concurrency lost a race: routine
            log.debug("%s: %s: %s; retrying in %.3gs", self.name, key, message, delay)
        elif isinstance(err, ApiError | TimeoutError | OSError) or key in self._traced:
            log.warning("%s: reconcile %s failed (attempt %d): %s: %s; retrying in %.3gs",
                        self.name, key, attempt, type(err).__name__, message, delay)
        else:
            self._traced[key] = None
            log.error("%s: reconcile %s failed (attempt %d); retrying in %.3gs", self.name,
                      key, attempt, delay, exc_info=err)

    async def _report(self, key: str, reason: str, message: str) -> None:
        if self.reporter is None or self._reported.get(key) == (reason, message):
            return
        try:
            await self.reporter.report(key, reason, message)
        except Exception as exc:  # reported again with the next retry
            log.warning("%s: could not report %s on %s: %s", self.name, reason, key, exc)
            return
        self._reported[key] = (reason, message)

    async def _clear(self, key: str) -> None:
        if self.reporter is None:
            self._reported.pop(key, None)
            return
        try:
            await self.reporter.clear(key)
        except Exception as exc:  # cleared with the next successful reconcile
            log.warning("%s: could not clear the error reported on %s: %s", self.name, key, exc)
            return
        self._reported.pop(key, None)

    def idle(self, until: float | None = None) -> bool:
        return self.queue.idle(until)


class Manager:
    """Owns the shared informers and runs controllers on one event loop."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.informers = InformerFactory(client)
        self.controllers: list[Controller] = []
        self._started = False

    def informer(self, kind: type[Resource], namespace: str | None = None,
                 **selectors: Any) -> Informer[Any]:
        return self.informers.informer(kind, namespace, **selectors)

    def add(self, controller: Controller) -> Controller:
        if any(c.name == controller.name for c in self.controllers):
            raise ValueError(f"a controller named {controller.name!r} is already registered")
        self.controllers.append(controller)
        if self._started:
            controller.start()
        return controller

    async def start(self, sync_timeout: float | None = None) -> None:
        """Start informers, wait for their caches, then start the workers."""
        self.informers.start()
        if not await self.informers.wait_for_cache_sync(sync_timeout):
            pending = [repr(i) for i in self.informers.informers if not i.synced]
            raise TimeoutError(f"informer caches not synced after {sync_timeout}s: {pending}")
        self._started = True
        for c in self.controllers:
            c.start()

    async def stop(self) -> None:
        self._started = False
        for c in self.controllers:
            await c.stop()
        await self.informers.stop()

    async def __aenter__(self) -> Manager:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ------------------------------------------------------------------ quiescence

    def busy(self, until: float | None = None) -> list[str]:
        """What keeps the manager from being idle (empty when idle)."""
        out = [f"informer {i.kind.KIND} not watching" for i in self.informers.informers
               if i.running and not i.watching]
        out += [repr(c) for c in self.controllers if not c.idle(until)]
        return out

    async def wait_idle(self, until: float | None = None, *, timeout: float | None = None) -> None:
        """Return when every informer is watching with nothing left to deliver, every queue
        is empty, no reconcile is running and no delayed add is due at or before `until`
        (loop time; None: only what is due now counts).

        On the virtual-time loop this waits for loop quiescence (no sleeps; time advances
        only when nothing else can run). Raises TimeoutError after `timeout` loop seconds
        and RuntimeError when not idle but nothing can ever make progress.
        """
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        virtual = isinstance(loop, VirtualTimeLoop)
        after_progress = False
        while True:
            if virtual:
                stalled = await loop.quiescent(  # type: ignore[attr-defined]
                    after_progress=after_progress)
            else:  # a real loop: informers may still have events on the wire; best effort
                await asyncio.sleep(0.05)
                stalled = False
            busy = self.busy(until)
            if not busy:
                return
            if stalled:
                raise RuntimeError(f"manager is not idle and nothing can make progress: {busy}")
            if deadline is not None and loop.time() >= deadline:
                raise TimeoutError(f"manager not idle after {timeout}s: {busy}")
            after_progress = True
