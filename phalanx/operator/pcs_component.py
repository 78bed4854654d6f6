"""One object per PodCliqueSet, kept as built: the shape shared by the startup waiter's
identity components (Grove's `podcliqueset/components/{serviceaccount,satokensecret,role,
rolebinding}`). Each component module supplies what to build and which fields it owns.

Created when missing, put back when someone edits a field we own, never deleted by us:
owner references garbage-collect it with the PodCliqueSet. Watched through an informer
restricted to the component's label, so the operator caches only its own objects (not
every Secret in the cluster).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from phalanx.api import labels as L
from phalanx.api.base import ObjectMeta, Resource
from phalanx.api.grove import PodCliqueSet
from phalanx.cluster.client import AlreadyExists, NotFound
from phalanx.cluster.controller import Controller, Result, map_from_label
from phalanx.cluster.informer import Informer
from phalanx.cluster.objects import object_key

from . import naming
from .context import OperatorContext, requeue_on_conflict

R = TypeVar("R", bound=Resource)
ROLE_WAIT = 0.5  # seconds before creating a RoleBinding again whose Role did not exist


@dataclass(frozen=True)
class Component(Generic[R]):
    name: str  # the controller's name
    kind: type[R]
    label: str  # value of app.kubernetes.io/component (Grove's)
    object_name: Callable[[str], str]  # PodCliqueSet name -> object name
    build: Callable[[PodCliqueSet], R]
    # Copy the fields we own from `want` into `existing`; False when nothing changed.
    restore: Callable[[R, R], bool]


def component_meta(pcs: PodCliqueSet, name: str, label: str, app_name: str,
                   annotations: dict[str, str] | None = None) -> ObjectMeta:
    return ObjectMeta(
        name=name, namespace=pcs.namespace, annotations=annotations or {},
        labels={**naming.managed_labels(pcs.name), L.LABEL_COMPONENT: label,
                L.LABEL_APP_NAME: app_name},
        owner_references=[pcs.owner_reference(controller=True, block=True)])


def restore_labels(existing: Resource, want: Resource) -> bool:
    missing = {k: v for k, v in want.metadata.labels.items()
               if existing.metadata.labels.get(k) != v}
    existing.metadata.labels.update(missing)
    return bool(missing)


class PodCliqueSetComponentController:
    def __init__(self, ctx: OperatorContext, component: Component[Any]) -> None:
        self.ctx = ctx
        self.component = component
        self.objects: Informer[Any] = ctx.manager.informer(
            component.kind, label_selector={L.LABEL_COMPONENT: component.label})
        self.controller = Controller(component.name, requeue_on_conflict(self.reconcile),
                                     workers=1)
        c = self.controller
        c.watch(ctx.pcs, predicate=lambda o, n: (
            o.metadata.deletion_timestamp != n.metadata.deletion_timestamp))
        c.watch(self.objects, map_from_label(L.LABEL_PART_OF), predicate=lambda o, n: (
            o.to_dict() != n.to_dict()))

    async def reconcile(self, key: str) -> Result | None:
        pcs = self.ctx.pcs.get(key)
        if pcs is None or pcs.metadata.deletion_timestamp is not None:
            return None  # garbage collection removes the object with its owner
        comp = self.component
        want = comp.build(pcs)
        existing = self.objects.get(object_key(pcs.namespace, want.name))
        if existing is None:
            try:
                await self.ctx.client.create(want, returning=False, hand_over=True)  # built for it
            except AlreadyExists:
                pass  # our cache lags a create
            except NotFound:
                # A RoleBinding's Role not created yet: the API server resolves it for its
                # escalation check. Routine ordering, not an error: try again shortly.
                return Result(requeue_after=ROLE_WAIT)
            return None
        if existing.metadata.deletion_timestamp is not None:
            return None
        updated = existing.copy_deep()
        if comp.restore(updated, want):
            await self.ctx.client.update(updated, returning=False)
        return None
