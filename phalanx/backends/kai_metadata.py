"""What KAI's grove grouper reads from a workload's metadata into the PodGroup, resolved as it
does (pkg/podgrouper/podgrouper/plugins/grove/grove_grouper.go, on the default grouper).

KAI reads the PodGang's labels and annotations first -- Grove mirrors the PodCliqueSet's onto
it (Grove #573) -- then the top owner's (the PodCliqueSet), then the pod's (a clique
template's, which its pods carry). Phalanx's PodGangs carry only what an admin put there, so
the PodCliqueSet stands for the mirror:

- queue: `kai.scheduler/queue` (PodGang, PodCliqueSet, the PodGang's own clique templates,
  any clique template); else `project` (PodGang, PodCliqueSet, clique templates) with
  `-<kai.scheduler/node-pool of the pods>` appended when they carry one
  (default_grouper.go `calculateQueueName`); else the profile's `defaultQueue`;
- priorityClassName: the `priorityClassName` label (PodGang, PodCliqueSet) over the PodGang's
  `spec.priorityClassName` (`parseMetadataFromTopOwner`);
- preemptibility: `kai.scheduler/preemptibility` (PodGang, PodCliqueSet, clique templates);
  only `preemptible` / `non-preemptible` (admission refuses anything else);
- topology: `kai.scheduler/topology`, `-required-placement`, `-preferred-placement` annotations
  (PodGang, PodCliqueSet) fill what the PodGang's pack constraint leaves unset;
- labels: the PodCliqueSet's (not `grove.io/` ones, which Grove does not mirror) under the
  operator's own, plus the pods' `kai.scheduler/node-pool` (`addNodePoolLabel`): KAI's
  scheduling shards pick PodGroups by that label.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from phalanx.api import labels as L

from . import hints
from .base import Capability, ValidationIssue
from .objects import member_templates

if TYPE_CHECKING:
    from phalanx.api.grove import PodCliqueSet, PodGang

GROVE_PREFIX = "grove.io/"
PROJECT: hints.Chain = (hints.Place("pcs", "labels", L.LABEL_KAI_PROJECT),
                        hints.Place("clique", "labels", L.LABEL_KAI_PROJECT))
NODE_POOL: hints.Chain = (hints.Place("clique", "labels", L.LABEL_KAI_NODE_POOL),)
PRIORITY_CLASS: hints.Chain = (hints.Place("pcs", "labels", L.LABEL_KAI_PRIORITY_CLASS),)
TOPOLOGY_ANNOTATIONS = (L.ANNOTATION_KAI_TOPOLOGY, L.ANNOTATION_KAI_TOPOLOGY_REQUIRED,
                        L.ANNOTATION_KAI_TOPOLOGY_PREFERRED)


@dataclass(slots=True)
class KaiMetadata:
    queue: str | None = None
    priority_class_name: str | None = None
    preemptibility: str | None = None
    # The kai.scheduler/topology* annotations found (key -> value).
    topology: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)


def _own(podgang: PodGang, kind: str, key: str) -> str | None:
    meta = podgang.metadata.labels if kind == "labels" else podgang.metadata.annotations
    return meta.get(key) or None


def _members(pcs: PodCliqueSet, podgang: PodGang) -> list[int]:
    return hints.clique_indices(pcs, member_templates(pcs, [g.name for g in podgang.spec.pod_groups]))


def podgroup_metadata(podgang: PodGang, pcs: PodCliqueSet | None,
                      default_queue: str | None = None) -> KaiMetadata:
    meta = KaiMetadata()
    members = _members(pcs, podgang) if pcs is not None else []

    def value(key: str, chain: hints.Chain, own_cliques_only: bool = False) -> str | None:
        own = _own(podgang, chain[0].kind, key)
        if own or pcs is None:
            return own
        if own_cliques_only:
            found = hints.first(pcs, chain, members)
            return found[1] if found is not None else None
        return hints.pcs_value(pcs, podgang, chain)

    meta.queue = value(L.LABEL_KAI_QUEUE, hints.KAI_QUEUE)
    if not meta.queue:
        project = value(L.LABEL_KAI_PROJECT, PROJECT, own_cliques_only=True)
        if project:  # the node pool of the pods (calculateQueueName reads the pod's label)
            found = hints.first(pcs, NODE_POOL, members) if pcs is not None else None
            meta.queue = f"{project}-{found[1]}" if found else project
    meta.queue = meta.queue or default_queue
    meta.priority_class_name = (value(L.LABEL_KAI_PRIORITY_CLASS, PRIORITY_CLASS)
                                or podgang.spec.priority_class_name)
    preemptibility = value(L.LABEL_KAI_PREEMPTIBILITY, hints.KAI_PREEMPTIBILITY,
                           own_cliques_only=True)
    if preemptibility in L.KAI_PREEMPTIBILITY_VALUES:
        meta.preemptibility = preemptibility
    for key in TOPOLOGY_ANNOTATIONS:
        found = _own(podgang, "annotations", key) or (
            pcs.metadata.annotations.get(key) if pcs is not None else None)
        if found:
            meta.topology[key] = found
    if pcs is not None:
        meta.labels = {k: v for k, v in pcs.metadata.labels.items()
                       if not k.startswith(GROVE_PREFIX)}
    if L.LABEL_KAI_NODE_POOL not in meta.labels:
        pool = _own(podgang, "labels", L.LABEL_KAI_NODE_POOL) or (
            value(L.LABEL_KAI_NODE_POOL, NODE_POOL, own_cliques_only=True))
        if pool:
            meta.labels[L.LABEL_KAI_NODE_POOL] = pool
    return meta


def top_level_levels(required: str | None, preferred: str | None, meta: KaiMetadata
                     ) -> tuple[str | None, str | None, bool]:
    """(required, preferred, from annotations) of the PodGroup's own topologyConstraint: the
    PodGang's pack constraint, each level it leaves unset taken from the annotations."""
    ann_required = meta.topology.get(L.ANNOTATION_KAI_TOPOLOGY_REQUIRED)
    ann_preferred = meta.topology.get(L.ANNOTATION_KAI_TOPOLOGY_PREFERRED)
    used = bool((not required and ann_required) or (not preferred and ann_preferred))
    return required or ann_required, preferred or ann_preferred, used


