"""`phalanx startup-wait`: Grove's grove-initc (`operator/initc/internal/wait.go`).

Runs as a pod's init container (phalanx.operator.startupwaiter injects it) and returns once
every parent PodClique has its number of Ready pods, so the pod's own containers start
after their parents, as cliqueStartupType / startsAfter ask.

It lists the parents' pods (label `grove.io/podclique in (...)`, in the pod's namespace),
then follows a watch from that list's resourceVersion, and lists again when the watch ends
or its version expires. A parent pod counts while its Ready condition is True (the same
rule the simulated kubelet applies). Progress is logged whenever a count changes. The
PodCliqueSet's Role lets it read pods and nothing else; a Forbidden or Unauthorized answer
is final (the kubelet restarts the init container), a server that cannot be reached is
retried with backoff.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from phalanx.api import labels as L
from phalanx.api.core import Pod
from phalanx.cluster.client import ApiError, Client, Forbidden, Gone
from phalanx.operator.startupwaiter import (
    POD_INFO_NAMESPACE_FILE,
    POD_INFO_PATH,
    counts_as_ready,
    unmet,
)

log = logging.getLogger("phalanx.startup-wait")

RETRY_FIRST, RETRY_MAX = 0.5, 10.0


class ParentTracker:
    """Ready pods per parent PodClique, from pod events."""

    def __init__(self, deps: list[tuple[str, int]]) -> None:
        self.deps = deps
        self.ready: dict[str, set[str]] = {name: set() for name, _ in deps}

    def reset(self, pods: list[Pod]) -> None:
        for names in self.ready.values():
            names.clear()
        for pod in pods:
            self.observe(pod, deleted=False)

    def observe(self, pod: Pod, *, deleted: bool) -> None:
        names = self.ready.get(pod.metadata.labels.get(L.LABEL_PODCLIQUE, ""))
        if names is None:
            return
        if not deleted and counts_as_ready(pod):
            names.add(pod.name)
        else:
            names.discard(pod.name)

    def counts(self) -> dict[str, int]:
        return {name: len(pods) for name, pods in self.ready.items()}

    def waiting(self) -> list[tuple[str, int, int]]:
        return unmet(self.deps, lambda name: len(self.ready[name]))

    def describe(self) -> str:
        return ", ".join(f"{name} {len(self.ready[name])}/{need} Ready"
                         for name, need in self.deps)


def selector(deps: list[tuple[str, int]]) -> str:
    return f"{L.LABEL_PODCLIQUE} in ({','.join(sorted({n for n, _ in deps}))})"


async def wait_for_parents(client: Client, namespace: str,
                           deps: list[tuple[str, int]]) -> None:
    """Return once each (PodClique, n) has n Ready pods. Raises Forbidden when the
    credentials may not read pods in `namespace`."""
    if not deps:
        log.info("no parent PodCliques to wait for")
        return
    tracker = ParentTracker(deps)
    log.info("waiting in namespace %s for %s", namespace,
             ", ".join(f"{n} Ready pod(s) of {name}" for name, n in deps))
    last = ""
    delay = RETRY_FIRST

    def progress() -> bool:
        nonlocal last
        now = tracker.describe()
        if now != last:
            log.info("parents: %s", now)
            last = now
        return not tracker.waiting()

    while True:
        try:
            listing = await client.list(Pod, namespace, label_selector=selector(deps))
            tracker.reset(listing.items)
            if progress():
                break
            delay = RETRY_FIRST
            async for ev in client.watch(Pod, namespace, label_selector=selector(deps),
                                         resource_version=listing.resource_version):
                if ev.type == "BOOKMARK":
                    continue
                tracker.observe(ev.object, deleted=ev.type == "DELETED")
                if progress():
                    break
            else:
                continue  # the stream ended: list again
            break
        except Gone:
            continue
        except Forbidden:
            raise
        except (ApiError, OSError, asyncio.TimeoutError) as e:
            log.warning("reading pods failed (%s); retrying in %.1fs", e, delay)
            await asyncio.sleep(delay)  # backoff between attempts, not synchronisation
            delay = min(delay * 2, RETRY_MAX)
    log.info("all parent PodCliques are ready: %s", tracker.describe())


def pod_namespace(explicit: str | None, fallback: str) -> str:
    """--namespace, else the downward-API file Grove's init container reads, else the
    kubeconfig's (or in-cluster) namespace."""
    if explicit:
        return explicit
    try:
        found = (Path(POD_INFO_PATH) / POD_INFO_NAMESPACE_FILE).read_text().strip()
    except OSError:
        found = ""
    return found or fallback


async def run_startup_wait(deps: list[tuple[str, int]], *, namespace: str | None,
                           kubeconfig: str | None, context: str | None) -> int:
    from phalanx.cluster.kube import KubeCluster

    cluster = await KubeCluster.connect(kubeconfig, context=context,
                                        field_manager="phalanx-startup-wait")
    try:
        ns = pod_namespace(namespace, cluster.default_namespace)
        try:
            await wait_for_parents(cluster, ns, deps)
        except Forbidden as e:
            log.error("may not read pods in namespace %s: %s (the PodCliqueSet's Role "
                      "grants get/list/watch on pods)", ns, e)
            return 1
    finally:
        await cluster.close()
    return 0
