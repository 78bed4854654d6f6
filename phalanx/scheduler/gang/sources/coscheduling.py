"""scheduling.sigs.k8s.io PodGroup and Koordinator gang annotations -> Gang (koord-scheduler).

Read as Koordinator reads them (pkg/scheduler/plugins/coscheduling, apis/extension):

- A pod names its gang with, first found wins: the PodGroup label
  `pod-group.scheduling.sigs.k8s.io` (or the newer `scheduling.x-k8s.io/pod-group`, which
  Koordinator does not read: an addition), the lightweight-coscheduling label
  `pod-group.scheduling.sigs.k8s.io/name`, or the annotation `gang.scheduling.koordinator.sh/name`.
- A pod with the PodGroup label belongs to that PodGroup: its gang annotations are never read,
  and it waits for the PodGroup.
- Any other gang pod declares the gang itself: minimum from the label
  `pod-group.scheduling.sigs.k8s.io/min-available` if set, else the annotation
  `.../min-available`; with `total-number`, `mode`, `match-policy`, `waiting-time`, `groups`,
  `network-topology-spec`. The first declaration wins (the oldest pod's); a PodGroup of the
  same name overrides it. A declaration without a valid minimum declares nothing: the pods wait
  for a PodGroup, and the reason (the annotation and its value) is in the Warning Event.
- A PodGroup gives `spec.minMember` and `spec.scheduleTimeoutSeconds`; from its annotations only
  `total-number`, `mode`, `match-policy`, `groups` and `network-topology-spec` (never
  `min-available` or `waiting-time`).

Invalid values are ignored as Koordinator ignores them: `mode` other than exactly `Strict` or
`NonStrict` is Strict; `groups` that is not a JSON list of strings leaves the gang its own
group; `waiting-time` that is not a positive Go duration, and `scheduleTimeoutSeconds` <= 0,
fall back to the profile's default wait; `total-number` below the minimum is the minimum; an
unknown `match-policy` is the profile's default. A minimum of 0 makes the pods ordinary pods.
One addition: a `groups` entry without a namespace names a gang of the gang's own namespace
(Koordinator would look for a gang without a namespace, which never exists).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, ClassVar

from phalanx.api import labels
from phalanx.api.duration import parse_duration
from phalanx.api.scheduling import CoschedulingPodGroup

from ..model import (
    Gang,
    GangId,
    GangMode,
    MatchPolicy,
    MemberRef,
    ObjectRef,
    PackConstraint,
    PackScope,
    Source,
    gang_id,
)
from .base import Levels, LevelsProvider, annotations_of, labels_of

# Koordinator network-topology gather rules (written by the koordinator backend).
ANNOTATION_NETWORK_TOPOLOGY_SPEC = labels.ANNOTATION_KOORD_NETWORK_TOPOLOGY_SPEC
# Which members count towards the minimum (extension.AnnotationGangMatchPolicy), and its alias.
ANNOTATION_MATCH_POLICY = "gang.scheduling.koordinator.sh/match-policy"
ANNOTATION_MATCH_POLICY_ALIAS = "pod-group.scheduling.sigs.k8s.io/match-policy"
# kubernetes-sigs/scheduler-plugins' lightweight coscheduling labels (deprecated there, still
# read by Koordinator).
LABEL_LIGHTWEIGHT_NAME = "pod-group.scheduling.sigs.k8s.io/name"
LABEL_LIGHTWEIGHT_MIN_AVAILABLE = "pod-group.scheduling.sigs.k8s.io/min-available"

_INT32 = re.compile(r"[+-]?[0-9]+")


def go_int32(value: str | None) -> int | None:
    """strconv.ParseInt(value, 10, 32); None when Go would return an error."""
    if value is None or not _INT32.fullmatch(value):
        return None
    n = int(value)
    return n if -(2**31) <= n < 2**31 else None


def gang_mode(value: str | None) -> GangMode:
    """Exactly "Strict" or "NonStrict"; anything else (other case included) is Strict."""
    return GangMode.NON_STRICT if value == GangMode.NON_STRICT.value else GangMode.STRICT


def gang_groups(value: str | None, namespace: str) -> tuple[GangId, ...]:
    """A JSON list of "namespace/name" strings; anything else (not JSON, not a list, not
    strings) is ignored and the gang is its own group, as Koordinator's json.Unmarshal
    into []string fails on it."""
    if not value:
        return ()
    try:
        items = json.loads(value)
    except ValueError:
        return ()
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        return ()
    out: set[GangId] = set()
    for item in items:
        text = item.strip()
        if text:
            ns, _, name = text.rpartition("/")
            out.add(gang_id(Source.COSCHEDULING, ns or namespace, name))
    return tuple(sorted(out))


def waiting_time(value: str | None) -> float | None:
    """A positive Go duration ("30s", "5m"); None (the default wait) otherwise."""
    if not value:
        return None
    try:
        seconds = parse_duration(value)
    except ValueError:
        return None
    return seconds if seconds > 0 else None


def match_policy(ann: Mapping[str, str]) -> MatchPolicy | None:
    raw = ann.get(ANNOTATION_MATCH_POLICY) or ann.get(ANNOTATION_MATCH_POLICY_ALIAS)
    return MatchPolicy.parse(raw)


def total_number(ann: Mapping[str, str], minimum: int) -> int:
    n = go_int32(ann.get(labels.ANNOTATION_KOORD_GANG_TOTAL_NUMBER) or None)
    return n if n is not None and n >= minimum else minimum


def has_podgroup_label(pod: Any) -> bool:
    lbl = labels_of(pod)
    return bool(lbl.get(labels.LABEL_POD_GROUP) or lbl.get(labels.LABEL_POD_GROUP_X_K8S))


def gang_name(pod: Any) -> str | None:
    """extension.GetGangName: the PodGroup label, the lightweight label, the annotation."""
    if pod is None:
        return None
    lbl = labels_of(pod)
    return (
        lbl.get(labels.LABEL_POD_GROUP)
        or lbl.get(labels.LABEL_POD_GROUP_X_K8S)
        or lbl.get(LABEL_LIGHTWEIGHT_NAME)
        or annotations_of(pod).get(labels.ANNOTATION_KOORD_GANG_NAME)
        or None
    )


def declared_minimum(pod: Any) -> tuple[int | None, str | None]:
    """util.GetGangMinNumFromPod: (minimum, None), or (None, why there is none)."""
    raw = labels_of(pod).get(LABEL_LIGHTWEIGHT_MIN_AVAILABLE)
    key = LABEL_LIGHTWEIGHT_MIN_AVAILABLE
    if not raw:
        ann = annotations_of(pod)
        if labels.ANNOTATION_KOORD_GANG_MIN_AVAILABLE not in ann:
            return None, (
                f"no {labels.ANNOTATION_KOORD_GANG_MIN_AVAILABLE} annotation (or "
                f"{LABEL_LIGHTWEIGHT_MIN_AVAILABLE} label) declares the gang"
            )
        raw, key = (
            ann[labels.ANNOTATION_KOORD_GANG_MIN_AVAILABLE],
            labels.ANNOTATION_KOORD_GANG_MIN_AVAILABLE,
        )
    n = go_int32(raw)
    if n is None:
        return None, f"{key} {raw!r} is not an integer"
    return max(n, 0), None


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
                warnings.append(
                    f"topology layer {layer!r} ignored: no ClusterTopology level for it"
                )
                continue
            out.append(PackConstraint(key, rule.get("strategy") == "MustGather"))
        return (PackScope("podgroup", None, tuple(out)),) if out else ()

    def _gang(
        self,
        ns: str,
        name: str,
        ann: Mapping[str, str],
        minimum: int,
        timeout: float | None,
        ref: ObjectRef | None,
        generation: int | None,
        source: Source,
    ) -> Gang:
        warnings: list[str] = []
        raw_policy = ann.get(ANNOTATION_MATCH_POLICY) or ann.get(ANNOTATION_MATCH_POLICY_ALIAS)
        policy = match_policy(ann)
        if raw_policy and policy is None:
            warnings.append(
                f"{ANNOTATION_MATCH_POLICY} {raw_policy!r} is unknown; the default applies"
            )
        return Gang(
            id=gang_id(Source.COSCHEDULING, ns, name),
            source=source,
            namespace=ns,
            name=name,
            min_member=minimum,
            mode=gang_mode(ann.get(labels.ANNOTATION_KOORD_GANG_MODE)),
            gang_group=gang_groups(ann.get(labels.ANNOTATION_KOORD_GANG_GROUPS), ns),
            schedule_timeout=timeout,
            total_number=total_number(ann, minimum),
            packs=self._packs(ann, warnings),
            match_policy=policy,
            object_ref=ref,
            generation=generation,
            warnings=tuple(warnings),
        )

    def gangs(self, obj: CoschedulingPodGroup) -> list[Gang]:
        ns, name = obj.metadata.namespace or "", obj.metadata.name or ""
        spec = obj.spec
        timeout = spec.schedule_timeout_seconds
        return [
            self._gang(
                ns,
                name,
                annotations_of(obj),
                max(spec.min_member or 0, 0),
                float(timeout) if timeout is not None and timeout > 0 else None,
                ObjectRef(obj.api_version, obj.kind, ns, name),
                obj.metadata.generation,
                Source.COSCHEDULING,
            )
        ]

    def member(self, pod: Any) -> MemberRef | None:
        name = gang_name(pod)
        if not name:
            return None
        return MemberRef(gang_id(Source.COSCHEDULING, pod.metadata.namespace or "", name))

    def gang_from_pod(self, pod: Any) -> Gang | None:
        """The gang a pod declares; None for PodGroup-label pods and invalid minimums."""
        if has_podgroup_label(pod):
            return None
        name = gang_name(pod)
        if not name:
            return None
        minimum, _ = declared_minimum(pod)
        if minimum is None:
            return None
        ann = annotations_of(pod)
        timeout = waiting_time(ann.get(labels.ANNOTATION_KOORD_GANG_WAITING_TIME))
        ns = pod.metadata.namespace or ""
        return self._gang(ns, name, ann, minimum, timeout, None, None, Source.ANNOTATION)

    def declaration_problem(self, pod: Any) -> str | None:
        """Why a pod that names its gang by label or annotation declares none (shown while no
        PodGroup of that name exists)."""
        if has_podgroup_label(pod) or not gang_name(pod):
            return None
        _, why = declared_minimum(pod)
        return f"pod {pod.metadata.namespace}/{pod.metadata.name}: {why}" if why else None
