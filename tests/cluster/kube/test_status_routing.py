"""Status writes go where the served resource keeps its status (issue 22 item 7).

Volcano's and Koordinator's PodGroup CRDs have no status subresource: a PATCH of `/status`
is a 404 that looks like a deleted object, and the write was dropped. KubeCluster asks
discovery and writes such a status with the object; a kind the model thinks has none but the
server serves with one still goes to `/status`; and a CRD that lost its subresource since
discovery is found out by the 404 and written with the object at once.
"""

from __future__ import annotations

from typing import Any

from phalanx.api.scheduling import KaiPodGroup, SchedulerCondition, VolcanoPodGroup
from phalanx.cluster.kube import KubeCluster
from phalanx.cluster.kube.discovery import Discovery
from phalanx.cluster.memory import MemoryCluster

from .facade import Facade, run_over_facade

VOLCANO = "/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups/g"
KAI = "/apis/scheduling.run.ai/v2alpha2/namespaces/ns/podgroups/g"


def _condition() -> SchedulerCondition:
    return SchedulerCondition(type="GangScheduled", status="False", reason="Unschedulable",
                              message="no room")


def test_a_status_without_subresource_is_written_with_the_object() -> None:
    async def body(kube: KubeCluster, mem: MemoryCluster, facade: Facade) -> None:
        pg = await kube.create(VolcanoPodGroup.model_validate(
            {"metadata": {"name": "g", "namespace": "ns"}, "spec": {"minMember": 2}}))
        pg.status.conditions.append(_condition())
        await kube.update_status(pg)
        assert ("PATCH", VOLCANO) in facade.requests
        assert ("PATCH", f"{VOLCANO}/status") not in facade.requests
        assert (await mem.get(VolcanoPodGroup, "g", "ns")).status.conditions[0].reason == \
            "Unschedulable"

        kai = await kube.create(KaiPodGroup.model_validate(
            {"metadata": {"name": "g", "namespace": "ns"}, "spec": {"minMember": 2}}))
        kai.status.conditions.append(_condition())
        await kube.update_status(kai)
        assert ("PATCH", f"{KAI}/status") in facade.requests
        assert (await mem.get(KaiPodGroup, "g", "ns")).status.conditions[0].reason == \
            "Unschedulable"

    run_over_facade(body)


class _Transport:
    """Answers discovery from a table; counts the requests."""

    def __init__(self, served: dict[str, list[str]]) -> None:
        self.served = served
        self.calls: list[str] = []

    async def request(self, method: str, path: str, **_: Any) -> dict[str, Any]:
        from phalanx.cluster.client import NotFound

        self.calls.append(path)
        gv = path.removeprefix("/apis/")
        if gv not in self.served:
            raise NotFound("the server could not find the requested resource")
        return {"resources": [{"name": n} for n in self.served[gv]]}


def test_discovery_decides_over_the_model_and_is_asked_once_per_group_version() -> None:
    import asyncio

    async def main() -> None:
        transport = _Transport({
            "scheduling.volcano.sh/v1beta1": ["podgroups", "podgroups/status", "queues"],
            "scheduling.run.ai/v2alpha2": ["podgroups"],
        })
        found = Discovery(transport)  # type: ignore[arg-type]
        # Served with a subresource although Volcano's own CRD has none (another CRD
        # version installed): /status, or the write would be silently ignored.
        assert await found.status_subresource(VolcanoPodGroup) is True
        assert await found.status_subresource(VolcanoPodGroup) is True
        # Served without one although KAI's CRD has one: with the object, not a 404.
        assert await found.status_subresource(KaiPodGroup) is False
        assert transport.calls == ["/apis/scheduling.volcano.sh/v1beta1",
                                   "/apis/scheduling.run.ai/v2alpha2"]
        # Not served at all (or no discovery): the model says.
        transport.served.clear()
        found.forget(KaiPodGroup)
        assert await found.status_subresource(KaiPodGroup) is KaiPodGroup.HAS_STATUS
        from phalanx.api.core import Pod

        assert await found.status_subresource(Pod) is True  # core: never looked up
        assert "/apis/v1" not in transport.calls

    asyncio.run(main())


class _LostSubresource(_Transport):
    """Discovery still lists podgroups/status, but the CRD lost it: /status is a 404."""

    def __init__(self) -> None:
        super().__init__({"scheduling.run.ai/v2alpha2": ["podgroups", "podgroups/status"]})
        self.patches: list[tuple[str, dict[str, Any]]] = []

    async def request(self, method: str, path: str, **kw: Any) -> dict[str, Any]:
        from phalanx.cluster.kube.errors import error_from_status

        if method == "GET":
            return await super().request(method, path, **kw)
        self.patches.append((path, kw["body"]))
        if path.endswith("/status"):
            raise error_from_status(404, {"message": "the server could not find the requested "
                                          "resource"}, kind="PodGroup")
        return {"apiVersion": KaiPodGroup.API_VERSION, "kind": "PodGroup",
                "metadata": {"name": "g", "namespace": "ns", "resourceVersion": "2"},
                "status": kw["body"]["status"]}


def test_a_status_subresource_lost_since_discovery_is_written_with_the_object() -> None:
    import asyncio

    async def main() -> None:
        transport = _LostSubresource()
        kube = KubeCluster(transport)  # type: ignore[arg-type]
        pg = kube.decode(KaiPodGroup, {
            "apiVersion": KaiPodGroup.API_VERSION, "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "ns", "uid": "u", "resourceVersion": "1"}})
        pg.status.conditions.append(_condition())
        written = await kube.update_status(pg)
        assert [p for p, _ in transport.patches] == [f"{KAI}/status", KAI]
        assert written.status.conditions[0].reason == "Unschedulable"
        # Discovery is asked again next time instead of trusting the stale answer.
        await kube.status_subresource(KaiPodGroup)
        assert transport.calls.count("/apis/scheduling.run.ai/v2alpha2") == 2

    asyncio.run(main())
