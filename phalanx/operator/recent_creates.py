"""Objects the operator created lately, so that a stale view does not create them twice.

A controller creates what its cache says is missing. A reconcile that runs before the
informer delivers the create's ADDED event, or that works from a snapshot taken before it
(its earlier writes yield to the event loop), sees the object still missing; a second create
can only be refused (409 AlreadyExists). On a real API server that happened to 33 Services
and 8 PodCliques of Grove's ScaleTest_1000 (500 replicas). The controllers skip the create of
an object created here in the last `ttl` seconds unless its DELETED event came since. Past
that the create is tried again: the server still refuses a duplicate, so a late or lost
event costs one refused write, never a missing object.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from phalanx.api.base import Resource
from phalanx.cluster.client import AlreadyExists, Client
from phalanx.cluster.informer import Informer

TTL_SECONDS = 30.0


class RecentCreates:
    def __init__(self, now: Callable[[], float], ttl: float = TTL_SECONDS) -> None:
        self._now = now
        self.ttl = ttl
        self._at: dict[tuple[type, str], float] = {}  # (kind, key) -> when created

    def __len__(self) -> int:
        return len(self._at)

    def watch(self, informer: Informer[Any]) -> None:
        """An object of the informer's kind seen deleted may be created again at once."""
        informer.add_handler(on_delete=self._deleted)

    def _deleted(self, obj: Resource) -> None:
        self._at.pop((type(obj), obj.key), None)

    def pending(self, obj: Resource) -> bool:
        """Created here less than `ttl` ago, and not seen deleted since."""
        self._expire()
        return (type(obj), obj.key) in self._at

    def _expire(self) -> None:
        # Oldest first (insertion order): stop at the first entry still inside the TTL.
        cutoff = self._now() - self.ttl
        while self._at:
            key, at = next(iter(self._at.items()))
            if at > cutoff:
                return
            del self._at[key]

    async def create(self, client: Client, obj: Resource) -> bool:
        """Create `obj` unless it was created here lately; True when it was created now,
        False when it was lately or already existed (then it counts as lately too). `obj`
        is built for this create alone and only read afterwards: it is handed over (an
        in-process server keeps it rather than a copy)."""
        if self.pending(obj):
            return False
        key = (type(obj), obj.key)
        self._at[key] = self._now()  # before the request: a concurrent reconcile skips it too
        try:
            await client.create(obj, returning=False, hand_over=True)
        except AlreadyExists:
            return False
        except BaseException:
            self._at.pop(key, None)
            raise
        return True
