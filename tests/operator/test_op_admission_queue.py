"""PodCliqueSet admission of KAI queues (phalanx/operator/admission_queue.py): a PodCliqueSet
naming a queue that does not exist (label kai.scheduler/queue) is refused, naming the label,
when its scheduler reads queues; admitted once the queue exists."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api.config import OperatorConfiguration
from phalanx.api.grove import PodCliqueSet
from phalanx.api.queue import Queue, unlimited_queue
from phalanx.backends.registry import BackendRegistry
from phalanx.cluster.client import Invalid
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.operator.admission import install_admission

LABEL = "kai.scheduler/queue"
PROFILES = ("kai-scheduler", "phalanx-scheduler", "default-scheduler")


def _pcs(scheduler: str, queue: str | None, on_clique: bool = True) -> PodCliqueSet:
    clique: dict[str, Any] = {"name": "w", "spec": {"roleName": "w", "replicas": 1, "podSpec": {
        "schedulerName": scheduler, "containers": [{"name": "c", "image": "busybox"}]}}}
    meta: dict[str, Any] = {"name": "job", "namespace": "default"}
    if queue and on_clique:
        clique["labels"] = {LABEL: queue}
    elif queue:
        meta["labels"] = {LABEL: queue}
    return PodCliqueSet.model_validate({
        "apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet", "metadata": meta,
        "spec": {"replicas": 1, "template": {"cliques": [clique]}}})


def _cluster() -> MemoryCluster:
    import phalanx.backends  # noqa: F401  (registers the backends)

    cfg = OperatorConfiguration.model_validate({"scheduler": {
        "profiles": [{"name": p} for p in PROFILES], "defaultProfileName": "phalanx-scheduler"}})
    cluster = MemoryCluster()
    install_admission(cluster, BackendRegistry.from_config(cfg))
    return cluster


@pytest.mark.parametrize("scheduler", ["kai-scheduler", "phalanx-scheduler"])
@pytest.mark.parametrize("on_clique", [True, False], ids=["clique-label", "pcs-label"])
def test_a_missing_queue_is_refused_naming_the_label(scheduler: str, on_clique: bool) -> None:
    async def main() -> Invalid:
        cluster = _cluster()
        with pytest.raises(Invalid) as err:
            await cluster.create(_pcs(scheduler, "team-a", on_clique))
        return err.value

    err = run_virtual(main)
    where = "spec.template.cliques[0].labels" if on_clique else "metadata.labels"
    assert err.field == f"{where}[{LABEL}]"
    assert "queue 'team-a'" in str(err) and LABEL in str(err) and "does not exist" in str(err)


@pytest.mark.parametrize("scheduler", ["kai-scheduler", "phalanx-scheduler"])
def test_an_existing_queue_is_admitted(scheduler: str) -> None:
    async def main() -> str:
        cluster = _cluster()
        await cluster.create(unlimited_queue("team-a"))
        stored = await cluster.create(_pcs(scheduler, "team-a"))
        return stored.metadata.name or ""

    assert run_virtual(main) == "job"


def test_a_scheduler_without_queues_is_not_asked_for_one() -> None:
    """default-scheduler does not read queues: its label is a preference (reported by the
    backend check), and no queue is looked up."""
    async def main() -> str:
        stored = await _cluster().create(_pcs("default-scheduler", "team-a"))
        return stored.metadata.name or ""

    assert run_virtual(main) == "job"


def test_an_update_keeping_a_deleted_queue_is_admitted_a_new_missing_one_is_not() -> None:
    async def main() -> tuple[str, Invalid]:
        cluster = _cluster()
        await cluster.create(unlimited_queue("team-a"))
        await cluster.create(_pcs("phalanx-scheduler", "team-a"))
        await cluster.delete(Queue, "team-a")
        current = await cluster.get(PodCliqueSet, "job", "default")
        current.spec.replicas = 2
        kept = await cluster.update(current)
        kept.spec.template.cliques[0].labels = {LABEL: "team-b"}
        with pytest.raises(Invalid) as err:
            await cluster.update(kept)
        return str(kept.spec.replicas), err.value

    replicas, err = run_virtual(main)
    assert replicas == "2" and "queue 'team-b'" in str(err)
