"""Informers of kinds the API server does not serve yet: started once it does.

A scheduler started before Grove's (or KAI's, Volcano's) CRDs are installed must not wait
for ever on an informer whose list answers 404, nor read those kinds never again: it would
hold their pods as "gang not found" until restarted, while `kubectl get podgang` shows the
gang. Such an informer is created at once (handlers attach as to any other) but is not
started, not waited for at sync and not counted by readiness until discovery says its kind
is served. Discovery is asked again every `recheck_seconds`, as kube-controller-manager's
garbage collector re-reads discovery to pick up CRDs installed after it started.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)

RECHECK_SECONDS = 10.0

Served = Callable[[], Awaitable[bool]]


class DeferredInformers:
    def __init__(self, recheck_seconds: float = RECHECK_SECONDS) -> None:
        self.recheck_seconds = recheck_seconds
        self._waiting: dict[tuple[Any, ...], tuple[Any, Served]] = {}
        self._task: asyncio.Task[None] | None = None
        self._on_served: Callable[[tuple[Any, ...], Any], None] | None = None
        self._listeners: dict[tuple[Any, ...], list[Callable[[], None]]] = {}

    def add(self, key: tuple[Any, ...], informer: Any, served: Served) -> None:
        self._waiting[key] = (informer, served)

    def on_served(self, key: tuple[Any, ...], fn: Callable[[], None]) -> None:
        """Call `fn()` once the deferred informer of `key` has been handed on."""
        self._listeners.setdefault(key, []).append(fn)

    def get(self, key: tuple[Any, ...]) -> Any:
        entry = self._waiting.get(key)
        return None if entry is None else entry[0]

    def start(self, on_served: Callable[[tuple[Any, ...], Any], None]) -> None:
        """Ask discovery every `recheck_seconds`; `on_served(key, informer)` for each kind
        once it is served (then it is no longer deferred)."""
        self._on_served = on_served
        if self._waiting and (self._task is None or self._task.done()):
            self._task = asyncio.get_running_loop().create_task(
                self._recheck(), name="deferred-informers")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _recheck(self) -> None:
        while self._waiting:
            await asyncio.sleep(self.recheck_seconds)
            for key, (informer, served) in list(self._waiting.items()):
                try:
                    ok = await served()
                except Exception as err:  # noqa: BLE001 - discovery failed: ask again later
                    log.debug("discovery of %s failed: %s", informer.kind.KIND, err)
                    continue
                if ok and key in self._waiting:
                    del self._waiting[key]
                    log.info("%s %s is served now: reading it", informer.kind.API_VERSION,
                             informer.kind.KIND)
                    assert self._on_served is not None
                    self._on_served(key, informer)
                    for fn in self._listeners.pop(key, ()):
                        fn()
