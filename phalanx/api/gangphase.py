"""A PodGang's phase from its pods: the one rule the operator writes into `status.phase`
and `phalanx run` / `get` / `describe` show, so they never disagree.

Per group (a PodGang `podgroups` entry: its pods and `minReplicas`):
- Succeeded: every pod of every group ended, and each group has minReplicas Succeeded;
- Failed: every pod ended, and some group has fewer than minReplicas Succeeded;
- Pending: some group has fewer than minReplicas pods on a node (Failed ones do not count);
- Starting: every group is placed, but some has fewer than minReplicas ready (or finished);
- Running: every group has minReplicas pods ready (or finished).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

TERMINAL = ("Succeeded", "Failed")


@dataclass(frozen=True, slots=True)
class PodState:
    phase: str  # the pod's status.phase
    bound: bool  # spec.nodeName is set
    ready: bool  # condition Ready=True


def podgang_phase(groups: Sequence[tuple[int, Sequence[PodState]]]) -> str:
    """The phase of a gang given (minReplicas, pods) per group."""
    pods = [p for _, members in groups for p in members]
    if pods and all(p.phase in TERMINAL for p in pods):
        done = all(sum(1 for p in members if p.phase == "Succeeded") >= max(want, 1)
                   for want, members in groups if members or want)
        return "Succeeded" if done else "Failed"
    placed = all(sum(1 for p in members if p.bound and p.phase != "Failed") >= want
                 for want, members in groups)
    if not groups or not placed:
        return "Pending"
    ready = all(sum(1 for p in members if p.ready or p.phase == "Succeeded") >= want
                for want, members in groups)
    return "Running" if ready else "Starting"
