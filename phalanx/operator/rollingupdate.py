"""PodCliqueSet update controller: the generation hash, and which replica updates when.

Grove's rules (podcliqueset reconcilespec and podcliquesetreplica/rollingupdate.go):
- `status.currentGenerationHash` is set on first sight; when the pod templates' hash changes it
  is replaced, `updatedReplicas` drops to 0 and `updateProgress` opens (`updateStartedAt`).
  With OnDelete `updateEndedAt` is set at once: nothing is deleted, a pod deleted by hand
  comes back from the (already updated) PodClique spec.
- RollingRecreate updates one PodCliqueSet replica at a time (`currentlyUpdating`): first
  replicas with no pod scheduled, then replicas with MinAvailableBreached, then by index. The
  selected replica's standalone PodCliques and scaling groups get their own `updateProgress`
  (rollingupdate_pods.py, rollingupdate_groups.py do the replacing); the replica is done when
  every standalone PodClique and scaling group of it is current (updateprogress.py). With no
  replica left, `updateEndedAt` is set.
- Replicas scaled out during an update are created from the new template and pass through as
  already updated; a replica scaled in while selected is dropped and the next one picked.
- A replacement pod that cannot be scheduled stalls the update (nothing more is deleted);
  `UpdateStalled` and a Warning Event say which pod and why (updatestall.py).
"""

from __future__ import annotations

import logging

from phalanx.api import labels as L
from phalanx.api.base import get_condition
from phalanx.api.grove import PodClique, PodCliqueScalingGroup, PodCliqueSet
from phalanx.api.grove_extras import (
    PodCliqueScalingGroupUpdateProgress,
    PodCliqueSetReplicaUpdateProgress,
    PodCliqueSetUpdateProgress,
    PodCliqueUpdateProgress,
)
from phalanx.cluster.client import NotFound
from phalanx.cluster.controller import Controller, Result, map_from_label

from . import naming, templatehash
from .conditions import MIN_AVAILABLE_BREACHED
from .context import (
    IDX_PCS, OperatorContext, copy_status, enqueue_batched, requeue_on_conflict,
)
from .updatestall import find_stall, scheduling_changed, set_stall
from .updateprogress import (
    expected_hash, in_progress, is_auto_update, pclq_current, pcsg_current,
)

log = logging.getLogger(__name__)

REASON_UPDATE_STARTED = "UpdateStarted"
REASON_REPLICA_UPDATING = "ReplicaUpdateStarted"
REASON_REPLICA_UPDATED = "ReplicaUpdated"
REASON_UPDATE_COMPLETED = "UpdateCompleted"


def _pcs_changed(old: PodCliqueSet, new: PodCliqueSet) -> bool:
    return (old.metadata.generation != new.metadata.generation
            or old.status.current_generation_hash != new.status.current_generation_hash
            or old.status.update_progress != new.status.update_progress)


def _status_changed(old: PodClique | PodCliqueScalingGroup,
                    new: PodClique | PodCliqueScalingGroup) -> bool:
    return old.status != new.status or old.metadata.labels != new.metadata.labels


def _breached(obj: PodClique | PodCliqueScalingGroup) -> bool:
    cond = get_condition(obj.status.conditions, MIN_AVAILABLE_BREACHED)
    return cond is not None and cond.status == "True"


class ReplicaLayout:
    """The template names every replica of a PodCliqueSet has (standalone PodCliques, scaling
    groups), worked out once for a walk over the replicas, not once per replica."""

    __slots__ = ("cliques", "groups")

    def __init__(self, pcs: PodCliqueSet) -> None:
        self.cliques = tuple(c.name for c in pcs.standalone_cliques())
        self.groups = tuple(g.name for g in pcs.spec.template.pod_clique_scaling_groups or ())


