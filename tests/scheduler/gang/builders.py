"""Builders for gang scenarios on the real scheduler: PodGangs, members, invariants."""

from __future__ import annotations

from typing import Any

from phalanx.api import labels
from phalanx.api.core import Pod
from phalanx.api.podgang import PodGang
from phalanx.cluster.memory import MemoryCluster

from ..helpers import pod


def podgang(name: str, groups: dict[str, int], *, namespace: str = "default", required: str | None = None,
            preferred: str | None = None, group_required: dict[str, str] | None = None) -> PodGang:
    spec: dict[str, Any] = {
        "podgroups": [
            {"name": g, "minReplicas": n, **({"topologyConstraint": {"packConstraint": {"required": (group_required or {})[g]}}}
                                             if g in (group_required or {}) else {})}
            for g, n in groups.items()
        ]
    }
    if required or preferred:
        spec["topologyConstraint"] = {"packConstraint": {"required": required, "preferred": preferred}}
    return PodGang.model_validate({"metadata": {"name": name, "namespace": namespace}, "spec": spec})


def member(gang: str, group: str, i: int, **kw: Any) -> Pod:
    """Pod `<group>-<i>` of PodGang `gang` (phalanx-scheduler)."""
    lbl = {labels.LABEL_PODGANG: gang, labels.LABEL_PODCLIQUE: group, **kw.pop("labels", {})}
    return pod(f"{group}-{i}", labels=lbl, **kw)


def members(gang: str, group: str, n: int, **kw: Any) -> list[Pod]:
    return [member(gang, group, i, **kw) for i in range(n)]


async def bound_by_gang(client: MemoryCluster, namespace: str = "default") -> dict[str, list[str | None]]:
    """PodGang name -> node of each member (None when unbound)."""
    out: dict[str, list[str | None]] = {}
    for p in (await client.list(Pod, namespace)).items:
        g = p.metadata.labels.get(labels.LABEL_PODGANG)
        if g:
            out.setdefault(g, []).append(p.spec.node_name)
    return out


def assert_no_partial_gang(bound: dict[str, list[str | None]], minimum: dict[str, int]) -> None:
    """The invariant: a gang has either no member bound or at least minMember bound."""
    for g, nodes in bound.items():
        n = sum(1 for x in nodes if x)
        assert n == 0 or n >= minimum[g], f"gang {g} partly bound: {n}/{minimum[g]} ({nodes})"
