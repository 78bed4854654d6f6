"""Inter-pod (anti-)affinity terms, parsed once per pod, and the snapshot's index of pods by
labels that answers "which pods match this term" without walking every pod.

A term (kube-scheduler's `AffinityTerm`) matches a pod when the pod is in one of the term's
namespaces (by default the namespace of the pod that declares the term; `namespaceSelector`
adds every namespace whose labels match, `{}` meaning all) and its labels match the term's
`labelSelector` (absent: nothing matches). Its `topologyKey` is the node label whose value
is the domain ("the same node", "the same zone"). `matchLabelKeys` / `mismatchLabelKeys` are
not read here: the API server merges them into `labelSelector` when it creates the pod
(phalanx.cluster.pod_affinity_keys for the embedded cluster).

A term that does not parse leaves its group (required / preferred, affinity / anti-affinity)
empty and is reported in `PodTerms.error` with its field path; the plugin refuses the pod.

The index is built the first time a pod with terms needs it and kept current from then on
(`Snapshot.add_pod` / `remove_pod`), so clusters without inter-pod affinity never pay for it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from phalanx.cluster.selectors import LabelSelector, SelectorError, parse_label_selector

if TYPE_CHECKING:
    from phalanx.scheduler.framework.types import PodInfo

# Namespace name -> its labels (None when unknown): for namespaceSelector.
NamespaceLabels = Callable[[str], "Mapping[str, str] | None"]


@dataclass(frozen=True, slots=True)
class Term:
    topology_key: str
    selector: LabelSelector | None  # None: the term matches no pod
    namespaces: frozenset[str]
    namespace_selector: LabelSelector | None  # None: not set
    weight: int = 0

    def matches(self, pod: PodInfo, ns_labels: NamespaceLabels) -> bool:
        return self.matches_labels(pod.namespace, pod.labels, ns_labels)

    def matches_labels(
        self, namespace: str, labels: Mapping[str, str], ns_labels: NamespaceLabels
    ) -> bool:
        """Whether a pod in `namespace` with `labels` matches. `ns_labels` answers None for a
        namespace it does not know: then only the empty namespaceSelector admits it."""
        if self.selector is None:
            return False
        if namespace not in self.namespaces:
            if self.namespace_selector is None:
                return False
            if not self.namespace_selector.empty:
                ns = ns_labels(namespace)
                if ns is None or not self.namespace_selector.matches(ns):
                    return False
        return self.selector.matches(labels)


@dataclass(frozen=True, slots=True)
class PodTerms:
    required_affinity: tuple[Term, ...] = ()
    required_anti_affinity: tuple[Term, ...] = ()
    preferred_affinity: tuple[Term, ...] = ()
    preferred_anti_affinity: tuple[Term, ...] = ()
    # Why some terms did not parse ("" when all did): the field path and the reason. The
    # group holding a bad term is left empty, as kube-scheduler's PodInfo does.
    error: str = ""

    @property
    def has_preferred(self) -> bool:
        return bool(self.preferred_affinity or self.preferred_anti_affinity)


NO_TERMS = PodTerms()

_AFFINITY_PATH = "spec.affinity.podAffinity"
_ANTI_PATH = "spec.affinity.podAntiAffinity"
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def _term(raw: Mapping[str, Any], namespace: str, weight: int = 0) -> Term:
    """kube-scheduler's AffinityTerm. Raises SelectorError for a selector that does not
    parse. An empty topologyKey (the API server refuses it) is kept: no node has the
    label, so the term is never satisfied by a domain."""
    key = str(raw.get("topologyKey") or "")
    sel_raw = raw.get("labelSelector")
    selector = None if sel_raw is None else parse_label_selector(sel_raw)
    ns_raw = raw.get("namespaceSelector")
    ns_selector = None if ns_raw is None else parse_label_selector(ns_raw)
    names = raw.get("namespaces") or []
    namespaces = (
        frozenset(str(n) for n in names)
        if names or ns_selector is not None
        else frozenset({namespace})
    )
    return Term(key, selector, namespaces, ns_selector, weight)


def _terms(items: Any, namespace: str, path: str, weighted: bool) -> tuple[Term, ...]:
    out: list[Term] = []
    for i, item in enumerate(items or ()):
        if not isinstance(item, Mapping):
            raise SelectorError(f"{path}[{i}]: expected an object, got {item!r}")
        try:
            if weighted:
                raw = item.get("podAffinityTerm") or {}
                out.append(_term(raw, namespace, int(item.get("weight") or 0)))
            else:
                out.append(_term(item, namespace))
        except SelectorError as exc:
            where = f"{path}[{i}]" + (".podAffinityTerm" if weighted else "")
            raise SelectorError(f"{where}: {exc}") from None
    return tuple(out)


# Parsed terms by (namespace, the pod's podAffinity + podAntiAffinity as JSON): the replicas
# of a workload share one PodTerms, so the plugin can remember per PodTerms object whether
# its terms match the pod being scheduled instead of matching them once per replica.
_PARSED: dict[tuple[str, str], PodTerms] = {}
_PARSED_MAX = 4096


def parse_pod_terms(pod: Any) -> PodTerms:
    """A pod's inter-pod (anti-)affinity terms (NO_TERMS when it has none). Pods with equal
    terms in one namespace get the same (immutable) PodTerms object."""
    aff = pod.spec.affinity
    if aff is None or not (aff.pod_affinity or aff.pod_anti_affinity):
        return NO_TERMS
    ns = pod.metadata.namespace or ""
    key = (ns, json.dumps([aff.pod_affinity, aff.pod_anti_affinity], sort_keys=True, default=str))
    terms = _PARSED.get(key)
    if terms is None:
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        terms = _PARSED[key] = _parse(aff.pod_affinity or {}, aff.pod_anti_affinity or {}, ns)
    return terms


def _parse(pa: Mapping[str, Any], paa: Mapping[str, Any], ns: str) -> PodTerms:
    groups: list[tuple[Term, ...]] = []
    errors: list[str] = []
    for raw, path, weighted in (
        (pa.get(_REQUIRED), f"{_AFFINITY_PATH}.{_REQUIRED}", False),
        (paa.get(_REQUIRED), f"{_ANTI_PATH}.{_REQUIRED}", False),
        (pa.get(_PREFERRED), f"{_AFFINITY_PATH}.{_PREFERRED}", True),
        (paa.get(_PREFERRED), f"{_ANTI_PATH}.{_PREFERRED}", True),
    ):
        try:
            groups.append(_terms(raw, ns, path, weighted))
        except SelectorError as exc:
            groups.append(())
            errors.append(str(exc))
    return PodTerms(*groups, error="; ".join(errors))


class PodLabelIndex:
    """Pods counted on nodes, by namespace and by (label key, value): the candidates for a
    term are the pods carrying one of its equality requirements (or every pod of its
    namespaces when it has none), then the full selector decides."""

    def __init__(self) -> None:
        self.by_namespace: dict[str, dict[str, tuple[int, PodInfo]]] = {}
        self.by_label: dict[tuple[str, str, str], dict[str, tuple[int, PodInfo]]] = {}

    def add(self, info: PodInfo, row: int) -> None:
        entry = (row, info)
        self.by_namespace.setdefault(info.namespace, {})[info.key] = entry
        for k, v in info.labels.items():
            self.by_label.setdefault((info.namespace, k, v), {})[info.key] = entry

    def remove(self, info: PodInfo) -> None:
        pods = self.by_namespace.get(info.namespace)
        if pods is not None:
            pods.pop(info.key, None)
        for k, v in info.labels.items():
            bucket = self.by_label.get((info.namespace, k, v))
            if bucket is not None:
                bucket.pop(info.key, None)
                if not bucket:
                    del self.by_label[(info.namespace, k, v)]

    def replace(self, old: PodInfo, new: PodInfo, row: int) -> None:
        """`new` (the same pod, relabelled) where `old` was: only the labels that changed
        move between buckets."""
        entry = (row, new)
        key, ns = new.key, new.namespace
        by_label = self.by_label
        self.by_namespace.setdefault(ns, {})[key] = entry
        before, after = old.labels, new.labels
        for k, v in before.items():
            if after.get(k) != v:
                bucket = by_label.get((ns, k, v))
                if bucket is not None:
                    bucket.pop(key, None)
                    if not bucket:
                        del by_label[(ns, k, v)]
        for k, v in after.items():
            by_label.setdefault((ns, k, v), {})[key] = entry

    def matching(self, term: Term, ns_labels: NamespaceLabels) -> list[tuple[int, PodInfo]]:
        """(row, pod) of every indexed pod the term matches."""
        if term.selector is None:
            return []
        namespaces: Iterable[str]
        if term.namespace_selector is not None:
            namespaces = [
                ns
                for ns in self.by_namespace
                if ns in term.namespaces
                or term.namespace_selector.empty
                or ((lbl := ns_labels(ns)) is not None and term.namespace_selector.matches(lbl))
            ]
        else:
            namespaces = term.namespaces
        eq = term.selector.equalities
        out: list[tuple[int, PodInfo]] = []
        for ns in namespaces:
            if eq:
                k, v = eq[0]
                pool = self.by_label.get((ns, k, v), {})
            else:
                pool = self.by_namespace.get(ns, {})
            for row, info in pool.values():
                if term.selector.matches(info.labels):
                    out.append((row, info))
        return out


def self_spread_key(pod: PodInfo, ns_labels: NamespaceLabels = lambda _ns: None) -> str | None:
    """The topology key of a required anti-affinity term the pod matches itself (its peers
    of the same shape must then land in different domains of that key), or None."""
    for t in pod.pod_terms.required_anti_affinity:
        if t.matches(pod, ns_labels):
            return t.topology_key
    return None
