"""Grove's resource sharing: ResourceClaims shared by a PodCliqueSet's pods, and their
references in the pods (Grove's internal/resourceclaim and the PCS, PCSG and PCLQ
`resourceclaim` components).

A `resourceSharing` entry names a ResourceClaimTemplate: one of the PodCliqueSet's own
`resourceClaimTemplates` (no namespace given), else a ResourceClaimTemplate object in the
entry's namespace (default: the PodCliqueSet's). Its owner (the PodCliqueSet, a scaling group
or a PodClique) gets one claim for all its replicas (`AllReplicas`, `<owner>-all-<template>`)
or one per replica (`PerReplica`, `<owner>-<index>-<template>`; a PodClique's replicas are its
pods). Claims carry the owner as controller, so deleting the owner deletes them; scaling in
deletes the per-replica claims above the new count. Every pod under the owner (narrowed by
`filter` to named cliques / scaling groups) references the claims it shares, in
`spec.resourceClaims` and every container's `resources.claims`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from phalanx.api import labels as L
from phalanx.api.base import ObjectMeta, Resource
from phalanx.api.grove import PodClique, PodCliqueSet
from phalanx.api.resource import ResourceClaim, ResourceClaimSpec, ResourceClaimTemplate
from phalanx.cluster.client import AlreadyExists, NotFound
from phalanx.cluster.controller import Controller, PermanentError, Result, map_from_label
from phalanx.cluster.objects import object_key

from . import naming
from .context import IDX_PCS, OperatorContext, requeue_on_conflict

COMPONENT_RESOURCE_CLAIM = "resource-claim"  # Grove's LabelComponentNameResourceClaim
SCOPE_ALL, SCOPE_PER = "AllReplicas", "PerReplica"


def claim_name(owner: str, template: str, index: int | None) -> str:
    """Grove's AllReplicasRCName / PerReplicaRCName."""
    return f"{owner}-all-{template}" if index is None else f"{owner}-{index}-{template}"


def claim_labels(pcs: str) -> dict[str, str]:
    return {**naming.managed_labels(pcs), L.LABEL_COMPONENT: COMPONENT_RESOURCE_CLAIM}


def _matches(ref: Any, names: Iterable[str]) -> bool:
    """Grove's FilterMatches: no filter (or a clique-level entry) shares with every child."""
    flt = getattr(ref, "filter", None)
    if flt is None:
        return True
    allowed = {*(flt.child_clique_names or ()),
               *(getattr(flt, "child_scaling_group_names", None) or ())}
    return any(n in allowed for n in names)


def _refs(owner: str, refs: Iterable[Any], index: int, names: Iterable[str] = ()) -> list[str]:
    names = list(names)
    picked = [r for r in refs if _matches(r, names)]
    return ([claim_name(owner, r.name, None) for r in picked if r.scope == SCOPE_ALL]
            + [claim_name(owner, r.name, index) for r in picked if r.scope == SCOPE_PER])


def clique_template_name(pclq: PodClique, pcs_name: str) -> str:
    pcsg = pclq.metadata.labels.get(L.LABEL_PODCLIQUESCALINGGROUP)
    j = pclq.metadata.labels.get(L.LABEL_PODCLIQUESCALINGGROUP_REPLICA_INDEX)
    prefix = (f"{pcsg}-{j}-" if pcsg and j is not None
              else f"{pcs_name}-{naming.replica_of(pclq.metadata.labels)}-")
    return pclq.name.removeprefix(prefix)


def pod_claim_names(pcs: PodCliqueSet, pclq: PodClique, pod_index: int) -> list[str]:
    """The shared claims pod `pod_index` of `pclq` references, PCS level first, then its
    scaling group's, then its clique's (Grove's injectAllResourceClaimRefs order)."""
    t = pcs.spec.template
    clique = clique_template_name(pclq, pcs.name)
    tpl = pcs.clique(clique)
    labels = pclq.metadata.labels
    out: list[str] = []
    match = [clique]
    pcsg = labels.get(L.LABEL_PODCLIQUESCALINGGROUP)
    cfg = pcs.scaling_group_of(clique) if pcsg else None
    if cfg is not None:
        match.append(cfg.name)
    out += _refs(pcs.name, t.resource_sharing or (), naming.replica_of(labels) or 0, match)
    if cfg is not None and pcsg:
        j = int(labels.get(L.LABEL_PODCLIQUESCALINGGROUP_REPLICA_INDEX, "0"))
        out += _refs(pcsg, cfg.resource_sharing or (), j, [clique])
    if tpl is not None:
        out += _refs(pclq.name, tpl.resource_sharing or (), pod_index)
    return out


