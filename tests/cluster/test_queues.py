"""KAI Queue admission on the embedded cluster (phalanx.cluster.queues): bad queues are refused
with the field named and why -- a cycle, a child's quota over its parent's, a negative or
non-numeric quota, a limit below the quota -- and good trees are accepted."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api import registry
from phalanx.api.loader import ManifestError, load_yaml
from phalanx.api.queue import Queue, queue_dict
from phalanx.cluster.client import Invalid
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster

OPEN = {"quota": -1, "limit": -1, "overQuotaWeight": 1}


def _q(name: str, parent: str | None = None, gpu: dict[str, Any] | None = None) -> Queue:
    doc = queue_dict(name, parent=parent, gpu=gpu or dict(OPEN), cpu=dict(OPEN),
                     memory=dict(OPEN))
    obj = registry.from_dict(doc)
    assert isinstance(obj, Queue)
    return obj


def _refused(*queues: Queue) -> Invalid:
    """Create `queues` in order; the last must be refused."""
    async def main() -> Invalid:
        cluster = MemoryCluster()
        for q in queues[:-1]:
            await cluster.create(q)
        with pytest.raises(Invalid) as err:
            await cluster.create(queues[-1])
        return err.value

    return run_virtual(main)


def test_a_good_tree_is_accepted_and_served() -> None:
    async def main() -> list[str]:
        cluster = MemoryCluster()
        await cluster.create(_q("org", gpu={"quota": 16, "limit": 32, "overQuotaWeight": 1}))
        await cluster.create(_q("team-a", "org", gpu={"quota": 8, "limit": 16,
                                                       "overQuotaWeight": 2}))
        return [q.metadata.name or "" for q in (await cluster.list(Queue)).items]

    assert sorted(run_virtual(main)) == ["org", "team-a"]


def test_negative_quota_names_the_field() -> None:
    err = _refused(_q("a", gpu={"quota": -4, "limit": -1, "overQuotaWeight": 1}))
    assert err.field == "spec.resources.gpu.quota"
    assert "-4" in str(err) and "-1 for unlimited" in str(err)


def test_negative_over_quota_weight_names_the_field() -> None:
    err = _refused(_q("a", gpu={"quota": 1, "limit": -1, "overQuotaWeight": -1}))
    assert err.field == "spec.resources.gpu.overQuotaWeight"


def test_non_numeric_quota_names_the_field() -> None:
    text = """
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: a}
spec:
  resources:
    gpu: {quota: eight, limit: -1, overQuotaWeight: 1}
"""
    with pytest.raises(ManifestError) as err:
        load_yaml(text, source="q.yaml")
    assert "spec.resources.gpu.quota" in str(err.value)


def test_limit_below_quota_names_the_field() -> None:
    err = _refused(_q("a", gpu={"quota": 8, "limit": 4, "overQuotaWeight": 1}))
    assert err.field == "spec.resources.gpu.limit"
    assert "below the quota 8 GPUs" in str(err)


def test_unset_limit_with_a_quota_is_refused_and_explained() -> None:
    err = _refused(_q("a", gpu={"quota": 8, "overQuotaWeight": 1}))
    assert err.field == "spec.resources.gpu.limit"
    assert "KAI reads a missing limit as 0" in str(err)


def test_child_quota_over_parent_names_the_field() -> None:
    err = _refused(_q("org", gpu={"quota": 4, "limit": -1, "overQuotaWeight": 1}),
                   _q("team", "org", gpu={"quota": 8, "limit": -1, "overQuotaWeight": 1}))
    assert err.field == "spec.resources.gpu.quota"
    assert "parent queue 'org'" in str(err)


def test_parent_lowered_below_a_child_quota_is_refused() -> None:
    parent = _q("org", gpu={"quota": 8, "limit": -1, "overQuotaWeight": 1})
    child = _q("team", "org", gpu={"quota": 6, "limit": -1, "overQuotaWeight": 1})
    lowered = _q("org", gpu={"quota": 4, "limit": -1, "overQuotaWeight": 1})

    async def main() -> Invalid:
        cluster = MemoryCluster()
        await cluster.create(parent)
        await cluster.create(child)
        stored = await cluster.get(Queue, "org")
        lowered.metadata.resource_version = stored.metadata.resource_version
        with pytest.raises(Invalid) as err:
            await cluster.update(lowered)
        return err.value

    err = run_virtual(main)
    assert err.field == "spec.resources.gpu.quota" and "child queue 'team'" in str(err)


def test_queue_cycle_names_the_parent_field() -> None:
    async def main() -> Invalid:
        cluster = MemoryCluster()
        await cluster.create(_q("a"))
        await cluster.create(_q("b", "a"))
        stored = await cluster.get(Queue, "a")
        looped = _q("a", "b")
        looped.metadata.resource_version = stored.metadata.resource_version
        with pytest.raises(Invalid) as err:
            await cluster.update(looped)
        return err.value

    err = run_virtual(main)
    assert err.field == "spec.parentQueue" and "cycle (a -> b -> a)" in str(err)


def test_own_parent_and_missing_parent_are_refused() -> None:
    assert _refused(_q("a", "a")).field == "spec.parentQueue"
    err = _refused(_q("a", "nope"))
    assert err.field == "spec.parentQueue" and "'nope' does not exist" in str(err)