KAI_ORDER = ("KAI takes the PodCliqueSet's (Grove mirrors it onto the PodGang) before the "
             "pod's")


def kai_override_issues(pcs: PodCliqueSet) -> list[ValidationIssue]:
    """Best-effort issues for what a KAI key at a higher level overrides: a clique template's
    queue or preemptibility under the PodCliqueSet's, and the priority classes the pods would
    have under a `priorityClassName` label (the PodGroup's, which the pods get too)."""
    issues = hints.overridden_issues(pcs, hints.KAI_QUEUE, "KAI queue", Capability.KAI_QUEUES,
                                     KAI_ORDER)
    issues += hints.overridden_issues(pcs, hints.KAI_PREEMPTIBILITY, "KAI preemptibility",
                                      Capability.KAI_PREEMPTIBILITY, KAI_ORDER)
    cls = pcs.metadata.labels.get(L.LABEL_KAI_PRIORITY_CLASS)
    if not cls:
        return issues
    label = f"metadata.labels[{L.LABEL_KAI_PRIORITY_CLASS}]"
    t = pcs.spec.template
    named = [("spec.template.priorityClassName", t.priority_class_name)]
    named += [(f"spec.template.cliques[{i}].spec.podSpec.priorityClassName",
               c.spec.pod_spec.priority_class_name) for i, c in enumerate(t.cliques)]
    for where, other in named:
        if other and other != cls:
            issues.append(ValidationIssue(
                field=where, feature=Capability.KAI_PODGROUP_METADATA, best_effort=True,
                message=(f"priority class {other!r} is overridden by {label} ({cls!r}): KAI "
                         "gives the PodGroup that class, and its pods get it too")))
    return issues
