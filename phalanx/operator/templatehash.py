"""Template hashes: what says whether a pod, PodClique or PodCliqueSet replica is up to date.

As in Grove:
- a clique's pod template hash covers its labels, annotations and podSpec, with the
  PodCliqueSet's priorityClassName applied; PodCliques and their pods carry it as
  `grove.io/pod-template-hash`;
- the PodCliqueSet's generation hash covers every clique's pod template the same way; a change
  of `status.currentGenerationHash` is what starts an update.
Other spec fields (replicas, minAvailable, startup order) change no hash: they apply in place.
The values are ours (a SHA-256 of the canonical JSON), not bit-identical to Grove's FNV hash.
"""

from __future__ import annotations

import hashlib
import json
import weakref
from typing import Any

from phalanx.api.grove import PodCliqueSet, PodCliqueTemplateSpec


def _template_doc(template: PodCliqueTemplateSpec, priority_class_name: str | None
                  ) -> dict[str, Any]:
    spec = template.spec.pod_spec.model_dump(by_alias=True, exclude_none=True, mode="json")
    if priority_class_name:
        spec["priorityClassName"] = priority_class_name
    return {"labels": dict(template.labels or {}), "annotations": dict(template.annotations or {}),
            "spec": spec}


def _digest(docs: list[dict[str, Any]]) -> str:
    raw = json.dumps(docs, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(raw).hexdigest()[:10]


def pod_template_hash(template: PodCliqueTemplateSpec, priority_class_name: str | None) -> str:
    return _digest([_template_doc(template, priority_class_name)])


def _compute(pcs: PodCliqueSet) -> tuple[str, dict[str, str]]:
    pcn = pcs.spec.template.priority_class_name
    docs = [_template_doc(c, pcn) for c in pcs.spec.template.cliques]
    return _digest(docs), {c.name: _digest([d]) for c, d in zip(pcs.spec.template.cliques, docs)}


# id(template) -> (weak reference to it, its hashes). Keyed by the template object itself
# (informer objects are replaced, never changed in place), not by (uid, generation): uids
# repeat across embedded clusters in one process. An entry goes with its template.
_memo: dict[int, tuple[weakref.ref[Any], tuple[str, dict[str, str]]]] = {}


def hashes(pcs: PodCliqueSet) -> tuple[str, dict[str, str]]:
    """(generation hash, pod template hash per clique name) of a PodCliqueSet's spec.
    Remembered per template object: the controllers ask for every replica of every reconcile."""
    template = pcs.spec.template
    key = id(template)
    hit = _memo.get(key)
    if hit is not None and hit[0]() is template:
        return hit[1]
    value = _compute(pcs)
    _memo[key] = (weakref.ref(template, lambda _ref, k=key: _memo.pop(k, None)), value)
    return value


def generation_hash(pcs: PodCliqueSet) -> str:
    return hashes(pcs)[0]


def clique_hash(pcs: PodCliqueSet, clique_name: str) -> str | None:
    return hashes(pcs)[1].get(clique_name)
