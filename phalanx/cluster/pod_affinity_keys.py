"""`matchLabelKeys` / `mismatchLabelKeys` of pod (anti-)affinity terms, merged into the term's
`labelSelector` when a pod is created, as kube-apiserver does (MatchLabelKeysInPodAffinity,
GA; its pod strategy's PrepareForCreate).

For every term of `podAffinity` and `podAntiAffinity` (required and preferred) that has a
`labelSelector`: each key of `matchLabelKeys` the pod carries adds `key In (value)` to the
selector's `matchExpressions`, and each key of `mismatchLabelKeys` it carries adds
`key NotIn (value)`, in list order; keys the pod lacks are skipped. A term without a
`labelSelector` matches no pod and is left as is. The key lists stay on the term.

Only on create: a later update of the pod does not merge again (the selectors already hold
the expressions). The scheduler reads the merged selector and never the key lists.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def merge_label_keys(term: Mapping[str, Any], labels: Mapping[str, str]) -> dict[str, Any]:
    """One PodAffinityTerm (camelCase dict) with its label keys merged into its selector;
    a new dict, the input is not changed."""
    out = dict(term)
    match_keys = term.get("matchLabelKeys") or []
    mismatch_keys = term.get("mismatchLabelKeys") or []
    selector = term.get("labelSelector")
    if not (match_keys or mismatch_keys) or selector is None:
        return out
    added = [
        {"key": k, "operator": op, "values": [labels[k]]}
        for keys, op in ((match_keys, "In"), (mismatch_keys, "NotIn"))
        for k in keys
        if k in labels
    ]
    if added:
        selector = dict(selector)
        selector["matchExpressions"] = [*(selector.get("matchExpressions") or []), *added]
        out["labelSelector"] = selector
    return out


def _merged_group(group: Mapping[str, Any], labels: Mapping[str, str]) -> dict[str, Any]:
    out = dict(group)
    if group.get(_REQUIRED):
        out[_REQUIRED] = [
            merge_label_keys(t, labels) if isinstance(t, Mapping) else t for t in group[_REQUIRED]
        ]
    if group.get(_PREFERRED):
        items = []
        for item in group[_PREFERRED]:
            if isinstance(item, Mapping) and isinstance(item.get("podAffinityTerm"), Mapping):
                merged = merge_label_keys(item["podAffinityTerm"], labels)
                item = {**item, "podAffinityTerm": merged}
            items.append(item)
        out[_PREFERRED] = items
    return out


def apply_match_label_keys(pod: Any) -> None:
    """Merge the label keys of every pod (anti-)affinity term of `pod` (a core/v1 Pod model
    whose `spec.affinity.pod_affinity` / `pod_anti_affinity` hold the camelCase dicts)."""
    spec = getattr(pod, "spec", None)
    aff = getattr(spec, "affinity", None)
    if aff is None:
        return
    labels = pod.metadata.labels or {}
    for attr in ("pod_affinity", "pod_anti_affinity"):
        group = getattr(aff, attr, None)
        if isinstance(group, Mapping) and group:
            setattr(aff, attr, _merged_group(group, labels))
