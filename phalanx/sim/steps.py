"""Carry out a Scenario's steps against the cluster, at their virtual times."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from phalanx.api import labels, registry
from phalanx.api.base import Resource
from phalanx.api.errors import ManifestError
from phalanx.api.core import Node, Pod
from phalanx.cluster.client import ApiError, Client

from .lifecycle import end_pod, set_node_ready
from .record import StepRecord
from .scenario import PodTarget, Step


class StepError(Exception):
    """A step that could not be carried out (recorded; the run goes on)."""


def _kind(name: str) -> type[Resource]:
    try:
        return registry.resolve(name)
    except LookupError as e:
        raise StepError(str(e)) from None


async def _pods(client: Client, target: PodTarget) -> list[Pod]:
    selector: dict[str, str] = {}
    if target.pod_gang:
        selector[labels.LABEL_PODGANG] = target.pod_gang
    if target.pod_clique:
        selector[labels.LABEL_PODCLIQUE] = target.pod_clique
    if target.pod_clique_set:
        selector[labels.LABEL_PART_OF] = target.pod_clique_set
    if target.selector:
        extra = ",".join(f"{k}={v}" for k, v in selector.items())
        query: str | dict[str, str] = ",".join(x for x in (target.selector, extra) if x)
    else:
        query = selector
    found = await client.list(Pod, target.namespace, label_selector=query or None)
    pods = [p for p in found.items if not p.is_terminal and not p.is_deleting and p.spec.node_name
            and (not target.pod or p.name == target.pod)]
    pods.sort(key=lambda p: p.name)
    return pods[: target.count] if target.count else pods


async def run_step(client: Client, step: Step) -> str:
    """Do one step; returns what happened, in words. Raises StepError or ApiError."""
    if step.apply is not None:
        made = []
        for data in step.apply:
            obj = registry.from_dict(data)
            created = await client.create(obj)
            made.append(f"{created.kind} {created.name}")
        return "created " + ", ".join(made)
    if step.scale is not None:
        s = step.scale
        await client.patch(_kind(s.kind), s.name, {"spec": {"replicas": s.replicas}},
                           s.namespace or "default")
        return f"scaled {s.kind} {s.name} to {s.replicas}"
    if step.delete is not None:
        d = step.delete
        kind = _kind(d.kind)
        await client.delete(kind, d.name, (d.namespace or "default") if kind.NAMESPACED else None)
        return f"deleted {d.kind} {d.name}"
    for target, phase in ((step.fail, "Failed"), (step.finish, "Succeeded")):
        if target is None:
            continue
        pods = await _pods(client, target)
        if not pods:
            raise StepError("no running pod matches")
        code = target.exit_code if target.exit_code is not None else (1 if phase == "Failed"
                                                                        else 0)
        ended = []
        for p in pods:
            if await end_pod(client, p.name, p.namespace or "default", phase,  # type: ignore[arg-type]
                             exit_code=code, message=f"simulated: scenario step ({phase})"):
                ended.append(p.name)
        verb = "failed" if phase == "Failed" else "finished"
        return f"{verb} {len(ended)} pod(s): {', '.join(ended)}"
    for target, ready in ((step.node_down, False), (step.node_up, True)):
        if target is None:
            continue
        if target.node:
            names = [target.node]
        else:
            names = sorted(n.name for n in (await client.list(Node,
                                                              label_selector=target.selector)).items)
            if not names:
                raise StepError(f"no node matches {target.selector}")
        lost: list[str] = []
        for name in names:
            lost += await set_node_ready(client, name, ready)
        verb = "brought up" if ready else "took down"
        extra = f"; {len(lost)} pod(s) lost" if lost else ""
        return f"{verb} {', '.join(names)}{extra}"
    raise StepError(f"nothing to do for step {step.action}")


async def run_scenario(client: Client, steps: list[Step], t0: float,
                       record: Callable[[StepRecord], None]) -> None:
    """Each step at its time (virtual seconds after t0), in order; failures are recorded."""
    loop = asyncio.get_running_loop()
    for step in steps:
        delay = t0 + step.seconds - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        t = loop.time() - t0
        try:
            done = await run_step(client, step)
            record(StepRecord(t=t, action=step.action, description=done))
        except (StepError, ApiError, ManifestError) as e:
            record(StepRecord(t=t, action=step.action, description=step.describe(), ok=False,
                              error=getattr(e, "message", None) or str(e)))
