"""RollingRecreate of a standalone PodClique's pods (Grove's podclique rolling update).

Runs while the PodClique's `status.updateProgress` is open (the PodCliqueSet update controller
opens it when the clique's PodCliqueSet replica is selected):
1. outdated pods that are not Ready (pending, starting, failed) are deleted at once: they
   serve nothing;
2. then one outdated Ready pod at a time, oldest first, only while the clique has minAvailable
   Ready pods; the next one waits until the pod selected before it is gone and as many
   updated pods are Ready as pods were selected (`readyPodsSelectedToUpdate`). Beyond Grove,
   that count is waited for only while a replacement is on its way (an updated pod not yet
   Ready, or fewer pods than replicas): a scale-in during the update removes a not-yet-Ready
   replacement first (Grove's deletion order), and the count could then never be reached;
3. with no outdated pod left, `updateEndedAt` is set.
The PodClique controller recreates each deleted pod from the PodClique's (already updated)
spec, carrying the new `grove.io/pod-template-hash`. Nothing waits on a timer: pod readiness,
pod deletion and status events requeue the PodClique.
"""

from __future__ import annotations

from collections.abc import Callable

from phalanx.api import labels as L
from phalanx.api.core import Pod
from phalanx.api.grove import PodClique
from phalanx.api.grove_extras import PodsSelectedToUpdate
from phalanx.cluster.client import NotFound

from .context import OperatorContext, bounded, raise_first_error
from .updateprogress import pclq_min_available

REASON_UPDATING_POD = "RollingUpdatePod"
REASON_UPDATE_DONE = "RollingUpdateCompleted"


def pod_serving(pod: Pod) -> bool:
    return pod.status.phase == "Running" and pod.is_ready


def _created(pod: Pod) -> float:
    ts = pod.metadata.creation_timestamp
    return ts.timestamp() if ts is not None else 0.0


class PodRollingUpdater:
    """One per PodClique controller. It remembers the pod it last selected per PodClique, so
    a reconcile whose cached PodClique predates that status write waits for it instead of
    selecting a second pod (watches of pods and PodCliques are not ordered on a real server)."""

    def __init__(self, ctx: OperatorContext,
                 on_deleted: Callable[[PodClique, Pod], None] | None = None) -> None:
        self.ctx = ctx
        self.on_deleted = on_deleted  # the PodClique controller's delete expectations
        self._selected: dict[str, str] = {}  # PodClique uid -> pod name last selected

    async def sync(self, pclq: PodClique, pods: dict[str, Pod]) -> None:
        uid = pclq.metadata.uid or ""
        up = pclq.status.update_progress
        if up is None or up.update_ended_at is not None:
            self._selected.pop(uid, None)
            return
        mine = self._selected.get(uid)
        current = up.ready_pods_selected_to_update.current \
            if up.ready_pods_selected_to_update else None
        if mine is not None and mine != current:
            return  # our own status write is not in the cache yet
        selected = await process_pending_updates(self.ctx, pclq, pods, self.on_deleted)
        if selected is not None:
            self._selected[uid] = selected


async def process_pending_updates(
        ctx: OperatorContext, pclq: PodClique, pods: dict[str, Pod],
        on_deleted: Callable[[PodClique, Pod], None] | None = None) -> str | None:
    """One step of the update; returns the name of a pod newly selected for replacement."""
    up = pclq.status.update_progress
    if up is None or up.update_ended_at is not None:
        return None
    target = up.pod_template_hash
    if pclq.metadata.labels.get(L.LABEL_POD_TEMPLATE_HASH) != target:
        return None  # the new template is not on the PodClique yet; its spec update requeues
    old_ready: list[Pod] = []
    old_other: list[Pod] = []
    new_ready = 0
    new_starting = 0  # updated pods not yet serving: a replacement on its way
    old_names = set()  # outdated pods not yet being deleted
    for pod in pods.values():
        if pod.metadata.deletion_timestamp is not None:
            continue
        if pod.metadata.labels.get(L.LABEL_POD_TEMPLATE_HASH) != target:
            old_names.add(pod.name)
            (old_ready if pod_serving(pod) else old_other).append(pod)
        elif pod_serving(pod):
            new_ready += 1
        else:
            new_starting += 1
    if old_other:
        await _delete(ctx, pclq, old_other, on_deleted)
    selected = up.ready_pods_selected_to_update
    if selected is not None and selected.current:
        done = len(selected.completed or ()) + 1
        live = len(old_names) + new_ready + new_starting
        in_flight = new_starting > 0 or bool(old_other) or live < pclq.spec.replicas
        if selected.current in old_names or (new_ready < done and in_flight):
            return None  # the replacement of the selected pod is not Ready yet
    if old_ready:
        if pclq.status.ready_replicas < pclq_min_available(pclq):
            return None  # never take the clique below minAvailable Ready pods
        nxt = min(old_ready, key=lambda p: (_created(p), p.name))
        await _select(ctx, pclq, nxt.name)
        ctx.recorder.normal(pclq, REASON_UPDATING_POD,
                            f"replacing pod {nxt.name} with the new template ({target})")
        await _delete(ctx, pclq, [nxt], on_deleted)
        return nxt.name
    if old_other:
        return None  # their replacements come; the update ends when no outdated pod is left
    await _mark_end(ctx, pclq)
    return None


async def _select(ctx: OperatorContext, pclq: PodClique, name: str) -> None:
    updated = pclq.copy_deep()
    up = updated.status.update_progress
    assert up is not None
    prev = up.ready_pods_selected_to_update
    if prev is None:
        up.ready_pods_selected_to_update = PodsSelectedToUpdate(current=name)
    else:
        prev.completed = [*(prev.completed or ()), prev.current] if prev.current else \
            prev.completed
        prev.current = name
    await ctx.client.update_status(updated, returning=False)


async def _mark_end(ctx: OperatorContext, pclq: PodClique) -> None:
    updated = pclq.copy_deep()
    up = updated.status.update_progress
    assert up is not None
    up.update_ended_at = ctx.client.clock.now_dt()
    up.ready_pods_selected_to_update = None
    await ctx.client.update_status(updated, returning=False)
    ctx.recorder.normal(pclq, REASON_UPDATE_DONE,
                        f"every pod runs the new template ({up.pod_template_hash})")


async def _delete(ctx: OperatorContext, pclq: PodClique, pods: list[Pod],
                  on_deleted: Callable[[PodClique, Pod], None] | None) -> None:
    async def delete(pod: Pod) -> None:
        try:
            await ctx.client.delete(Pod, pod.name, pod.namespace, uid=pod.metadata.uid)
        except NotFound:
            return
        if on_deleted is not None:
            on_deleted(pclq, pod)

    raise_first_error(await bounded([lambda p=p: delete(p) for p in pods],
                                    ctx.tunables.write_concurrency))
