"""Scheduler hints in a PodCliqueSet's metadata (phalanx/backends/hints.py): each scheduler
reads its own keys only, so another scheduler's key is reported as ignored (or refused, for
KAI's GPU sharing), naming the field; never read as if it were the scheduler's own."""

from __future__ import annotations

import pytest

from phalanx.api import labels
from phalanx.backends import BackendRegistry, Capability, check_podcliqueset, hints

from . import samples as s

PROFILES = [("kai-scheduler", None), ("phalanx-scheduler", None), ("volcano", None),
            ("koordinator", {"mismatchPolicy": "pass-through"})]


def _check(scheduler: str, pcs_labels: dict | None = None, clique_labels: dict | None = None,
           clique_annotations: dict | None = None, pcs_annotations: dict | None = None):
    pcs = s.pcs(scheduler)
    pcs.metadata.labels = dict(pcs_labels or {})
    pcs.metadata.annotations = dict(pcs_annotations or {})
    pcs.spec.template.cliques[0].labels = dict(clique_labels or {}) or None
    pcs.spec.template.cliques[0].annotations = dict(clique_annotations or {}) or None
    return check_podcliqueset(pcs, None, BackendRegistry.from_profiles(PROFILES, "phalanx-scheduler"))


@pytest.mark.parametrize("scheduler", ["volcano", "koord-scheduler"])
def test_a_kai_queue_label_is_reported_ignored_where_kai_queues_are_not_read(scheduler: str) -> None:
    check = _check(scheduler, {labels.LABEL_KAI_QUEUE: "team-a", labels.LABEL_VOLCANO_QUEUE: "default"}
                   if scheduler == "volcano" else {labels.LABEL_KAI_QUEUE: "team-a"})
    assert check.allowed
    [ignored] = [i for i in check.ignored if i.feature is Capability.KAI_QUEUES]
    assert ignored.field == "metadata.labels[kai.scheduler/queue]"
    assert "KAI queue 'team-a' needs KAIQueues" in ignored.message


@pytest.mark.parametrize("scheduler", ["kai-scheduler", "phalanx-scheduler"])
@pytest.mark.parametrize(("where", "field"), [
    ("label", "metadata.labels[volcano.sh/queue-name]"),
    ("annotation", "spec.template.cliques[0].annotations[scheduling.volcano.sh/queue-name]")])
def test_a_volcano_queue_is_reported_ignored_by_kai_and_phalanx_scheduler(
        scheduler: str, where: str, field: str) -> None:
    kai = {labels.LABEL_KAI_QUEUE: "team-a"}
    if where == "label":
        check = _check(scheduler, {**kai, labels.LABEL_VOLCANO_QUEUE: "research"})
    else:
        check = _check(scheduler, kai,
                       clique_annotations={labels.ANNOTATION_VOLCANO_QUEUE: "research"})
    assert check.allowed
    assert [(i.field, i.feature) for i in check.ignored] == [(field, Capability.VOLCANO_QUEUES)]
    assert "Volcano queue 'research' needs VolcanoQueues" in check.ignored[0].message


def test_kai_gpu_sharing_is_a_mismatch_where_not_read_and_kai_passes_it_through() -> None:
    share = {labels.ANNOTATION_KAI_GPU_FRACTION: "0.5"}
    field = "spec.template.cliques[0].annotations[gpu-fraction]"
    refused = _check("phalanx-scheduler", clique_annotations=share)
    assert [(e.field, e.feature) for e in refused.errors] == [(field, Capability.KAI_GPU_SHARING)]
    assert "KAI GPU sharing '0.5' needs KAIGPUSharing, which phalanx-scheduler" in \
        refused.error_message()
    ignored = _check("koord-scheduler", clique_annotations=share)  # pass-through here
    assert [i.field for i in ignored.ignored] == [field]
    kai = _check("kai-scheduler", {labels.LABEL_KAI_QUEUE: "q"}, clique_annotations=share)
    assert kai.allowed and kai.ignored == []  # KAI honours it (the stand-in refuses the pod)


