"""Gang termination: a gang that stays broken is recreated as a whole (Grove's two levels).

PodCliqueSet replica: when a standalone PodClique or a PodCliqueScalingGroup of replica i has
had `MinAvailableBreached=True` for longer than the PodCliqueSet's terminationDelay (Grove's
one delay, for every level), every PodClique and PodGang of replica i is
deleted; the PodCliqueSet controller then recreates the replica from scratch (a new PodGang,
new gated pods), so the scheduler places the whole gang again instead of patching one pod
into a half-dead gang.

Scaling group replica: when a PodClique of replica j of a scaling group has been breached
that long but the group still has minAvailable other replicas (so the group itself is not
breached), only replica j's PodCliques are deleted, and the scaling group controller
recreates them. When too many replicas are breached the group's own condition turns True and
the PodCliqueSet level takes over.

Until a breach expires the controller requeues itself for the moment the earliest one would.
A replica with a PodClique missing is skipped (it is being created or recreated), and new
PodCliques start unbreached (`conditions.py`), so a termination fires once per breach, not in
a loop. As in Grove, a PodCliqueSet-replica termination also sets `GangTerminationInProgress`
on every scaling group of the replica; a group carrying it does not fire the PodCliqueSet
level again until its status clears it on recovery (scalinggroup.py), which holds across an
operator restart too.
"""

from __future__ import annotations

import logging
from datetime import datetime

from phalanx.api import labels as L
from phalanx.api.base import get_condition, set_condition
from phalanx.api.grove import PodClique, PodCliqueScalingGroup, PodCliqueSet, PodGang
from phalanx.cluster.client import NotFound
from phalanx.cluster.controller import Controller, Result, map_from_label
from phalanx.cluster.objects import object_key
from phalanx.cluster.retry import update_with_retry

from . import naming
from .conditions import (
    GANG_TERMINATION_IN_PROGRESS,
    MIN_AVAILABLE_BREACHED,
    REASON_GANG_TERMINATION_ACTIVE,
    breached_since,
)
from .updateprogress import in_progress, pcs_rolling
from .context import IDX_PCS, OperatorContext, bounded, raise_first_error, requeue_on_conflict

log = logging.getLogger(__name__)

DEFAULT_DELAY = 4 * 3600.0
# PodCliques and scaling groups with MinAvailableBreached=True, by their PodCliqueSet.
IDX_BREACHED = "gang-termination/breached"


def _breached_pcs(obj: PodClique | PodCliqueScalingGroup) -> str | None:
    if breached_since(obj.status.conditions) is None:
        return None
    pcs = obj.metadata.labels.get(L.LABEL_PART_OF)
    return object_key(obj.metadata.namespace, pcs) if pcs else None


def _breach_changed(old: PodClique | PodCliqueScalingGroup,
                    new: PodClique | PodCliqueScalingGroup) -> bool:
    return (breached_since(old.status.conditions) != breached_since(new.status.conditions)
            or old.metadata.deletion_timestamp != new.metadata.deletion_timestamp
            or in_progress(old) != in_progress(new))


