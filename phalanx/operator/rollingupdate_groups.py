"""RollingRecreate of a scaling group (Grove's PodCliqueScalingGroup rolling update).

A scaling group replica is replaced whole: its PodCliques are deleted and the scaling group
controller recreates them from the new template (pods, PodGang membership and all), so a
replica's new pods are placed as one gang. While the group's `status.updateProgress` is open:
1. outdated replicas that are not scheduled or not available are deleted at once;
2. then one available outdated replica at a time, lowest index first, only while the group has
   minAvailable available replicas; the next waits until the selected replica's new
   PodCliques are current (new hash, minAvailable pods updated and Ready);
3. with none left, `updateEndedAt` is set.
"""

from __future__ import annotations

from phalanx.api import labels as L
from phalanx.api.grove import PodClique, PodCliqueScalingGroup, PodCliqueSet
from phalanx.api.grove_extras import PodCliqueScalingGroupReplicaUpdateProgress
from phalanx.cluster.client import NotFound

from .context import OperatorContext, bounded, raise_first_error
from .updateprogress import expected_hash, pclq_current, pclq_min_available

REASON_UPDATING_REPLICA = "RollingUpdateReplica"
REASON_UPDATE_DONE = "RollingUpdateCompleted"


def replicas_of(pcsg: PodCliqueScalingGroup, cliques: dict[str, PodClique]
                ) -> dict[int, list[PodClique]]:
    out: dict[int, list[PodClique]] = {}
    for c in cliques.values():
        raw = c.metadata.labels.get(L.LABEL_PODCLIQUESCALINGGROUP_REPLICA_INDEX, "")
        if raw.isdigit() and c.metadata.deletion_timestamp is None:
            out.setdefault(int(raw), []).append(c)
    return out


def replica_updated(pcs: PodCliqueSet, members: list[PodClique]) -> bool:
    """Every PodClique of the replica carries the template's hash (Grove's isReplicaUpdated)."""
    return all(c.metadata.labels.get(L.LABEL_POD_TEMPLATE_HASH) == expected_hash(pcs, c)
               for c in members)


def replica_current(pcs: PodCliqueSet, pcsg: PodCliqueScalingGroup,
                    members: list[PodClique]) -> bool:
    return len(members) == len(pcsg.spec.clique_names) and \
        all(pclq_current(pcs, c) for c in members)


def _state(members: list[PodClique]) -> str:
    for c in members:
        if c.status.scheduled_replicas < pclq_min_available(c):
            return "pending"
        if c.status.ready_replicas < pclq_min_available(c):
            return "unavailable"
    return "ready"


def available_replicas(pcsg: PodCliqueScalingGroup, by_replica: dict[int, list[PodClique]]
                       ) -> int:
    """Grove's `status.availableReplicas`, counted from the PodCliques at hand: the cached
    status may predate the replacement replica becoming Ready, and a status write of the
    group does not requeue it."""
    want = len(pcsg.spec.clique_names)
    return sum(len(m) == want and _state(m) == "ready"
               for j, m in by_replica.items() if j < pcsg.spec.replicas)


class GroupRollingUpdater:
    def __init__(self, ctx: OperatorContext) -> None:
        self.ctx = ctx
        self._selected: dict[str, int] = {}  # scaling group uid -> replica last selected

    async def sync(self, pcs: PodCliqueSet, pcsg: PodCliqueScalingGroup,
                   cliques: dict[str, PodClique]) -> None:
        uid = pcsg.metadata.uid or ""
        up = pcsg.status.update_progress
        if up is None or up.update_ended_at is not None:
            self._selected.pop(uid, None)
            return
        sel = up.ready_replica_indices_selected_to_update
        mine = self._selected.get(uid)
        if mine is not None and (sel is None or sel.current != mine):
            return  # our own status write is not in the cache yet
        by_replica = replicas_of(pcsg, cliques)
        doomed: list[int] = []
        ready: list[int] = []
        for j in range(pcsg.spec.replicas):
            members = by_replica.get(j, [])
            if not members or (sel is not None and sel.current == j):
                continue
            if replica_updated(pcs, members):
                continue
            (ready if _state(members) == "ready" else doomed).append(j)
        if doomed:
            await self._delete_replicas(pcs, pcsg, doomed, by_replica)
        if sel is not None and not replica_current(pcs, pcsg, by_replica.get(sel.current, [])):
            return
        if ready:
            floor = pcsg.spec.min_available if pcsg.spec.min_available is not None else 1
            if available_replicas(pcsg, by_replica) < floor:
                return  # never take the group below minAvailable available replicas
            j = ready[0]
            updated = pcsg.copy_deep()
            u = updated.status.update_progress
            assert u is not None
            if u.ready_replica_indices_selected_to_update is None:
                u.ready_replica_indices_selected_to_update = \
                    PodCliqueScalingGroupReplicaUpdateProgress(current=j)
            else:
                s = u.ready_replica_indices_selected_to_update
                s.completed = [*(s.completed or ()), s.current]
                s.current = j
            await self.ctx.client.update_status(updated, returning=False)
            self._selected[uid] = j
            self.ctx.recorder.normal(pcsg, REASON_UPDATING_REPLICA,
                                     f"recreating replica {j} with the new template")
            await self._delete_replicas(pcs, pcsg, [j], by_replica)
            return
        if doomed:
            return
        updated = pcsg.copy_deep()
        u = updated.status.update_progress
        assert u is not None
        u.update_ended_at = self.ctx.client.clock.now_dt()
        u.ready_replica_indices_selected_to_update = None
        await self.ctx.client.update_status(updated, returning=False)
        self._selected.pop(uid, None)
        self.ctx.recorder.normal(pcsg, REASON_UPDATE_DONE,
                                 "every replica runs the new template")

    async def _delete_replicas(self, pcs: PodCliqueSet, pcsg: PodCliqueScalingGroup,
                               replicas: list[int], by_replica: dict[int, list[PodClique]]
                               ) -> None:
        names = sorted(c.name for j in replicas for c in by_replica.get(j, []))

        # Foreground: the PodClique shows a deletionTimestamp (the PodClique controller then
        # creates nothing for it) before the garbage collector deletes its pods. With
        # Background it vanished at once, and a pod deletion seen before the PodClique's own
        # deletion had the PodClique controller recreate the pod for the old PodClique, whose
        # owner reference the garbage collector then deleted: a replacement recreated twice
        # (5 of 500 pods, `phalanx bench rollout --real --replicas 50`). Grove's PodClique
        # finalizer gives the same order.
        async def delete(name: str) -> None:
            try:
                await self.ctx.client.delete(PodClique, name, pcs.namespace,
                                             propagation_policy="Foreground")
            except NotFound:
                pass

        raise_first_error(await bounded([lambda n=n: delete(n) for n in names],
                                        self.ctx.tunables.write_concurrency))
