"""PodCliqueSet admission of queues (phalanx/operator/admission_queue.py): a PodCliqueSet
naming a queue that does not exist is refused, naming the label, when its scheduler reads that
kind of queue (KAI's for kai-scheduler and phalanx-scheduler, Volcano's for volcano); admitted
once the queue exists. Another scheduler's queue key is never looked up."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api.config import OperatorConfiguration
from phalanx.api.grove import PodCliqueSet
from phalanx.api.queue import Queue, unlimited_queue
from phalanx.api.volcano_queue import VolcanoQueue
from phalanx.backends.registry import BackendRegistry
from phalanx.cluster.client import Invalid
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.operator.admission import install_admission

LABEL = "kai.scheduler/queue"
PROFILES = ("kai-scheduler", "phalanx-scheduler", "default-scheduler", "volcano")


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


def _cluster(reader: Any = None) -> MemoryCluster:
    import phalanx.backends  # noqa: F401  (registers the backends)

    cfg = OperatorConfiguration.model_validate({"scheduler": {
        "profiles": [{"name": p} for p in PROFILES], "defaultProfileName": "phalanx-scheduler"}})
    cluster = MemoryCluster()
    install_admission(cluster, BackendRegistry.from_config(cfg), client=reader)
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


def _with(pcs: PodCliqueSet, *, pcs_labels: dict | None = None,
          clique_labels: dict | None = None, clique_annotations: dict | None = None
          ) -> PodCliqueSet:
    pcs.metadata.labels = dict(pcs_labels or {})
    pcs.spec.template.cliques[0].labels = dict(clique_labels or {}) or None
    pcs.spec.template.cliques[0].annotations = dict(clique_annotations or {}) or None
    return pcs


async def _refusal(cluster: MemoryCluster, pcs: PodCliqueSet) -> Invalid | None:
    try:
        await cluster.create(pcs)
    except Invalid as e:
        return e
    return None


def test_the_pcs_queue_is_the_one_checked_before_a_clique_templates() -> None:
    """KAI's grouper takes the PodCliqueSet's queue (mirrored onto the PodGang) first: a
    missing one is refused even when a clique template names one that exists; a missing queue
    a clique template names under an existing PodCliqueSet queue is never used."""
    async def main() -> tuple[Invalid | None, Invalid | None]:
        cluster = _cluster()
        await cluster.create(unlimited_queue("team-a"))
        missing_pcs = _with(_pcs("phalanx-scheduler", None), pcs_labels={LABEL: "nope"},
                            clique_labels={LABEL: "team-a"})
        overridden = _with(_pcs("phalanx-scheduler", None), pcs_labels={LABEL: "team-a"},
                           clique_labels={LABEL: "nope"})
        return await _refusal(cluster, missing_pcs), await _refusal(cluster, overridden)

    refused, admitted = run_virtual(main)
    assert refused is not None and refused.field == f"metadata.labels[{LABEL}]"
    assert admitted is None


def test_kai_project_label_names_the_queue_for_kai_scheduler() -> None:
    async def main() -> Invalid | None:
        return await _refusal(_cluster(), _with(_pcs("kai-scheduler", None),
                                                pcs_labels={"project": "team-b"}))

    err = run_virtual(main)
    assert err is not None and err.field == "metadata.labels[project]"
    assert "queue 'team-b' (label project) does not exist" in str(err)


def test_a_kai_queue_label_is_not_checked_for_volcano() -> None:
    """Volcano does not read KAI's label: never refused as a missing queue Volcano would use
    (reported as ignored by the backend check instead)."""
    async def main() -> Invalid | None:
        return await _refusal(_cluster(), _pcs("volcano", "nope"))

    assert run_virtual(main) is None


@pytest.mark.parametrize("where", ["label", "annotation"])
def test_the_embedded_cluster_has_only_volcanos_default_queue(where: str) -> None:
    """No Volcano Queue kind is served here: only `default` (every Volcano install has it)."""
    key = "volcano.sh/queue-name" if where == "label" else "scheduling.volcano.sh/queue-name"

    def pcs(queue: str) -> PodCliqueSet:
        base = _pcs("volcano", None)
        if where == "label":
            return _with(base, pcs_labels={key: queue})
        return _with(base, clique_annotations={key: queue})

    async def main() -> tuple[Invalid | None, Invalid | None]:
        cluster = _cluster()
        refused = await _refusal(cluster, pcs("research"))
        return refused, await _refusal(cluster, pcs("default"))

    refused, admitted = run_virtual(main)
    field = "metadata.labels" if where == "label" else "spec.template.cliques[0].annotations"
    assert refused is not None and refused.field == f"{field}[{key}]"
    assert "Volcano queue 'research' does not exist" in str(refused)
    assert "only Volcano's 'default' queue" in str(refused)
    assert admitted is None


class _VolcanoServer:
    """A reader as a real API server answers: Volcano's Queue served or not."""

    def __init__(self, cluster: MemoryCluster, served: bool) -> None:
        self.cluster, self.served = cluster, served

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cluster, name)

    async def serves(self, kind: type) -> bool:
        return self.served or kind.API_VERSION != VolcanoQueue.API_VERSION


@pytest.mark.parametrize(("state", "refused"), [
    (None, "Not found: Volcano queue 'research' does not exist"),
    ("Closed", "Volcano queue 'research' is Closed"),
    ("Open", None)])
def test_a_volcano_queue_must_exist_and_be_open_where_volcano_serves_queues(
        state: str | None, refused: str | None) -> None:
    """As Volcano's PodGroup webhook (validate_podgroup.go checkQueueState)."""
    async def main() -> Invalid | None:
        store = MemoryCluster()
        cluster = _cluster(_VolcanoServer(store, served=True))
        if state is not None:
            await store.create(VolcanoQueue.model_validate({
                "metadata": {"name": "research"}, "status": {"state": state}}))
        return await _refusal(cluster, _with(_pcs("volcano", None),
                                             pcs_labels={"volcano.sh/queue-name": "research"}))

    err = run_virtual(main)
    if refused is None:
        assert err is None
    else:
        assert err is not None and refused in str(err)
        assert err.field == "metadata.labels[volcano.sh/queue-name]"


def test_nothing_is_checked_where_volcanos_queue_is_not_served() -> None:
    async def main() -> Invalid | None:
        cluster = _cluster(_VolcanoServer(MemoryCluster(), served=False))
        return await _refusal(cluster, _with(_pcs("volcano", None),
                                             pcs_labels={"volcano.sh/queue-name": "research"}))

    assert run_virtual(main) is None
