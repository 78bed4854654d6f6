"""InformerFactory: one shared informer per kind, namespace and selectors (client-go's
SharedInformerFactory), started together, and the deferred ones of kinds the server does not
serve yet (deferred_informers.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from phalanx.api.base import Resource

from .client import Client, Selector
from .deferred_informers import DeferredInformers, Served
from .informer import Informer

T = TypeVar("T", bound=Resource)


class InformerFactory:
    """One informer per (kind, namespace, selectors), shared by every controller."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self._informers: dict[tuple[Any, ...], Informer[Any]] = {}
        self._deferred = DeferredInformers()
        self._started = False

    def informer(
        self,
        kind: type[T],
        namespace: str | None = None,
        *,
        label_selector: Selector = None,
        field_selector: Selector = None,
    ) -> Informer[T]:
        key = (kind, namespace, _selector_key(label_selector), _selector_key(field_selector))
        inf = self._informers.get(key)
        if inf is None:
            inf = self._deferred.get(key)  # not served yet: stays deferred
        if inf is None:
            inf = Informer(self.client, kind, namespace, label_selector=label_selector,
                           field_selector=field_selector)
            self._informers[key] = inf
            if self._started:
                inf.start()
        return inf

    def informer_when_served(self, kind: type[T], served: Served,
                             on_served: Callable[[], None] | None = None) -> Informer[T]:
        """The cluster-wide informer of a kind the server does not serve yet (its CRD is
        not installed): handlers attach now; it starts, and counts for sync and readiness,
        once `served()` says so (asked again every few seconds: deferred_informers.py), and
        then `on_served()` is called. An informer of the kind that already exists is
        returned as it is."""
        key = (kind, None, None, None)
        inf = self._informers.get(key)
        if inf is None:
            inf = self._deferred.get(key)
        if inf is None:
            inf = Informer(self.client, kind)
            self._deferred.add(key, inf, served)
            if self._started:
                self._deferred.start(self._served)
        if on_served is not None:
            if key in self._informers:
                on_served()
            else:
                self._deferred.on_served(key, on_served)
        return inf

    def informer_if_served(self, kind: type[T], served: bool,
                           serves: Callable[[type[T]], Awaitable[bool]] | None,
                           on_served: Callable[[], None] | None = None) -> Informer[T] | None:
        """`kind`'s cluster-wide informer where the server serves it (`served`: discovery's
        answer at start); else, given `serves` to ask again, the deferred one that starts
        once it is (`informer_when_served`); else None (the kind is not read)."""
        if served:
            return self.informer(kind)
        if serves is None:
            return None
        return self.informer_when_served(kind, lambda: serves(kind), on_served)

    def _served(self, key: tuple[Any, ...], inf: Informer[Any]) -> None:
        self._informers[key] = inf
        if self._started:
            inf.start()

    @property
    def informers(self) -> list[Informer[Any]]:
        """The informers started (or to start with the factory); deferred ones once served."""
        return list(self._informers.values())

    def start(self) -> None:
        """Start every informer (and, from now on, each one as it is created)."""
        self._started = True
        for inf in self._informers.values():
            inf.start()
        self._deferred.start(self._served)

    async def wait_for_cache_sync(self, timeout: float | None = None) -> bool:
        """True once every informer has synced; False if `timeout` (loop seconds) passed."""
        waits = [inf.has_synced() for inf in self._informers.values()]
        try:
            await asyncio.wait_for(asyncio.gather(*waits), timeout)
        except TimeoutError:
            return False
        return True

    async def stop(self) -> None:
        self._started = False
        await self._deferred.stop()
        for inf in self._informers.values():
            await inf.stop()


def _selector_key(sel: Selector) -> Any:
    if sel is None or isinstance(sel, str):
        return sel
    return tuple(sorted(sel.items()))
