"""Copies, merge patches, and the loop-quiescence primitives of the virtual clock."""

import asyncio

from pydantic import Field

from phalanx.api.base import KubeModel, ObjectMeta, Resource, none_is_always_default
from phalanx.api.core import Node
from phalanx.cluster.clock import run_virtual, settle
from phalanx.cluster.memory import MemoryCluster
from phalanx.cluster.objects import clone, merge_patch, split_key

from .kinds import Pod, Widget, make_pod


class Tuning(KubeModel):
    retries: int | None = 3  # None means "never retry", not "default"
    tags: list[str] = Field(default_factory=list)


class Tuned(Resource):
    API_VERSION = "test.phalanx.dev/v1"
    KIND = "Tuned"
    PLURAL = "tuneds"
    spec: Tuning = Field(default_factory=Tuning)


def test_clone_is_exact_even_when_none_is_not_the_default():
    assert none_is_always_default(Pod) and none_is_always_default(Widget)
    assert not none_is_always_default(Tuned)
    t = Tuned(metadata=ObjectMeta(name="t"), spec=Tuning(retries=None))
    copy = clone(t)
    assert copy.spec.retries is None and copy == t
    p = make_pod("p", gates=("a.io/b",))
    q = clone(p)
    assert q == p and q is not p and q.spec is not p.spec
    q.spec.scheduling_gates.clear()
    assert p.spec.scheduling_gates  # deep


def test_merge_patch_rfc7386():
    target = {"a": "b", "c": {"d": "e", "f": "g"}, "l": [1, 2]}
    patch = {"a": "z", "c": {"f": None, "h": {"i": 1}}, "l": [3]}
    assert merge_patch(target, patch) == {"a": "z", "c": {"d": "e", "h": {"i": 1}}, "l": [3]}
    assert target["c"] == {"d": "e", "f": "g"}  # input untouched
    assert merge_patch({"a": 1}, {"a": None, "b": None}) == {}
    assert split_key("ns/name") == ("ns", "name") and split_key("node-1") == (None, "node-1")


def test_nodes_keep_their_status_on_create():
    async def main():
        c = MemoryCluster()
        n = Node.model_validate({"metadata": {"name": "n1"},
                                 "status": {"capacity": {"cpu": "8"},
                                            "allocatable": {"cpu": "8"}}})
        created = await c.create(n)
        assert created.status.capacity == n.status.capacity
    run_virtual(main)


def test_settle_runs_ready_work_without_moving_time():
    async def main():
        loop = asyncio.get_running_loop()
        steps = []

        async def chain(n):
            for i in range(n):
                steps.append(i)
                await asyncio.sleep(0)

        async def later():
            await asyncio.sleep(10)
            steps.append("later")
            await asyncio.sleep(5)

        asyncio.create_task(chain(50))
        asyncio.create_task(later())
        t0 = loop.time()
        await settle()
        assert steps == list(range(50)) and loop.time() == t0
        await settle()  # nothing ready: returns at once, still no time moves
        assert loop.time() == t0
        stalled = await loop.quiescent(after_progress=True)  # lets time advance first
        assert steps[-1] == "later" and loop.time() == t0 + 10 and not stalled
        assert await loop.quiescent(after_progress=True) is True  # nothing left at all
        assert loop.time() == t0 + 15
    run_virtual(main)


def test_a_task_waiting_on_a_socket_is_not_a_stall():
    async def main():
        import socket
        loop = asyncio.get_running_loop()
        a, b = socket.socketpair()
        a.setblocking(False)
        b.setblocking(False)
        reader = asyncio.create_task(loop.sock_recv(a, 10))
        await settle()
        assert await loop.quiescent() is False  # blocked on I/O, which may still arrive
        await loop.sock_sendall(b, b"hi")
        assert await reader == b"hi"
        a.close()
        b.close()
    run_virtual(main)
