"""Gang termination: a PodCliqueSet replica that stays broken is recreated as a whole.

When a standalone PodClique or a PodCliqueScalingGroup of replica i has had
`MinAvailableBreached=True` for longer than the PodCliqueSet's terminationDelay (a scaling
group's own terminationDelay when it sets one), every PodClique and PodGang of replica i is
deleted; the PodCliqueSet controller then recreates the replica from scratch (a new PodGang,
new gated pods), so the scheduler places the whole gang again instead of patching one pod
into a half-dead gang. Until then the controller requeues itself for the moment the earliest
breach would expire.

A replica with a PodClique missing is skipped (it is being created or recreated), so a
termination fires once per breach, not in a loop.
"""

from __future__ import annotations

import logging
from datetime import datetime

from phalanx.api import labels as L
from phalanx.api.duration import parse_duration
from phalanx.api.grove import PodClique, PodCliqueScalingGroup, PodCliqueSet, PodGang
from phalanx.cluster.client import NotFound
from phalanx.cluster.controller import Controller, Result, map_from_label

from . import naming
from .conditions import MIN_AVAILABLE_BREACHED, breached_since
from .context import IDX_PCS, OperatorContext, bounded, first_error, requeue_on_conflict

log = logging.getLogger(__name__)

DEFAULT_DELAY = 4 * 3600.0


def _breach_changed(old: PodClique | PodCliqueScalingGroup,
                    new: PodClique | PodCliqueScalingGroup) -> bool:
    return (breached_since(old.status.conditions) != breached_since(new.status.conditions)
            or old.metadata.deletion_timestamp != new.metadata.deletion_timestamp)


class GangTerminationController:
    def __init__(self, ctx: OperatorContext, workers: int = 1) -> None:
        self.ctx = ctx
        self.controller = Controller("gang-termination", requeue_on_conflict(self.reconcile),
                                     workers=workers)
        c = self.controller
        c.watch(ctx.pcs, predicate=lambda o, n: o.metadata.generation != n.metadata.generation)
        by_pcs = map_from_label(L.LABEL_PART_OF)
        c.watch(ctx.cliques, by_pcs, predicate=_breach_changed)
        c.watch(ctx.pcsgs, by_pcs, predicate=_breach_changed)
        self.terminations = 0  # replicas recreated (tests, reports)
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
        group_delays = {
            cfg.name: parse_duration(cfg.termination_delay)
            for cfg in pcs.spec.template.pod_clique_scaling_groups or () if cfg.termination_delay
        }
        now = ctx.client.clock.now()
        cliques = ctx.cliques.by_index(IDX_PCS, key)
        groups = ctx.pcsgs.by_index(IDX_PCS, key)
        standalone = {c.name for c in pcs.standalone_cliques()}
        wait: float | None = None
        doomed: list[tuple[int, str]] = []
        for i in range(pcs.spec.replicas):
            base = ctx.gangs.get(f"{pcs.namespace}/{naming.base_podgang_name(pcs.name, i)}")
            want = {naming.podclique_name(pcs.name, i, n) for n in standalone}
            mine = [c for c in cliques if c.name in want and c.metadata.deletion_timestamp is None]
            if base is None or base.metadata.deletion_timestamp is not None or \
                    len(mine) < len(want):
                continue  # being (re)created
            fired = self._terminated_at.get((key, i))
            candidates: list[tuple[str, datetime | None, float]] = [
                (c.name, breached_since(c.status.conditions), delay) for c in mine]
            for g in groups:
                if naming.replica_of(g.metadata.labels) == i and \
                        g.metadata.deletion_timestamp is None:
                    cfg_name = naming.group_config_name(g.name, pcs.name, i)
                    candidates.append((g.name, breached_since(g.status.conditions),
                                       group_delays.get(cfg_name, delay)))
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
        return Result(requeue_after=wait) if wait is not None else None

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
        err = first_error(await bounded(jobs, ctx.tunables.write_concurrency))
        if err is not None:
            raise err
        self._terminated_at[(pcs.key, i)] = ctx.client.clock.now()
        self.terminations += 1
