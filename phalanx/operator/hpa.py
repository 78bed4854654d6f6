"""HPA controller: a HorizontalPodAutoscaler per autoscaled PodClique and scaling group in
every PodCliqueSet replica (Grove's `podcliqueset/components/hpa`).

    standalone clique with autoScalingConfig   HPA <pcs>-<i>-<clique>  -> PodClique
    scaling group with scaleConfig             HPA <pcs>-<i>-<group>   -> PodCliqueScalingGroup

min/max replicas and metrics come from the config (minReplicas defaulted by admission);
the target's /scale subresource is what the HPA controller reads and writes. HPAs no longer
planned (config removed, replicas scaled in) are deleted; owner references remove the rest.
"""

from __future__ import annotations

from phalanx.api import labels as L
from phalanx.api.autoscaling import (
    CrossVersionObjectReference,
    HorizontalPodAutoscaler,
    HorizontalPodAutoscalerSpec,
)
from phalanx.api.base import ObjectMeta
from phalanx.api.grove import AutoScalingConfig, PodClique, PodCliqueScalingGroup, PodCliqueSet
from phalanx.cluster.client import AlreadyExists, NotFound
from phalanx.cluster.controller import Controller, Result, map_from_label
from phalanx.cluster.informer import Informer
from phalanx.cluster.objects import object_key

from . import naming
from .context import IDX_PCS, OperatorContext, bounded, raise_first_error, requeue_on_conflict

COMPONENT_HPA = "pcs-hpa"  # Grove's LabelComponentNameHorizontalPodAutoscaler


def expected_hpas(pcs: PodCliqueSet) -> dict[str, tuple[str, AutoScalingConfig]]:
    """HPA name -> (target kind, config); the target has the HPA's name (Grove's
    computeExpectedHPAs)."""
    t = pcs.spec.template
    grouped = {n for g in t.pod_clique_scaling_groups or () for n in g.clique_names}
    out: dict[str, tuple[str, AutoScalingConfig]] = {}
    for i in range(pcs.spec.replicas):
        for c in t.cliques:
            if c.spec.auto_scaling_config is not None and c.name not in grouped:
                out[naming.podclique_name(pcs.name, i, c.name)] = (
                    PodClique.KIND, _with_min(c.spec.auto_scaling_config, c.spec.replicas))
        for g in t.pod_clique_scaling_groups or ():
            if g.scale_config is not None:
                out[naming.scaling_group_name(pcs.name, i, g.name)] = (
                    PodCliqueScalingGroup.KIND,
                    _with_min(g.scale_config, g.replicas if g.replicas is not None else 1))
    return out


def _with_min(cfg: AutoScalingConfig, replicas: int) -> AutoScalingConfig:
    """minReplicas defaults to the template's replicas (Grove's defaulting webhook)."""
    if cfg.min_replicas is not None:
        return cfg
    return cfg.model_copy(update={"min_replicas": replicas})


def build_hpa(pcs: PodCliqueSet, name: str, kind: str, cfg: AutoScalingConfig
              ) -> HorizontalPodAutoscaler:
    return HorizontalPodAutoscaler(
        metadata=ObjectMeta(
            name=name, namespace=pcs.namespace,
            labels={**naming.managed_labels(pcs.name), L.LABEL_APP_NAME: name,
                    L.LABEL_COMPONENT: COMPONENT_HPA},
            owner_references=[pcs.owner_reference(controller=True, block=True)]),
        spec=HorizontalPodAutoscalerSpec(
            scale_target_ref=CrossVersionObjectReference(
                kind=kind, name=name, api_version=PodCliqueSet.API_VERSION),
            min_replicas=cfg.min_replicas, max_replicas=cfg.max_replicas,
            metrics=[dict(m) for m in cfg.metrics] if cfg.metrics else None),
    )


def _pcs_key(hpa: HorizontalPodAutoscaler) -> str | None:
    pcs = naming.pcs_of(hpa.metadata.labels)
    return object_key(hpa.metadata.namespace, pcs) if pcs else None


class HPAController:
    def __init__(self, ctx: OperatorContext, workers: int = 2) -> None:
        self.ctx = ctx
        self.hpas: Informer[HorizontalPodAutoscaler] = ctx.manager.informer(
            HorizontalPodAutoscaler)
        self.hpas.add_index(IDX_PCS, _pcs_key)
        self.controller = Controller("hpa", requeue_on_conflict(self.reconcile),
                                     workers=workers)
        c = self.controller
        c.watch(ctx.pcs, predicate=lambda o, n: (
            o.metadata.generation != n.metadata.generation
            or o.metadata.deletion_timestamp != n.metadata.deletion_timestamp))
        c.watch(self.hpas, map_from_label(L.LABEL_PART_OF),
                predicate=lambda o, n: o.spec != n.spec)

    async def reconcile(self, key: str) -> Result | None:
        pcs = self.ctx.pcs.get(key)
        if pcs is None or pcs.metadata.deletion_timestamp is not None:
            return None
        existing = {h.name: h for h in self.hpas.by_index(IDX_PCS, key)
                    if h.metadata.labels.get(L.LABEL_COMPONENT) == COMPONENT_HPA}
        want = expected_hpas(pcs)
        jobs = [lambda n=n, k=k, cfg=cfg, cur=existing.get(n): self._ensure(pcs, n, k, cfg, cur)
                for n, (k, cfg) in want.items()]
        jobs += [lambda n=n: self._delete(pcs, n) for n, h in existing.items()
                 if n not in want and h.metadata.deletion_timestamp is None]
        raise_first_error(await bounded(jobs, self.ctx.tunables.write_concurrency))
        return None

    async def _ensure(self, pcs: PodCliqueSet, name: str, kind: str, cfg: AutoScalingConfig,
                      existing: HorizontalPodAutoscaler | None) -> None:
        want = build_hpa(pcs, name, kind, cfg)
        if existing is None:
            try:
                await self.ctx.client.create(want, returning=False)
            except AlreadyExists:
                pass
            return
        if existing.metadata.deletion_timestamp is not None:
            return
        # Only the fields we set: the API server defaults metrics when none are given.
        s, w = existing.spec, want.spec
        if (s.scale_target_ref, s.min_replicas, s.max_replicas) == \
                (w.scale_target_ref, w.min_replicas, w.max_replicas) and \
                (w.metrics is None or s.metrics == w.metrics):
            return
        updated = existing.copy_deep()
        updated.spec.scale_target_ref = w.scale_target_ref
        updated.spec.min_replicas, updated.spec.max_replicas = w.min_replicas, w.max_replicas
        if w.metrics is not None:
            updated.spec.metrics = w.metrics
        await self.ctx.client.update(updated, returning=False)

    async def _delete(self, pcs: PodCliqueSet, name: str) -> None:
        try:
            await self.ctx.client.delete(HorizontalPodAutoscaler, name, pcs.namespace)
        except NotFound:
            pass
