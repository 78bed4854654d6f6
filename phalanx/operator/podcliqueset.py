"""PodCliqueSet controller, spec flow: PodGangs, standalone PodCliques and scaling groups.

For each replica i, in this order:
1. the PodGangs (base, then scaled), created with empty pod references and, right after,
   status `Initialized=False` (reason PodGangPodsCreationPending) -- GREP-375's "PodGang first";
2. the standalone PodCliques `<pcs>-<i>-<clique>`, each only once its PodGang exists and is
   not being deleted (a gang-terminated replica waits for its old PodGang to go);
3. the PodCliqueScalingGroups `<pcs>-<i>-<group>` (their controller makes their PodCliques).
Then whatever the spec no longer asks for (replicas scaled in, scaled PodGangs above a
group's replicas) is deleted; owner references garbage-collect the rest, including on
PodCliqueSet deletion (the delete flow has nothing else to do).

Replicas: a PodCliqueScalingGroup owns its replicas once created, as in Grove (it is the
scale target of an HPA or `kubectl scale`, with or without `scaleConfig`); only a change of
the template's value resets them (`naming.ANNOTATION_TEMPLATE_REPLICAS` records the value last
applied). PodCliques likewise (standalone or in a group; the same annotation): a direct
scale sticks until the template's value changes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from phalanx.api import labels as L
from phalanx.api.grove import (
    PodClique,
    PodCliqueScalingGroup,
    PodCliqueScalingGroupConfig,
    PodCliqueSet,
    PodGang,
)
from phalanx.cluster.controller import Controller, PermanentError, Result, map_from_label

from . import builders, lifecycle_events, naming
from .admission import check_all, default_podcliqueset
from .context import (
    IDX_OWNER, IDX_PCS, OperatorContext, bounded, delete_excess, first_error, owner_key,
    raise_first_error, requeue_on_conflict,
)
from .plan import (
    CliquePlan,
    DomainKey,
    GangPlan,
    GroupReplicas,
    min_available,
    replica_gangs,
    template_replicas,
    uses_topology,
)


# The PodCliqueSet fails admission's checks (reported when no webhook ran them).
REASON_INVALID_SPEC = "InvalidSpec"


def _spec_or_deletion(old: PodCliqueSet, new: PodCliqueSet) -> bool:
    """A spec change or deletion; or new labels or annotations, which the PodGangs mirror
    (Grove mirrors them at its next spec reconcile; here at once)."""
    om, nm = old.metadata, new.metadata
    return (om.generation != nm.generation or om.deletion_timestamp != nm.deletion_timestamp
            or om.labels != nm.labels or om.annotations != nm.annotations)


def _child_changed(old: object, new: object) -> bool:
    """Children matter to the spec flow when they appear, go, start deleting, or their
    spec changes (a scaling group's replicas decide the scaled PodGangs)."""
    om, nm = old.metadata, new.metadata  # type: ignore[attr-defined]
    return om.deletion_timestamp != nm.deletion_timestamp or om.generation != nm.generation


def _gang_changed(old: PodGang, new: PodGang) -> bool:
    """As _child_changed, but a PodGang whose spec changed only in its pod references (the
    PodClique controller fills them in, one write per gang and clique) plans nothing new:
    at thousands of replicas, a reconcile of the whole PodCliqueSet for each was a fifth of
    the operator's CPU."""
    om, nm = old.metadata, new.metadata
    if om.deletion_timestamp != nm.deletion_timestamp:
        return True
    return om.generation != nm.generation and \
        _without_references(old) != _without_references(new)


def _without_references(gang: PodGang) -> list[dict[str, Any]]:
    groups = [g.model_dump(exclude={"pod_references"}) for g in gang.spec.pod_groups]
    return [gang.spec.model_dump(exclude={"pod_groups"}), *groups]


def _replica_inputs(pcs: PodCliqueSet, scheduler: str, key_of: DomainKey | None,
                    topology_name: str | None, *children: dict[str, Any]
                    ) -> Callable[[int], tuple[Any, ...]]:
    """What a replica's sync reads: the spec generation, the labels and annotations (mirrored
    onto the PodGangs; a scaling group takes grove.io/mnnvl-group), the backend and
    topology, and the replica's children as (kind, name, resourceVersion, deleting). Equal
    inputs give the same plan and the same writes (none, after a successful sync)."""
    by_replica: dict[int | None, list[tuple[str, str, str | None, bool]]] = {}
    for objs in children:
        for o in objs.values():
            m = o.metadata
            by_replica.setdefault(naming.replica_of(m.labels), []).append(
                (o.KIND, o.name, m.resource_version, m.deletion_timestamp is not None))
    binding = getattr(key_of, "__self__", None)  # the ClusterTopologyBinding key_of reads
    topology = (topology_name, key_of is None,
                None if binding is None else (binding.metadata.uid, binding.metadata.resource_version))
    meta = (tuple(pcs.metadata.labels.items()), tuple(pcs.metadata.annotations.items()))
    base = (pcs.metadata.uid, pcs.metadata.generation, meta, scheduler, topology)
    return lambda i: (base, tuple(sorted(by_replica.get(i, ()))))


def owned_group_replicas(cfg: PodCliqueScalingGroupConfig,
                         existing: PodCliqueScalingGroup | None) -> int:
    """A scaling group's replicas: the object's, unless the template value changed since it
    was last applied (or there is no object yet)."""
    want = template_replicas(cfg)
    if existing is None:
        return want
    applied = existing.metadata.annotations.get(naming.ANNOTATION_TEMPLATE_REPLICAS, str(want))
    return want if applied != str(want) else existing.spec.replicas


def owned_clique_replicas(plan: CliquePlan, existing: PodClique) -> int:
    """A PodClique's replicas: the object's (`kubectl scale`, an HPA), unless the template
    value changed since it was last applied (Grove keeps a direct scale)."""
    want = plan.template.spec.replicas
    applied = existing.metadata.annotations.get(naming.ANNOTATION_TEMPLATE_REPLICAS, str(want))
    return want if applied != str(want) else existing.spec.replicas


def clique_drifted(pcs: PodCliqueSet, existing: PodClique, plan: CliquePlan,
                   replicas: int) -> bool:
    """Whether a PodClique's spec, labels or annotations differ from the plan (compared in
    place: building a fresh PodClique per check would copy a pod template each time). Labels
    and annotations compare whole, so a key removed from the template goes (Grove's)."""
    spec, want = existing.spec, plan.template.spec
    want_min = want.min_available if want.min_available is not None else want.replicas
    m = existing.metadata
    return (spec.replicas != replicas or spec.min_available != want_min
            or _pod_spec_drifted(pcs, spec.pod_spec, want.pod_spec)
            or (spec.starts_after or []) != [n for n, _ in plan.starts_after]
            or spec.auto_scaling_config != want.auto_scaling_config
            or spec.role_name != want.role_name
            or m.labels != builders.podclique_labels(pcs, plan)
            or m.annotations != builders.podclique_annotations(plan))


def _pod_spec_drifted(pcs: PodCliqueSet, have: Any, template: Any) -> bool:
    """The PodClique's pod spec against its template's, with the PodCliqueSet's
    priorityClassName in it as build_podclique puts it there."""
    want_class = template.priority_class_name
    if want_class is None:
        want_class = pcs.spec.template.priority_class_name or None
    if have.priority_class_name != want_class:
        return True
    if want_class == template.priority_class_name:
        return have != template
    return have.model_copy(update={"priority_class_name": template.priority_class_name}) \
        != template


def hash_drifted(existing: PodClique, want_hash: str | None) -> bool:
    """Whether the PodClique's pod template hash label differs from the template's."""
    return want_hash is not None and \
        existing.metadata.labels.get(L.LABEL_POD_TEMPLATE_HASH) != want_hash


class PodCliqueSetController:
    def __init__(self, ctx: OperatorContext, workers: int = 2) -> None:
        self.ctx = ctx
        self._topology_warned: dict[str, int] = {}
        # key -> ((uid, generation), errors) of admission's checks
        self._checked: dict[str, tuple[tuple[str, int], str]] = {}
        # (key, replica) -> (inputs, planned PodGang, PodClique and scaling group names) of
        # its last successful sync: a replica whose inputs are unchanged is not planned and
        # synced again (each child's event reconciles the whole PodCliqueSet; at 500
        # replicas that walk was most of the operator's CPU).
        # Kept per PodCliqueSet key, so a reconcile touches only its own replicas' entries.
        self._replica_synced: dict[str, dict[int, tuple[Any, set[str], set[str], set[str]]]] = {}
        self.controller = Controller("podcliqueset", requeue_on_conflict(self.reconcile),
                                     workers=workers)
        c = self.controller
        c.watch(ctx.pcs, predicate=_spec_or_deletion)
        by_pcs = map_from_label(L.LABEL_PART_OF)
        for inf in (ctx.cliques, ctx.pcsgs):
            c.watch(inf, by_pcs, predicate=_child_changed)
        c.watch(ctx.gangs, by_pcs, predicate=_gang_changed)
        if ctx.topologies is not None:  # topology keys come from the ClusterTopologyBinding
            ctx.topologies.watch(c, lambda _: ctx.pcs.keys())

    async def reconcile(self, key: str) -> Result | None:
        ctx = self.ctx
        pcs = ctx.pcs.get(key)
        if pcs is None or pcs.metadata.deletion_timestamp is not None:
            self._checked.pop(key, None)
            self._replica_synced.pop(key, None)
            return None  # delete flow: owner references garbage-collect every child
        self._check_spec(pcs)
        key_of, topology_name = ctx.topology_for(pcs)
        if key_of is None and uses_topology(pcs):
            self._warn_topology_ignored(pcs)
        backend = ctx.backend_for(pcs)

        gangs = {g.name: g for g in ctx.gangs.by_index(IDX_PCS, key)}
        cliques = {c.name: c for c in ctx.cliques.by_index(IDX_OWNER, owner_key(pcs))}
        groups = {g.name: g for g in ctx.pcsgs.by_index(IDX_PCS, key)}
        planned_gangs: set[str] = set()
        planned_cliques: set[str] = set()
        planned_groups: set[str] = set()
        jobs = []
        # One bound for the child writes of all the replica syncs below together.
        writes = asyncio.Semaphore(ctx.tunables.write_concurrency)
        inputs = _replica_inputs(pcs, backend.name, key_of, topology_name, gangs, cliques,
                                 groups)
        synced = self._replica_synced.setdefault(key, {})
        for i in range(pcs.spec.replicas):
            seen = synced.get(i)
            if seen is not None and seen[0] == inputs(i):
                planned_gangs.update(seen[1])  # nothing it depends on changed since
                planned_cliques.update(seen[2])
                planned_groups.update(seen[3])
                continue
            plans = replica_gangs(pcs, i, self._group_replicas(pcs, i, groups), key_of)
            names = ({p.name for p in plans},
                     {c.name for c in plans[0].cliques if c.group is None},
                     {naming.scaling_group_name(pcs.name, i, cfg.name)
                      for cfg in pcs.spec.template.pod_clique_scaling_groups or ()})
            planned_gangs.update(names[0])
            planned_cliques.update(names[1])
            planned_groups.update(names[2])
            jobs.append(lambda i=i, plans=plans, names=names: self._sync_replica_once(
                pcs, i, plans, names, inputs(i), gangs, cliques, groups, backend.name, key_of,
                topology_name, writes))
        for i in [i for i in synced if i >= pcs.spec.replicas]:
            del synced[i]
        errors = [first_error(await bounded(jobs, ctx.tunables.write_concurrency))]
        errors.append(await delete_excess(ctx, pcs, gangs, planned_gangs, PodGang))
        errors.append(await delete_excess(ctx, pcs, cliques, planned_cliques, PodClique))
        errors.append(await delete_excess(ctx, pcs, groups, planned_groups,
                                          PodCliqueScalingGroup))
        raise_first_error(errors)
        return None

    def _check_spec(self, pcs: PodCliqueSet) -> None:
        """Admission's checks, again: without the webhook (`--no-webhook`, or objects that
        predate it) an invalid PodCliqueSet must not be materialised. Raises PermanentError
        naming every offending field; cached per spec generation."""
        version = (pcs.metadata.uid or "", pcs.metadata.generation or 0)
        seen = self._checked.get(pcs.key)
        if seen is None or seen[0] != version:
            # As admission sees it: defaulted (no webhook defaulted it either), and as an
            # existing object (rules only new objects obey, such as no packDomain, do not
            # apply to one created before them).
            fresh = default_podcliqueset(pcs.copy_deep())
            errs = check_all(fresh, fresh, self.ctx.registry)
            seen = self._checked[pcs.key] = (version, "; ".join(f"{f}: {m}" for f, m in errs))
        if seen[1]:
            raise PermanentError(REASON_INVALID_SPEC, f"nothing is created until the spec is "
                                                      f"fixed: {seen[1]}")

    def _warn_topology_ignored(self, pcs: PodCliqueSet) -> None:
        seen = (pcs.metadata.uid or "", pcs.metadata.generation or 0)
        if self._topology_warned.get(seen[0]) == seen[1]:
            return  # once per spec generation, not once per reconcile
        self._topology_warned[seen[0]] = seen[1]
        why = ("topology-aware scheduling is disabled in the OperatorConfiguration"
               if self.ctx.topologies is None else
               "no ClusterTopologyBinding matches (see the TopologyLevelsUnavailable "
               "condition)")
        self.ctx.recorder.warning(pcs, "TopologyConstraintIgnored",
                                  f"topology constraints are not passed to the PodGangs: {why}")

    def _group_replicas(self, pcs: PodCliqueSet, i: int,
                        groups: dict[str, PodCliqueScalingGroup]) -> GroupReplicas:
        """A scaling group's replicas in replica i (never below its minAvailable: those
        replicas are part of the base PodGang)."""

        def replicas(cfg: PodCliqueScalingGroupConfig) -> int:
            existing = groups.get(naming.scaling_group_name(pcs.name, i, cfg.name))
            return max(owned_group_replicas(cfg, existing), min_available(cfg))

        return replicas

    async def _sync_replica_once(self, pcs: PodCliqueSet, i: int, plans: list[GangPlan],
                                 names: tuple[set[str], set[str], set[str]], inputs: Any,
                                 *args: Any) -> None:
        await self._sync_replica(pcs, i, plans, *args)
        self._replica_synced.setdefault(pcs.key, {})[i] = (inputs, *names)

    async def _sync_replica(self, pcs: PodCliqueSet, i: int, plans: list[GangPlan],
                            gangs: dict[str, PodGang], cliques: dict[str, PodClique],
                            groups: dict[str, PodCliqueScalingGroup], scheduler: str,
                            key_of: DomainKey | None, topology_name: str | None,
                            writes: asyncio.Semaphore) -> None:
        # PodGangs first, then the PodCliques of the gangs that exist, then the scaling
        # groups; each step's writes concurrently (a scaling group scaled up by 100 replicas
        # adds 100 scaled PodGangs to this replica: one at a time, at ~70 ms a create on a
        # busy API server, they took seconds), within the reconcile's one bound on writes.
        done = await bounded([lambda plan=plan: self._ensure_gang(
            pcs, plan, gangs.get(plan.name), scheduler, key_of, topology_name)
            for plan in plans], writes)
        raise_first_error(done)
        ready_gangs = {plan.name for plan, ready in zip(plans, done, strict=True) if ready}
        raise_first_error(await bounded([lambda plan=plan: self._ensure_clique(
            pcs, plan, cliques.get(plan.name)) for plan in plans[0].cliques
            if plan.group is None and plan.podgang in ready_gangs], writes))
        raise_first_error(await bounded([lambda cfg=cfg: self._ensure_group(
            pcs, i, cfg, groups.get(naming.scaling_group_name(pcs.name, i, cfg.name)))
            for cfg in pcs.spec.template.pod_clique_scaling_groups or ()], writes))

    # ------------------------------------------------------------------ PodGangs

    async def _ensure_gang(self, pcs: PodCliqueSet, plan: GangPlan, existing: PodGang | None,
                           scheduler: str, key_of: DomainKey | None,
                           topology_name: str | None) -> bool:
        """Create or update one PodGang; True when it exists and is not being deleted."""
        client = self.ctx.client
        if existing is not None:
            if existing.metadata.deletion_timestamp is not None:
                return False  # the old incarnation is still going; its delete event requeues us
            want = builders.podgang_spec(pcs, plan, key_of)
            refs = {g.name: g.pod_references for g in existing.spec.pod_groups}
            for g in want.pod_groups:
                g.pod_references = list(refs.get(g.name, ()))
            labels, annotations = builders.podgang_metadata(pcs, plan, scheduler,
                                                            topology_name, existing)
            m = existing.metadata
            if want != existing.spec or labels != m.labels or annotations != m.annotations:
                updated = existing.copy_deep()
                updated.spec = want
                updated.metadata.labels, updated.metadata.annotations = labels, annotations
                await client.update(updated, returning=False)
                if want != existing.spec:
                    lifecycle_events.child_created(self.ctx.recorder, pcs, updated,
                                                   updated=True)
            return True
        gang = builders.build_podgang(pcs, plan, scheduler, key_of, topology_name)
        if not await self.ctx.creates.create(client, gang):
            return True  # our cache lags a create (e.g. before a restart); it exists
        # Its status is the PodGang controller's to write (`Initialized`, podgang.py).
        lifecycle_events.child_created(self.ctx.recorder, pcs, gang)
        return True

    # ------------------------------------------------------------------ PodCliques and groups

    async def _ensure_clique(self, pcs: PodCliqueSet, plan: CliquePlan,
                             existing: PodClique | None) -> None:
        client = self.ctx.client
        if existing is None:
            clique = builders.build_podclique(pcs, plan, pcs)
            if await self.ctx.creates.create(client, clique):
                lifecycle_events.child_created(self.ctx.recorder, pcs, clique)
            return
        if existing.metadata.deletion_timestamp is not None:
            return
        replicas = owned_clique_replicas(plan, existing)
        if clique_drifted(pcs, existing, plan, replicas):
            want = builders.build_podclique(pcs, plan, pcs, replicas)
            updated = existing.copy_deep()
            updated.spec = want.spec
            updated.metadata.labels = want.metadata.labels
            updated.metadata.annotations = want.metadata.annotations
            await client.update(updated, returning=False)
            lifecycle_events.child_created(self.ctx.recorder, pcs, updated, updated=True)

    async def _ensure_group(self, pcs: PodCliqueSet, i: int, cfg: PodCliqueScalingGroupConfig,
                            existing: PodCliqueScalingGroup | None) -> None:
        client = self.ctx.client
        want = builders.build_scaling_group(pcs, i, cfg)
        if existing is None:
            if await self.ctx.creates.create(client, want):
                lifecycle_events.child_created(self.ctx.recorder, pcs, want)
            return
        if existing.metadata.deletion_timestamp is not None:
            return
        want.spec.replicas = owned_group_replicas(cfg, existing)
        # Spec, labels and annotations whole, on every sync (Grove's buildResource).
        m, wm = existing.metadata, want.metadata
        if want.spec != existing.spec or m.labels != wm.labels or \
                m.annotations != wm.annotations:
            updated = existing.copy_deep()
            updated.spec = want.spec
            updated.metadata.labels, updated.metadata.annotations = wm.labels, wm.annotations
            await client.update(updated, returning=False)


