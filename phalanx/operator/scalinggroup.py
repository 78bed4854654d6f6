"""PodCliqueScalingGroup controller: the PodCliques of each scaling group replica, and status.

Spec flow: replica j of group `<pcs>-<i>-<group>` is one PodClique per clique name,
`<pcs>-<i>-<group>-<j>-<clique>`; replicas below minAvailable belong to the base PodGang,
the others each to their scaled PodGang `<pcs>-<i>-<group>-<j>`. A PodClique is created only
once its PodGang exists (the PodCliqueSet controller creates PodGangs first). Scaling in
deletes the highest replicas' PodCliques.

Status flow: `replicas` (group replicas whose PodCliques all exist), `scheduledReplicas` /
`availableReplicas` (every PodClique of the replica has minAvailable pods scheduled / ready),
and `MinAvailableBreached`. A replica is healthy when every PodClique has minAvailable pods
scheduled and none is breached. The group is breached (True) when fewer than minAvailable
replicas are healthy after it has once had enough of them; until then (startup, or new
PodCliques after a gang termination) it is not. A breached group makes the gang termination
controller recreate the whole PodCliqueSet replica after terminationDelay; a breached replica
of a group that still has minAvailable healthy ones is recreated on its own (see
`gangtermination.py`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from phalanx.api import labels as L
from phalanx.api.base import get_condition, set_condition
from phalanx.api.grove import (
    PodClique,
    PodCliqueScalingGroup,
    PodCliqueScalingGroupConfig,
    PodCliqueScalingGroupStatus,
    PodCliqueSet,
)
from phalanx.cluster.controller import Controller, Result, map_to_owner
from phalanx.cluster.objects import object_key

from . import builders, lifecycle_events, naming, templatehash
from .conditions import (
    GANG_TERMINATION_IN_PROGRESS,
    MIN_AVAILABLE_BREACHED,
    REASON_PCSG_INSUFFICIENT_AVAILABLE,
    REASON_PCSG_INSUFFICIENT_SCHEDULED,
    REASON_PCSG_SUFFICIENT_AVAILABLE,
    ever_scheduled,
    is_breached,
)
from .context import (
    IDX_OWNER, IDX_PCS, OperatorContext, bounded, copy_status, delete_excess, enqueue_batched,
    owner_key, raise_first_error, requeue_on_conflict,
)
from .plan import group_clique_plans
from .podcliqueset import clique_drifted, hash_drifted, owned_clique_replicas
from .rollingupdate_groups import GroupRollingUpdater, replica_current, replicas_of
from .updateprogress import expected_hash, in_progress, is_auto_update, pclq_current


def _spec_or_deletion(old: PodCliqueScalingGroup, new: PodCliqueScalingGroup) -> bool:
    return (old.metadata.generation != new.metadata.generation
            or old.metadata.deletion_timestamp != new.metadata.deletion_timestamp
            or old.status.update_progress != new.status.update_progress
            # gang termination's flag, cleared here once the group is healthy
            or _in_progress_flag(old) != _in_progress_flag(new))


def _in_progress_flag(pcsg: PodCliqueScalingGroup) -> bool:
    return any(c.type == GANG_TERMINATION_IN_PROGRESS for c in pcsg.status.conditions)


def _clique_status_changed(old: PodClique, new: PodClique) -> bool:
    return old.status != new.status or old.metadata.deletion_timestamp != \
        new.metadata.deletion_timestamp or old.metadata.generation != new.metadata.generation


class ScalingGroupController:
    def __init__(self, ctx: OperatorContext, workers: int = 2) -> None:
        self.ctx = ctx
        self.controller = Controller("podcliquescalinggroup", requeue_on_conflict(self.reconcile),
                                     workers=workers)
        c = self.controller
        c.watch(ctx.pcsgs, predicate=_spec_or_deletion)
        self.updater = GroupRollingUpdater(ctx)
        # Status follows its PodCliques; batched like every pod-driven status.
        enqueue_batched(c, ctx.cliques, map_to_owner(PodCliqueScalingGroup),
                        ctx.tunables.status_batch_period, _clique_status_changed)
        # A template change (a member clique's replicas, its pod spec) reaches the groups.
        c.watch(ctx.pcs, lambda pcs: [g.key for g in ctx.pcsgs.by_index(IDX_PCS, pcs.key)],
                predicate=lambda o, n: o.metadata.generation != n.metadata.generation)
        # A new PodGang may unblock PodCliques waiting for it: every group of that replica.
        c.watch(ctx.gangs, self._groups_of_gang, predicate=lambda o, n: False)

    def _groups_of_gang(self, gang: object) -> list[str]:
        m = gang.metadata  # type: ignore[attr-defined]
        replica = m.labels.get(L.LABEL_PODCLIQUESET_REPLICA_INDEX)
        pcs_name = m.labels.get(L.LABEL_PART_OF)
        if replica is None or pcs_name is None:
            return []
        return [g.key for g in self.ctx.pcsgs.by_index(IDX_PCS, object_key(m.namespace, pcs_name))
                if g.metadata.labels.get(L.LABEL_PODCLIQUESET_REPLICA_INDEX) == replica]

    async def reconcile(self, key: str) -> Result | None:
        ctx = self.ctx
        pcsg = ctx.pcsgs.get(key)
        if pcsg is None or pcsg.metadata.deletion_timestamp is not None:
            return None
        pcs = ctx.pcs_of(pcsg)
        replica = naming.replica_of(pcsg.metadata.labels)
        if pcs is None or replica is None or pcs.metadata.deletion_timestamp is not None:
            return None
        cfg_name = naming.group_config_name(pcsg.name, pcs.name, replica)
        cfg = next((g for g in pcs.spec.template.pod_clique_scaling_groups or ()
                    if g.name == cfg_name), None)
        if cfg is None:
            return None  # the PodCliqueSet controller deletes groups it no longer plans
        existing = {c.name: c for c in ctx.cliques.by_index(IDX_OWNER, owner_key(pcsg))}
        await self._sync_cliques(pcs, pcsg, replica, cfg, existing)
        if in_progress(pcsg) and is_auto_update(pcs):
            await self.updater.sync(pcs, pcsg, existing)
        return await self._sync_status(pcs, pcsg, existing)

    async def _sync_cliques(self, pcs: PodCliqueSet, pcsg: PodCliqueScalingGroup, replica: int,
                            cfg: PodCliqueScalingGroupConfig,
                            existing: dict[str, PodClique]) -> None:
        client = self.ctx.client
        auto_update = is_auto_update(pcs)
        planned: set[str] = set()
        jobs: list[Callable[[], Awaitable[None]]] = []

        async def create(clique: PodClique) -> None:
            if await self.ctx.creates.create(client, clique):
                lifecycle_events.child_created(self.ctx.recorder, pcsg, clique)

        async def update(updated: PodClique) -> None:
            await client.update(updated, returning=False)
            lifecycle_events.child_created(self.ctx.recorder, pcsg, updated, updated=True)

        for j in range(pcsg.spec.replicas):
            for plan in group_clique_plans(pcs, replica, cfg, j):
                planned.add(plan.name)
                want_hash = templatehash.clique_hash(pcs, plan.template.name)
                current = existing.get(plan.name)
                gang = self.ctx.gangs.get(object_key(pcs.namespace, plan.podgang))
                if current is None:
                    if gang is None or gang.metadata.deletion_timestamp is not None:
                        continue  # PodGang first; its creation event brings us back
                    clique = builders.build_podclique(pcs, plan, pcsg)
                    jobs.append(lambda clique=clique: create(clique))
                elif current.metadata.deletion_timestamp is None and \
                        clique_drifted(pcs, current, plan, owned_clique_replicas(plan, current)) \
                        and (not auto_update or not hash_drifted(current, want_hash)):
                    # RollingRecreate replaces an outdated replica's PodCliques whole (see
                    # rollingupdate_groups.py); OnDelete updates them in place, as Grove does
                    # (labels and annotations whole, as the template has them).
                    want = builders.build_podclique(pcs, plan, pcsg,
                                                    owned_clique_replicas(plan, current))
                    updated = current.copy_deep()
                    updated.spec = want.spec
                    updated.metadata.labels = want.metadata.labels
                    updated.metadata.annotations = want.metadata.annotations
                    jobs.append(lambda updated=updated: update(updated))

        # Concurrently, as Grove's RunConcurrently: a group scaled up by 100 replicas made
        # its PodCliques one at a time (~13 a second on a busy API server).
        raise_first_error(await bounded(jobs, self.ctx.tunables.write_concurrency))
        err = await delete_excess(self.ctx, pcsg, existing, planned, PodClique, newest_first=True)
        if err is not None:
            raise err

    @staticmethod
    def _update_status(pcs: PodCliqueSet, pcsg: PodCliqueScalingGroup,
                       existing: dict[str, PodClique], status: PodCliqueScalingGroupStatus
                       ) -> None:
        """`updatedReplicas` (replicas available on the new template) and, once every
        PodClique converged and no rolling update runs, `currentPodCliqueSetGenerationHash`
        (Grove's reconcilestatus)."""
        by_replica = replicas_of(pcsg, existing)
        members = [by_replica.get(j, []) for j in range(pcsg.spec.replicas)]
        status.updated_replicas = sum(replica_current(pcs, pcsg, m) for m in members)
        up = status.update_progress
        if up is not None:
            done = sum(pclq_current(pcs, c) for m in members for c in m)
            total = pcsg.spec.replicas * len(pcsg.spec.clique_names)
            if (up.updated_pod_cliques_count, up.total_pod_cliques_count) != (done, total):
                status.update_progress = up.model_copy(update={
                    "updated_pod_cliques_count": done, "total_pod_cliques_count": total})
        gen = pcs.status.current_generation_hash
        if gen is None or in_progress(pcsg):
            return
        if all(len(m) == len(pcsg.spec.clique_names) and all(
                c.metadata.labels.get(L.LABEL_POD_TEMPLATE_HASH) == expected_hash(pcs, c)
                and c.status.current_pod_template_hash == expected_hash(pcs, c)
                and c.status.current_pod_clique_set_generation_hash == gen for c in m)
               for m in members):
            status.current_pod_clique_set_generation_hash = gen

    async def _sync_status(self, pcs: PodCliqueSet, pcsg: PodCliqueScalingGroup,
                           existing: dict[str, PodClique]) -> Result | None:
        per_replica: dict[int, list[PodClique]] = {}
        for c in existing.values():
            raw = c.metadata.labels.get(L.LABEL_PODCLIQUESCALINGGROUP_REPLICA_INDEX, "")
            if raw.isdigit() and c.metadata.deletion_timestamp is None:
                per_replica.setdefault(int(raw), []).append(c)
        want_cliques = len(pcsg.spec.clique_names)
        created = scheduled = available = breached = healthy = 0
        started = False  # any current PodClique ever had minAvailable pods scheduled
        for j in range(pcsg.spec.replicas):
            members = per_replica.get(j, [])
            started = started or any(ever_scheduled(c.status.conditions) for c in members)
            if len(members) < want_cliques:
                continue
            created += 1
            placed = all(c.status.scheduled_replicas >= (c.spec.min_available or 0)
                         for c in members)
            scheduled += placed
            if all(c.status.ready_replicas >= (c.spec.min_available or 0) for c in members):
                available += 1
            if any(is_breached(c) for c in members):
                breached += 1
            elif placed:
                healthy += 1
        floor = pcsg.spec.min_available if pcsg.spec.min_available is not None else 1
        status = copy_status(pcsg.status)
        status.replicas, status.scheduled_replicas = created, scheduled
        status.available_replicas = available
        self._update_status(pcs, pcsg, existing, status)
        status.observed_generation = pcsg.metadata.generation
        status.selector = ",".join(f"{k}={v}" for k, v in sorted({
            **naming.managed_labels(pcs.name),
            L.LABEL_PODCLIQUESCALINGGROUP: pcsg.name}.items()))
        now = self.ctx.client.clock.now_dt()
        prev = get_condition(pcsg.status.conditions, MIN_AVAILABLE_BREACHED)
        # Once healthy (False/Sufficient, or already True) and still running PodCliques that
        # were scheduled: a shortfall now is a regression, not startup.
        was_healthy = started and prev is not None and (
            prev.status == "True" or prev.reason == REASON_PCSG_SUFFICIENT_AVAILABLE)
        if healthy >= floor:
            set_condition(status.conditions, MIN_AVAILABLE_BREACHED, False,
                          REASON_PCSG_SUFFICIENT_AVAILABLE,
                          f"{healthy} healthy replicas, need at least {floor}", now=now)
            # Recovered: a gang termination's flag is cleared, re-arming the next breach
            # (Grove). Not on the startup False: the recreated replicas are not up yet.
            status.conditions = [c for c in status.conditions
                                 if c.type != GANG_TERMINATION_IN_PROGRESS]
        elif was_healthy:
            set_condition(status.conditions, MIN_AVAILABLE_BREACHED, True,
                          REASON_PCSG_INSUFFICIENT_AVAILABLE,
                          f"{healthy} healthy replicas, need at least {floor} ({breached} "
                          f"breached, {created - scheduled} not scheduled)", now=now)
        else:
            set_condition(status.conditions, MIN_AVAILABLE_BREACHED, False,
                          REASON_PCSG_INSUFFICIENT_SCHEDULED,
                          f"{scheduled}/{floor} replicas scheduled (startup is not a breach)",
                          now=now)
        if status != pcsg.status:
            updated = pcsg.copy_deep()
            updated.status = status
            await self.ctx.client.update_status(updated, returning=False)
            lifecycle_events.all_scheduled_lost(self.ctx.recorder, pcsg,
                                                pcsg.status.scheduled_replicas,
                                                status.scheduled_replicas)
        return None
