"""Finalizers, deletion and ownerReference garbage collection for MemoryCluster.

Follows kube-controller-manager's garbage collector:
- an owner index (owner uid -> dependent uids) finds dependents without scanning;
- Background: the owner goes now; its dependents are collected just after (next loop turn);
- Foreground: the owner gets deletionTimestamp + the `foregroundDeletion` finalizer; its
  dependents are deleted and the owner goes once no dependent with blockOwnerDeletion is
  left (we add the finalizer only when the owner has dependents);
- Orphan: ownerReferences to the owner are removed from its dependents first;
- a dependent whose owners are all absent is deleted; one that still has a live owner only
  loses the references to absent owners. That covers objects created with a dangling uid.
Objects with finalizers are only marked (deletionTimestamp); they go when the last
finalizer is removed. GC writes count as `gc_update`/`gc_delete` in the stats.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import TYPE_CHECKING, Literal

from phalanx.api.base import Resource

from .store import KindStore

if TYPE_CHECKING:
    from .clock import Clock
    from .stats import ClusterStats

log = logging.getLogger(__name__)

FOREGROUND = "foregroundDeletion"
_ABSENT, _WAITING, _SOLID = 0, 1, 2


class GarbageCollector:
    """Mixin: the deletion half of MemoryCluster."""

    clock: Clock
    stats: ClusterStats
    if TYPE_CHECKING:
        def _commit(self, store: KindStore, key: str, obj: Resource, prev: Resource | None,
                    type_: Literal["ADDED", "MODIFIED", "DELETED"], verb: str) -> Resource: ...

    def __init__(self) -> None:
        self._uids: dict[str, tuple[KindStore, str]] = {}
        self._dependents: dict[str, dict[str, None]] = {}  # owner uid -> dependent uids
        self._gc_queue: deque[tuple[bool, str]] = deque()  # (is owner check, uid)
        self._gc_scheduled = False

    @property
    def gc_pending(self) -> int:
        """Garbage-collection work queued for the next loop turn."""
        return len(self._gc_queue)

    # ------------------------------------------------------------------ indexes

    def _track(self, store: KindStore, key: str, new: Resource, old: Resource | None) -> None:
        """Keep the uid and owner indexes current after a create or update."""
        uid = new.metadata.uid or ""
        if old is None:
            self._uids[uid] = (store, key)
        refs = new.metadata.owner_references
        old_refs = old.metadata.owner_references if old is not None else []
        if refs is not old_refs and refs != old_refs:
            new_uids = [r.uid for r in refs]
            for ref in old_refs:
                if ref.uid not in new_uids:
                    self._unlink(ref.uid, uid)
                    if self._owner_state(ref.uid) == _WAITING:
                        self._gc_enqueue(True, ref.uid)
            for owner_uid in new_uids:
                self._dependents.setdefault(owner_uid, {})[uid] = None
        if refs and any(self._owner_state(r.uid) != _SOLID for r in refs):
            self._gc_enqueue(False, uid)

    def _unlink(self, owner_uid: str, dependent_uid: str) -> None:
        deps = self._dependents.get(owner_uid)
        if deps is not None:
            deps.pop(dependent_uid, None)
            if not deps:
                del self._dependents[owner_uid]

    def _owner_state(self, uid: str) -> int:
        loc = self._uids.get(uid)
        if loc is None:
            return _ABSENT
        m = loc[0].objects[loc[1]].metadata
        return _WAITING if m.deletion_timestamp is not None and FOREGROUND in m.finalizers \
            else _SOLID

    # ------------------------------------------------------------------ deletion

    def _delete_object(self, store: KindStore, key: str, obj: Resource,
                       policy: str, verb: str) -> None:
        uid = obj.metadata.uid or ""
        if policy == "Orphan":
            self._orphan_dependents(uid)
        if obj.metadata.deletion_timestamp is not None:
            return  # already being deleted; finalizers decide when it goes
        finalizers = list(obj.metadata.finalizers)
        foreground = policy == "Foreground" and bool(self._dependents.get(uid))
        if foreground and FOREGROUND not in finalizers:
            finalizers.append(FOREGROUND)
        if not finalizers:
            self._remove(store, key, obj, verb)
            return
        marked = obj.model_copy()
        marked.metadata = obj.metadata.model_copy(update={
            "deletion_timestamp": self.clock.now_dt(),
            "deletion_grace_period_seconds": 0,
            "finalizers": finalizers,
        })
        self._commit(store, key, marked, obj, "MODIFIED", verb)
        if foreground:
            for dep_uid in list(self._dependents.get(uid, ())):
                self._gc_enqueue(False, dep_uid)
            self._gc_enqueue(True, uid)

    def _remove(self, store: KindStore, key: str, obj: Resource, verb: str) -> None:
        """Take the object out of the store (DELETED) and schedule what follows from it."""
        final = obj.model_copy()
        final.metadata = obj.metadata.model_copy()
        self._commit(store, key, final, obj, "DELETED", verb)
        uid = obj.metadata.uid or ""
        self._uids.pop(uid, None)
        for ref in obj.metadata.owner_references:
            self._unlink(ref.uid, uid)
            if self._owner_state(ref.uid) == _WAITING:
                self._gc_enqueue(True, ref.uid)
        for dep_uid in list(self._dependents.get(uid, ())):
            self._gc_enqueue(False, dep_uid)

    def _orphan_dependents(self, owner_uid: str) -> None:
        for dep_uid in list(self._dependents.pop(owner_uid, {})):
            loc = self._uids.get(dep_uid)
            if loc is None:
                continue
            store, key = loc
            dep = store.objects[key]
            refs = [r for r in dep.metadata.owner_references if r.uid != owner_uid]
            orphaned = dep.model_copy()
            orphaned.metadata = dep.metadata.model_copy(update={"owner_references": refs})
            self._commit(store, key, orphaned, dep, "MODIFIED", "gc_update")

    # ------------------------------------------------------------------ the collector

    def _gc_enqueue(self, owner_check: bool, uid: str) -> None:
        self._gc_queue.append((owner_check, uid))
        if not self._gc_scheduled:
            self._gc_scheduled = True
            try:
                asyncio.get_running_loop().call_soon(self._gc_run)
            except RuntimeError:  # no loop (sync use): collect now
                self._gc_run()

    def _gc_run(self) -> None:
        queue = self._gc_queue
        try:
            while queue:
                owner_check, uid = queue.popleft()
                try:
                    if owner_check:
                        self._finish_foreground(uid)
                    else:
                        self._collect(uid)
                except Exception:  # a GC bug must not stop the collector
                    log.exception("garbage collection of uid %s failed", uid)
        finally:
            self._gc_scheduled = False

    def _collect(self, uid: str) -> None:
        """Delete a dependent whose owners are all gone (or waiting for it)."""
        loc = self._uids.get(uid)
        if loc is None:
            return
        store, key = loc
        dep = store.objects[key]
        if dep.metadata.deletion_timestamp is not None:
            return
        refs = dep.metadata.owner_references
        states = [self._owner_state(r.uid) for r in refs]
        if not refs or all(s == _SOLID for s in states):
            return
        solid = [r for r, s in zip(refs, states) if s == _SOLID]
        if solid:  # still owned: only drop the references to absent/waiting owners
            new = dep.model_copy()
            new.metadata = dep.metadata.model_copy(update={"owner_references": solid})
            self._commit(store, key, new, dep, "MODIFIED", "gc_update")
            self._track(store, key, new, dep)
            return
        waiting = _WAITING in states
        policy = "Foreground" if waiting and self._dependents.get(uid) else "Background"
        self._delete_object(store, key, dep, policy, "gc_delete")

    def _finish_foreground(self, owner_uid: str) -> None:
        """Remove `foregroundDeletion` once no blocking dependent is left."""
        if self._owner_state(owner_uid) != _WAITING:
            return
        for dep_uid in self._dependents.get(owner_uid, {}):
            store, key = self._uids[dep_uid]
            for ref in store.objects[key].metadata.owner_references:
                if ref.uid == owner_uid and ref.block_owner_deletion:
                    return
        store, key = self._uids[owner_uid]
        owner = store.objects[key]
        finalizers = [f for f in owner.metadata.finalizers if f != FOREGROUND]
        if not finalizers:
            self._remove(store, key, owner, "gc_delete")
            return
        new = owner.model_copy()
        new.metadata = owner.metadata.model_copy(update={"finalizers": finalizers})
        self._commit(store, key, new, owner, "MODIFIED", "gc_update")
