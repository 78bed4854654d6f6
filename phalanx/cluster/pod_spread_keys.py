"""`matchLabelKeys` of topology spread constraints, merged into the constraint's `labelSelector`
when a pod is created, as kube-apiserver 1.36 does (MatchLabelKeysInPodTopologySpread with
MatchLabelKeysInPodTopologySpreadSelectorMerge, both on by default; its pod strategy's
PrepareForCreate).

For every constraint with a `labelSelector`, each key of `matchLabelKeys` the pod carries adds
`key In (value)` to the selector's `matchExpressions`, in list order; keys the pod lacks are
skipped. A constraint without a `labelSelector` matches no pod and is left as is. The key list
stays on the constraint (kube-scheduler 1.36 merges it once more when it reads the pod, which
repeats the same requirement and changes nothing).

Only on create (the caller decides): an update does not merge again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def merge_constraint(constraint: Mapping[str, Any], labels: Mapping[str, str]) -> dict[str, Any]:
    """One TopologySpreadConstraint (camelCase dict) with its matchLabelKeys merged into its
    selector; a new dict, the input is not changed."""
    out = dict(constraint)
    keys = constraint.get("matchLabelKeys") or []
    selector = constraint.get("labelSelector")
    if not keys or not isinstance(selector, Mapping):
        return out
    added = [{"key": k, "operator": "In", "values": [labels[k]]} for k in keys if k in labels]
    if added:
        merged = dict(selector)
        merged["matchExpressions"] = [*(selector.get("matchExpressions") or []), *added]
        out["labelSelector"] = merged
    return out


def apply_spread_match_label_keys(pod: Any) -> None:
    """Merge the matchLabelKeys of every topology spread constraint of `pod` (a core/v1 Pod
    model whose `spec.topology_spread_constraints` holds the camelCase dicts)."""
    spec = getattr(pod, "spec", None)
    constraints = getattr(spec, "topology_spread_constraints", None)
    if not constraints:
        return
    labels = pod.metadata.labels or {}
    spec.topology_spread_constraints = [
        merge_constraint(c, labels) if isinstance(c, Mapping) else c for c in constraints
    ]
