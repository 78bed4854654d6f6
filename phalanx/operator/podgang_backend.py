"""PodGang backend controller (GREP-375): hands each PodGang to its scheduler backend.

- The backend is the one named by the PodGang's `grove.io/scheduler-name` label (a profile
  name or a schedulerName; the PodCliqueSet controller sets it), the default profile when
  the label is missing.
- Finalizer `grove.io/scheduler-backend` (set at creation by the PodCliqueSet controller, added
  here when missing) guarantees `on_podgang_delete` runs before the PodGang goes.
- `sync_podgang` runs whenever the PodGang's metadata.generation is one this process has not
  synced (so once per spec change, and once per PodGang after a restart: it is idempotent).
  The first success sets the PodGang condition `BackendSynced=True` (written by the PodGang
  controller with the rest of the status, podgang_sync_state.py); the PodClique controller
  lifts pod gates only after that, so the scheduler's objects exist before any pod can be
  scheduled. A backend raising `SyncPending` is retried after its hint.
- On deletion, a backend that is waiting for the gang's pods (a protected PodGroup) is not
  polled: while the pod cache still shows live pods of the gang, the PodGang is retried when
  the last of them goes (or ends), with a long fallback timer. At thousands of gangs, a
  poll every second each (several API reads per poll) kept PodGangs finalizing for minutes
  after their pods were gone.
"""

from __future__ import annotations

import logging

from phalanx.api import labels as L
from phalanx.api.core import Pod
from phalanx.api.errors import short_cause
from phalanx.api.grove import PodGang
from phalanx.backends.base import Backend, SyncPending
from phalanx.backends.registry import UnknownBackend
from phalanx.cluster.client import Conflict, NotFound
from phalanx.cluster.controller import Controller, PermanentError, Result, permanent_reason
from phalanx.cluster.objects import object_key

from .conditions import (
    BACKEND_SYNCED,
    REASON_SYNC_FAILED,
    REASON_SYNC_PENDING,
    REASON_SYNCED,
    REASON_UNKNOWN_BACKEND,
)
from .context import IDX_PODGANG, OperatorContext, requeue_on_conflict
from .podgang_sync_state import SyncVerdict

log = logging.getLogger(__name__)

# A deleting PodGang waiting for its pods is retried when they are gone; this timer only
# covers a missed event.
POD_WAIT_FALLBACK = 30.0
_ENDED = ("Succeeded", "Failed")


def _needs_backend(old: PodGang, new: PodGang) -> bool:
    om, nm = old.metadata, new.metadata
    return (om.generation != nm.generation or om.deletion_timestamp != nm.deletion_timestamp
            or om.finalizers != nm.finalizers
            or om.labels.get(L.LABEL_SCHEDULER_NAME) != nm.labels.get(L.LABEL_SCHEDULER_NAME))


