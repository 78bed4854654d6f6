"""Can a gang ever fit this cluster, even with every other workload gone?

Used by `phalanx run` to stop early with a clear message instead of simulating a gang that
waits forever. Only *necessary* conditions are checked, so the verdict "never fits" is
always right (a gang that passes may still wait for others to finish or be preempted):

1. every pod fits some node on its own (allocatable, taints, nodeSelector, required
   node affinity);
2. for each pod shape, the nodes of one domain of the required pack level (or the whole
   cluster) can hold enough copies of it (per node: floor(free / request), per resource);
3. the domain's total allocatable covers the gang's total requests, per resource.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from phalanx.api.core import Node, Pod
from phalanx.api.pod import NodeSelectorRequirement
from phalanx.api.quantity import format_quantity

_NO_EXEC_EFFECTS = ("NoSchedule", "NoExecute")


@dataclass(frozen=True, slots=True)
class GangNeed:
    """The pods a gang must place together (minMember of each group), and its pack level."""

    name: str
    pods: list[Pod]
    pack_key: str | None = None  # node label key of a required pack domain
    pack_domain: str | None = None  # its name, for messages ("rack")


def _tolerated(pod: Pod, node: Node) -> bool:
    for taint in node.spec.taints or ():
        if taint.effect not in _NO_EXEC_EFFECTS:
            continue
        ok = False
        for t in pod.spec.tolerations or ():
            if t.effect and t.effect != taint.effect:
                continue
            if (t.operator or "Equal") == "Exists":
                ok = not t.key or t.key == taint.key
            else:
                ok = t.key == taint.key and (t.value or "") == (taint.value or "")
            if ok:
                break
        if not ok:
            return False
    return True


def _requirement_holds(req: NodeSelectorRequirement, node_labels: dict[str, str]) -> bool:
    value = node_labels.get(req.key)
    values = list(req.values or ())
    match req.operator:
        case "In":
            return value in values
        case "NotIn":
            return value not in values
        case "Exists":
            return value is not None
        case "DoesNotExist":
            return value is None
        case "Gt" | "Lt":
            try:
                a, b = int(value or ""), int(values[0])
            except (ValueError, IndexError):
                return False
            return a > b if req.operator == "Gt" else a < b
    return True  # unknown operator: do not claim "never"


def _selected(pod: Pod, node: Node) -> bool:
    node_labels = node.metadata.labels
    for k, v in (pod.spec.node_selector or {}).items():
        if node_labels.get(k) != v:
            return False
    affinity = pod.spec.affinity
    required = (affinity.node_affinity.required_during_scheduling_ignored_during_execution
                if affinity and affinity.node_affinity else None)
    if required and required.node_selector_terms:
        return any(
            all(_requirement_holds(r, node_labels) for r in term.match_expressions or ())
            for term in required.node_selector_terms
            if term.match_expressions
        ) or not any(term.match_expressions for term in required.node_selector_terms)
    return True


def _fits_alone(reqs: dict[str, float], alloc: dict[str, float]) -> bool:
    return all(alloc.get(k, 0.0) >= v for k, v in reqs.items() if v > 0)


def _fmt(resource: str, amount: float) -> str:
    return f"{format_quantity(amount, resource)} {resource}"


def _shape_key(pod: Pod) -> tuple[tuple[str, float], ...]:
    return tuple(sorted((k, v) for k, v in pod.resource_requests().items() if v > 0))


def never_fits(need: GangNeed, nodes: Sequence[Node]) -> str | None:
    """Why the gang can never be scheduled on these nodes, or None if it might be."""
    return Feasibility(nodes).never_fits(need)


Requests = tuple[tuple[str, float], ...]
PlacementKey = tuple[Requests, tuple[str, ...], tuple[tuple[str, str], ...], str]


def _placement_key(pod: Pod) -> PlacementKey:
    """What decides which nodes a pod may use on its own: requests, tolerations,
    nodeSelector, required node affinity."""
    spec = pod.spec
    na = spec.affinity.node_affinity if spec.affinity else None
    required = na.required_during_scheduling_ignored_during_execution if na else None
    return (_shape_key(pod), tuple(t.model_dump_json() for t in spec.tolerations or ()),
            tuple(sorted((spec.node_selector or {}).items())),
            required.model_dump_json() if required else "")


class Feasibility:
    """`never_fits` for one set of nodes, asked about many gangs.

    `phalanx run` asks once per gang, and the gangs of one template ask the same questions:
    the walks over every node (which nodes a pod may use, how many copies of a shape each
    pack domain holds, each domain's total) are done once per pod placement and domain,
    not once per gang. The nodes must not change while it is used."""

    def __init__(self, nodes: Sequence[Node]) -> None:
        self.ready = [n for n in nodes if not n.spec.unschedulable]
        self.allocs = {n.name: n.allocatable_resources() for n in self.ready}
        self._eligible: dict[PlacementKey, tuple[list[Node], list[Node]]] = {}
        self._domains: dict[str | None, dict[str, list[Node]]] = {}
        self._capacity: dict[tuple[PlacementKey, str | None, str], int] = {}
        self._totals: dict[tuple[str | None, str], dict[str, float]] = {}

    def _nodes_for(self, key: PlacementKey, pod: Pod) -> tuple[list[Node], list[Node]]:
        """(nodes the pod may use, those it also fits on its own), once per placement."""
        out = self._eligible.get(key)
        if out is None:
            candidates = [n for n in self.ready if _tolerated(pod, n) and _selected(pod, n)]
            reqs = pod.resource_requests()
            fitting = [n for n in candidates if _fits_alone(reqs, self.allocs[n.name])]
            out = self._eligible[key] = (candidates, fitting)
        return out

    def _domains_of(self, pack_key: str | None) -> dict[str, list[Node]]:
        domains = self._domains.get(pack_key)
        if domains is None:
            domains = {}
            for n in self.ready:
                value = n.metadata.labels.get(pack_key, "") if pack_key else "cluster"
                if value:
                    domains.setdefault(value, []).append(n)
            self._domains[pack_key] = domains
        return domains

    def _copies_in(self, key: PlacementKey, pack_key: str | None, value: str,
                   members: list[Node]) -> int:
        cached = self._capacity.get((key, pack_key, value))
        if cached is None:
            member_names = {n.name for n in members}
            shape = dict(key[0])
            cached = sum(_copies(shape, self.allocs[n.name])
                         for n in self._eligible[key][1] if n.name in member_names)
            self._capacity[(key, pack_key, value)] = cached
        return cached

    def _total_of(self, pack_key: str | None, value: str, members: list[Node]) -> dict[str, float]:
        totals = self._totals.get((pack_key, value))
        if totals is None:
            totals = {}
            for n in members:
                for k, v in self.allocs[n.name].items():
                    totals[k] = totals.get(k, 0.0) + v
            self._totals[(pack_key, value)] = totals
        return totals

    def never_fits(self, need: GangNeed) -> str | None:
        """Why the gang can never be scheduled on these nodes, or None if it might be."""
        if not need.pods:
            return None
        allocs = self.allocs
        # 1. each pod on its own
        keys: dict[str, PlacementKey] = {}
        for pod in need.pods:
            key = keys[pod.name] = _placement_key(pod)
            candidates, fitting = self._nodes_for(key, pod)
            if not candidates:
                return (f"pod {pod.name} matches no node (its nodeSelector, node affinity or "
                        "tolerations rule out all of them)")
            if not fitting:
                reqs = pod.resource_requests()
                worst = max((k for k, v in reqs.items() if v > 0),
                            key=lambda k: reqs[k] / max(max(allocs[n.name].get(k, 0.0)
                                                            for n in candidates), 1e-9))
                biggest = max(allocs[n.name].get(worst, 0.0) for n in candidates)
                return (f"pod {pod.name} asks for {_fmt(worst, reqs[worst])} but the largest "
                        f"node it may use has {_fmt(worst, biggest)}")
        # 2 and 3, per domain of the required pack level (or the whole cluster).
        domains = self._domains_of(need.pack_key)
        if not domains:
            return (f"it must be packed into one {need.pack_domain or need.pack_key}, but no "
                    f"node carries the label {need.pack_key}")
        shapes: dict[Requests, list[Pod]] = {}
        for pod in need.pods:
            shapes.setdefault(keys[pod.name][0], []).append(pod)
        totals: dict[str, float] = {}
        for pod in need.pods:
            for k, v in pod.resource_requests().items():
                totals[k] = totals.get(k, 0.0) + v
        best_reason = ""
        best_capacity = -1
        for value, members in domains.items():
            ok = True
            for pods in shapes.values():
                capacity = self._copies_in(keys[pods[0].name], need.pack_key, value, members)
                if capacity < len(pods):
                    ok = False
                    if capacity > best_capacity:
                        best_capacity = capacity
                        best_reason = _shape_reason(need, pods, capacity, len(members))
                    break
            if ok:
                have = self._total_of(need.pack_key, value, members)
                short = [k for k, v in totals.items() if v > have.get(k, 0.0)]
                if not short:
                    return None
                if best_capacity < 0:
                    best_reason = (f"it needs {_fmt(short[0], totals[short[0]])} in total, "
                                   f"more than any {need.pack_domain or 'cluster'} has")
        return best_reason or "no domain can hold it"


def _copies(shape: dict[str, float], alloc: dict[str, float]) -> int:
    counts = [int(alloc.get(k, 0.0) // v) for k, v in shape.items() if v > 0]
    return min(counts) if counts else 1_000_000


def _shape_reason(need: GangNeed, pods: list[Pod], capacity: int, domain_nodes: int) -> str:
    reqs = pods[0].resource_requests()
    what = ", ".join(_fmt(k, v) for k, v in sorted(reqs.items()) if v > 0) or "no resources"
    where = (f"one {need.pack_domain or need.pack_key} (required pack constraint)"
             if need.pack_key else "the whole cluster")
    largest = (f"the largest {need.pack_domain or 'domain'} ({domain_nodes} nodes) holds at "
               f"most {capacity}" if need.pack_key else f"all nodes together hold at most "
               f"{capacity}")
    return f"it needs {len(pods)} pods of {what} in {where}; {largest}"
