"""ClusterTopologyBinding controller: each topology-aware backend's topology object, and the
binding's status, as Grove's clustertopology controller does.

For every enabled backend that keeps a topology object of its own (`sync_cluster_topology`:
KAI's Topology), in name order:
- the binding has no `schedulerTopologyBindings` entry for it: the operator creates and
  updates that object from the levels (named after the binding, owned by it, so deleting the
  binding removes it through garbage collection);
- it has one: the named object is the admin's; the operator only compares it with the
  levels (drift).
Each gives a `status.schedulerTopologyStatuses` entry (in sync, or why not). An entry naming
a backend that is not enabled, or keeps no topology object, is reported too. The condition
`SchedulerTopologyDrift` sums them up: False/InSync, True/Drift, or Unknown/TopologyNotFound
(a named backend is unavailable); an Event marks each change between True and False.
`observedGeneration` moves only when every backend synced.

A legacy ClusterTopology gets the same backend objects (no status: it has none), unless a
ClusterTopologyBinding of the same name exists, which wins.

Runs only with topology-aware scheduling on.
"""

from __future__ import annotations

import logging
from typing import Any

from phalanx.api.base import get_condition, set_condition
from phalanx.api.grove import ClusterTopology, ClusterTopologyBinding
from phalanx.api.grove_topology import (
    EVENT_DRIFT_DETECTED,
    EVENT_IN_SYNC,
    REASON_DRIFT,
    REASON_IN_SYNC,
    REASON_TOPOLOGY_NOT_FOUND,
    SCHEDULER_TOPOLOGY_DRIFT,
    ClusterTopologyBindingStatus,
    SchedulerTopologyStatus,
)
from phalanx.backends.topology import check_topology_drift, topology_kind
from phalanx.cluster.client import NotFound
from phalanx.cluster.controller import Controller, Result

from .context import OperatorContext, requeue_on_conflict
from .errors import short_cause

log = logging.getLogger(__name__)

_KINDS = {k.KIND: k for k in (ClusterTopologyBinding, ClusterTopology)}


def _key(obj: Any) -> list[str]:
    return [f"{obj.KIND}/{obj.name}"]


