"""PodTopologySpread's profile arguments and its default constraints' selector.

`PodTopologySpreadArgs` is kube-scheduler's (`defaultConstraints`, `defaultingType`), validated
as kube validates it. `System` (the default) applies kube's system defaults (hostname maxSkew 3,
zone maxSkew 5, both ScheduleAnyway) to every pod that declares no constraints of its own;
`List` applies `defaultConstraints`.

A default constraint has no selector of its own: kube derives one per pod
(helper.DefaultSelector) from the Services that select the pod (their selectors merged) and the
pod's controller when it is a ReplicationController, ReplicaSet or StatefulSet (its selector
added). When that selector is empty, kube applies no default constraint at all. The embedded
cluster serves Services but none of those controller kinds, so there only Services contribute;
a kind the API registry learns later is looked up the same way (an informer per kind).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from pydantic import Field, model_validator

from phalanx.api.base import KubeModel
from phalanx.cluster.selectors import (
    EVERYTHING,
    LabelSelector,
    Requirement,
    SelectorError,
    check_labels,
    parse_label_selector,
)
from phalanx.scheduler.framework.pluginargs import raise_errors
from phalanx.scheduler.spread import DO_NOT_SCHEDULE, SCHEDULE_ANYWAY, parse_constraint

SYSTEM = "System"
LIST = "List"
# kube's helper.DefaultSelector reads these controller kinds (exact apiVersion and kind).
RC = ("v1", "ReplicationController")
CONTROLLER_KINDS = (RC, ("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet"))
# v1.TopologySpreadConstraint's fields (kube 1.36).
CONSTRAINT_FIELDS = frozenset({"maxSkew", "topologyKey", "whenUnsatisfiable", "labelSelector",
                               "minDomains", "nodeAffinityPolicy", "nodeTaintsPolicy",
                               "matchLabelKeys"})


class PodTopologySpreadArgs(KubeModel):
    default_constraints: list[dict[str, Any]] = Field(default_factory=list)
    defaulting_type: Literal["System", "List"] = SYSTEM

    @model_validator(mode="after")
    def _valid(self) -> PodTopologySpreadArgs:
        errors: list[str] = []
        if self.defaulting_type == SYSTEM and self.default_constraints:
            errors.append(
                'defaultingType: Invalid value: "System": when .defaultConstraints are not empty'
            )
        seen: set[tuple[Any, Any]] = set()
        for i, c in enumerate(self.default_constraints):
            where = f"defaultConstraints[{i}]"
            # A v1.TopologySpreadConstraint, decoded strictly as kube decodes plugin args.
            errors += [f"{where}.{k}: unknown field" for k in c if k not in CONSTRAINT_FIELDS]
            skew = c.get("maxSkew")
            if not isinstance(skew, int) or skew <= 0:
                errors.append(
                    f"{where}.maxSkew: Invalid value: {skew!r}: not in valid range (0, inf)"
                )
            key = c.get("topologyKey")
            if not key:
                errors.append(f"{where}.topologyKey: Required value: can not be empty")
            elif (why := check_labels({str(key): ""})) is not None:
                errors.append(f"{where}.topologyKey: Invalid value: {key!r}: {why}")
            when = c.get("whenUnsatisfiable")
            if not when:
                errors.append(f"{where}.whenUnsatisfiable: Required value: can not be empty")
            elif when not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
                errors.append(f"{where}.whenUnsatisfiable: Unsupported value: {when!r}: "
                              f"supported values: {DO_NOT_SCHEDULE!r}, {SCHEDULE_ANYWAY!r}")
            if c.get("labelSelector") is not None:
                errors.append(f"{where}.labelSelector: Forbidden: constraint must not define a "
                              "selector, as they deduced for each pod")
            if (key, when) in seen:
                errors.append(f"defaultConstraints[{i}]: Duplicate value: {{{key}, {when}}}")
            seen.add((key, when))
            try:
                parse_constraint(c, {}, where)
            except SelectorError as exc:  # minDomains, nodeAffinityPolicy, nodeTaintsPolicy
                field = str(exc).split(":", 1)[0]
                if not any(e.startswith(f"{field}:") for e in errors):
                    errors.append(str(exc))
        raise_errors(errors)
        return self


# (apiVersion, kind, namespace, name) -> (found, the controller's spec.selector)
ControllerLookup = Callable[[str, str, str, str], tuple[bool, Any]]
# namespace -> the spec.selector of each Service there (None: a Service without selector)
ServiceLookup = Callable[[str], Iterable[Mapping[str, str] | None]]


def _no_services(namespace: str) -> list[Mapping[str, str] | None]:
    return []


# (namespace, pod labels) -> the selectors of the Services there that select the pod
MatchingLookup = Callable[[str, Mapping[str, str]], Iterable[Mapping[str, str]]]


def _scan(services: ServiceLookup) -> MatchingLookup:
    def matching(namespace: str, labels: Mapping[str, str]) -> list[Mapping[str, str]]:
        # A Service without selector matches nothing; an empty one adds nothing to the merge.
        return [sel for sel in services(namespace)
                if sel and all(labels.get(k) == v for k, v in sel.items())]
    return matching


class ServiceSelectorIndex:
    """The Services that select a pod, without looking at every Service of the namespace.

    kube's helper.DefaultSelector walks every Service in the pod's namespace for each pod; at
    one headless Service per PodCliqueSet replica that is O(replicas) per pod. Here each
    selector is filed under one of its (key, value) pairs, the one fewest selectors share when
    it is filed: a selector can match a pod only if the pod carries that pair, so a pod looks at
    the selectors filed under its own labels. Services without a selector, or with an empty one,
    contribute nothing to the merged selector and are not filed.
    """

    def __init__(self) -> None:
        # (namespace, name) -> (anchor pair, selector)
        self._filed: dict[tuple[str, str], tuple[tuple[str, str], dict[str, str]]] = {}
        # namespace -> anchor pair -> {(namespace, name): selector}
        self._anchored: dict[str, dict[tuple[str, str], dict[tuple[str, str], dict[str, str]]]] = {}
        # (namespace, key, value) -> how many filed selectors carry the pair
        self._sharing: dict[tuple[str, str, str], int] = {}

    def add(self, svc: Any) -> None:
        sel = svc.spec.selector
        if not sel:
            return
        ns, key = svc.metadata.namespace or "", (svc.metadata.namespace or "", svc.metadata.name)
        for k, v in sel.items():
            self._sharing[(ns, k, v)] = self._sharing.get((ns, k, v), 0) + 1
        anchor = min(sel.items(), key=lambda kv: (self._sharing[(ns, *kv)], kv))
        self._filed[key] = (anchor, dict(sel))
        self._anchored.setdefault(ns, {}).setdefault(anchor, {})[key] = self._filed[key][1]

    def delete(self, svc: Any) -> None:
        ns, key = svc.metadata.namespace or "", (svc.metadata.namespace or "", svc.metadata.name)
        filed = self._filed.pop(key, None)
        if filed is None:
            return
        anchor, sel = filed
        for k, v in sel.items():
            left = self._sharing[(ns, k, v)] - 1
            if left:
                self._sharing[(ns, k, v)] = left
            else:
                del self._sharing[(ns, k, v)]
        bucket = self._anchored[ns][anchor]
        del bucket[key]
        if not bucket:
            del self._anchored[ns][anchor]
            if not self._anchored[ns]:
                del self._anchored[ns]

    def update(self, old: Any, new: Any) -> None:
        if old.spec.selector == new.spec.selector:
            return
        self.delete(old)
        self.add(new)

    def matching(self, namespace: str, labels: Mapping[str, str]) -> list[Mapping[str, str]]:
        anchored = self._anchored.get(namespace)
        if not anchored:
            return []
        out: list[Mapping[str, str]] = []
        for pair in labels.items():
            for sel in anchored.get(pair, {}).values():
                if all(labels.get(k) == v for k, v in sel.items()):
                    out.append(sel)
        return out


def _no_controller(api_version: str, kind: str, namespace: str, name: str) -> tuple[bool, Any]:
    return False, None


class DefaultSelectors:
    """kube-scheduler's helper.DefaultSelector over the cluster's objects."""

    def __init__(
        self,
        services: ServiceLookup = _no_services,
        controllers: ControllerLookup = _no_controller,
        matching: MatchingLookup | None = None,
    ) -> None:
        """`services` (walked per pod) or `matching` (an index, see ServiceSelectorIndex)
        says which Services select a pod; `matching` wins when both are given."""
        self.controllers = controllers
        self.matching = matching if matching is not None else _scan(services)
        # The matching selectors' contents -> their merge: pods behind the same Services
        # (a PodCliqueSet replica's) share one LabelSelector.
        self._merged: dict[tuple[tuple[tuple[str, str], ...], ...], LabelSelector] = {}

    @classmethod
    def from_informers(cls, informers: Any) -> DefaultSelectors:
        """Services through the scheduler's informers (indexed: see ServiceSelectorIndex), and
        every controller kind the API registry serves (none on the embedded cluster today)."""
        from phalanx.api import registry
        from phalanx.api.core import Service

        index = ServiceSelectorIndex()
        informers.informer(Service).add_handler(index.add, index.update, index.delete)

        kinds: dict[tuple[str, str], Any] = {}
        for api_version, kind in CONTROLLER_KINDS:
            try:
                kinds[(api_version, kind)] = informers.informer(registry.get(api_version, kind))
            except LookupError:
                continue

        def controllers(api_version: str, kind: str, namespace: str, name: str) -> tuple[bool, Any]:
            inf = kinds.get((api_version, kind))
            obj = inf.get(name, namespace) if inf is not None else None
            if obj is None:
                return False, None
            return True, getattr(getattr(obj, "spec", None), "selector", None)

        return cls(controllers=controllers, matching=index.matching)

    def for_pod(self, pod: Any) -> LabelSelector:
        """The selector of the pod's Services and controller (empty: nothing selects it)."""
        matched = list(self.matching(pod.namespace, pod.labels))
        owner = next((r for r in pod.pod.metadata.owner_references if r.controller), None)
        if owner is None or (owner.api_version, owner.kind) not in CONTROLLER_KINDS:
            key = tuple(tuple(sel.items()) for sel in matched)
            found = self._merged.get(key)
            if found is None:
                if len(self._merged) >= 4096:
                    self._merged.clear()
                found = self._merged[key] = _merged(matched)
            return found
        merged: dict[str, str] = {}
        for sel in matched:
            merged.update(sel)
        reqs = _equalities(merged)
        found, selector = self.controllers(owner.api_version, owner.kind, pod.namespace, owner.name)
        if not found:
            return LabelSelector(reqs)
        if (owner.api_version, owner.kind) == RC:
            merged.update(selector or {})
            return LabelSelector(_equalities(merged))
        if selector is None:
            return LabelSelector(reqs)  # a nil selector selects nothing: no requirements added
        try:
            parsed = parse_label_selector(selector)
        except SelectorError:
            return LabelSelector(reqs)
        return LabelSelector(reqs + parsed.requirements)


def _merged(selectors: Iterable[Mapping[str, str]]) -> LabelSelector:
    """The Services' selectors merged into one (EVERYTHING when there are none)."""
    merged: dict[str, str] = {}
    for sel in selectors:
        merged.update(sel)
    return LabelSelector(_equalities(merged)) if merged else EVERYTHING


def _equalities(labels: Mapping[str, str]) -> tuple[Requirement, ...]:
    return tuple(Requirement(k, "In", (v,)) for k, v in sorted(labels.items()))


__all__ = ["DefaultSelectors", "LIST", "PodTopologySpreadArgs", "SYSTEM"]