class ReplicaView:
    """One PodCliqueSet replica's standalone PodCliques and scaling groups."""

    def __init__(self, pcs: PodCliqueSet, i: int, cliques: dict[str, PodClique],
                 groups: dict[str, PodCliqueScalingGroup],
                 layout: ReplicaLayout | None = None) -> None:
        layout = layout or ReplicaLayout(pcs)
        self.index = i
        self.cliques: list[PodClique] = []
        updated = 0
        for template in layout.cliques:
            c = cliques.get(naming.podclique_name(pcs.name, i, template))
            if c is not None:
                self.cliques.append(c)
                updated += pclq_current(pcs, c, template)
        self.groups = [groups[n] for n in (naming.scaling_group_name(pcs.name, i, g)
                                           for g in layout.groups) if n in groups]
        self.want_cliques = len(layout.cliques)
        self.want_groups = len(layout.groups)
        self.updated_cliques = updated
        self.updated_groups = sum(pcsg_current(pcs, g) for g in self.groups)

    @property
    def done(self) -> bool:
        return self.updated_cliques == self.want_cliques and \
            self.updated_groups == self.want_groups

    @property
    def scheduled(self) -> int:
        return sum(c.status.scheduled_replicas for c in self.cliques) + \
            sum(g.status.scheduled_replicas for g in self.groups)

    @property
    def breached(self) -> bool:
        return any(_breached(o) for o in (*self.cliques, *self.groups))

    def order(self) -> tuple[bool, bool, int]:
        """Grove's orderPCSReplicaInfo: unscheduled, then breached, then by index."""
        return (self.scheduled != 0, not self.breached, self.index)


