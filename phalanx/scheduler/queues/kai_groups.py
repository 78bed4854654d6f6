"""What the queue system reads per pod: its KAI queue and its explicit preemptibility, and which
pods are KAI's at all.

- Schedulers that read KAI queues: kai-scheduler, phalanx-scheduler and any profile of another
  name. A profile standing in for a peer that does not (`NO_KAI_QUEUES`: default-scheduler,
  volcano, koord-scheduler, scheduler-plugins) has its pods outside the queue system, like
  another scheduler's, whatever KAI label they carry: that peer would not read it.
- A kai-scheduler pod takes its KAI PodGroup's `spec.queue` and `spec.preemptibility` (the
  PodGroup is what KAI reads; `pod-group-name` names it); any other, its own
  `kai.scheduler/queue` and `kai.scheduler/preemptibility` labels (phalanx-scheduler's backend
  copies the PodCliqueSet's onto its pods).
- Explicit preemptibility wins over the priority rule (KAI's CalculatePreemptibility): a
  non-preemptible job stays within its queue's quota and is never a victim.
- Volcano's `volcano.sh/preemptable` (annotation, else label; `strconv.ParseBool`, an
  unreadable value counting as false, as Volcano's GetPodPreemptable): "false" keeps a volcano
  pod from being a victim.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from phalanx.api import labels
from phalanx.api.schedulerplugins import SCHEDULER_PLUGINS

if TYPE_CHECKING:
    from phalanx.api.core import Pod

NO_KAI_QUEUES = frozenset({labels.SCHEDULER_DEFAULT, labels.SCHEDULER_VOLCANO,
                           labels.SCHEDULER_KOORDINATOR, SCHEDULER_PLUGINS})
PREEMPTIBLE, NON_PREEMPTIBLE = labels.KAI_PREEMPTIBILITY_VALUES
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})  # strconv.ParseBool's


def reads_kai_queues(scheduler_name: str) -> bool:
    return scheduler_name not in NO_KAI_QUEUES


@dataclass(frozen=True, slots=True)
class GroupInfo:
    """What a KAI PodGroup tells the queue system about its pods."""

    queue: str | None = None
    preemptibility: str | None = None
    node_pool: str | None = None


def group_info(group: Any) -> GroupInfo:
    spec = group.spec
    return GroupInfo(spec.queue or None, spec.preemptibility or None,
                     (group.metadata.labels or {}).get(labels.LABEL_KAI_NODE_POOL) or None)


class KaiGroups:
    """KAI PodGroups by (namespace, name), and the kai-scheduler pods seen in each (to look
    at them again when their PodGroup changes)."""

    def __init__(self) -> None:
        self.groups: dict[tuple[str, str], GroupInfo] = {}
        self.pods: dict[tuple[str, str], set[str]] = {}

    def update(self, group: Any, deleted: bool = False) -> set[str] | None:
        """Record the PodGroup; the keys of its pods when what it says changed, else None."""
        key = (group.metadata.namespace or "", group.metadata.name or "")
        info = None if deleted else group_info(group)
        if self.groups.get(key) == info:
            return None
        if info is None or info == GroupInfo():
            self.groups.pop(key, None)
        else:
            self.groups[key] = info
        return set(self.pods.pop(key, ()) if deleted else self.pods.get(key, ()))

    def forget(self, pod: Pod) -> None:
        """The pod is gone."""
        name = pod.metadata.annotations.get(labels.ANNOTATION_KAI_POD_GROUP)
        if name:
            members = self.pods.get((pod.metadata.namespace or "", name))
            if members is not None:
                members.discard(pod.key)

    def of(self, pod: Pod) -> GroupInfo | None:
        """A kai-scheduler pod's PodGroup (remembering the pod under it), else None."""
        if pod.spec.scheduler_name != labels.SCHEDULER_KAI:
            return None
        name = pod.metadata.annotations.get(labels.ANNOTATION_KAI_POD_GROUP)
        if not name:
            return None
        gkey = (pod.metadata.namespace or "", name)
        self.pods.setdefault(gkey, set()).add(pod.key)
        return self.groups.get(gkey)


def explicit_preemptibility(pod: Pod, group: GroupInfo | None) -> bool | None:
    """True/False when the pod's job says so (KAI's PodGroup or label), None when its priority
    decides. A value KAI does not parse counts as unset (KAI's grouper skips a pod's)."""
    if pod.spec.scheduler_name == labels.SCHEDULER_KAI and group is not None:
        value = group.preemptibility
    else:
        value = pod.metadata.labels.get(labels.LABEL_KAI_PREEMPTIBILITY)
    if value == PREEMPTIBLE:
        return True
    if value == NON_PREEMPTIBLE:
        return False
    return None


def volcano_preemptable(pod: Pod) -> bool:
    """Volcano's GetPodPreemptable: the annotation, else the label; default true."""
    for meta in (pod.metadata.annotations, pod.metadata.labels):
        value = meta.get(labels.VOLCANO_PREEMPTABLE)
        if value is not None:
            return value in _GO_TRUE  # false, or unreadable (Volcano: not preemptable)
    return True
