"""Grove's auto-MNNVL (internal/mnnvl): a ComputeDomain per PodCliqueSet replica and
multi-node NVLink group, and the IMEX-channel claim in the pods that use it.

The `grove.io/mnnvl-group` annotation on a clique, its scaling group's config or the
PodCliqueSet (first one set wins) enrols the clique's GPU pods (`nvidia.com/gpu` requested or
limited) in that group; `none` opts out. CPU-only cliques are ignored. For each replica `r`
and each group used, the operator keeps a ComputeDomain `<pcs>-<r>-<group>` (numNodes 0,
channel template `<pcs>-<r>-<group>`, which NVIDIA's driver creates), owned by the
PodCliqueSet and held by a finalizer the operator removes itself when the domain goes: on
scale-in, or when the PodCliqueSet is deleted (garbage collection). The PodClique's pod spec
gets the claim `mnnvl-claim` from that template, referenced by its GPU containers.

Admission (only with `network.autoMNNVLEnabled`) and the start-up check that the server
serves ComputeDomain are in admission_mnnvl.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from phalanx.api import labels as L
from phalanx.api.base import ObjectMeta, Resource
from phalanx.api.computedomain import (
    ComputeDomain,
    ComputeDomainChannelSpec,
    ComputeDomainResourceClaimTemplate,
    ComputeDomainSpec,
)
from phalanx.api.grove import PodCliqueSet
from phalanx.api.pod import PodSpec
from phalanx.api.quantity import parse_quantity
from phalanx.cluster.client import AlreadyExists, NotFound
from phalanx.cluster.controller import Controller, Result, map_from_label
from phalanx.cluster.objects import object_key

from . import naming
from .context import IDX_PCS, OperatorContext, requeue_on_conflict

ANNOTATION_MNNVL_GROUP = "grove.io/mnnvl-group"
LABEL_MNNVL_GROUP = "grove.io/mnnvl-group"
OPT_OUT = "none"
FINALIZER = "grove.io/computedomain-finalizer"
CLAIM_NAME = "mnnvl-claim"
COMPONENT_COMPUTE_DOMAIN = "pcs-computedomain"
GPU = "nvidia.com/gpu"


def resolve_group(*layers: Mapping[str, str] | None) -> str | None:
    """Grove's ResolveGroupNameHierarchically: the first layer with the annotation decides
    (a group name, or None for `none`); None when no layer has it."""
    for annotations in layers:
        if annotations and ANNOTATION_MNNVL_GROUP in annotations:
            value = annotations[ANNOTATION_MNNVL_GROUP]
            return None if value == OPT_OUT else value
    return None


def _gpu(container: Any) -> bool:
    res = container.resources
    if res is None:
        return False
    return any(GPU in (q or {}) and parse_quantity(str(q[GPU])) != 0
               for q in (res.limits, res.requests))


def has_gpu(spec: PodSpec) -> bool:
    return any(_gpu(c) for c in [*spec.containers, *(spec.init_containers or ())])


def domain_name(pcs: str, replica: int, group: str) -> str:
    """Both the ComputeDomain's and its channel ResourceClaimTemplate's name."""
    return f"{pcs}-{replica}-{group}"


def clique_group(pcs: PodCliqueSet, clique: Any) -> str | None:
    """The MNNVL group of a clique template (None: not enrolled or no GPU)."""
    if not has_gpu(clique.spec.pod_spec):
        return None
    cfg = pcs.scaling_group_of(clique.name)
    return resolve_group(clique.annotations, cfg.annotations if cfg else None,
                         pcs.metadata.annotations)


def inject_mnnvl(spec: PodSpec, pcs: PodCliqueSet, replica: int, group: str) -> None:
    """Grove's InjectMNNVLIntoPodSpec: the claim on the pod, referenced by GPU containers."""
    if any(c.get("name") == CLAIM_NAME for c in spec.resource_claims or ()):
        return
    hit = False
    for c in [*spec.containers, *(spec.init_containers or ())]:
        if _gpu(c):
            claims = list(c.resources.claims or [])
            if not any(x.get("name") == CLAIM_NAME for x in claims):
                c.resources.claims = [*claims, {"name": CLAIM_NAME}]
            hit = True
    if hit:
        spec.resource_claims = [*(spec.resource_claims or ()), {
            "name": CLAIM_NAME,
            "resourceClaimTemplateName": domain_name(pcs.name, replica, group)}]


