"""Pods the PodClique controller created that its cache has not shown yet.

A reconcile that runs between a pod's create and the pod's ADDED event in the informer
would see the pod missing and create it again: the API server answers 409 AlreadyExists
(names are fixed, so nothing is duplicated), but each such attempt is a wasted write, and
on a real server they are common (the PodGang and PodClique events that follow a burst of
creates requeue the clique within the watch's latency). client-go's ReplicaSet controller
keeps "expectations" for this; this is the same idea keyed by pod: a created pod is
expected until the informer delivers it (added, or deleted before we saw it) or `ttl`
seconds pass (client-go's 5 minutes), after which it may be created again.
"""

from __future__ import annotations

from collections.abc import Callable


class CreateExpectations:
    def __init__(self, now: Callable[[], float], ttl: float = 300.0) -> None:
        self._now = now
        self.ttl = ttl
        self._expected: dict[str, float] = {}  # pod key -> deadline

    def expect(self, key: str) -> None:
        self._expected[key] = self._now() + self.ttl

    def observed(self, key: str) -> None:
        self._expected.pop(key, None)

    def pending(self, key: str) -> bool:
        deadline = self._expected.get(key)
        if deadline is None:
            return False
        if self._now() >= deadline:
            del self._expected[key]
            return False
        return True

    def __len__(self) -> int:
        return len(self._expected)