class PodCliqueSetUpdateController:
    def __init__(self, ctx: OperatorContext, workers: int = 2) -> None:
        self.ctx = ctx
        self.controller = Controller("podcliqueset-update", requeue_on_conflict(self.reconcile),
                                     workers=workers)
        c = self.controller
        c.watch(ctx.pcs, predicate=_pcs_changed)
        by_pcs = map_from_label(L.LABEL_PART_OF)
        period = ctx.tunables.status_batch_period
        enqueue_batched(c, ctx.cliques, by_pcs, period, _status_changed)
        enqueue_batched(c, ctx.pcsgs, by_pcs, period, _status_changed)
        # A pod reported Unschedulable (or placed after all): UpdateStalled. Updates only:
        # pod creations and deletions reach us through the PodCliques' status.

        def on_pod(old: object, new: object) -> None:
            if scheduling_changed(old, new):  # type: ignore[arg-type]
                for key in by_pcs(new):
                    c.queue.add_after(key, period)

        ctx.pods.add_handler(lambda _o: None, on_pod, lambda _o: None)
        # Per PodCliqueSet: (generation hash, uids of the children whose update we opened
        # for it). A reconcile on a cache that predates that write must not open (reset) it
        # again; a new generation, or the PodCliqueSet's deletion, drops the entry.
        self._opened: dict[str, tuple[str, set[str]]] = {}

    async def reconcile(self, key: str) -> Result | None:
        ctx = self.ctx
        pcs = ctx.pcs.get(key)
        if pcs is None or pcs.metadata.deletion_timestamp is not None:
            self._opened.pop(key, None)
            return None
        if pcs.status.current_generation_hash is None:
            return None  # the status controller records the first hash; its write wakes us
        gen = templatehash.generation_hash(pcs)
        if pcs.status.current_generation_hash != gen:
            await self._new_generation(pcs, gen)
            return None  # our status write brings us back
        # Only OnDelete and an update under way read the children: this runs for every
        # child's scheduling change, and a walk of thousands of replicas each time was a
        # tenth of the operator's CPU at Grove's scale.
        auto, rolling = is_auto_update(pcs), in_progress(pcs)
        reads_children = not auto or rolling
        cliques = {c.name: c for c in ctx.cliques.by_index(IDX_PCS, key)
                   if c.metadata.deletion_timestamp is None} if reads_children else {}
        groups = {g.name: g for g in ctx.pcsgs.by_index(IDX_PCS, key)
                  if g.metadata.deletion_timestamp is None} if reads_children else {}
        # Outside an update the counts are the status controller's (podcliqueset_status.py):
        # a replica walk per child event, and a second writer of the status, cost more than
        # they tell.
        views: list[ReplicaView] = []
        if rolling:
            layout = ReplicaLayout(pcs)
            views = [ReplicaView(pcs, i, cliques, groups, layout)
                     for i in range(pcs.spec.replicas)]
        status = copy_status(pcs.status)
        if pcs.status.update_progress is not None:
            status.update_progress = pcs.status.update_progress.model_copy(deep=True)
        selected = None
        # Events go out once the status write that they report has succeeded: a reconcile on
        # a cache that predates our last write loses its write (Conflict) and says nothing.
        notes: list[tuple[str, str, str]] = []
        if not auto:
            await self._on_delete_children(pcs, cliques.values(), groups.values())
        elif rolling:
            selected = self._advance(pcs, views, status, notes)
            if selected is not None:
                await self._start_children(pcs, views[selected])
        set_stall(ctx, pcs, status, find_stall(ctx, pcs, selected, list(cliques.values())),
                  rolling=selected is not None, notes=notes)
        if views:
            self._counts(pcs, views, status)
        if status != pcs.status:
            updated = pcs.model_copy(update={"status": status})
            updated.metadata = pcs.metadata.model_copy()
            await ctx.client.update_status(updated, returning=False)
            for type_, reason, message in notes:
                (ctx.recorder.warning if type_ == "Warning" else ctx.recorder.normal)(
                    pcs, reason, message)
        return None

    async def _new_generation(self, pcs: PodCliqueSet, gen: str) -> None:
        status = copy_status(pcs.status)
        first = status.current_generation_hash is None
        status.current_generation_hash = gen
        if not first:
            now = self.ctx.client.clock.now_dt()
            status.update_progress = PodCliqueSetUpdateProgress(update_started_at=now)
            if not is_auto_update(pcs):
                status.update_progress.update_ended_at = now
            status.updated_replicas = 0
        updated = pcs.model_copy(update={"status": status})
        updated.metadata = pcs.metadata.model_copy()
        await self.ctx.client.update_status(updated, returning=False)
        if not first:
            self.ctx.recorder.normal(
                pcs, REASON_UPDATE_STARTED,
                f"pod templates changed (generation hash {gen}); updating with "
                f"{'RollingRecreate' if is_auto_update(pcs) else 'OnDelete'}")

    def _advance(self, pcs: PodCliqueSet, views: list[ReplicaView], status,  # noqa: ANN001
                 notes: list[tuple[str, str, str]]) -> int | None:
        """Move `currentlyUpdating` on; returns the replica now updating (None: finished)."""
        up = status.update_progress
        now = self.ctx.client.clock.now_dt()
        current = up.currently_updating[0] if up.currently_updating else None
        if current is not None and current.replica_index < len(views):
            view = views[current.replica_index]
            if not view.done:
                return current.replica_index
            if current.update_ended_at is None:
                current.update_ended_at = now
                notes.append(("Normal", REASON_REPLICA_UPDATED,
                              f"replica {current.replica_index} is updated"))
        pending = sorted((v for v in views if not v.done and
                          (current is None or v.index != current.replica_index)),
                         key=ReplicaView.order)
        if not pending:
            up.update_ended_at = now
            up.currently_updating = None
            notes.append(("Normal", REASON_UPDATE_COMPLETED,
                          f"all {len(views)} replicas run the new templates"))
            return None
        nxt = pending[0].index
        up.currently_updating = [PodCliqueSetReplicaUpdateProgress(
            replica_index=nxt, update_started_at=now)]
        notes.append(("Normal", REASON_REPLICA_UPDATING, f"updating replica {nxt}"))
        return nxt

    async def _start_children(self, pcs: PodCliqueSet, view: ReplicaView) -> None:
        """Open the update of the replica's standalone PodCliques and scaling groups that
        have not started one for this generation (Grove's shouldResetOrTriggerUpdate)."""
        for pclq in view.cliques:
            await self._open_clique(pcs, pclq, ended=False)
        for pcsg in view.groups:
            await self._open_group(pcs, pcsg, ended=False)

    async def _on_delete_children(self, pcs: PodCliqueSet, cliques, groups) -> None:  # noqa: ANN001
        """OnDelete: every child records the new generation as updated at once."""
        for pclq in cliques:
            await self._open_clique(pcs, pclq, ended=True)
        for pcsg in groups:
            await self._open_group(pcs, pcsg, ended=True)

    def _to_open(self, pcs: PodCliqueSet,
                 child: PodClique | PodCliqueScalingGroup) -> str | None:
        """The generation hash whose update the child has not opened yet (None: nothing
        to open: no generation, already on it, or opened by us on a cache that lags)."""
        gen = pcs.status.current_generation_hash
        up = child.status.update_progress
        if gen is None or (up is None and child.status.current_pod_clique_set_generation_hash
                           == gen) or (up is not None and up.pod_clique_set_generation_hash
                                       == gen):
            return None
        if (child.metadata.uid or "") in self._opened_for(pcs.key, gen):
            return None
        return gen

    async def _write_opened(self, pcs: PodCliqueSet, gen: str,
                            updated: PodClique | PodCliqueScalingGroup) -> None:
        try:
            await self.ctx.client.update_status(updated, returning=False)
        except NotFound:
            return
        self._opened_for(pcs.key, gen).add(updated.metadata.uid or "")

    async def _open_clique(self, pcs: PodCliqueSet, pclq: PodClique, *, ended: bool) -> None:
        gen = self._to_open(pcs, pclq)
        if gen is None:
            return
        want = expected_hash(pcs, pclq)
        if want is None:
            return
        now = self.ctx.client.clock.now_dt()
        updated = pclq.copy_deep()
        updated.status.update_progress = PodCliqueUpdateProgress(
            update_started_at=now, update_ended_at=now if ended else None,
            pod_clique_set_generation_hash=gen, pod_template_hash=want)
        updated.status.updated_replicas = 0
        await self._write_opened(pcs, gen, updated)

    async def _open_group(self, pcs: PodCliqueSet, pcsg: PodCliqueScalingGroup, *,
                          ended: bool) -> None:
        gen = self._to_open(pcs, pcsg)
        if gen is None:
            return
        now = self.ctx.client.clock.now_dt()
        updated = pcsg.copy_deep()
        updated.status.update_progress = PodCliqueScalingGroupUpdateProgress(
            update_started_at=now, update_ended_at=now if ended else None,
            pod_clique_set_generation_hash=gen,
            total_pod_cliques_count=pcsg.spec.replicas * len(pcsg.spec.clique_names))
        await self._write_opened(pcs, gen, updated)

    def _opened_for(self, pcs_key: str, gen: str) -> set[str]:
        entry = self._opened.get(pcs_key)
        if entry is None or entry[0] != gen:
            entry = self._opened[pcs_key] = (gen, set())
        return entry[1]

    @staticmethod
    def _counts(pcs: PodCliqueSet, views: list[ReplicaView], status) -> None:  # noqa: ANN001
        status.updated_replicas = sum(v.done for v in views)
        up = status.update_progress
        if up is None:
            return
        up.updated_pod_cliques_count = sum(v.updated_cliques for v in views)
        up.total_pod_cliques_count = sum(v.want_cliques for v in views)
        up.updated_pod_clique_scaling_groups_count = sum(v.updated_groups for v in views)
        up.total_pod_clique_scaling_groups_count = sum(v.want_groups for v in views)