def required_domains(pcs: PodCliqueSet) -> dict[str, tuple[int, str]]:
    groups = sorted({g for c in pcs.spec.template.cliques
                     if (g := clique_group(pcs, c)) is not None})
    return {domain_name(pcs.name, r, g): (r, g)
            for r in range(pcs.spec.replicas) for g in groups}


def domain_labels(pcs: str) -> dict[str, str]:
    return {**naming.managed_labels(pcs), L.LABEL_COMPONENT: COMPONENT_COMPUTE_DOMAIN}


def build_domain(pcs: PodCliqueSet, replica: int, group: str) -> ComputeDomain:
    name = domain_name(pcs.name, replica, group)
    labels = {**domain_labels(pcs.name), L.LABEL_APP_NAME: name,
              L.LABEL_PODCLIQUESET_REPLICA_INDEX: str(replica), LABEL_MNNVL_GROUP: group}
    return ComputeDomain(
        metadata=ObjectMeta(name=name, namespace=pcs.namespace, labels=labels,
                            finalizers=[FINALIZER],
                            owner_references=[pcs.owner_reference(controller=True,
                                                                  block=True)]),
        spec=ComputeDomainSpec(num_nodes=0, channel=ComputeDomainChannelSpec(
            resource_claim_template=ComputeDomainResourceClaimTemplate(name=name))))


def _spec_or_deletion(old: Resource, new: Resource) -> bool:
    """Replicas and annotations decide the domains (status writes do not)."""
    om, nm = old.metadata, new.metadata
    return (om.generation != nm.generation or om.deletion_timestamp != nm.deletion_timestamp
            or om.annotations != nm.annotations)


def _part_of(obj: Resource) -> str | None:
    pcs = obj.metadata.labels.get(L.LABEL_PART_OF)
    return object_key(obj.metadata.namespace, pcs) if pcs else None


class ComputeDomainController:
    """One reconcile per PodCliqueSet (only started with `network.autoMNNVLEnabled`)."""

    def __init__(self, ctx: OperatorContext, workers: int = 1) -> None:
        self.ctx = ctx
        self.domains = ctx.manager.informer(ComputeDomain)
        self.domains.add_index(IDX_PCS, _part_of)
        self.controller = Controller("computedomain", requeue_on_conflict(self.reconcile),
                                     workers=workers)
        self.controller.watch(ctx.pcs, predicate=_spec_or_deletion)
        self.controller.watch(self.domains, map_from_label(L.LABEL_PART_OF))

    async def reconcile(self, key: str) -> Result | None:
        pcs = self.ctx.pcs.get(key)
        have = {d.name: d for d in self.domains.by_index(IDX_PCS, key)
                if d.metadata.labels.get(L.LABEL_COMPONENT) == COMPONENT_COMPUTE_DOMAIN}
        gone = pcs is None or pcs.metadata.deletion_timestamp is not None
        want = {} if gone or pcs is None else required_domains(pcs)
        for name, d in have.items():
            if name in want:
                continue  # deleted while still needed: the finalizer keeps it (as Grove)
            await self._release(d)
        if pcs is not None and not gone:
            for name, (replica, group) in want.items():
                if name not in have:
                    try:
                        await self.ctx.client.create(build_domain(pcs, replica, group),
                                                     returning=False)
                    except AlreadyExists:
                        pass
        return None

    async def _release(self, d: ComputeDomain) -> None:
        """Drop the finalizer, then delete (a no-op when garbage collection already did)."""
        if FINALIZER in (d.metadata.finalizers or ()):
            current = d.copy_deep()
            current.metadata.finalizers = [f for f in d.metadata.finalizers if f != FINALIZER]
            try:
                await self.ctx.client.update(current, returning=False)
            except NotFound:
                return
        if d.metadata.deletion_timestamp is None:
            try:
                await self.ctx.client.delete(ComputeDomain, d.name, d.namespace)
            except NotFound:
                pass
