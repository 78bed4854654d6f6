"""The operator's informers as its scheduler backends' cache (backends.base.CacheReader).

Grove's backends read the PodCliqueSet behind a PodGang (KAI's and Volcano's queue) and the
topology its constraints name through controller-runtime's cached client; ours asked the API
server, once per PodGang sync. The objects handed out are the informers' own: backends read
them and change nothing."""

from __future__ import annotations

from typing import Any, TypeVar

from phalanx.cluster.informer import Informer
from phalanx.cluster.objects import object_key

from .topologies import TopologyCache

T = TypeVar("T")


class InformerCache:
    """`informers` by kind; `topologies` for the topology kinds, whose informers exist only
    once it is attached (and only for the kinds the server serves)."""

    def __init__(self, informers: dict[type, Informer[Any]],
                 topologies: TopologyCache | None = None) -> None:
        self._informers = informers
        self._topologies = topologies

    def cached(self, kind: type[T], name: str, namespace: str | None) -> T | None:
        informer = self._informers.get(kind)
        if informer is None and self._topologies is not None:
            informer = self._topologies.informer(kind)
        return None if informer is None else informer.get(object_key(namespace, name))