def test_kai_podgroup_metadata_is_kai_only() -> None:
    meta = {labels.ANNOTATION_KAI_TOPOLOGY: "t",
            labels.ANNOTATION_KAI_TOPOLOGY_REQUIRED: "example.com/rack"}
    pool = {labels.LABEL_KAI_NODE_POOL: "pool-x"}
    px = _check("phalanx-scheduler", pool, pcs_annotations=meta)
    assert px.allowed
    assert sorted(i.field for i in px.ignored) == [
        "metadata.annotations[kai.scheduler/topology-required-placement]",
        "metadata.annotations[kai.scheduler/topology]",
        "metadata.labels[kai.scheduler/node-pool]"]
    kai = _check("kai-scheduler", {labels.LABEL_KAI_QUEUE: "q", **pool}, pcs_annotations=meta)
    assert kai.allowed and kai.ignored == []


def test_preemptibility_keys_are_each_schedulers_own() -> None:
    kai_key = {labels.LABEL_KAI_PREEMPTIBILITY: "non-preemptible"}
    vol = _check("volcano", kai_key, clique_annotations={labels.VOLCANO_PREEMPTABLE: "false"})
    assert [(i.field, i.feature) for i in vol.ignored] == [
        ("metadata.labels[kai.scheduler/preemptibility]", Capability.KAI_PREEMPTIBILITY)]
    px = _check("phalanx-scheduler", kai_key,
                clique_annotations={labels.VOLCANO_PREEMPTABLE: "false"})
    assert [(i.field, i.feature) for i in px.ignored] == [
        ("spec.template.cliques[0].annotations[volcano.sh/preemptable]",
         Capability.VOLCANO_PREEMPTABLE)]


@pytest.mark.parametrize("scheduler", ["kai-scheduler", "phalanx-scheduler"])
@pytest.mark.parametrize("on", ["pcs", "clique"])
def test_an_invalid_kai_preemptibility_is_refused_naming_the_field(scheduler: str, on: str) -> None:
    bad = {labels.LABEL_KAI_PREEMPTIBILITY: "Never"}
    queue = {labels.LABEL_KAI_QUEUE: "q"}
    check = (_check(scheduler, {**queue, **bad}) if on == "pcs"
             else _check(scheduler, queue, clique_labels=bad))
    field = ("metadata.labels" if on == "pcs" else "spec.template.cliques[0].labels") + \
        "[kai.scheduler/preemptibility]"
    assert [e.field for e in check.errors] == [field]
    assert """Unsupported value: 'Never': supported values: "preemptible", "non-preemptible\"""" \
        in check.error_message()


def test_a_clique_queue_under_another_pcs_queue_is_reported_overridden() -> None:
    """KAI takes the PodCliqueSet's label (Grove mirrors it onto the PodGang) before the pod's:
    a clique template's other queue never applies, and says so."""
    check = _check("phalanx-scheduler", {labels.LABEL_KAI_QUEUE: "team-a"},
                   clique_labels={labels.LABEL_KAI_QUEUE: "team-b"})
    [issue] = check.ignored
    assert issue.field == "spec.template.cliques[0].labels[kai.scheduler/queue]"
    assert "KAI queue 'team-b' is overridden by metadata.labels[kai.scheduler/queue] " \
           "('team-a')" in issue.message
    same = _check("phalanx-scheduler", {labels.LABEL_KAI_QUEUE: "team-a"},
                  clique_labels={labels.LABEL_KAI_QUEUE: "team-a"})
    assert same.ignored == []


def test_volcano_queue_precedence_annotation_first() -> None:
    pcs = s.pcs("volcano")
    pcs.metadata.labels = {labels.LABEL_VOLCANO_QUEUE: "by-label"}
    pcs.metadata.annotations = {labels.ANNOTATION_VOLCANO_QUEUE: "by-pcs-annotation"}
    assert hints.first(pcs, hints.VOLCANO_QUEUE) == (
        "metadata.annotations[scheduling.volcano.sh/queue-name]", "by-pcs-annotation")
    pcs.spec.template.cliques[2].annotations = {labels.ANNOTATION_VOLCANO_QUEUE: "by-pod"}
    assert hints.first(pcs, hints.VOLCANO_QUEUE, [2])[1] == "by-pod"
    assert hints.first(pcs, hints.VOLCANO_QUEUE, [0])[1] == "by-pcs-annotation"
    issues = hints.overridden_issues(pcs, hints.VOLCANO_QUEUE, "Volcano queue",
                                     Capability.VOLCANO_QUEUES, "why")
    assert sorted(i.field for i in issues) == [
        "metadata.annotations[scheduling.volcano.sh/queue-name]",  # clique 2 takes its own
        "metadata.labels[volcano.sh/queue-name]"]
