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
    if not need.pods:
        return None
    ready = [n for n in nodes if not n.spec.unschedulable]
    allocs = {n.name: n.allocatable_resources() for n in ready}
    # 1. each pod on its own
    eligible: dict[str, list[Node]] = {}
    for pod in need.pods:
        candidates = [n for n in ready if _tolerated(pod, n) and _selected(pod, n)]
        if not candidates:
            return (f"pod {pod.name} matches no node (its nodeSelector, node affinity or "
                    "tolerations rule out all of them)")
        reqs = pod.resource_requests()
        fitting = [n for n in candidates if _fits_alone(reqs, allocs[n.name])]
        if not fitting:
            worst = max((k for k, v in reqs.items() if v > 0),
                        key=lambda k: reqs[k] / max(max(allocs[n.name].get(k, 0.0)
                                                        for n in candidates), 1e-9))
            biggest = max(allocs[n.name].get(worst, 0.0) for n in candidates)
            return (f"pod {pod.name} asks for {_fmt(worst, reqs[worst])} but the largest "
                    f"node it may use has {_fmt(worst, biggest)}")
        eligible[pod.name] = fitting
    # 2 and 3, per domain of the required pack level (or the whole cluster).
    domains: dict[str, list[Node]] = {}
    for n in ready:
        value = n.metadata.labels.get(need.pack_key, "") if need.pack_key else "cluster"
        if value:
            domains.setdefault(value, []).append(n)
    if not domains:
        return (f"it must be packed into one {need.pack_domain or need.pack_key}, but no node "
                f"carries the label {need.pack_key}")
    shapes: dict[tuple[tuple[str, float], ...], list[Pod]] = {}
    for pod in need.pods:
        shapes.setdefault(_shape_key(pod), []).append(pod)
    totals: dict[str, float] = {}
    for pod in need.pods:
        for k, v in pod.resource_requests().items():
            totals[k] = totals.get(k, 0.0) + v
    best_reason = ""
    best_capacity = -1
    for members in domains.values():
        member_names = {n.name for n in members}
        ok = True
        for shape, pods in shapes.items():
            hosts = [n for n in eligible[pods[0].name] if n.name in member_names]
            capacity = sum(_copies(dict(shape), allocs[n.name]) for n in hosts)
            if capacity < len(pods):
                ok = False
                if capacity > best_capacity:
                    best_capacity = capacity
                    best_reason = _shape_reason(need, pods, capacity, len(members))
                break
        if ok:
            short = [k for k, v in totals.items()
                     if v > sum(allocs[n.name].get(k, 0.0) for n in members)]
            if not short:
                return None
            if best_capacity < 0:
                best_reason = (f"it needs {_fmt(short[0], totals[short[0]])} in total, more "
                               f"than any {need.pack_domain or 'cluster'} has")
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
