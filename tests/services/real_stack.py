"""What the real-server service tests share: one operator/scheduler pair on the shipped
configuration (`Stack`), small PodCliqueSets, and kubectl's view of Events."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from phalanx.api.core import Event
from phalanx.api.grove import PodCliqueSet
from phalanx.envtest import PhalanxService, running_kubelet

REPO = Path(__file__).resolve().parents[2]
# A backstop just under the real tier's per-test timeout (so a hang still prints the services'
# logs); the waits inside end sooner, when nothing moves (`stall`).
SCENARIO_TIMEOUT = 110.0
# How long a wait may see no change at all before it gives up (see phalanx.envtest.wait).
STALL = 60.0


class Stack:
    def __init__(self, plane: Any, system_ns: str) -> None:
        self.plane = plane
        self.system_ns = system_ns
        self.operator: PhalanxService | None = None
        self.scheduler: PhalanxService | None = None

    def run(self, body: Any, *, kubelet: bool = True) -> Any:
        """`body(kube)` with the stand-in kubelet running, within SCENARIO_TIMEOUT; on
        failure the services' logs are printed."""
        async def main() -> Any:
            async with self.plane.client() as kube:
                if not kubelet:
                    return await asyncio.wait_for(body(kube), SCENARIO_TIMEOUT)
                async with running_kubelet(kube):
                    return await asyncio.wait_for(body(kube), SCENARIO_TIMEOUT)

        try:
            return asyncio.run(main())
        except BaseException:
            for s in (self.operator, self.scheduler):
                if s is not None:
                    print(f"--- {s.name} (tail) ---\n{s.log_text(4000)}")
            raise


def small_pcs(name: str, ns: str, cliques: list[tuple[str, int]], gpus: int = 8,
              groups: list[dict[str, Any]] | None = None) -> PodCliqueSet:
    return PodCliqueSet.model_validate({
        "apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"replicas": 1, "template": {
            "cliques": [{"name": c, "spec": {"roleName": c, "replicas": n, "podSpec": {
                "schedulerName": "phalanx-scheduler",
                "containers": [{"name": "c", "image": "busybox", "resources": {
                    "limits": {"nvidia.com/gpu": str(gpus)}}}]}}} for c, n in cliques],
            **({"podCliqueScalingGroups": groups} if groups else {})}}})


async def events_of(kube: Any, ns: str, name: str) -> list[Event]:
    return [e for e in (await kube.list(Event, ns)).items if e.involved_object.name == name]


@dataclass(frozen=True)
class EventRow:
    """One row of `kubectl get events`: LAST SEEN, TYPE, REASON, OBJECT, MESSAGE."""

    type: str
    reason: str
    object: str  # kind/name, as kubectl prints it
    message: str


def kubectl_events(plane: Any, ns: str) -> list[EventRow]:
    """`kubectl get events` in `ns`, parsed from the table a user sees."""
    out = plane.kubectl("get", "events", namespace=ns).stdout
    lines = out.splitlines()
    assert lines and lines[0].split()[:4] == ["LAST", "SEEN", "TYPE", "REASON"], out[:500]
    rows = []
    for line in lines[1:]:
        _, type_, reason, obj, *message = line.split(None, 4)
        rows.append(EventRow(type_, reason, obj, message[0] if message else ""))
    return rows


def describe_events(plane: Any, ns: str, what: str) -> list[tuple[str, str, str, str]]:
    """The Events section of `kubectl describe <what>`: (type, reason, from, message)."""
    out = plane.kubectl("describe", what, namespace=ns).stdout
    section = out.split("\nEvents:", 1)
    assert len(section) == 2, out[-2000:]
    rows = []
    for line in section[1].splitlines()[3:]:  # header and dashes
        m = _DESCRIBED_EVENT.match(line)
        if m is None:
            break
        rows.append((m["type"], m["reason"], m["source"], m["message"]))
    return rows


# "  Warning  FailedScheduling  3s (x2 over 5s)  phalanx-scheduler  0/16 nodes are ..."
_DESCRIBED_EVENT = re.compile(r"^\s+(?P<type>Normal|Warning)\s+(?P<reason>\S+)\s+"
                              r"\S+(?: \(x\d+ over \S+\))?\s+(?P<source>\S+)\s+"
                              r"(?P<message>.*)$")


async def clear_namespace(kube: Any, ns: str) -> None:
    """Remove a test's workload so the next test finds the nodes free: no
    kube-controller-manager runs here, so nothing cascades; PodCliqueSets, scaling groups,
    PodCliques and PodGangs go first (nothing recreates pods then), then the pods, at once."""
    from phalanx.api.grove import PodClique, PodCliqueScalingGroup, PodGang
    from phalanx.api.pod import Pod
    from phalanx.cluster.client import NotFound
    from phalanx.envtest import Pending, wait_until_async

    for kind in (PodCliqueSet, PodCliqueScalingGroup, PodClique, PodGang):
        for obj in (await kube.list(kind, ns)).items:
            try:
                await kube.delete(kind, obj.name, ns)
            except NotFound:
                pass
    for pod in (await kube.list(Pod, ns)).items:
        try:
            await kube.transport.request(
                "DELETE", f"/api/v1/namespaces/{ns}/pods/{pod.name}", kind="Pod",
                name=pod.name, body={"apiVersion": "v1", "kind": "DeleteOptions",
                                     "gracePeriodSeconds": 0})
        except NotFound:
            pass

    async def gone() -> object:
        left = sorted(p.name for p in (await kube.list(Pod, ns)).items)
        return not left or Pending(left)

    await wait_until_async(gone, SCENARIO_TIMEOUT, stall=STALL, interval=0.5,
                           what=f"the pods of {ns} deleted")
