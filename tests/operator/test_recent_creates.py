"""An object the operator created lately is not created again from a stale view
(recent_creates.py); the server's refusal stays the safety net past the TTL."""

from __future__ import annotations

from typing import Any

import pytest
from op_harness import NS, Env, make_pcs, run

from phalanx.api.base import ObjectMeta
from phalanx.api.core import ConfigMap
from phalanx.cluster.client import AlreadyExists, Invalid
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.operator.recent_creates import RecentCreates


class _Informer:
    """Stands in for an informer: the test delivers its add and delete events."""

    def __init__(self) -> None:
        self.on_add: Any = None
        self.on_delete: Any = None

    def add_handler(self, on_add: Any = None, on_delete: Any = None, **_: Any) -> None:
        self.on_add, self.on_delete = on_add, on_delete


class _Counting:
    def __init__(self, inner: MemoryCluster) -> None:
        self.inner, self.creates = inner, 0

    async def create(self, obj: Any, **kw: Any) -> Any:
        self.creates += 1
        return await self.inner.create(obj, **kw)


def _cm(name: str) -> ConfigMap:
    return ConfigMap(metadata=ObjectMeta(name=name, namespace=NS))


def test_a_recent_create_is_not_repeated_until_the_object_is_seen_deleted():
    async def main() -> None:
        now = [0.0]
        creates, informer = RecentCreates(lambda: now[0], ttl=30.0), _Informer()
        creates.watch(informer)  # type: ignore[arg-type]
        client = _Counting(MemoryCluster())
        assert await creates.create(client, _cm("a")) is True  # type: ignore[arg-type]
        assert await creates.create(client, _cm("a")) is False  # type: ignore[arg-type]
        assert client.creates == 1 and creates.pending(_cm("a"))
        # A reconcile working from a snapshot taken before the ADDED event still skips it.
        assert informer.on_add is None
        # Deleted: created again at once.
        await client.inner.delete(ConfigMap, "a", NS)
        informer.on_delete(_cm("a"))
        assert not creates.pending(_cm("a"))
        assert await creates.create(client, _cm("a")) is True  # type: ignore[arg-type]
        assert client.creates == 2

    run_virtual(main)


def test_entries_end_after_the_ttl_oldest_first():
    now = [0.0]
    creates = RecentCreates(lambda: now[0], ttl=30.0)
    creates._at[(ConfigMap, f"{NS}/a")] = 0.0
    now[0] = 10.0
    creates._at[(ConfigMap, f"{NS}/b")] = 10.0
    now[0] = 35.0
    assert not creates.pending(_cm("a")) and creates.pending(_cm("b")) and len(creates) == 1


def test_past_the_ttl_the_create_is_tried_again_and_the_server_refuses_a_duplicate():
    async def main() -> None:
        now = [0.0]
        creates = RecentCreates(lambda: now[0], ttl=30.0)
        client = _Counting(MemoryCluster())
        await creates.create(client, _cm("a"))  # type: ignore[arg-type]
        now[0] = 30.0  # past the TTL: tried again, and the server refuses the duplicate
        assert await creates.create(client, _cm("a")) is False  # type: ignore[arg-type]
        assert client.creates == 2

    run_virtual(main)


def test_a_refused_create_leaves_nothing_pending():
    class Refusing(_Counting):
        async def create(self, obj: Any, **kw: Any) -> Any:
            self.creates += 1
            raise Invalid("refused", kind="ConfigMap", name=obj.name)

    async def main() -> None:
        creates = RecentCreates(lambda: 0.0)
        client = Refusing(MemoryCluster())
        with pytest.raises(Invalid):
            await creates.create(client, _cm("a"))  # type: ignore[arg-type]
        assert not creates.pending(_cm("a"))

    run_virtual(main)


def test_a_reconcile_with_a_stale_cache_creates_no_service_twice():
    async def scenario(env: Env) -> tuple[int, bool]:
        refused = 0
        inner = env.cluster.create

        async def counting_create(obj: Any, *args: Any, **kwargs: Any) -> Any:
            nonlocal refused
            try:
                return await inner(obj, *args, **kwargs)
            except AlreadyExists:
                refused += 1
                raise

        env.cluster.create = counting_create  # type: ignore[method-assign]
        pcs = await env.create(make_pcs("job", [("w", 2)]))
        controller = env.op.headless_service
        # Two reconciles before the Services' ADDED events arrive: the second sees none.
        await controller._ensure(pcs, 0, None)
        await controller._ensure(pcs, 0, None)
        await env.settle()
        return refused, controller.services.get(f"{NS}/job-0") is not None

    assert run(scenario, binder=False, kubelet=False) == (0, True)
