"""Stand-in pods and a gang source for the framework-free gang tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar

from phalanx.scheduler.gang.model import Gang, GangMode, MemberGroup, MemberRef, ObjectRef, Source, gang_id


@dataclass
class Meta:
    name: str
    namespace: str = "ns"
    uid: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None
    generation: int | None = 1


@dataclass
class Spec:
    scheduler_name: str = "test-scheduler"
    node_name: str | None = None


@dataclass
class PodStatus:
    phase: str = "Pending"


@dataclass
class FakePod:
    metadata: Meta
    spec: Spec = field(default_factory=Spec)
    status: PodStatus = field(default_factory=PodStatus)


def pod(name: str, gang: str | None, *, group: str | None = None, t: float = 0.0, node: str | None = None) -> FakePod:
    labels = {"gang": gang} if gang else {}
    if group:
        labels["group"] = group
    return FakePod(
        Meta(name, uid=f"uid-{name}", labels=labels, creation_timestamp=datetime.fromtimestamp(1000 + t, UTC)),
        Spec(node_name=node),
    )


@dataclass
class FakeGangObject:
    metadata: Meta
    min_member: int
    groups: dict[str, int] = field(default_factory=dict)
    mode: GangMode = GangMode.STRICT
    gang_group: tuple[str, ...] = ()
    timeout: float | None = None


def gang_obj(name: str, min_member: int, **kw: Any) -> FakeGangObject:
    return FakeGangObject(Meta(name), min_member, **kw)


class FakeSource:
    """Pods name their gang in label `gang` (and sub-group in `group`)."""

    source: ClassVar[Source] = Source.PODGANG
    kind: ClassVar[Any] = None

    def gangs(self, obj: FakeGangObject) -> list[Gang]:
        ns, name = obj.metadata.namespace, obj.metadata.name
        return [
            Gang(
                id=gang_id(Source.PODGANG, ns, name),
                source=Source.PODGANG,
                namespace=ns,
                name=name,
                min_member=obj.min_member,
                groups=tuple(MemberGroup(g, n) for g, n in sorted(obj.groups.items())),
                mode=obj.mode,
                gang_group=tuple(sorted(gang_id(Source.PODGANG, ns, g) for g in obj.gang_group)),
                schedule_timeout=obj.timeout,
                object_ref=ObjectRef("test/v1", "Gang", ns, name),
            )
        ]

    def member(self, p: FakePod) -> MemberRef | None:
        g = p.metadata.labels.get("gang")
        if not g:
            return None
        return MemberRef(gang_id(Source.PODGANG, p.metadata.namespace, g), p.metadata.labels.get("group"))

    def gang_from_pod(self, p: FakePod) -> Gang | None:
        return None


def gid(name: str) -> str:
    return gang_id(Source.PODGANG, "ns", name)