class PodGangBackendController:
    def __init__(self, ctx: OperatorContext, workers: int = 4) -> None:
        self.ctx = ctx
        self.controller = Controller("podgang-backend", requeue_on_conflict(self.reconcile),
                                     workers=workers)
        self.controller.watch(ctx.gangs, predicate=_needs_backend)
        # uid -> metadata.generation last synced by this process.
        self._synced: dict[str, int] = {}
        # Keys of deleting PodGangs whose backend waits until their pods are gone.
        self._awaiting_pods: set[str] = set()
        ctx.pods.add_handler(None, self._pod_changed, self._pod_gone)
        self.syncs = 0  # sync_podgang calls that succeeded (tests, reports)

    def backend_of(self, gang: PodGang) -> Backend:
        name = gang.metadata.labels.get(L.LABEL_SCHEDULER_NAME)
        return self.ctx.registry.get_or_default(name)

    async def reconcile(self, key: str) -> Result | None:
        gang = self.ctx.gangs.get(key)
        if gang is None:
            return None
        uid = gang.metadata.uid or ""
        try:
            backend = self.backend_of(gang)
        except UnknownBackend as err:
            if gang.metadata.deletion_timestamp is not None:
                await self._drop_finalizer(gang)  # nothing we could clean up
                return None
            if await self._set_synced(gang, False, REASON_UNKNOWN_BACKEND, short_cause(err)):
                self.ctx.recorder.warning(gang, REASON_UNKNOWN_BACKEND, short_cause(err))
            return None
        if gang.metadata.deletion_timestamp is not None:
            return await self._delete(gang, backend)
        if L.FINALIZER_SCHEDULER_BACKEND not in gang.metadata.finalizers:
            updated = gang.copy_deep()
            updated.metadata.finalizers.append(L.FINALIZER_SCHEDULER_BACKEND)
            gang = await self.ctx.client.update(updated)
        generation = gang.metadata.generation or 0
        if self._synced.get(uid) != generation:
            try:
                await backend.sync_podgang(gang.copy_deep())
            except SyncPending as pending:
                await self._set_synced(gang, False, REASON_SYNC_PENDING, short_cause(pending))
                return Result(requeue_after=pending.after)
            except (Conflict, NotFound):
                raise  # plain retry: something moved under the backend
            except Exception as err:
                cause = short_cause(err)
                changed = await self._set_synced(gang, False, REASON_SYNC_FAILED,
                                                 f"{backend.name}: {cause}")
                reason = permanent_reason(err)
                if reason is not None:  # reported once by the controller, retried with backoff
                    raise PermanentError(reason, f"{backend.name}: sync_podgang failed: "
                                                 f"{cause}") from err
                if changed:
                    self.ctx.recorder.warning(gang, "BackendSyncFailed",
                                              f"{backend.name}: sync_podgang failed: {cause}")
                raise
            self._synced[uid] = generation
            self.syncs += 1
        await self._set_synced(gang, True, REASON_SYNCED,
                               f"{backend.name} scheduler objects are in place")
        return None

    async def _delete(self, gang: PodGang, backend: Backend) -> Result | None:
        if L.FINALIZER_SCHEDULER_BACKEND in gang.metadata.finalizers:
            try:
                await backend.on_podgang_delete(gang.copy_deep())
            except SyncPending as pending:
                if self._live_pods(gang.key):
                    self._awaiting_pods.add(gang.key)  # _pod_gone retries it
                    return Result(requeue_after=max(pending.after, POD_WAIT_FALLBACK))
                return Result(requeue_after=pending.after)
            await self._drop_finalizer(gang)
        self._awaiting_pods.discard(gang.key)
        self._synced.pop(gang.metadata.uid or "", None)
        self.ctx.backend_sync.forget(gang.key)
        return None

    def _live_pods(self, gang_key: str) -> bool:
        return any(p.status.phase not in _ENDED
                   for p in self.ctx.pods.by_index(IDX_PODGANG, gang_key))

    def _pod_changed(self, old: Pod, new: Pod) -> None:
        if new.status.phase in _ENDED and old.status.phase not in _ENDED:
            self._pod_gone(new)

    def _pod_gone(self, pod: Pod) -> None:
        if not self._awaiting_pods:
            return
        name = pod.metadata.labels.get(L.LABEL_PODGANG)
        key = object_key(pod.metadata.namespace, name) if name else None
        if key in self._awaiting_pods and not self._live_pods(key):
            self._awaiting_pods.discard(key)
            self.controller.queue.add(key)

    async def _drop_finalizer(self, gang: PodGang) -> None:
        kept = [f for f in gang.metadata.finalizers if f != L.FINALIZER_SCHEDULER_BACKEND]
        if kept == gang.metadata.finalizers:
            return
        patch = {"metadata": {"resourceVersion": gang.metadata.resource_version,
                              "finalizers": kept or None}}
        try:
            await self.ctx.client.patch(PodGang, gang.name, patch, gang.namespace, returning=False)
        except NotFound:
            pass

    async def _set_synced(self, gang: PodGang, ok: bool, reason: str, message: str) -> bool:
        """Report BackendSynced to the PodGang controller, which writes it with the rest of
        the PodGang's status (podgang_sync_state.py); True when it changed."""
        return self.ctx.backend_sync.report(gang.key, SyncVerdict(ok, reason, message),
                                            gang.condition(BACKEND_SYNCED))
