"""scheduling.sigs.k8s.io PodGroup and Koordinator gang annotations -> Gang (koord-scheduler).

Two ways to declare a gang, as Koordinator supports them:
- the PodGroup object (label `pod-group.scheduling.sigs.k8s.io: <name>` on pods, or the newer
  `scheduling.x-k8s.io/pod-group`): minMember, scheduleTimeoutSeconds, and Koordinator's
  annotations on the PodGroup for mode, gang groups, waiting time and topology;
- annotations on the pods only (`gang.scheduling.koordinator.sh/name` + `min-available`), used
  when no PodGroup object exists. Annotations on the PodGroup override its spec.

Gang groups (`gang.scheduling.koordinator.sh/groups`) list "namespace/name" of PodGroups (a
JSON list, or comma-separated) that are placed together.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from phalanx.api import labels
from phalanx.api.scheduling import CoschedulingPodGroup

from ..model import Gang, GangId, GangMode, MemberRef, ObjectRef, PackConstraint, PackScope, Source, gang_id
from .base import Levels, LevelsProvider, annotations_of, labels_of, parse_seconds, positive_int

# Koordinator network-topology gather rules (written by the koordinator backend).
ANNOTATION_NETWORK_TOPOLOGY_SPEC = "gang.scheduling.koordinator.sh/network-topology-spec"


def _gang_groups(value: str | None, namespace: str) -> tuple[GangId, ...]:
    if not value:
        return ()
    try:
        items = json.loads(value)
    except ValueError:
        items = value.split(",")
    if isinstance(items, str):
        items = [items]
    out: set[GangId] = set()
    for item in items if isinstance(items, list) else ():
        text = str(item).strip()
        if not text:
            continue
        ns, _, name = text.rpartition("/")
        out.add(gang_id(Source.COSCHEDULING, ns or namespace, name))
    return tuple(sorted(out))


class CoschedulingSource:
    source: ClassVar[Source] = Source.COSCHEDULING
    kind: ClassVar[type[CoschedulingPodGroup]] = CoschedulingPodGroup

    def __init__(self, levels: LevelsProvider | None = None) -> None:
        self._levels = levels

    def _packs(self, ann: Mapping[str, str], warnings: list[str]) -> tuple[PackScope, ...]:
        raw = ann.get(ANNOTATION_NETWORK_TOPOLOGY_SPEC)
        if not raw:
            return ()
        try:
            rules = json.loads(raw).get("gatherStrategy") or []
        except (ValueError, AttributeError):
            warnings.append(f"{ANNOTATION_NETWORK_TOPOLOGY_SPEC} is not valid JSON; ignored")
            return ()
        levels: Levels | None = self._levels() if self._levels else None
        out: list[PackConstraint] = []
        for rule in rules:
            layer = str(rule.get("layer", ""))
            key = levels.key_of_layer(layer) if levels is not None else None
            if key is None:
                warnings.append(f"topology layer {layer!r} ignored: no ClusterTopology level for it")
                continue
            out.append(PackConstraint(key, rule.get("strategy") == "MustGather"))
        return (PackScope("podgroup", None, tuple(out)),) if out else ()

    def _gang(
        self, ns: str, name: str, ann: Mapping[str, str], min_member: int, timeout: Any, ref: ObjectRef | None,
        generation: int | None, source: Source,
    ) -> Gang:
        warnings: list[str] = []
        return Gang(
            id=gang_id(Source.COSCHEDULING, ns, name),
            source=source,
            namespace=ns,
            name=name,
            min_member=min_member,
            mode=GangMode.parse(ann.get(labels.ANNOTATION_KOORD_GANG_MODE)),
            gang_group=_gang_groups(ann.get(labels.ANNOTATION_KOORD_GANG_GROUPS), ns),
            schedule_timeout=parse_seconds(ann.get(labels.ANNOTATION_KOORD_GANG_WAITING_TIME)) or parse_seconds(timeout),
            total_number=positive_int(ann.get(labels.ANNOTATION_KOORD_GANG_TOTAL_NUMBER)),
            packs=self._packs(ann, warnings),
            object_ref=ref,
            generation=generation,
            warnings=tuple(warnings),
        )

    def gangs(self, obj: CoschedulingPodGroup) -> list[Gang]:
        ns, name = obj.metadata.namespace or "", obj.metadata.name or ""
        ann = annotations_of(obj)
        min_member = positive_int(ann.get(labels.ANNOTATION_KOORD_GANG_MIN_AVAILABLE)) or obj.spec.min_member or 1
        ref = ObjectRef(obj.api_version, obj.kind, ns, name)
        return [self._gang(ns, name, ann, min_member, obj.spec.schedule_timeout_seconds, ref, obj.metadata.generation, Source.COSCHEDULING)]

    def member(self, pod: Any) -> MemberRef | None:
        lbl = labels_of(pod)
        name = lbl.get(labels.LABEL_POD_GROUP) or lbl.get(labels.LABEL_POD_GROUP_X_K8S)
        if not name:
            name = annotations_of(pod).get(labels.ANNOTATION_KOORD_GANG_NAME)
        if not name:
            return None
        return MemberRef(gang_id(Source.COSCHEDULING, pod.metadata.namespace or "", name))

    def gang_from_pod(self, pod: Any) -> Gang | None:
        ann = annotations_of(pod)
        ref = self.member(pod)
        min_available = positive_int(ann.get(labels.ANNOTATION_KOORD_GANG_MIN_AVAILABLE))
        if ref is None or min_available is None:
            return None
        ns = pod.metadata.namespace or ""
        name = ref.gang_id.partition("/")[2]
        return self._gang(ns, name, ann, min_available, None, None, None, Source.ANNOTATION)
