"""kube-scheduler 1.36's defaultbinder/default_binder_test.go (TestDefaultBinder), ported row
by row (ids are kube's row names) against our DefaultBinder on the embedded cluster.

kube runs each row twice, with its asynchronous API dispatcher on and off; Phalanx binds
through one path (the Client), so each row runs once. A deliberate difference outside these
rows: a bind answered NotFound or Conflict (the pod deleted, or bound by someone else,
meanwhile) is UnschedulableAndUnresolvable here rather than kube's Error, since retrying the
same pod object cannot succeed; any other API error is an Error, as in kube.
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api.core import Pod
from phalanx.cluster.client import ApiError
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler.framework import CycleState, PodInfo
from phalanx.scheduler.framework.status import Code
from phalanx.scheduler.plugins.defaultbinder import DefaultBinder

from .nodeplugin_harness import node, pod

TEST_NODE = "foohost.kubernetes.mydomain.com"


class _Handle:
    def __init__(self, client: Any) -> None:
        self.client = client


class _FailingBind:
    """The cluster, with every bind answered by an API error (kube's injected reactor)."""

    def __init__(self, inner: MemoryCluster) -> None:
        self._inner = inner
        self.binds = 0

    async def bind(self, pod_name: str, namespace: str, node_name: str) -> None:
        self.binds += 1
        raise ApiError("binding error")


@pytest.mark.parametrize("inject_err", [False, True], ids=["successful", "binding error"])
def test_default_binder(inject_err):
    async def main() -> tuple[Code, str | None]:
        cluster = MemoryCluster()
        await cluster.create(node(TEST_NODE))
        p = pod("foo", containers=[None])
        p.metadata.namespace = "ns"
        await cluster.create(p)
        client: Any = _FailingBind(cluster) if inject_err else cluster
        status = await DefaultBinder(_Handle(client)).bind(CycleState(), PodInfo(p), TEST_NODE)
        bound = (await cluster.get(Pod, "foo", "ns")).spec.node_name
        return status.code, bound

    code, bound = run_virtual(main)
    if inject_err:
        assert code == Code.ERROR and bound is None
    else:
        assert code == Code.SUCCESS and bound == TEST_NODE
