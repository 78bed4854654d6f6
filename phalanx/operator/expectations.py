"""Pod creates and deletes the PodClique controller made that its cache has not shown yet
(Grove's ExpectationsStore, operator/internal/expect/expectations.go).

Pods have generated names, so a create is not idempotent: a reconcile that ran between a
pod's create and its ADDED event would see the pod missing and create a second one. As in
Grove, each PodClique (the "controllee", keyed here by its uid so that a recreated PodClique
starts clean) records the uids it created and deleted; the controller counts

    pods in the cache + creates expected - replicas - deletes expected

to decide how many pods to create or delete, and `sync` settles expectations against the
cache at each reconcile: a created uid the cache shows is no longer expected, and a deleted
uid is expected until the cache stops showing it. A pod's delete event lowers both (Grove
#457: a pod deleted before its ADDED event was seen must not stay expected forever).

Beyond Grove: each expected create also remembers the pod's index, so pods created while
earlier ones are still in flight never take the same index, and an expected create lapses
after `ttl` seconds (client-go's 5 minutes) if the cache never shows it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field


@dataclass
class _Expectations:
    to_add: dict[str, tuple[int, float]] = field(default_factory=dict)  # uid -> (index, deadline)
    to_delete: set[str] = field(default_factory=set)


class ExpectationsStore:
    def __init__(self, now: Callable[[], float], ttl: float = 300.0) -> None:
        self._now = now
        self.ttl = ttl
        self._by_key: dict[str, _Expectations] = {}

    def _get(self, key: str) -> _Expectations:
        return self._by_key.setdefault(key, _Expectations())

    def expect_creation(self, key: str, uid: str, index: int) -> None:
        self._get(key).to_add[uid] = (index, self._now() + self.ttl)

    def expect_deletion(self, key: str, uid: str) -> None:
        exp = self._get(key)
        exp.to_add.pop(uid, None)
        exp.to_delete.add(uid)

    def observe_deletion(self, key: str, uid: str) -> None:
        exp = self._by_key.get(key)
        if exp is not None:
            exp.to_add.pop(uid, None)
            exp.to_delete.discard(uid)

    def sync(self, key: str, non_terminating: Iterable[str], terminating: Iterable[str]) -> None:
        """Settle against the cache: uids it shows are created; a delete is expected while
        the cache shows the pod terminating, and done once it shows the pod no more."""
        exp = self._by_key.get(key)
        if exp is None:
            return
        live = set(non_terminating)
        dying = set(terminating)
        now = self._now()
        for uid in [u for u, (_, deadline) in exp.to_add.items()
                    if u in live or u in dying or now >= deadline]:
            del exp.to_add[uid]
        exp.to_delete &= live | dying
        exp.to_delete |= dying

    def creates(self, key: str) -> dict[str, int]:
        """Expected creates: uid -> the pod's index."""
        exp = self._by_key.get(key)
        return {u: i for u, (i, _) in exp.to_add.items()} if exp else {}

    def deletes(self, key: str) -> set[str]:
        exp = self._by_key.get(key)
        return set(exp.to_delete) if exp else set()

    def has_delete(self, key: str, uid: str) -> bool:
        exp = self._by_key.get(key)
        return exp is not None and uid in exp.to_delete

    def forget(self, key: str) -> None:
        """The controllee is gone (Grove's DeleteExpectations)."""
        self._by_key.pop(key, None)

    def __len__(self) -> int:
        return sum(len(e.to_add) + len(e.to_delete) for e in self._by_key.values())