class ClusterTopologyController:
    def __init__(self, ctx: OperatorContext) -> None:
        self.ctx = ctx
        self.controller = Controller("clustertopology", requeue_on_conflict(self.reconcile))
        if ctx.topologies is not None:
            ctx.topologies.watch(
                self.controller, _key,
                predicate=lambda old, new: old.metadata.generation != new.metadata.generation)

    async def attach(self, client: Any) -> None:
        """Also watch each topology-aware backend's own topology kind, where the server
        serves it: a change to such an object requeues the binding that owns or names it
        (drift shows without waiting for the binding to change)."""
        if self.ctx.topologies is None:
            return
        serves = getattr(client, "serves", None)
        for backend in self._topology_backends():
            kind = topology_kind(backend)
            if kind is None or (serves is not None and not await serves(kind)):
                continue
            self.controller.watch(self.ctx.manager.informer(kind), self._bindings_of(backend.name))

    def _bindings_of(self, backend: str) -> Any:
        def mapper(obj: Any) -> list[str]:
            for ref in obj.metadata.owner_references:
                if ref.kind in _KINDS and ref.api_version == ClusterTopologyBinding.API_VERSION:
                    return [f"{ref.kind}/{ref.name}"]
            inf = self.ctx.topologies.informer(ClusterTopologyBinding) if self.ctx.topologies \
                else None
            return [f"{ct.KIND}/{ct.name}" for ct in (inf.list() if inf is not None else ())
                    if (b := ct.spec.binding_for(backend)) is not None
                    and b.topology_reference == obj.name]

        return mapper

    def _topology_backends(self) -> list[Any]:
        """Enabled backends that keep a topology object of their own, by name."""
        found = [b for b in self.ctx.registry.enabled()
                 if getattr(b, "sync_cluster_topology", None) is not None]
        return sorted(found, key=lambda b: b.name)

    async def reconcile(self, key: str) -> Result | None:
        topologies = self.ctx.topologies
        kind_name, _, name = key.partition("/")
        kind = _KINDS.get(kind_name)
        inf = topologies.informer(kind) if topologies is not None and kind else None
        ct = inf.get(name) if inf is not None else None
        if ct is None or ct.metadata.deletion_timestamp is not None:
            return None
        if kind is ClusterTopology:
            binding = topologies.informer(ClusterTopologyBinding) if topologies else None
            if binding is not None and binding.get(name) is not None:
                return None  # the ClusterTopologyBinding of this name wins
            for backend in self._topology_backends():
                await backend.sync_cluster_topology(ct.copy_deep())
            return None
        return await self._reconcile_binding(ct)

    async def _reconcile_binding(self, ct: ClusterTopologyBinding) -> Result | None:
        statuses: list[SchedulerTopologyStatus] = []
        failures: list[str] = []
        backends = self._topology_backends()
        for backend in backends:
            ref = ct.spec.binding_for(backend.name)
            if ref is None:
                entry = SchedulerTopologyStatus(scheduler_name=backend.name,
                                                topology_reference=ct.name, in_sync=True)
                try:
                    await backend.sync_cluster_topology(ct.copy_deep())
                except Exception as err:  # reported in the status, retried with backoff
                    entry.in_sync, entry.message = False, short_cause(err)
                    failures.append(f"{backend.name}: {entry.message}")
            else:
                try:
                    in_sync, message, generation = await check_topology_drift(
                        self.ctx.client, backend, ct, ref.topology_reference)
                except Exception as err:  # reported in the status, retried with backoff
                    in_sync, message, generation = False, short_cause(err), 0
                    failures.append(f"{backend.name}: {message}")
                entry = SchedulerTopologyStatus(
                    scheduler_name=backend.name, topology_reference=ref.topology_reference,
                    in_sync=in_sync, message=message or None,
                    scheduler_backend_topology_observed_generation=generation or None)
            statuses.append(entry)
        served = {b.name for b in backends}
        unavailable = False
        for ref in ct.spec.scheduler_topology_bindings or ():
            if ref.scheduler_name not in served:
                unavailable = True
                statuses.append(SchedulerTopologyStatus(
                    scheduler_name=ref.scheduler_name, topology_reference=ref.topology_reference,
                    in_sync=False, message=f"scheduler backend {ref.scheduler_name!r} is not "
                                           "available for topology management"))
        await self._write_status(ct, statuses, unavailable, synced=not failures)
        if failures:
            log.warning("ClusterTopologyBinding %s: %s", ct.name, "; ".join(failures))
            return Result(requeue=True)
        return None

    async def _write_status(self, ct: ClusterTopologyBinding,
                            statuses: list[SchedulerTopologyStatus], unavailable: bool,
                            synced: bool) -> None:
        status = ct.status.model_copy(deep=True) if ct.status else ClusterTopologyBindingStatus()
        if synced:
            status.observed_generation = ct.metadata.generation
        status.scheduler_topology_statuses = statuses or None
        before = get_condition(status.conditions, SCHEDULER_TOPOLOGY_DRIFT)
        was = before.status if before is not None else None
        now = self.ctx.client.clock.now_dt()
        gen = ct.metadata.generation
        if not statuses:
            status.conditions = [c for c in status.conditions
                                 if c.type != SCHEDULER_TOPOLOGY_DRIFT]
        elif unavailable:
            set_condition(status.conditions, SCHEDULER_TOPOLOGY_DRIFT, "Unknown",
                          REASON_TOPOLOGY_NOT_FOUND, "One or more referenced scheduler backends "
                          "are unavailable for topology management", now, gen)
        elif all(s.in_sync for s in statuses):
            set_condition(status.conditions, SCHEDULER_TOPOLOGY_DRIFT, False, REASON_IN_SYNC,
                          "All scheduler backend topologies are in sync", now, gen)
        else:
            set_condition(status.conditions, SCHEDULER_TOPOLOGY_DRIFT, True, REASON_DRIFT,
                          "One or more scheduler backend topologies have drifted", now, gen)
        after = get_condition(status.conditions, SCHEDULER_TOPOLOGY_DRIFT)
        if after is not None and after.status != was:
            if after.status == "True":
                self.ctx.recorder.warning(ct, EVENT_DRIFT_DETECTED, after.message)
            elif after.status == "False":
                self.ctx.recorder.normal(ct, EVENT_IN_SYNC, after.message)
        if status == ct.status:
            return
        updated = ct.model_copy(update={"status": status})
        updated.metadata = ct.metadata.model_copy()
        try:
            await self.ctx.client.update_status(updated, returning=False)
        except NotFound:
            pass
