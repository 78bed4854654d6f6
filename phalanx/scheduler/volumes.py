"""The scheduler's view of storage: a pod's claims, and the PV/PVC/StorageClass cache.

`pod_claims(pod)` reads a pod's volumes once (opaque dicts in the Pod model): the claims of
its `persistentVolumeClaim` and generic `ephemeral` volumes (the latter named
`<pod>-<volume>`, as the ephemeral volume controller names them), and the exclusive disks
VolumeRestrictions compares (GCE PD, AWS EBS, RBD, iSCSI).

`VolumeCache` holds PersistentVolumes, PersistentVolumeClaims and StorageClasses as the
informers deliver them, plus what this scheduler has *assumed* (a PV it means to bind, a
claim it asked to provision) between Reserve and the moment the informer shows the written
object: kube-scheduler's assume caches. Reads see the assumed version; `api_*` reads see the
informers'. One cache serves every profile (`VolumeCache.for_handle`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from phalanx.api.storage import PersistentVolume, PersistentVolumeClaim, StorageClass, volume_class

from .informed import attach_handlers, queue_event

if TYPE_CHECKING:
    from phalanx.api.core import Pod

log = logging.getLogger(__name__)

SHARED_KEY = "volumes/cache"
EXCLUSIVE_DISKS = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")
# Cluster-event resource names (the Kinds), as the plugins register for them.
PV_EVENT = "PersistentVolume"
PVC_EVENT = "PersistentVolumeClaim"
SC_EVENT = "StorageClass"


@dataclass(frozen=True, slots=True)
class PodClaims:
    """What a pod's volumes ask of the storage plugins (empty for most pods)."""

    # (claim name, generic ephemeral?) per PVC-backed volume, in volume order
    claims: tuple[tuple[str, bool], ...] = ()
    # "namespace/claim" of its persistentVolumeClaim volumes (counted per node, as kube's
    # NodeInfo.PVCRefCounts: ephemeral volumes are not)
    pvc_keys: tuple[str, ...] = ()
    # (source key, source dict) of its GCE PD / AWS EBS / RBD / iSCSI volumes
    disks: tuple[tuple[str, dict[str, Any]], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.claims or self.disks)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.claims)

    @property
    def pvc_names(self) -> tuple[str, ...]:
        """Claim names of the persistentVolumeClaim volumes only."""
        return tuple(name for name, eph in self.claims if not eph)


NO_CLAIMS = PodClaims()


def pod_claims(pod: Pod) -> PodClaims:
    volumes = pod.spec.volumes
    if not volumes:
        return NO_CLAIMS
    claims: list[tuple[str, bool]] = []
    disks: list[tuple[str, dict[str, Any]]] = []
    namespace = pod.metadata.namespace or ""
    for v in volumes:
        if not isinstance(v, dict):
            continue
        pvc = v.get("persistentVolumeClaim")
        if isinstance(pvc, dict):
            claims.append((str(pvc.get("claimName") or ""), False))
        elif v.get("ephemeral") is not None:
            claims.append((f"{pod.metadata.name}-{v.get('name', '')}", True))
        for key in EXCLUSIVE_DISKS:
            src = v.get(key)
            if isinstance(src, dict):
                disks.append((key, src))
    if not claims and not disks:
        return NO_CLAIMS
    keys = tuple(f"{namespace}/{name}" for name, eph in claims if not eph)
    return PodClaims(tuple(claims), keys, tuple(disks))


def count_claims(refs: dict[str, int], keys: tuple[str, ...], delta: int) -> None:
    """Add `delta` to the use count of each claim key (dropping zeros)."""
    for k in keys:
        n = refs.get(k, 0) + delta
        if n > 0:
            refs[k] = n
        else:
            refs.pop(k, None)


