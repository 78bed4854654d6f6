"""The gang source protocol: one adapter per backend object kind.

A source answers two questions: which gangs an API object describes (`gangs`), and which
gang a pod says it belongs to (`member`). A pod is asked only of the sources registered for
its `spec.schedulerName`, because every Grove pod carries the `grove.io/podgang` label
whatever its backend, and a KAI pod must be counted against its KAI PodGroup, not the PodGang.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from ..model import Gang, MemberRef, Source

if TYPE_CHECKING:
    from phalanx.api.base import Resource


class GangSource(Protocol):
    source: ClassVar[Source]
    # The object kind whose informer feeds `gangs` (None: gangs come from pods only).
    kind: ClassVar[type[Resource] | None]

    def gangs(self, obj: Any) -> list[Gang]:
        """Every gang `obj` describes (several for a Workload with several pod groups)."""
        ...

    def member(self, pod: Any) -> MemberRef | None:
        """The gang the pod belongs to, or None when the pod names none for this source."""
        ...

    def gang_from_pod(self, pod: Any) -> Gang | None:
        """A gang the pod itself declares (Koordinator annotations); None for object sources."""
        ...


def annotations_of(obj: Any) -> Mapping[str, str]:
    return obj.metadata.annotations or {}


def labels_of(obj: Any) -> Mapping[str, str]:
    return obj.metadata.labels or {}


def positive_int(value: Any, default: int | None = None) -> int | None:
    """An int >= 1 from an int or a numeric string ("5"); anything else -> default."""
    try:
        n = int(str(value).strip()) if value is not None else None
    except (TypeError, ValueError):
        return default
    if n is None or n < 1:
        return default
    return n


def parse_seconds(value: Any) -> float | None:
    """Seconds from 30, "30", "30s", "5m", "1h30m" (Go duration syntax); None if invalid or <= 0."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if value > 0 else None
    from phalanx.api.duration import parse_duration

    text = str(value).strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            seconds = parse_duration(text)
        except ValueError:
            return None
    return seconds if seconds > 0 else None


def first(items: Iterable[Any]) -> Any:
    for item in items:
        return item
    return None


HOSTNAME_KEY = "kubernetes.io/hostname"


class Levels:
    """A ClusterTopology's levels (broadest first), to turn the topology vocabulary some
    backends write (Volcano HyperNode tiers, Koordinator layers) back into node-label keys.

    The backends encode (phalanx.backends.topology): Volcano tier 1 is the narrowest level
    above a node, counting up; Koordinator's layer of a level is its CamelCased domain plus
    "TopologyLayer", the host level being "NodeTopologyLayer".
    """

    def __init__(self, levels: list[tuple[str, str]]) -> None:
        self.levels = tuple(levels)  # (domain, node-label key)

    @classmethod
    def from_cluster_topology(cls, ct: Any) -> Levels:
        return cls([(lv.domain, lv.key) for lv in ct.spec.levels])

    @staticmethod
    def _is_host(domain: str, key: str) -> bool:
        return domain == "host" or key == HOSTNAME_KEY

    def key_of_tier(self, tier: int) -> str | None:
        above = [key for domain, key in self.levels if not self._is_host(domain, key)]
        if 1 <= tier <= len(above):
            return above[len(above) - tier]
        return None

    def key_of_layer(self, layer: str) -> str | None:
        for domain, key in self.levels:
            name = "NodeTopologyLayer" if self._is_host(domain, key) else (
                "".join(p.capitalize() for p in domain.split("-")) + "TopologyLayer"
            )
            if name == layer:
                return key
        if layer == "NodeTopologyLayer":
            return HOSTNAME_KEY
        return None


LevelsProvider = Callable[[], "Levels | None"]
