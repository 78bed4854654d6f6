"""Scheduler tests write a pod's resolved `spec.priority` directly (`helpers.pod(priority=)`).
kube-apiserver's Priority admission refuses a priority the pod's PriorityClass does not
give, so every pod created on a MemoryCluster here that carries a priority and names no
class is given a PriorityClass with that value (and preemption policy), created on first
use, as a real cluster needs. The stored pod keeps the priority it was written with."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api.base import ObjectMeta
from phalanx.api.core import Pod, PriorityClass
from phalanx.cluster.client import AlreadyExists
from phalanx.cluster.memory import MemoryCluster


@pytest.fixture(autouse=True)
def _priority_classes_for_written_priorities(monkeypatch: pytest.MonkeyPatch) -> None:
    create = MemoryCluster.create

    async def create_with_class(self: MemoryCluster, obj: Any, *args: Any, **kwargs: Any) -> Any:
        spec = getattr(obj, "spec", None)
        if isinstance(obj, Pod) and spec.priority is not None and not spec.priority_class_name:
            policy = spec.preemption_policy or "PreemptLowerPriority"
            name = f"test-priority-{spec.priority}-{policy.lower()}".replace("--", "-m")
            try:
                await create(self, PriorityClass(metadata=ObjectMeta(name=name),
                                                 value=spec.priority, preemption_policy=policy))
            except AlreadyExists:
                pass
            obj = obj.model_copy(deep=True)
            obj.spec.priority_class_name = name
        return await create(self, obj, *args, **kwargs)

    monkeypatch.setattr(MemoryCluster, "create", create_with_class)
