"""Simulated storage controllers: kube-controller-manager's PersistentVolume controller, an
external provisioner, and the ephemeral volume controller, on the embedded cluster.

    volumes = VolumeControllers(client)
    await volumes.start()
    ...                          # claims get bound, provisioned, released as in Kubernetes
    await volumes.wait_idle()
    await volumes.stop()

What each does, as its Kubernetes counterpart (pkg/controller/volume/persistentvolume):
- claims: an unbound claim takes the smallest Available PV that matches it (class, size,
  access modes, volume mode, selector) or the PV pre-bound to it; a claim naming a PV binds
  to it when it fits. `WaitForFirstConsumer` claims are left to the scheduler, which either
  pre-binds a PV (claimRef) or asks for provisioning on a node (the
  `volume.kubernetes.io/selected-node` annotation). Binding writes the PV's claimRef, phase
  Bound, the claim's volumeName with the `bind-completed` / `bound-by-controller` notes,
  and the claim's phase, access modes and capacity. A claim without a class gets the
  default StorageClass. A bound claim whose PV vanished is `Lost`.
- volumes: a PV without claimRef (or only pre-bound) is Available; bound to a claim that
  is gone it is Released and reclaimed (Delete: the PV is deleted; Retain: kept; Recycle:
  made Available again); bound by the controller to a claim bound elsewhere it is freed.
- provisioner: a claim of a class with a provisioner (and, for WaitForFirstConsumer, a
  selected node) gets a PV `pvc-<claim uid>` of the requested size, a CSI source named after
  the provisioner, and node affinity to the selected node's topology: the keys of the
  class's allowedTopologies, else `topology_keys` (the zone, as cloud block storage). A
  selected node that no longer exists makes it drop the annotation, so the scheduler retries.
- ephemeral: a pod's generic ephemeral volume gets its claim `<pod>-<volume>`, owned by
  the pod, from the volume's claim template.
Unbound claims are looked at again when a PV or class appears (kube resyncs every 15 s).
"""

from __future__ import annotations

import logging

from phalanx.api.base import ObjectMeta
from phalanx.api.core import Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod
from phalanx.api.storage import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_DYNAMICALLY_PROVISIONED,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
    NOT_SUPPORTED_PROVISIONER,
    WAIT_FOR_FIRST_CONSUMER,
    PersistentVolume,
    PersistentVolumeClaim,
    PersistentVolumeClaimSpec,
    PersistentVolumeSpec,
    StorageClass,
    VolumeNodeAffinity,
    claim_class,
    claim_has_class,
    claim_ref,
    is_default_class,
    is_volume_bound_to_claim,
)
from phalanx.cluster.client import AlreadyExists, Client, NotFound
from phalanx.cluster.controller import Controller, Manager, Result
from phalanx.cluster.objects import object_key

from .volume_matching import find_matching_volume, satisfies

log = logging.getLogger(__name__)

ZONE = "topology.kubernetes.io/zone"


