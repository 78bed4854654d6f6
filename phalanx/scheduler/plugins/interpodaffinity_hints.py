"""InterPodAffinity's queueing hints: which pod and node events may make a pod it rejected
schedulable again (kube-scheduler 1.36's isSchedulableAfterPodChange / NodeChange).

Pod events (a bound or nominated pod added, relabelled or deleted):
- the rejected pod's own labels changed: retry;
- an added pod, or one relabelled from not matching to matching, that matches *all* of the
  rejected pod's required affinity terms: retry;
- a pod relabelled from matching all its required anti-affinity terms to not: retry;
- a deleted pod that matched all its anti-affinity terms, or whose own anti-affinity terms
  all match the rejected pod: retry;
- anything else (including pods neither bound nor nominated) cannot help.

Node events: a node added with an affinity term's key, or whose value of that key appeared
or changed; for anti-affinity, any added node, or a node that lost the key or changed its
value. A pod without terms (rejected by existing pods' anti-affinity) is not retried on node
events, as in kube-scheduler; the periodic flush of unschedulable pods retries it.

One deliberate difference: a term's namespaceSelector is matched against the namespace's
real labels here (kube-scheduler's hints match it against none), so a relabelled pod in a
selected namespace does retry the pods whose affinity it now satisfies.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from phalanx.scheduler.affinity import NamespaceLabels, Term, parse_pod_terms
from phalanx.scheduler.framework.types import PodInfo, QueueingHint

QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def _matches_all(terms: Sequence[Term], obj: Any, ns_labels: NamespaceLabels) -> bool:
    if not terms:
        return False
    meta = obj.metadata
    labels = meta.labels or {}
    return all(t.matches_labels(meta.namespace or "", labels, ns_labels) for t in terms)


def _placed(obj: Any) -> bool:
    status = getattr(obj, "status", None)
    return bool(obj.spec.node_name or (status is not None and status.nominated_node_name))


def pod_change_hint(
    pod: PodInfo, old: Any, new: Any, ns_labels: NamespaceLabels = lambda _ns: {}
) -> QueueingHint:
    if old is not None and new is not None and pod.uid == (new.metadata.uid or new.key):
        return QUEUE  # its own labels changed: other pods' anti-affinity may no longer apply
    if (new is not None and not _placed(new)) or (old is not None and not _placed(old)):
        return SKIP
    terms = pod.pod_terms
    affinity, anti = terms.required_affinity, terms.required_anti_affinity
    if old is not None and new is not None:
        if not _matches_all(affinity, old, ns_labels) and _matches_all(affinity, new, ns_labels):
            return QUEUE
        if _matches_all(anti, old, ns_labels) and not _matches_all(anti, new, ns_labels):
            return QUEUE
        return SKIP
    if new is not None:  # added
        return QUEUE if _matches_all(affinity, new, ns_labels) else SKIP
    if _matches_all(anti, old, ns_labels):  # deleted
        return QUEUE
    theirs = parse_pod_terms(old).required_anti_affinity
    if theirs and all(t.matches(pod, ns_labels) for t in theirs):
        return QUEUE
    return SKIP


def node_change_hint(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    if new is None:
        return SKIP
    after = new.metadata.labels or {}
    before = (old.metadata.labels or {}) if old is not None else None
    terms = pod.pod_terms
    for t in terms.required_affinity:
        key = t.topology_key
        if before is None:
            if key in after:
                return QUEUE
            continue
        if key in after and (key not in before or before[key] != after[key]):
            return QUEUE
    for t in terms.required_anti_affinity:
        key = t.topology_key
        if before is None:
            return QUEUE  # a node without the key always accepts the pod
        if key in before and (key not in after or before[key] != after[key]):
            return QUEUE
    return SKIP
