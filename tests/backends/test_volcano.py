"""The Volcano backend's queue (phalanx/backends/volcano.py): Volcano's own pod annotation
`scheduling.volcano.sh/queue-name` first, as Volcano's PodGroup controller reads it, then
Phalanx's `volcano.sh/queue-name` label; KAI's queue label is not Volcano's."""

from __future__ import annotations

from phalanx.api import labels
from phalanx.api.scheduling import VolcanoPodGroup
from phalanx.backends.volcano import VolcanoBackend, VolcanoBackendConfig
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster

from . import samples as s


def _queue(*, pcs_labels: dict | None = None, pcs_annotations: dict | None = None,
           clique_annotations: dict | None = None, clique_labels: dict | None = None,
           podgang_annotations: dict | None = None, podgang_labels: dict | None = None) -> str:
    async def main() -> str:
        client = MemoryCluster()
        pcs = s.pcs("volcano")
        pcs.metadata.labels = dict(pcs_labels or {})
        pcs.metadata.annotations = dict(pcs_annotations or {})
        for c in pcs.spec.template.cliques:
            c.annotations = dict(clique_annotations or {}) or None
            c.labels = dict(clique_labels or {}) or None
        await client.create(pcs)
        backend = VolcanoBackend(VolcanoBackendConfig())
        await backend.init(client)
        pg = s.podgang()
        pg.metadata.annotations.update(podgang_annotations or {})
        pg.metadata.labels.update(podgang_labels or {})
        pg = await client.create(pg)
        await backend.sync_podgang(pg)
        return (await client.get(VolcanoPodGroup, s.BASE_PODGANG, "default")).spec.queue

    return run_virtual(main)


ANN, LABEL = labels.ANNOTATION_VOLCANO_QUEUE, labels.LABEL_VOLCANO_QUEUE


def test_the_pod_annotation_is_volcanos_queue() -> None:
    assert _queue(clique_annotations={ANN: "research"}) == "research"
    assert _queue(pcs_annotations={ANN: "research"}) == "research"
    assert _queue(podgang_annotations={ANN: "research"}) == "research"


def test_the_annotation_goes_before_the_label_and_the_pods_before_the_pcs() -> None:
    assert _queue(pcs_labels={LABEL: "by-label"}, clique_annotations={ANN: "by-pod"}) == "by-pod"
    assert _queue(pcs_annotations={ANN: "by-pcs"}, clique_annotations={ANN: "by-pod"}) == "by-pod"
    assert _queue(pcs_annotations={ANN: "by-pcs"}, clique_labels={LABEL: "by-label"}) == "by-pcs"
    assert _queue(pcs_labels={LABEL: "by-label"}) == "by-label"


def test_what_grove_mirrors_onto_the_podgang_counts_as_the_pcss() -> None:
    """Grove mirrors the PodCliqueSet's labels and annotations onto its PodGangs: there they
    stand for the PodCliqueSet's, after the pods' annotation."""
    assert _queue(podgang_labels={LABEL: "mirrored"}, clique_annotations={ANN: "by-pod"}) == \
        "by-pod"
    assert _queue(podgang_annotations={ANN: "mirrored"}, clique_labels={LABEL: "x"}) == \
        "mirrored"
    assert _queue(podgang_labels={LABEL: "mirrored"}, pcs_labels={LABEL: "stale"}) == "mirrored"


def test_a_kai_queue_label_is_not_volcanos() -> None:
    assert _queue(pcs_labels={labels.LABEL_KAI_QUEUE: "team-a"}) == "default"


def test_an_overridden_volcano_queue_is_reported() -> None:
    pcs = s.pcs("volcano")
    pcs.metadata.labels = {LABEL: "by-label"}
    pcs.metadata.annotations = {ANN: "by-pcs"}
    [issue] = VolcanoBackend(VolcanoBackendConfig()).validate_podcliqueset(pcs)
    assert issue.field == "metadata.labels[volcano.sh/queue-name]" and issue.best_effort
    assert "Volcano queue 'by-label' is overridden by " \
           "metadata.annotations[scheduling.volcano.sh/queue-name] ('by-pcs')" in issue.message