def inject_claims(spec: dict[str, Any], names: list[str]) -> None:
    """Appends claim references to a pod spec (as a dict, camelCase): the pod's
    `resourceClaims` and every container's and init container's `resources.claims`."""
    if not names:
        return
    spec["resourceClaims"] = [*spec.get("resourceClaims", ()),
                              *({"name": n, "resourceClaimName": n} for n in names)]
    for key in ("containers", "initContainers"):
        for c in spec.get(key, ()):
            res = c.setdefault("resources", {})
            res["claims"] = [*res.get("claims", ()), *({"name": n} for n in names)]


@dataclass(frozen=True)
class _Want:
    owner: Resource
    template: Any  # the resourceSharing entry
    index: int | None
    labels: dict[str, str]


def _owner_wants(owner: Resource, refs: Iterable[Any], replicas: int, base: dict[str, str],
                 index_label: str) -> dict[str, _Want]:
    out: dict[str, _Want] = {}
    for r in refs:
        if r.scope == SCOPE_ALL:
            out[claim_name(owner.name, r.name, None)] = _Want(owner, r, None, dict(base))
        else:
            for i in range(replicas):
                out[claim_name(owner.name, r.name, i)] = _Want(
                    owner, r, i, {**base, index_label: str(i)})
    return out


def _shares_resources(pcs: PodCliqueSet) -> bool:
    """The PodCliqueSet, one of its scaling groups or one of its cliques shares a claim."""
    t = pcs.spec.template
    return bool(t.resource_sharing
                or any(g.resource_sharing for g in t.pod_clique_scaling_groups or ())
                or any(c.resource_sharing for c in t.cliques))