class VolumeCache:
    """PVs by name, PVCs by `namespace/name`, StorageClasses by name, with assumptions."""

    def __init__(self) -> None:
        self.pvs: dict[str, PersistentVolume] = {}
        self.pvcs: dict[str, PersistentVolumeClaim] = {}
        self.classes: dict[str, StorageClass] = {}
        self._assumed_pvs: dict[str, PersistentVolume] = {}
        self._assumed_pvcs: dict[str, PersistentVolumeClaim] = {}
        self._by_class: dict[str, dict[str, None]] = {}
        self._waiters: list[asyncio.Future[None]] = []
        # Called with (kind, old, new) after every informer change (the scheduler's queue).
        self.listeners: list[Callable[[str, Any, Any], None]] = []

    # --- wiring -------------------------------------------------------------------------

    @classmethod
    def for_handle(cls, handle: Any) -> VolumeCache:
        """The scheduler's shared cache, fed by its informers (a bare one without them)."""
        sched = getattr(handle, "scheduler", None)
        shared = getattr(handle, "shared", None)
        if sched is None or shared is None:
            return shared(SHARED_KEY, cls) if shared is not None else cls()

        def build() -> VolumeCache:
            cache = cls()
            cache.attach(sched.informers)
            # Changes may make pods schedulable: tell the queue (looked up at call time, as
            # plugins are built before the scheduler's queue).
            cache.listeners.append(lambda kind, old, new: queue_event(sched, kind, old, new))
            return cache

        cache: VolumeCache = shared(SHARED_KEY, build)
        return cache

    def attach(self, informers: Any) -> None:
        attach_handlers(informers, (
            (PersistentVolume, self.set_pv, self.delete_pv),
            (PersistentVolumeClaim, self.set_pvc, self.delete_pvc),
            (StorageClass, self.set_class, self.delete_class),
        ), "volume cache")

    # --- informer side --------------------------------------------------------------------

    def set_pv(self, pv: PersistentVolume, old: PersistentVolume | None = None) -> None:
        name = pv.name
        prev = self.pvs.get(name)
        if prev is not None:
            self._by_class.get(volume_class(prev), {}).pop(name, None)
        self.pvs[name] = pv
        self._by_class.setdefault(volume_class(pv), {})[name] = None
        self._assumed_pvs.pop(name, None)  # the informer's version is newer than any guess
        self._changed(PV_EVENT, old if old is not None else prev, pv)

    def delete_pv(self, pv: PersistentVolume) -> None:
        prev = self.pvs.pop(pv.name, None)
        if prev is not None:
            self._by_class.get(volume_class(prev), {}).pop(pv.name, None)
        self._assumed_pvs.pop(pv.name, None)
        self._changed(PV_EVENT, pv, None)

    def set_pvc(self, pvc: PersistentVolumeClaim, old: PersistentVolumeClaim | None = None) -> None:
        key = pvc.key
        prev = self.pvcs.get(key)
        self.pvcs[key] = pvc
        self._assumed_pvcs.pop(key, None)
        self._changed(PVC_EVENT, old if old is not None else prev, pvc)

    def delete_pvc(self, pvc: PersistentVolumeClaim) -> None:
        self.pvcs.pop(pvc.key, None)
        self._assumed_pvcs.pop(pvc.key, None)
        self._changed(PVC_EVENT, pvc, None)

    def set_class(self, sc: StorageClass, old: StorageClass | None = None) -> None:
        prev = self.classes.get(sc.name)
        self.classes[sc.name] = sc
        self._changed(SC_EVENT, old if old is not None else prev, sc)

    def delete_class(self, sc: StorageClass) -> None:
        self.classes.pop(sc.name, None)
        self._changed(SC_EVENT, sc, None)

    def _changed(self, kind: str, old: Any, new: Any) -> None:
        waiters, self._waiters = self._waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)
        for fn in self.listeners:
            try:
                fn(kind, old, new)
            except Exception:  # a listener must not break the informer
                log.exception("volume cache listener failed")

    async def wait_for_change(self, timeout: float) -> None:
        """Until the next informer change (or `timeout` loop seconds)."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await asyncio.wait_for(asyncio.shield(fut), timeout)
        except TimeoutError:
            pass

    # --- reads (assumed versions first) ----------------------------------------------------

    def pv(self, name: str) -> PersistentVolume | None:
        return self._assumed_pvs.get(name) or self.pvs.get(name)

    def pvc(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        key = f"{namespace}/{name}"
        return self._assumed_pvcs.get(key) or self.pvcs.get(key)

    def storage_class(self, name: str) -> StorageClass | None:
        return self.classes.get(name)

    def pvs_of_class(self, class_name: str) -> list[PersistentVolume]:
        """PVs of a class (assumed versions), by name: a stable order for tie-breaks."""
        names = sorted(self._by_class.get(class_name, ()))
        return [p for n in names if (p := self.pv(n)) is not None]

    def api_pv(self, name: str) -> PersistentVolume | None:
        return self.pvs.get(name)

    def api_pvc(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        return self.pvcs.get(f"{namespace}/{name}")

    # --- assumptions ----------------------------------------------------------------------

    def assume_pv(self, pv: PersistentVolume) -> None:
        self._assumed_pvs[pv.name] = pv

    def assume_pvc(self, pvc: PersistentVolumeClaim) -> None:
        self._assumed_pvcs[pvc.key] = pvc

    def restore_pv(self, name: str) -> None:
        self._assumed_pvs.pop(name, None)

    def restore_pvc(self, key: str) -> None:
        self._assumed_pvcs.pop(key, None)