class GangTerminationController:
    def __init__(self, ctx: OperatorContext, workers: int = 1) -> None:
        self.ctx = ctx
        self.controller = Controller("gang-termination", requeue_on_conflict(self.reconcile),
                                     workers=workers)
        c = self.controller
        c.watch(ctx.pcs, predicate=lambda o, n: o.metadata.generation != n.metadata.generation
                or pcs_rolling(o) != pcs_rolling(n))
        by_pcs = map_from_label(L.LABEL_PART_OF)
        c.watch(ctx.cliques, by_pcs, predicate=_breach_changed)
        c.watch(ctx.pcsgs, by_pcs, predicate=_breach_changed)
        ctx.cliques.add_index(IDX_BREACHED, _breached_pcs)
        ctx.pcsgs.add_index(IDX_BREACHED, _breached_pcs)
        self.terminations = 0  # PodCliqueSet replicas recreated (tests, reports)
        self.group_terminations = 0  # scaling group replicas recreated
        # (pcs key, replica) -> when we last terminated it: breaches that started before are
        # stale status of the old incarnation, not a new breach.
        self._terminated_at: dict[tuple[str, int], float] = {}

    async def reconcile(self, key: str) -> Result | None:
        ctx = self.ctx
        pcs = ctx.pcs.get(key)
        if pcs is None or pcs.metadata.deletion_timestamp is not None:
            return None
        delay = pcs.termination_delay_seconds()
        delay = DEFAULT_DELAY if delay is None else delay
        now = ctx.client.clock.now()
        # Only breached PodCliques and scaling groups can be terminated or bring the next look
        # forward: the index holds them, so a healthy replica costs nothing here (a walk over
        # every replica on each breach change was quadratic in the replicas: at Grove's
        # 2,500-replica scale test, a fifth of the operator's CPU went to this and the status).
        breached_cliques = ctx.cliques.by_index(IDX_BREACHED, key)
        breached_groups = ctx.pcsgs.by_index(IDX_BREACHED, key)
        wait: float | None = None
        doomed: list[tuple[int, str]] = []
        # A planned update takes pods down on purpose: no replica is gang-terminated while a
        # RollingRecreate runs (Grove), nor a scaling group replica while its group updates.
        rolling = pcs_rolling(pcs)
        replicas: set[int] = set()
        for obj in (*breached_cliques, *breached_groups):
            if isinstance(obj, PodClique) and L.LABEL_PODCLIQUESCALINGGROUP in obj.metadata.labels:
                continue  # a scaling group's PodClique: the group level below
            i = naming.replica_of(obj.metadata.labels)
            if i is not None and i < pcs.spec.replicas and not rolling:
                replicas.add(i)
        groups_of: dict[int | None, list[PodCliqueScalingGroup]] = {}
        if replicas:
            for g in ctx.pcsgs.by_index(IDX_PCS, key):
                groups_of.setdefault(naming.replica_of(g.metadata.labels), []).append(g)
        standalone = [c.name for c in pcs.standalone_cliques()]
        for i in sorted(replicas):
            base = ctx.gangs.get(f"{pcs.namespace}/{naming.base_podgang_name(pcs.name, i)}")
            mine = [c for n in standalone
                    if (c := ctx.cliques.get(object_key(
                        pcs.namespace, naming.podclique_name(pcs.name, i, n)))) is not None
                    and c.metadata.deletion_timestamp is None]
            if base is None or base.metadata.deletion_timestamp is not None or \
                    len(mine) < len(standalone):
                continue  # being (re)created
            fired = self._terminated_at.get((key, i))
            candidates: list[tuple[str, datetime | None, float]] = [
                (c.name, breached_since(c.status.conditions), delay) for c in mine]
            for g in groups_of.get(i, ()):
                if g.metadata.deletion_timestamp is None and not termination_in_progress(g):
                    candidates.append((g.name, breached_since(g.status.conditions), delay))
            for name, since, limit in candidates:
                if since is None or (fired is not None and since.timestamp() <= fired):
                    continue
                left = limit - (now - since.timestamp())
                if left <= 0:
                    doomed.append((i, name))
                    break
                wait = left if wait is None else min(wait, left)
        for i, culprit in doomed:
            await self._terminate(pcs, i, culprit, delay)
        gone = {i for i, _ in doomed}
        # Scaling group replicas: only groups with a breached PodClique have anything to do.
        owners = {c.metadata.labels.get(L.LABEL_PODCLIQUESCALINGGROUP) for c in breached_cliques}
        owners.discard(None)
        if owners:
            # Each such group's PodCliques, sorted out once (not a walk over all per group).
            by_group: dict[str, list[PodClique]] = {}
            for c in ctx.cliques.by_index(IDX_PCS, key):
                owner = c.metadata.labels.get(L.LABEL_PODCLIQUESCALINGGROUP)
                if owner in owners:
                    by_group.setdefault(owner, []).append(c)
            for g in ctx.pcsgs.by_index(IDX_PCS, key):
                i = naming.replica_of(g.metadata.labels)
                if g.name not in owners or i is None or i in gone or i >= pcs.spec.replicas or \
                        g.metadata.deletion_timestamp is not None or in_progress(g):
                    continue
                left = await self._sync_group(pcs, g, by_group.get(g.name, []), delay, now)
                if left is not None:
                    wait = left if wait is None else min(wait, left)
        return Result(requeue_after=wait) if wait is not None else None

    async def _sync_group(self, pcs: PodCliqueSet, group: PodCliqueScalingGroup,
                          cliques: list[PodClique], limit: float, now: float) -> float | None:
        """Recreate the group's replicas breached longer than `limit` while the group keeps
        minAvailable others; returns the seconds until the next breach would expire."""
        if breached_since(group.status.conditions) is not None:
            return None  # the group itself is breached: the PodCliqueSet level acts
        since_by_replica: dict[int, float] = {}
        for c in cliques:
            if c.metadata.labels.get(L.LABEL_PODCLIQUESCALINGGROUP) != group.name or \
                    c.metadata.deletion_timestamp is not None:
                continue
            raw = c.metadata.labels.get(L.LABEL_PODCLIQUESCALINGGROUP_REPLICA_INDEX, "")
            since = breached_since(c.status.conditions)
            if raw.isdigit() and since is not None:
                j = int(raw)
                since_by_replica[j] = min(since_by_replica.get(j, since.timestamp()),
                                          since.timestamp())
        if not since_by_replica:
            return None
        floor = group.spec.min_available if group.spec.min_available is not None else 1
        if group.spec.replicas - len(since_by_replica) < floor:
            return None  # the group's status turns breached; the PodCliqueSet level acts
        wait: float | None = None
        for j, since in sorted(since_by_replica.items()):
            left = limit - (now - since)
            if left > 0:
                wait = left if wait is None else min(wait, left)
                continue
            await self._terminate_group_replica(pcs, group, j, cliques, limit)
        return wait

    async def _terminate_group_replica(self, pcs: PodCliqueSet, group: PodCliqueScalingGroup,
                                       j: int, cliques: list[PodClique], delay: float) -> None:
        ctx = self.ctx
        doomed = sorted(c.name for c in cliques
                        if c.metadata.labels.get(L.LABEL_PODCLIQUESCALINGGROUP) == group.name
                        and c.metadata.labels.get(L.LABEL_PODCLIQUESCALINGGROUP_REPLICA_INDEX)
                        == str(j) and c.metadata.deletion_timestamp is None)
        log.warning("%s: %s replica %d stayed below minAvailable longer than %.0fs; recreating "
                    "it", pcs.key, group.name, j, delay)
        ctx.recorder.warning(
            group, "GangTerminated",
            f"replica {j}: a PodClique stayed below minAvailable for longer than the "
            f"termination delay ({delay:g}s); deleting its {len(doomed)} PodCliques to "
            "recreate the replica (the other replicas keep running)")

        async def delete(name: str) -> None:
            try:
                await ctx.client.delete(PodClique, name, pcs.namespace)
            except NotFound:
                pass

        raise_first_error(await bounded([lambda n=n: delete(n) for n in doomed],
                                        ctx.tunables.write_concurrency))
        self.group_terminations += 1

    async def _terminate(self, pcs: PodCliqueSet, i: int, culprit: str, delay: float) -> None:
        ctx = self.ctx
        replica = str(i)
        cliques = [c.name for c in ctx.cliques.by_index(IDX_PCS, pcs.key)
                   if c.metadata.labels.get(L.LABEL_PODCLIQUESET_REPLICA_INDEX) == replica]
        gangs = [g.name for g in ctx.gangs.by_index(IDX_PCS, pcs.key)
                 if g.metadata.labels.get(L.LABEL_PODCLIQUESET_REPLICA_INDEX) == replica]
        log.warning("%s: replica %d: %s has %s longer than %.0fs; recreating the replica",
                    pcs.key, i, culprit, MIN_AVAILABLE_BREACHED, delay)
        ctx.recorder.warning(
            pcs, "GangTerminated",
            f"replica {i}: {culprit} stayed below minAvailable for longer than the termination "
            f"delay ({delay:g}s); deleting its {len(cliques)} PodCliques and {len(gangs)} "
            "PodGangs to recreate the replica")

        async def delete(kind: type, name: str) -> None:
            try:
                await ctx.client.delete(kind, name, pcs.namespace)
            except NotFound:
                pass

        jobs = [lambda n=n: delete(PodClique, n) for n in sorted(cliques)]
        jobs += [lambda n=n: delete(PodGang, n) for n in sorted(gangs)]
        raise_first_error(await bounded(jobs, ctx.tunables.write_concurrency))
        self._terminated_at[(pcs.key, i)] = ctx.client.clock.now()
        self.terminations += 1
        # Action first, flag second (Grove): a crash in between fires once more, no worse.
        groups = [g.name for g in ctx.pcsgs.by_index(IDX_PCS, pcs.key)
                  if g.metadata.labels.get(L.LABEL_PODCLIQUESET_REPLICA_INDEX) == replica]
        raise_first_error(await bounded(
            [lambda n=n: self._mark_in_progress(pcs.namespace, n, i) for n in sorted(groups)],
            ctx.tunables.write_concurrency))

    async def _mark_in_progress(self, namespace: str | None, name: str, replica: int) -> None:
        """GangTerminationInProgress=True on a scaling group, on a fresh read (its status
        controller writes the same conditions), retried on Conflict."""
        client = self.ctx.client

        def mark(group: PodCliqueScalingGroup) -> bool:
            if termination_in_progress(group):
                return False
            set_condition(group.status.conditions, GANG_TERMINATION_IN_PROGRESS, True,
                          REASON_GANG_TERMINATION_ACTIVE,
                          f"gang termination of PodCliqueSet replica {replica} deleted this "
                          "scaling group's PodCliques; they are being recreated",
                          now=client.clock.now_dt())
            return True

        try:
            await update_with_retry(client, PodCliqueScalingGroup, name, namespace, mark,
                                    status=True)
        except NotFound:
            pass  # deleted meanwhile: nothing left to hold back


def termination_in_progress(group: PodCliqueScalingGroup) -> bool:
    cond = get_condition(group.status.conditions, GANG_TERMINATION_IN_PROGRESS)
    return cond is not None and cond.status == "True"
