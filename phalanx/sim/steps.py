"""Carry out a Scenario's steps against the cluster, at their virtual times."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from phalanx.api import labels, registry
from phalanx.api.base import Resource
from phalanx.api.core import Node, Pod
from phalanx.api.errors import ManifestError
from phalanx.cluster.client import AlreadyExists, ApiError, Client, NotFound
from phalanx.cluster.scale import Scale

from .lifecycle import end_pod, set_node_ready
from .record import StepRecord
from .restarts import restart_pending
from .scenario import NodeTarget, PodTarget, Step


class StepError(Exception):
    """A step that could not be carried out (recorded; the run goes on)."""


def _kind(name: str) -> type[Resource]:
    try:
        return registry.resolve(name)
    except LookupError as e:
        raise StepError(str(e)) from None


async def _pods(client: Client, target: PodTarget, *, running: bool = True) -> list[Pod]:
    """The pods a step names, first `count` by hostname. `pod` is a pod's hostname
    `<podclique>-<index>` (its stable identity: the operator's pods have generated names) or
    its name. `running`: only bound pods that have not ended and whose containers have not
    exited awaiting a restart (fail / finish); otherwise every
    pod not already being deleted (deletePod)."""
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
    pods = [p for p in found.items if not p.is_deleting
            and (not running or (not p.is_terminal and p.spec.node_name
                                 and not restart_pending(p)))
            and (not target.pod or target.pod in (p.spec.hostname, p.name))
            and (not target.node or p.spec.node_name == target.node)
            and (target.ready is None or p.is_ready == target.ready)]
    pods.sort(key=lambda p: (p.spec.hostname or p.name, p.name))
    return pods[: target.count] if target.count else pods


def _shown(pod: Pod) -> str:
    """A pod as a step reports it: its hostname, and its generated name when that differs."""
    host = pod.spec.hostname
    return f"{host} ({pod.name})" if host and host != pod.name else pod.name


async def _nodes(client: Client, target: NodeTarget) -> list[str]:
    """The named nodes (each must exist) and those the selector matches, once each."""
    names = [n for n in (target.node, *(target.nodes or ())) if n]
    for name in names:
        try:
            await client.get(Node, name)
        except NotFound:
            raise StepError(f"node {name} does not exist") from None
    if target.selector:
        matched = sorted(n.name for n in (await client.list(
            Node, label_selector=target.selector)).items)
        if not matched:
            raise StepError(f"no node matches {target.selector}")
        names += matched
    return list(dict.fromkeys(names))


async def set_unschedulable(client: Client, node: str, unschedulable: bool) -> bool:
    """`kubectl cordon` / `uncordon`; False when the node already was."""
    current = await client.get(Node, node)
    if bool(current.spec.unschedulable) == unschedulable:
        return False
    await client.patch(Node, node, {"spec": {"unschedulable": True if unschedulable else None}})
    return True


async def run_step(client: Client, step: Step) -> str:
    """Do one step; returns what happened, in words. Raises StepError or ApiError."""
    if step.apply is not None:
        made = []
        for data in step.apply:
            obj = registry.from_dict(data)
            try:
                created = await client.create(obj.copy_deep())
                made.append(f"created {created.kind} {created.name}")
            except AlreadyExists:  # kubectl apply: the object's new version replaces it
                ns = obj.namespace or ("default" if type(obj).NAMESPACED else None)
                obj.metadata.namespace = ns
                current = await client.get(type(obj), obj.name, ns)
                obj.metadata.resource_version = current.metadata.resource_version
                obj.metadata.uid = current.metadata.uid
                updated = await client.update(obj)
                made.append(f"configured {updated.kind} {updated.name}")
        return ", ".join(made)
    if step.scale is not None:
        s = step.scale
        # As `kubectl scale`: through the kind's scale subresource, unconditionally.
        await client.update_scale(_kind(s.kind), Scale(s.name, s.namespace or "default",
                                                       s.replicas))
        return f"scaled {s.kind} {s.name} to {s.replicas}"
    if step.delete is not None:
        d = step.delete
        kind = _kind(d.kind)
        await client.delete(kind, d.name, (d.namespace or "default") if kind.NAMESPACED else None)
        return f"deleted {d.kind} {d.name}"
    if step.delete_pod is not None:
        t = step.delete_pod
        pods = await _pods(client, t, running=False)
        if not pods:
            raise StepError("no pod matches")
        cordoned = []
        for p in pods:
            if t.cordon and p.spec.node_name and \
                    await set_unschedulable(client, p.spec.node_name, True):
                cordoned.append(p.spec.node_name)
            await client.delete(Pod, p.name, p.namespace or "default", uid=p.metadata.uid)
        extra = f" after cordoning {', '.join(cordoned)}" if cordoned else ""
        return f"deleted {len(pods)} pod(s): {', '.join(_shown(p) for p in pods)}{extra}"
    for target, unschedulable in ((step.cordon, True), (step.uncordon, False)):
        if target is None:
            continue
        names = await _nodes(client, target)
        changed = [n for n in names if await set_unschedulable(client, n, unschedulable)]
        verb = "cordoned" if unschedulable else "uncordoned"
        same = len(names) - len(changed)
        extra = f" ({same} already {'cordoned' if unschedulable else 'schedulable'})" \
            if same else ""
        return f"{verb} {len(changed)} node(s): {', '.join(changed) or '-'}{extra}"
    if step.label is not None:
        names = await _nodes(client, step.label)
        for name in names:
            await client.patch(Node, name, {"metadata": {"labels": dict(step.label.labels)}})
        changes = ", ".join(f"{k}={v}" if v is not None else f"{k}-"
                            for k, v in step.label.labels.items())
        return f"labelled {len(names)} node(s) {', '.join(names)}: {changes}"
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
                ended.append(_shown(p))
        verb = "failed" if phase == "Failed" else "finished"
        return f"{verb} {len(ended)} pod(s): {', '.join(ended)}"
    if step.metric is not None:
        from phalanx.api.autoscaling import HorizontalPodAutoscaler

        from .hpa import ANNOTATION_METRIC

        m = step.metric
        try:
            await client.patch(HorizontalPodAutoscaler, m.hpa, {"metadata": {"annotations": {
                ANNOTATION_METRIC: f"{m.value:g}"}}}, m.namespace or "default")
        except NotFound:
            raise StepError(f"HorizontalPodAutoscaler {m.hpa} does not exist") from None
        return f"set HPA {m.hpa}'s metric to {m.value:g}"
    for target, ready in ((step.node_down, False), (step.node_up, True)):
        if target is None:
            continue
        names = await _nodes(client, target)
        lost: list[str] = []
        for name in names:
            lost += await set_node_ready(client, name, ready)
        verb = "brought up" if ready else "took down"
        extra = f"; {len(lost)} pod(s) lost" if lost else ""
        return f"{verb} {', '.join(names)}{extra}"
    raise StepError(f"nothing to do for step {step.action}")


async def run_scenario(client: Client, steps: list[Step], t0: float,
                       record: Callable[[StepRecord], None],
                       before: Callable[[float, Step], Awaitable[None]] | None = None) -> None:
    """Each step at its time (virtual seconds after t0), in order; failures are recorded.
    `before(t, step)` runs just before each step (the run snapshots the objects there)."""
    loop = asyncio.get_running_loop()
    for step in steps:
        delay = t0 + step.seconds - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        t = loop.time() - t0
        if before is not None:
            await before(t, step)
        try:
            done = await run_step(client, step)
            record(StepRecord(t=t, action=step.action, description=done))
        except (StepError, ApiError, ManifestError) as e:
            record(StepRecord(t=t, action=step.action, description=step.describe(), ok=False,
                              error=getattr(e, "message", None) or str(e)))