class ResourceClaimController:
    """One reconcile per PodCliqueSet: the claims its PodCliqueSet, scaling groups and
    PodCliques share, created as they scale out and deleted (per-replica) as they scale in."""

    def __init__(self, ctx: OperatorContext, workers: int = 1) -> None:
        self.ctx = ctx
        self.claims = ctx.manager.informer(ResourceClaim)
        self.claims.add_index(IDX_PCS, _part_of)
        self.controller = Controller("resourceclaim", requeue_on_conflict(self.reconcile),
                                     workers=workers)
        c = self.controller
        c.watch(ctx.pcs, predicate=_spec_or_deletion)
        by_pcs = map_from_label(L.LABEL_PART_OF)
        # Replicas live in spec: status-only updates (most of them) wake nothing here.
        for inf in (ctx.cliques, ctx.pcsgs):
            c.watch(inf, by_pcs, predicate=_spec_or_deletion)
        c.watch(self.claims, by_pcs)
        # A template that appears later (one a PodCliqueSet names but is missing) is picked
        # up at once: every PodCliqueSet is looked at again (cheap: cache reads only).
        c.watch(ctx.manager.informer(ResourceClaimTemplate), lambda _: ctx.pcs.keys())

    def wants(self, pcs: PodCliqueSet) -> dict[str, _Want]:
        t = pcs.spec.template
        base = claim_labels(pcs.name)
        out = _owner_wants(pcs, t.resource_sharing or (), pcs.spec.replicas, base,
                           L.LABEL_PODCLIQUESET_REPLICA_INDEX)
        key = pcs.key
        for g in self.ctx.pcsgs.by_index(IDX_PCS, key):
            cfg = next((c for c in t.pod_clique_scaling_groups or ()
                        if naming.scaling_group_name(pcs.name, naming.replica_of(
                            g.metadata.labels) or 0, c.name) == g.name), None)
            if cfg is not None and g.metadata.deletion_timestamp is None:
                out.update(_owner_wants(g, cfg.resource_sharing or (), g.spec.replicas,
                                        {**base, L.LABEL_PODCLIQUESCALINGGROUP: g.name},
                                        L.LABEL_PODCLIQUESCALINGGROUP_REPLICA_INDEX))
        for q in self.ctx.cliques.by_index(IDX_PCS, key):
            tpl = pcs.clique(clique_template_name(q, pcs.name))
            if tpl is not None and q.metadata.deletion_timestamp is None:
                out.update(_owner_wants(q, tpl.resource_sharing or (), q.spec.replicas,
                                        {**base, L.LABEL_PODCLIQUE: q.name},
                                        L.LABEL_PODCLIQUE_POD_INDEX))
        return out

    async def reconcile(self, key: str) -> Result | None:
        pcs = self.ctx.pcs.get(key)
        if pcs is None or pcs.metadata.deletion_timestamp is not None:
            return None  # owner references garbage-collect the claims
        claims = self.claims.by_index(IDX_PCS, key)
        if not claims and not _shares_resources(pcs):
            # Nothing to create or delete: no walk over every PodClique of the PodCliqueSet
            # (it woke for each one created: quadratic in the replicas at Grove's scale).
            return None
        wants = self.wants(pcs)
        have = {c.name: c for c in claims
                if c.metadata.labels.get(L.LABEL_COMPONENT) == COMPONENT_RESOURCE_CLAIM}
        errors: list[BaseException] = []
        for name, want in wants.items():
            if name in have:
                continue
            try:
                await self._create(pcs, name, want)
            except Exception as e:  # noqa: BLE001 -- the others still get their claims
                errors.append(e)
        for name, claim in have.items():
            if name not in wants and _stale_replica(claim, pcs, self.ctx):
                try:
                    await self.ctx.client.delete(ResourceClaim, name, claim.namespace)
                except NotFound:
                    pass
        if errors:
            raise errors[0]
        return None

    async def _create(self, pcs: PodCliqueSet, name: str, want: _Want) -> None:
        spec = await self._template_spec(pcs, want.template)
        claim = ResourceClaim(
            metadata=ObjectMeta(name=name, namespace=pcs.namespace, labels=want.labels,
                                owner_references=[want.owner.owner_reference(
                                    controller=True, block=True)]),
            spec=spec)
        try:
            await self.ctx.client.create(claim, returning=False)
        except AlreadyExists:
            pass

    async def _template_spec(self, pcs: PodCliqueSet, ref: Any) -> ResourceClaimSpec:
        """Grove's ResolveTemplateSpec: the PodCliqueSet's own template of that name when
        no namespace is given, else the ResourceClaimTemplate object."""
        if not ref.namespace:
            for t in pcs.spec.template.resource_claim_templates or ():
                if t.name == ref.name:
                    return ResourceClaimSpec.model_validate(t.template_spec.get("spec", {}))
        ns = ref.namespace or pcs.namespace
        try:
            rct = await self.ctx.client.get(ResourceClaimTemplate, ref.name, ns)
        except NotFound:
            raise PermanentError(
                "ResourceClaimTemplateNotFound",
                f"resourceSharing names ResourceClaimTemplate {ns}/{ref.name}, which is neither "
                "in spec.template.resourceClaimTemplates nor in the cluster; create it") from None
        return rct.spec.spec


def _spec_or_deletion(old: Resource, new: Resource) -> bool:
    om, nm = old.metadata, new.metadata
    return om.generation != nm.generation or om.deletion_timestamp != nm.deletion_timestamp


def _part_of(obj: Resource) -> str | None:
    pcs = obj.metadata.labels.get(L.LABEL_PART_OF)
    return object_key(obj.metadata.namespace, pcs) if pcs else None


def _stale_replica(claim: ResourceClaim, pcs: PodCliqueSet, ctx: OperatorContext) -> bool:
    """Only a per-replica claim whose owner still exists with fewer replicas is deleted here
    (Grove's CleanupStalePerReplicaRCs); claims of deleted owners go by garbage collection."""
    labels = claim.metadata.labels
    ns = claim.namespace
    if L.LABEL_PODCLIQUE in labels:
        owner = ctx.cliques.get(object_key(ns, labels[L.LABEL_PODCLIQUE]))
        idx = labels.get(L.LABEL_PODCLIQUE_POD_INDEX)
    elif L.LABEL_PODCLIQUESCALINGGROUP in labels:
        owner = ctx.pcsgs.get(object_key(ns, labels[L.LABEL_PODCLIQUESCALINGGROUP]))
        idx = labels.get(L.LABEL_PODCLIQUESCALINGGROUP_REPLICA_INDEX)
    else:
        owner, idx = pcs, labels.get(L.LABEL_PODCLIQUESET_REPLICA_INDEX)
    if owner is None or idx is None or not idx.isdigit():
        return False
    return int(idx) >= owner.spec.replicas
