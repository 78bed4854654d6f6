"""Grove's KAI PodGroup checks (operator/e2e/grove/podgroup): the expected SubGroups of a
PodGroup and the comparison Grove's VerifyPodGroupTopology makes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .harness import KAI_PODGROUP, PART_OF


@dataclass(frozen=True)
class SubGroup:
    name: str
    min_member: int = 0
    parent: str | None = None
    required: str = ""  # node-label key of the required topology level
    preferred: str = ""


def standalone(pcs: str, replica: int, clique: str, min_member: int, required: str = "",
               preferred: str = "") -> SubGroup:
    """CreateExpectedStandalonePCLQSubGroup."""
    return SubGroup(f"{pcs}-{replica}-{clique}", min_member, None, required, preferred)


def pcsg_parent(pcs: str, replica: int, pcsg: str, j: int, required: str = "",
                preferred: str = "") -> SubGroup:
    """CreateExpectedPCSGParentSubGroup."""
    return SubGroup(f"{pcs}-{replica}-{pcsg}-{j}", 0, None, required, preferred)


def in_pcsg(pcs: str, replica: int, pcsg: str, j: int, clique: str, min_member: int,
            required: str = "", *, parent: bool = True) -> SubGroup:
    """CreateExpectedPCLQInPCSGSubGroup (parent=False: ...NoParent)."""
    group = f"{pcs}-{replica}-{pcsg}-{j}"
    return SubGroup(f"{group}-{clique}", min_member, group if parent else None, required)


def podgroups_of(objects: dict[str, list[dict[str, Any]]], pcs: str) -> list[dict[str, Any]]:
    """GetKAIPodGroupsForPCS: by the app.kubernetes.io/part-of label."""
    return [g for g in objects.get(KAI_PODGROUP, [])
            if g["metadata"].get("labels", {}).get(PART_OF) == pcs]


def podgroup_of(objects: dict[str, list[dict[str, Any]]], pcs: str, podgang: str
                ) -> dict[str, Any]:
    """FilterPodGroupByOwner: the PodGroup owned by PodGang `podgang`."""
    for g in podgroups_of(objects, pcs):
        for ref in g["metadata"].get("ownerReferences") or ():
            if ref.get("kind") == "PodGang" and ref.get("name") == podgang:
                return g
    raise AssertionError(f"no KAI PodGroup owned by PodGang {podgang}")


def _levels(tc: dict[str, Any] | None) -> tuple[str, str]:
    tc = tc or {}
    return tc.get("requiredTopologyLevel", ""), tc.get("preferredTopologyLevel", "")


def verify(podgroup: dict[str, Any], required: str, preferred: str,
           expected: list[SubGroup]) -> None:
    """VerifyPodGroupTopology: top-level levels, then exactly these SubGroups."""
    spec = podgroup["spec"]
    name = podgroup["metadata"]["name"]
    assert _levels(spec.get("topologyConstraint")) == (required, preferred), (
        name, spec.get("topologyConstraint"))
    actual = {sg["name"]: sg for sg in spec.get("subGroups") or ()}
    assert len(actual) == len(expected), (name, sorted(actual), sorted(e.name for e in expected))
    for want in expected:
        sg = actual.get(want.name)
        assert sg is not None, (name, want.name, sorted(actual))
        got = SubGroup(sg["name"], sg.get("minMember", 0), sg.get("parent"),
                       *_levels(sg.get("topologyConstraint")))
        assert got == want, (name, got, want)
