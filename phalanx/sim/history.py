"""Every object's versions through the run, so `phalanx get --at T` answers for any time T.

`ObjectHistory` follows every served kind (but Events, recorded apart, and Leases, which
only tick) through `Client.watch` and keeps a reference to each new version: watch objects
are immutable, so nothing is copied while the run goes on; they become dicts once, in
`changes()`. Versions of one object less than `window` seconds apart are folded into the
latest, so a pod's creation, gate removal and binding in the same instant are one change,
and `--at` is exact to within that window.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from phalanx.api import registry
from phalanx.api.base import Resource
from phalanx.api.core import Event, Lease
from phalanx.cluster.client import Client, Gone

from .record import ObjectChange


def kind_label(cls: type[Resource], kinds: list[type[Resource]]) -> str:
    """The name a kind is stored under: its KIND, qualified by API group when several
    served kinds share it (`PodGroup.scheduling.run.ai`)."""
    if sum(1 for k in kinds if k.KIND == cls.KIND) > 1:
        return f"{cls.KIND}.{cls.API_VERSION.rpartition('/')[0]}"
    return cls.KIND


def history_kinds() -> list[type[Resource]]:
    return [k for k in registry.kinds(served_only=True) if k not in (Event, Lease)]


class ObjectHistory:
    """Start before the workload is created; `changes()` after `stop()`."""

    def __init__(self, client: Client, window: float = 1.0) -> None:
        self.client = client
        self.window = window
        # (t, kind label, key, object or None when deleted), in order of arrival.
        self._entries: list[list[Any]] = []
        self._last: dict[tuple[str, str], tuple[int, float]] = {}  # -> (entry index, first t)
        self._tasks: list[asyncio.Task[None]] = []
        self._t0 = 0.0

    def _now(self) -> float:
        return self.client.clock.monotonic() - self._t0

    async def start(self) -> None:
        self._t0 = self.client.clock.monotonic()
        kinds = history_kinds()
        for cls in kinds:
            label = kind_label(cls, kinds)
            self._tasks.append(asyncio.create_task(self._follow(cls, label),
                                                   name=f"history-{label}"))
        await asyncio.sleep(0)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()

    async def _follow(self, cls: type[Resource], label: str) -> None:
        rv = "0"
        while True:
            try:
                async for ev in self.client.watch(cls, resource_version=rv):
                    rv = ev.object.metadata.resource_version or rv
                    if ev.type != "BOOKMARK":
                        self._note(label, ev.object, deleted=ev.type == "DELETED")
            except Gone:
                listed = await self.client.list(cls)
                for obj in listed.items:
                    self._note(label, obj, deleted=False)
                rv = listed.resource_version
            await asyncio.sleep(0)

    def _note(self, label: str, obj: Resource, *, deleted: bool) -> None:
        t = self._now()
        key = (label, obj.key)
        value = None if deleted else obj
        last = self._last.get(key)
        if last is not None and t - last[1] < self.window:
            entry = self._entries[last[0]]
            entry[0], entry[3] = t, value
            return
        self._last[key] = (len(self._entries), t)
        self._entries.append([t, label, obj.key, value])

    def changes(self) -> list[ObjectChange]:
        out = [ObjectChange(t=t, kind=label, key=key,
                            object=obj.to_dict() if obj is not None else None)
               for t, label, key, obj in self._entries]
        out.sort(key=lambda c: c.t)  # stable: arrival order within an instant
        return out
