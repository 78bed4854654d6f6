"""Headless Service controller: one Service per PodCliqueSet replica (Grove's
`podcliqueset/components/service`).

    Service <pcs>-<i>   clusterIP: None
                        selector: managed-by, part-of <pcs>, podcliqueset-replica-index <i>
                        publishNotReadyAddresses: headlessServiceConfig's (defaulted True)

Every pod of replica i has `subdomain: <pcs>-<i>` and `hostname: <pclq>-<k>`, so
`<pclq>-<k>.<pcs>-<i>.<ns>.svc.cluster.local` resolves once the endpoints controller lists
the pod (leader/worker discovery in multi-node inference depends on it); GROVE_HEADLESS_SERVICE
names the Service. Services of replicas no longer in the spec are deleted; owner references
garbage-collect the rest with the PodCliqueSet. A Service someone edited is put back.
As in Grove, no Events: a Service per replica is routine.
"""

from __future__ import annotations

from phalanx.api import labels as L
from phalanx.api.base import ObjectMeta
from phalanx.api.core import Service, ServiceSpec
from phalanx.api.grove import PodCliqueSet
from phalanx.cluster.client import NotFound
from phalanx.cluster.controller import Controller, Result, map_from_label
from phalanx.cluster.informer import Informer
from phalanx.cluster.objects import object_key

from . import naming
from .context import IDX_PCS, OperatorContext, bounded, raise_first_error, requeue_on_conflict

CLUSTER_IP_NONE = "None"


def service_name(pcs: str, replica: int) -> str:
    """Grove's GenerateHeadlessServiceName: the replica's base PodGang name."""
    return naming.base_podgang_name(pcs, replica)


def service_address(pcs: str, replica: int, namespace: str | None) -> str:
    """Grove's GenerateHeadlessServiceAddress (the value of GROVE_HEADLESS_SERVICE)."""
    return f"{service_name(pcs, replica)}.{namespace or 'default'}.svc.cluster.local"


def pod_selector(pcs: str, replica: int) -> dict[str, str]:
    return naming.replica_labels(pcs, replica)


def service_labels(pcs: str, replica: int) -> dict[str, str]:
    return {**naming.replica_labels(pcs, replica),
            L.LABEL_APP_NAME: service_name(pcs, replica),
            L.LABEL_COMPONENT: L.COMPONENT_HEADLESS_SERVICE}


def publish_not_ready(pcs: PodCliqueSet) -> bool:
    cfg = pcs.spec.template.headless_service_config
    # Unset means Grove's default (True); admission defaults it, this covers objects that
    # reached us without the webhook.
    return True if cfg is None or cfg.publish_not_ready_addresses is None \
        else cfg.publish_not_ready_addresses


def build_service(pcs: PodCliqueSet, replica: int) -> Service:
    return Service(
        metadata=ObjectMeta(name=service_name(pcs.name, replica), namespace=pcs.namespace,
                            labels=service_labels(pcs.name, replica),
                            owner_references=[pcs.owner_reference(controller=True,
                                                                  block=True)]),
        spec=ServiceSpec(selector=pod_selector(pcs.name, replica), cluster_ip=CLUSTER_IP_NONE,
                         publish_not_ready_addresses=publish_not_ready(pcs)),
    )


def service_drifted(existing: Service, want: Service) -> bool:
    """The fields we own differ (the API server fills in others: clusterIPs, ipFamilies)."""
    s, w = existing.spec, want.spec
    return (s.selector != w.selector or s.cluster_ip != w.cluster_ip
            or bool(s.publish_not_ready_addresses) != bool(w.publish_not_ready_addresses)
            or any(existing.metadata.labels.get(k) != v for k, v in want.metadata.labels.items()))


def _pcs_key(svc: Service) -> str | None:
    pcs = naming.pcs_of(svc.metadata.labels)
    return object_key(svc.metadata.namespace, pcs) if pcs else None


def _ours(svc: Service) -> bool:
    return svc.metadata.labels.get(L.LABEL_COMPONENT) == L.COMPONENT_HEADLESS_SERVICE


def _service_changed(old: Service, new: Service) -> bool:
    return (old.spec != new.spec or old.metadata.labels != new.metadata.labels
            or old.metadata.deletion_timestamp != new.metadata.deletion_timestamp)


class HeadlessServiceController:
    def __init__(self, ctx: OperatorContext, workers: int = 2) -> None:
        self.ctx = ctx
        self.services: Informer[Service] = ctx.manager.informer(Service)
        self.services.add_index(IDX_PCS, _pcs_key)
        ctx.creates.watch(self.services)
        self.controller = Controller("headless-service", requeue_on_conflict(self.reconcile),
                                     workers=workers)
        c = self.controller
        c.watch(ctx.pcs, predicate=lambda o, n: (
            o.metadata.generation != n.metadata.generation
            or o.metadata.deletion_timestamp != n.metadata.deletion_timestamp))
        c.watch(self.services, map_from_label(L.LABEL_PART_OF), predicate=_service_changed)

    async def reconcile(self, key: str) -> Result | None:
        ctx = self.ctx
        pcs = ctx.pcs.get(key)
        if pcs is None or pcs.metadata.deletion_timestamp is not None:
            return None  # the garbage collector removes the Services with their owner
        existing = {s.name: s for s in self.services.by_index(IDX_PCS, key) if _ours(s)}
        wanted = {service_name(pcs.name, i): i for i in range(pcs.spec.replicas)}
        jobs = [lambda i=i, svc=existing.get(name): self._ensure(pcs, i, svc)
                for name, i in wanted.items()]
        jobs += [lambda name=name: self._delete(pcs, name) for name, svc in existing.items()
                 if name not in wanted and svc.metadata.deletion_timestamp is None]
        raise_first_error(await bounded(jobs, ctx.tunables.write_concurrency))
        return None

    async def _ensure(self, pcs: PodCliqueSet, replica: int, existing: Service | None) -> None:
        client = self.ctx.client
        want = build_service(pcs, replica)
        if existing is None:
            await self.ctx.creates.create(client, want)  # our cache may lag a create
            return
        if existing.metadata.deletion_timestamp is not None or not service_drifted(existing,
                                                                                   want):
            return
        updated = existing.copy_deep()
        updated.metadata.labels.update(want.metadata.labels)
        updated.spec.selector = want.spec.selector
        updated.spec.cluster_ip = want.spec.cluster_ip
        updated.spec.publish_not_ready_addresses = want.spec.publish_not_ready_addresses
        await client.update(updated, returning=False)

    async def _delete(self, pcs: PodCliqueSet, name: str) -> None:
        try:
            await self.ctx.client.delete(Service, name, pcs.namespace)
        except NotFound:
            pass
