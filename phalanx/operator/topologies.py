"""The topologies the operator reads: ClusterTopologyBindings, and legacy ClusterTopologies.

With topology-aware scheduling on, the operator watches `ClusterTopologyBinding` (Grove's
current API) and, where the server serves it, the legacy `ClusterTopology`. A name resolves
to the binding of that name, else the legacy object of that name. A kind the server does not
serve (its CRD is not installed, e.g. Grove's own CRDs have no ClusterTopology) is not
watched, and a warning says so once at start-up, instead of an informer retrying a 404
forever and keeping the operator from becoming ready.

Controllers subscribe before start (`watch`); the informers are created in `attach`, which
OperatorManager awaits before it starts the informers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from phalanx.api.grove import AnyTopology, ClusterTopology, ClusterTopologyBinding
from phalanx.cluster.controller import Controller, Manager, own_key
from phalanx.cluster.informer import Informer

log = logging.getLogger(__name__)

TOPOLOGY_KINDS: tuple[type[AnyTopology], ...] = (ClusterTopologyBinding, ClusterTopology)


class TopologyCache:
    def __init__(self, manager: Manager) -> None:
        self._manager = manager
        self._informers: dict[type, Informer[Any]] = {}
        self._watches: list[tuple[Controller, Any, Any, tuple[type, ...]]] = []
        self.attached = False

    def watch(self, controller: Controller, mapper: Callable[[Any], Iterable[str]] | None = None,
              predicate: Callable[[Any, Any], bool] | None = None,
              kinds: tuple[type, ...] = TOPOLOGY_KINDS) -> None:
        """`controller.watch` on each topology kind's informer, once attached."""
        self._watches.append((controller, mapper or own_key, predicate, kinds))
        for kind, inf in self._informers.items():
            if kind in kinds:
                controller.watch(inf, mapper or own_key, predicate=predicate)

    async def attach(self, client: Any) -> None:
        """Create the informers of the kinds the server serves (idempotent)."""
        if self.attached:
            return
        self.attached = True
        serves = getattr(client, "serves", None)
        for kind in TOPOLOGY_KINDS:
            if serves is not None and not await serves(kind):
                if kind is ClusterTopologyBinding:
                    log.warning("the API server does not serve %s %s: topology constraints "
                                "resolve only through legacy ClusterTopologies",
                                kind.API_VERSION, kind.PLURAL)
                else:
                    log.info("the API server does not serve the legacy %s %s; reading "
                             "ClusterTopologyBindings only", kind.API_VERSION, kind.PLURAL)
                continue
            inf = self._manager.informer(kind)
            self._informers[kind] = inf
            for controller, mapper, predicate, kinds in self._watches:
                if kind in kinds:
                    controller.watch(inf, mapper, predicate=predicate)

    def informer(self, kind: type) -> Informer[Any] | None:
        return self._informers.get(kind)

    def get(self, name: str) -> AnyTopology | None:
        """The ClusterTopologyBinding `name`, else the legacy ClusterTopology `name`."""
        for kind in TOPOLOGY_KINDS:
            inf = self._informers.get(kind)
            found = inf.get(name) if inf is not None else None
            if found is not None:
                return found  # type: ignore[no-any-return]
        return None

    def names(self) -> list[str]:
        return sorted({o.name for inf in self._informers.values() for o in inf.list()})