class VolumeControllers:
    def __init__(self, client: Client, *, topology_keys: tuple[str, ...] = (ZONE,)) -> None:
        self.client = client
        self.topology_keys = topology_keys
        self.manager = Manager(client)
        self.pvs = self.manager.informer(PersistentVolume)
        self.pvcs = self.manager.informer(PersistentVolumeClaim)
        self.classes = self.manager.informer(StorageClass)
        self.nodes = self.manager.informer(Node)
        self.pods = self.manager.informer(Pod)
        # One worker each, as kube's PV controller: two claim workers could race for a PV.
        self.claims_ctl = self.manager.add(Controller("pv-claims", self._sync_claim))
        self.volumes_ctl = self.manager.add(Controller("pv-volumes", self._sync_volume))
        self.ephemeral_ctl = self.manager.add(Controller("ephemeral-volumes", self._sync_pod))
        self.claims_ctl.watch(self.pvcs)
        # A new or freed PV, or a new class, may serve a waiting claim; a PV's own claim
        # learns of its changes (a deleted PV leaves its claim Lost).
        self.claims_ctl.watch(self.pvs, lambda pv: self._unbound_claims() + _claim_of(pv))
        self.claims_ctl.watch(self.classes, lambda _sc: self._unbound_claims())
        self.volumes_ctl.watch(self.pvs)
        self.volumes_ctl.watch(self.pvcs, lambda c: [c.spec.volume_name] if c.spec.volume_name
                               else [])
        self.ephemeral_ctl.watch(self.pods, predicate=lambda o, n: False)
        # Counters for tests and reports.
        self.bound = 0
        self.provisioned = 0

    async def start(self) -> None:
        await self.manager.start()

    async def stop(self) -> None:
        await self.manager.stop()

    async def wait_idle(self, timeout: float | None = None) -> None:
        await self.manager.wait_idle(timeout=timeout)

    def _unbound_claims(self) -> list[str]:
        return [c.key for c in self.pvcs.list() if ANN_BIND_COMPLETED not in c.metadata.annotations]

    # ------------------------------------------------------------------ claims

    async def _sync_claim(self, key: str) -> Result | None:
        pvc = self.pvcs.get(key)
        if pvc is None or pvc.metadata.deletion_timestamp is not None:
            return None
        if ANN_BIND_COMPLETED in pvc.metadata.annotations:
            await self._sync_bound_claim(pvc)
        else:
            await self._sync_unbound_claim(pvc)
        return None

    async def _sync_unbound_claim(self, pvc: PersistentVolumeClaim) -> None:
        if pvc.spec.volume_name:
            pv = self.pvs.get(pvc.spec.volume_name)
            if pv is None:
                await self._claim_status(pvc, "Pending", None)
            elif pv.spec.claim_ref is None:
                if satisfies(pv, pvc):
                    await self._bind(pv, pvc)
                else:
                    await self._claim_status(pvc, "Pending", None)
            elif is_volume_bound_to_claim(pv, pvc):
                await self._bind(pv, pvc)
            else:
                await self._claim_status(pvc, "Pending", None)  # claimed by someone else
            return
        delay = self._delay_binding(pvc)
        pv = self._best_match(pvc, delay)
        if pv is not None:
            await self._bind(pv, pvc)
            return
        if not claim_has_class(pvc):
            default = self._default_class()
            if default is not None:
                updated = pvc.copy_deep()
                updated.spec.storage_class_name = default.name
                await self.client.update(updated, returning=False)
                return
        if claim_class(pvc) and (not delay or ANN_SELECTED_NODE in pvc.metadata.annotations):
            await self._provision(pvc)
        await self._claim_status(pvc, "Pending", None)

    async def _sync_bound_claim(self, pvc: PersistentVolumeClaim) -> None:
        pv = self.pvs.get(pvc.spec.volume_name or "") if pvc.spec.volume_name else None
        if pv is None:
            await self._claim_status(pvc, "Lost", None)
        elif pv.spec.claim_ref is None or pv.spec.claim_ref.uid == pvc.metadata.uid:
            await self._bind(pv, pvc)
        else:
            await self._claim_status(pvc, "Lost", None)  # two claims bound to one volume

    def _delay_binding(self, pvc: PersistentVolumeClaim) -> bool:
        name = claim_class(pvc)
        sc = self.classes.get(name) if name else None
        return sc is not None and sc.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER

    def _default_class(self) -> StorageClass | None:
        defaults = sorted((c for c in self.classes.list() if is_default_class(c)),
                          key=lambda c: (-(c.metadata.creation_timestamp.timestamp()
                                           if c.metadata.creation_timestamp else 0), c.name))
        return defaults[0] if defaults else None

    def _best_match(self, pvc: PersistentVolumeClaim, delay: bool) -> PersistentVolume | None:
        """findBestMatchForClaim: PVs grouped by access modes that cover the claim's, fewest
        modes first; in each, the pre-bound PV, else (unless delayed) the smallest fit."""
        wanted = set(pvc.spec.access_modes or ())
        groups: dict[frozenset[str], list[PersistentVolume]] = {}
        for pv in sorted(self.pvs.list(), key=lambda p: p.name):
            modes = frozenset(pv.spec.access_modes or ())
            if wanted <= modes:
                groups.setdefault(modes, []).append(pv)
        for modes in sorted(groups, key=lambda m: (len(m), sorted(m))):
            found = find_matching_volume(pvc, groups[modes], delay)
            if found is not None:
                return found
        return None

    async def _bind(self, pv: PersistentVolume, pvc: PersistentVolumeClaim) -> None:
        """bind(): the PV first (claimRef, then phase), then the claim (spec, then status)."""
        if not is_volume_bound_to_claim(pv, pvc) or not pv.spec.claim_ref or \
                pv.spec.claim_ref.uid != pvc.metadata.uid:
            new = pv.copy_deep()
            if not is_volume_bound_to_claim(pv, pvc) and \
                    ANN_BOUND_BY_CONTROLLER not in new.metadata.annotations:
                new.metadata.annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
            new.spec.claim_ref = claim_ref(pvc)
            pv = await self.client.update(new)
        if pv.status.phase != "Bound":
            new = pv.copy_deep()
            new.status.phase = "Bound"
            new.status.message = None
            pv = await self.client.update_status(new)
        claim = pvc
        notes = claim.metadata.annotations
        if claim.spec.volume_name != pv.name or ANN_BIND_COMPLETED not in notes:
            claim = claim.copy_deep()
            if claim.spec.volume_name != pv.name:
                claim.spec.volume_name = pv.name
                claim.metadata.annotations.setdefault(ANN_BOUND_BY_CONTROLLER, "yes")
            claim.metadata.annotations.setdefault(ANN_BIND_COMPLETED, "yes")
            claim = await self.client.update(claim)
        if await self._claim_status(claim, "Bound", pv):
            self.bound += 1

    async def _claim_status(self, pvc: PersistentVolumeClaim, phase: str,
                            pv: PersistentVolume | None) -> bool:
        """updateClaimStatus; True when something was written."""
        new = pvc.copy_deep()
        status = new.status
        status.phase = phase  # type: ignore[assignment]
        if pv is None:
            status.access_modes = None
            status.capacity = None
        else:
            status.access_modes = list(pv.spec.access_modes or []) or None
            if pvc.status.phase != phase:
                status.capacity = dict(pv.spec.capacity or {}) or None
        if status == pvc.status:
            return False
        await self.client.update_status(new, returning=False)
        return True

    # ------------------------------------------------------------------ provisioning

    async def _provision(self, pvc: PersistentVolumeClaim) -> None:
        sc = self.classes.get(claim_class(pvc))
        if sc is None or not sc.provisioner or sc.provisioner == NOT_SUPPORTED_PROVISIONER:
            return
        if pvc.metadata.annotations.get(ANN_STORAGE_PROVISIONER) != sc.provisioner:
            noted = pvc.copy_deep()
            noted.metadata.annotations[ANN_STORAGE_PROVISIONER] = sc.provisioner
            pvc = await self.client.update(noted)
        node_name = pvc.metadata.annotations.get(ANN_SELECTED_NODE)
        affinity: VolumeNodeAffinity | None = None
        if node_name is not None:
            node = self.nodes.get(node_name)
            if node is None:  # the scheduler must choose again
                retry = pvc.copy_deep()
                retry.metadata.annotations.pop(ANN_SELECTED_NODE, None)
                await self.client.update(retry, returning=False)
                return
            affinity = self._node_affinity(sc, node)
        elif sc.allowed_topologies:
            affinity = VolumeNodeAffinity(required=NodeSelector(node_selector_terms=[
                NodeSelectorTerm(match_expressions=[
                    NodeSelectorRequirement(key=r.key, operator="In", values=list(r.values))
                    for r in t.match_label_expressions or ()])
                for t in sc.allowed_topologies if t.match_label_expressions]))
        name = f"pvc-{pvc.metadata.uid}"
        pv = PersistentVolume(
            metadata=ObjectMeta(name=name,
                                annotations={ANN_DYNAMICALLY_PROVISIONED: sc.provisioner}),
            spec=PersistentVolumeSpec(
                capacity={"storage": (pvc.spec.resources.requests or {}).get("storage", "0")},
                access_modes=list(pvc.spec.access_modes or []),
                claim_ref=claim_ref(pvc),
                persistent_volume_reclaim_policy=sc.reclaim_policy or "Delete",
                storage_class_name=sc.name,
                mount_options=sc.mount_options,
                volume_mode=pvc.spec.volume_mode,
                node_affinity=affinity,
                csi={"driver": sc.provisioner, "volumeHandle": name},
            ),
        )
        try:
            await self.client.create(pv, returning=False)
        except AlreadyExists:
            return
        self.provisioned += 1

    def _node_affinity(self, sc: StorageClass, node: Node) -> VolumeNodeAffinity | None:
        keys = [r.key for t in sc.allowed_topologies or () for r in t.match_label_expressions or ()]
        labels = node.metadata.labels
        reqs = [NodeSelectorRequirement(key=k, operator="In", values=[labels[k]])
                for k in dict.fromkeys(keys or self.topology_keys) if k in labels]
        if not reqs:
            return None
        return VolumeNodeAffinity(required=NodeSelector(node_selector_terms=[
            NodeSelectorTerm(match_expressions=reqs)]))

    # ------------------------------------------------------------------ volumes

    async def _sync_volume(self, name: str) -> Result | None:
        pv = self.pvs.get(name)
        if pv is None or pv.metadata.deletion_timestamp is not None:
            return None
        ref = pv.spec.claim_ref
        if ref is None or not ref.uid:
            await self._volume_phase(pv, "Available")
            return None
        claim = self.pvcs.get(object_key(ref.namespace or "default", ref.name or ""))
        if claim is not None and claim.metadata.uid != ref.uid:
            claim = None  # the claim was deleted and another took its name
        if claim is None:
            await self._reclaim(pv)
        elif not claim.spec.volume_name:
            self.claims_ctl.queue.add(claim.key)  # the claim's sync finishes the binding
        elif claim.spec.volume_name == pv.name:
            await self._volume_phase(pv, "Bound")
        elif ANN_DYNAMICALLY_PROVISIONED in pv.metadata.annotations and \
                pv.spec.persistent_volume_reclaim_policy == "Delete":
            await self._reclaim(pv)
        else:
            await self._unbind(pv)
        return None

    async def _volume_phase(self, pv: PersistentVolume, phase: str) -> PersistentVolume:
        if pv.status.phase == phase:
            return pv
        new = pv.copy_deep()
        new.status.phase = phase  # type: ignore[assignment]
        new.status.message = None
        return await self.client.update_status(new)

    async def _reclaim(self, pv: PersistentVolume) -> None:
        if pv.status.phase not in ("Released", "Failed"):
            pv = await self._volume_phase(pv, "Released")
        policy = pv.spec.persistent_volume_reclaim_policy or "Retain"
        if policy == "Delete":
            try:
                await self.client.delete(PersistentVolume, pv.name, uid=pv.metadata.uid)
            except NotFound:
                pass
        elif policy == "Recycle":
            await self._unbind(pv, recycle=True)

    async def _unbind(self, pv: PersistentVolume, *, recycle: bool = False) -> None:
        """unbindVolume: forget a claim the controller bound (a user's pre-binding keeps the
        claim's name and loses only its uid), then Available."""
        new = pv.copy_deep()
        if recycle or ANN_BOUND_BY_CONTROLLER in new.metadata.annotations:
            new.spec.claim_ref = None
            new.metadata.annotations.pop(ANN_BOUND_BY_CONTROLLER, None)
        elif new.spec.claim_ref is not None:
            new.spec.claim_ref.uid = None
        pv = await self.client.update(new)
        await self._volume_phase(pv, "Available")

    # ------------------------------------------------------------------ ephemeral volumes

    async def _sync_pod(self, key: str) -> Result | None:
        pod = self.pods.get(key)
        if pod is None or pod.metadata.deletion_timestamp is not None or not pod.spec.volumes:
            return None
        for vol in pod.spec.volumes:
            template = vol.get("ephemeral", {}).get("volumeClaimTemplate") \
                if isinstance(vol, dict) and isinstance(vol.get("ephemeral"), dict) else None
            if not isinstance(template, dict):
                continue
            name = f"{pod.name}-{vol.get('name', '')}"
            if self.pvcs.get(object_key(pod.namespace, name)) is not None:
                continue
            meta = template.get("metadata") or {}
            claim = PersistentVolumeClaim(
                metadata=ObjectMeta(name=name, namespace=pod.namespace,
                                    labels=dict(meta.get("labels") or {}),
                                    annotations=dict(meta.get("annotations") or {}),
                                    owner_references=[pod.owner_reference()]),
                spec=PersistentVolumeClaimSpec.model_validate(template.get("spec") or {}))
            try:
                await self.client.create(claim, returning=False)
            except AlreadyExists:
                pass
        return None


def _claim_of(pv: PersistentVolume) -> list[str]:
    ref = pv.spec.claim_ref
    return [object_key(ref.namespace or "default", ref.name)] if ref is not None and ref.name \
        else []
