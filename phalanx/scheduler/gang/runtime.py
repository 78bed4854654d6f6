"""GangRuntime: one gang cache and manager per Scheduler, shared by every profile's plugins.

The gang plugins (coscheduling, topology, preemption) of all profiles see the same gangs:
a gang group may span schedulers' objects, and the waiting-pods map is scheduler-wide. The
runtime wires the cache to the scheduler's informers (pods, each source's gang kind, and the
ClusterTopology for sources that speak in tiers/layers) and its activation requests to the
queue. Informer handlers registered here run before the scheduler's own pod handler (plugins
are built first), so a new member is counted before PreEnqueue looks at it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from .cache import GangCache
from .manager import DEFAULT_SCHEDULE_TIMEOUT, GangManager
from .sources import GangSource, Levels, default_sources

if TYPE_CHECKING:
    from phalanx.cluster.informer_factory import InformerFactory
    from phalanx.scheduler.framework.interface import Handle
    from phalanx.scheduler.framework.types import PodInfo

    from .model import ObjectRef
    from .state import Member

log = logging.getLogger(__name__)

SHARED_KEY = "phalanx.scheduler.gang.runtime"


def member_info(handle: Handle, m: Member) -> PodInfo:
    """A member's PodInfo (its pod object must be known), cached on the member until that
    object changes: the scheduler's own (queued or assumed) when it is of the same object,
    else built from it."""
    cached: Any = m._info
    if cached is None or cached.pod is not m.pod:
        cached = handle.pod_info(m.key)
        if cached is None or cached.pod is not m.pod:
            from phalanx.scheduler.framework.types import PodInfo

            cached = PodInfo(m.pod)  # type: ignore[arg-type]
        m._info = cached
    return cached  # type: ignore[no-any-return]


class GangRuntime:
    def __init__(
        self,
        scheduler_names: Iterable[str],
        *,
        default_timeout: float = DEFAULT_SCHEDULE_TIMEOUT,
        sources: dict[str, list[GangSource]] | None = None,
    ) -> None:
        self._levels: Levels | None = None
        self._topologies: dict[tuple[int, str], Any] = {}
        all_sources = sources if sources is not None else default_sources(lambda: self._levels)
        served = set(scheduler_names)
        self.cache = GangCache({k: v for k, v in all_sources.items() if k in served})
        self.manager = GangManager(self.cache, default_timeout=default_timeout)
        self._activate: Callable[[list[str]], None] | None = None
        self._pending_activation: list[str] = []
        self.cache.add_activate_listener(self._on_activate)
        self.status: Any = None  # the GangStatusController, attached by the plugin when enabled
        self._object_informers: list[tuple[GangSource, Any]] = []
        self._informers: Any = None
        self._attached = False

    # --- wiring -------------------------------------------------------------------------

    @classmethod
    def for_handle(cls, handle: Handle, default_timeout: float = DEFAULT_SCHEDULE_TIMEOUT) -> GangRuntime:
        """The scheduler's shared runtime (created and wired on first use)."""
        sched = getattr(handle, "scheduler", None)
        if sched is None or not hasattr(sched, "shared"):
            rt = cls([handle.profile_name], default_timeout=default_timeout)
            rt.set_activator(handle.activate)
            return rt

        def build() -> GangRuntime:
            names = [p.scheduler_name for p in sched.config.profiles]
            rt = cls(names, default_timeout=default_timeout)
            rt.set_activator(lambda keys: sched.queue.activate(keys) if getattr(sched, "queue", None) else None)
            rt._informers = sched.informers
            if not hasattr(sched.client, "serves"):
                # The embedded cluster serves every kind: watch them all now. Against a real
                # server, `start` (before the informers start) watches only served kinds.
                rt.attach_informers(sched.informers)
            return rt

        rt: GangRuntime = sched.shared(SHARED_KEY, build)
        return rt

    def find(self, namespace: str, name: str) -> list[str]:
        """Ids of the gangs named `name` in `namespace`, whatever their source (a PodGang and
        its KAI PodGroup share a name), plus gangs of a Workload named `name`."""
        out = []
        for st in self.cache.gangs():
            _, _, rest = st.id.partition(":")
            ns, _, gname = rest.partition("/")
            if ns == namespace and (gname == name or gname.startswith(name + "/")):
                out.append(st.id)
        return out

    def explain(self, namespace: str, name: str) -> list[dict[str, Any]]:
        """The gang status controller's view of each gang with that name (phalanx explain)."""
        if self.status is None:
            return []
        return [e for gid in self.find(namespace, name) if (e := self.status.explain(gid)) is not None]

    def cached_object(self, ref: ObjectRef) -> Any:
        """The gang object `ref` names as the scheduler's informer holds it (shared,
        read-only), or None where no informer reads that kind."""
        for src, inf in self._object_informers:
            kind = src.kind
            if kind.KIND == ref.kind and kind.API_VERSION == ref.api_version:
                return inf.get(ref.name, ref.namespace)
        return None

    def set_activator(self, fn: Callable[[list[str]], None]) -> None:
        self._activate = fn

    def _on_activate(self, keys: list[str]) -> None:
        if self._activate is None:
            self._pending_activation.extend(keys)
            return
        try:
            self._activate(keys)
        except Exception:  # the queue may not exist yet while profiles are built
            log.debug("activation of %s deferred", keys, exc_info=True)

    async def start(self, client: Any) -> None:
        """Watch pods, and each gang kind and the ClusterTopology the server serves (a cluster
        without Volcano's CRDs must not keep the scheduler from syncing); a kind not served
        yet is read once it is (its CRD installed later: deferred_informers.py).
        Idempotent; called by the gang plugins' `start` hook."""
        if self._attached or self._informers is None:
            return
        serves = getattr(client, "serves", None)
        skip: set[type] = set()
        if serves is not None:
            from phalanx.api.grove import ClusterTopology, ClusterTopologyBinding

            topology_kinds = {ClusterTopology, ClusterTopologyBinding}
            for kind in {*(getattr(s, "kind", None) for s in self.cache.sources), *topology_kinds} - {None}:
                try:
                    ok = await serves(kind)
                except Exception:  # discovery failed: try to watch it anyway
                    ok = True
                if not ok:
                    skip.add(kind)
                    log.info("%s %s is not served: gangs of that kind are read once it is",
                             kind.API_VERSION, kind.KIND)
        self.attach_informers(self._informers, skip=skip, served=serves)

    def attach_informers(self, informers: InformerFactory, *, skip: set[type] | frozenset[type] = frozenset(),
                         served: Callable[[type], Awaitable[bool]] | None = None) -> None:
        """Handlers on the informers of pods, gang kinds and topologies; kinds in `skip`
        are not served: with `served`, their informers start once they are, else never."""
        from phalanx.api.core import Pod
        from phalanx.api.grove import ClusterTopology, ClusterTopologyBinding

        if self._attached:
            return
        self._attached = True

        def informer(kind: type, source: str | None = None) -> Any:
            on_served: Callable[[], None] | None = None
            if kind in skip and served is not None and source is not None:
                # Its pods' GangNotFound says why, until it is served.
                self.cache.unserved[source] = f"{kind.API_VERSION} {kind.KIND}"

                def clear() -> None:
                    self.cache.unserved.pop(source, None)

                on_served = clear
            return informers.informer_if_served(kind, kind not in skip, served, on_served)

        pods = informers.informer(Pod)
        pods.add_handler(self._guard(self.cache.add_pod), self._guard(self.cache.update_pod), self._guard(self.cache.delete_pod))
        for src in self.cache.sources:
            kind = getattr(src, "kind", None)
            inf = None if kind is None else informer(kind, src.source)
            if inf is None:
                continue
            self._object_informers.append((src, inf))
            inf.add_handler(
                self._guard(lambda obj, s=src: self.cache.set_object(s, obj)),
                self._guard(lambda _old, obj, s=src: self.cache.set_object(s, obj)),
                self._guard(lambda obj, s=src: self.cache.delete_object(s, obj)),
            )
        for topo_kind in (ClusterTopologyBinding, ClusterTopology):  # Grove's current, legacy
            topo = informer(topo_kind)
            if topo is None:
                continue
            topo.add_handler(
                self._guard(self._on_topology),
                self._guard(lambda _old, obj: self._on_topology(obj)),
                self._guard(lambda obj: self._on_topology(obj, deleted=True)),
            )

    @staticmethod
    def _guard(fn: Callable[..., None]) -> Callable[..., None]:
        def call(*args: Any) -> None:
            try:
                fn(*args)
            except Exception:  # informer handlers must not raise
                log.exception("gang cache handler failed")

        return call

    def _on_topology(self, ct: Any, deleted: bool = False) -> None:
        """Keep the levels of the (first, by name) ClusterTopology for tier/layer lookups."""
        # ClusterTopologyBindings first, then legacy ClusterTopologies, each by name.
        name = (0 if ct.KIND == "ClusterTopologyBinding" else 1, ct.metadata.name or "")
        if deleted:
            self._topologies.pop(name, None)
        else:
            self._topologies[name] = ct
        levels = Levels.from_cluster_topology(self._topologies[min(self._topologies)]) if self._topologies else None
        if (levels.levels if levels else None) == (self._levels.levels if self._levels else None):
            return
        self._levels = levels
        # Sources that translate tiers/layers read the levels: re-read their objects.
        for src, inf in self._object_informers:
            if hasattr(src, "_levels"):
                for obj in inf.list():
                    self.cache.set_object(src, obj)
