"""Labels and annotations the operator's objects carry, as Grove sets them on every sync
(builders.py; the PodCliqueSet and scaling group controllers):

- PodGangs mirror the PodCliqueSet's labels and annotations, its grove.io/ keys aside, and
  follow additions and removals (Grove's mirrorPCSMetadata, podgang.go);
- a PodCliqueScalingGroup has its config's annotations, kept in sync (podcliquescalinggroup.go);
- a PodClique has its template's labels and annotations whole: a key removed from the
  template goes from the PodClique and from pods made afterwards (podclique.go, pod.go);
- a template annotation is opaque, `grove.io/starts-after` included (the operator's own
  startup list is `phalanx.dev/starts-after`);
- pods carry `app.kubernetes.io/name` (the PodClique's name), as Grove's pod labels do.
And none of it costs a write when nothing changed: a reconcile of every object, past the
controllers' caches of what they last synced, makes no write and no no-op write.
"""

from __future__ import annotations

from op_harness import NS, Env, make_pcs, run

from phalanx.api import labels as L
from phalanx.api.base import ObjectMeta
from phalanx.api.core import PriorityClass
from phalanx.api.grove import PodCliqueScalingGroup, PodCliqueSet
from phalanx.operator.naming import ANNOTATION_STARTS_AFTER


def _pcs() -> PodCliqueSet:
    pcs = make_pcs("t", [("a", 2), ("b", 1)], groups=[("g", ["b"], 2, 1)])
    pcs.metadata.labels = {"pcslabel": "1", "grove.io/ignored": "x"}
    pcs.metadata.annotations = {"pcsnote": "2"}
    return pcs


async def _update(env: Env, change) -> None:  # type: ignore[no-untyped-def]
    pcs = await env.pcs("t")
    change(pcs)
    await env.cluster.update(pcs)
    await env.settle()


def test_podgangs_mirror_the_podcliqueset_labels_and_annotations() -> None:
    async def scenario(env: Env) -> None:
        await env.create(_pcs())
        await env.settle()
        gangs = await env.gangs()
        assert sorted(gangs) == ["t-0", "t-0-g-0"]  # base and scaled
        for gang in gangs.values():
            assert gang.metadata.labels["pcslabel"] == "1"
            assert "grove.io/ignored" not in gang.metadata.labels
            assert gang.metadata.labels[L.LABEL_PART_OF] == "t"  # ours win
            assert gang.metadata.annotations == {"pcsnote": "2"}

        def relabel(pcs: PodCliqueSet) -> None:
            pcs.metadata.labels = {"other": "3", L.LABEL_PART_OF: "not-t"}
            pcs.metadata.annotations = {}

        await _update(env, relabel)  # labels alone: no new generation
        for gang in (await env.gangs()).values():
            assert "pcslabel" not in gang.metadata.labels
            assert (gang.metadata.labels["other"], gang.metadata.labels[L.LABEL_PART_OF]) == \
                ("3", "t")
            assert gang.metadata.annotations == {}
            assert gang.metadata.labels[L.LABEL_PODCLIQUESET_REPLICA_INDEX] == "0"

    run(scenario)


def test_scaling_group_annotations_follow_the_template() -> None:
    async def scenario(env: Env) -> None:
        await env.create(_pcs())
        await env.settle()

        def annotate(value: dict[str, str] | None):  # type: ignore[no-untyped-def]
            def change(pcs: PodCliqueSet) -> None:
                pcs.spec.template.pod_clique_scaling_groups[0].annotations = value
            return change

        await _update(env, annotate({"x": "y"}))
        pcsg = await env.cluster.get(PodCliqueScalingGroup, "t-0-g", NS)
        assert pcsg.metadata.annotations["x"] == "y"
        await _update(env, annotate(None))
        pcsg = await env.cluster.get(PodCliqueScalingGroup, "t-0-g", NS)
        assert "x" not in pcsg.metadata.annotations

    run(scenario)


def test_clique_labels_and_annotations_are_set_whole() -> None:
    """A5b: keys dropped from the template go from the PodClique and from the pods the
    rolling update recreates; a grouped clique under OnDelete is updated in place."""
    async def scenario(env: Env) -> None:
        pcs = _pcs()
        for c in pcs.spec.template.cliques:
            c.labels = {"x": "y", "z": "w"}
            c.annotations = {"n1": "v", "n2": "v"}
        await env.create(pcs)
        await env.settle()

        def drop(pcs: PodCliqueSet) -> None:
            for c in pcs.spec.template.cliques:
                c.labels = {"x": "y"}
                c.annotations = {"n1": "v"}

        await _update(env, drop)
        for name, clique in (await env.cliques()).items():
            assert "z" not in clique.metadata.labels, name
            assert "n2" not in clique.metadata.annotations, name
        pods = await env.pods()
        assert pods and all("z" not in p.metadata.labels and "n2" not in p.metadata.annotations
                            for p in pods)

        def on_delete(pcs: PodCliqueSet) -> None:
            pcs.spec.update_strategy.type = "OnDelete"
            pcs.spec.template.cliques[1].annotations = {}

        await _update(env, on_delete)
        grouped = (await env.cliques())["t-0-g-0-b"]
        assert "n1" not in grouped.metadata.annotations

    run(scenario)


def test_a_grove_starts_after_annotation_is_opaque_and_pods_are_named() -> None:
    """A6: Grove copies a template's annotations and acts on none; the pod starts and
    carries it as written. A7.4: pods carry app.kubernetes.io/name."""
    async def scenario(env: Env) -> None:
        pcs = make_pcs("t", [("a", 1)])
        pcs.spec.template.cliques[0].annotations = {"grove.io/starts-after": "t-0-zzz:1"}
        await env.create(pcs)
        await env.run_for(60)
        [pod] = await env.pods()
        assert pod.is_ready
        assert pod.metadata.annotations["grove.io/starts-after"] == "t-0-zzz:1"
        assert ANNOTATION_STARTS_AFTER not in pod.metadata.annotations
        assert not pod.spec.init_containers
        assert pod.metadata.labels[L.LABEL_APP_NAME] == "t-0-a"

    run(scenario)


def test_nothing_changed_no_write() -> None:
    """Every PodGang, PodClique and PodCliqueScalingGroup compared again, with mirrored
    metadata, template labels and annotations, a PodCliqueSet priorityClassName (which the
    PodCliques' pod specs carry and their templates do not) and startup dependencies."""
    async def scenario(env: Env) -> None:
        await env.cluster.create(PriorityClass(metadata=ObjectMeta(name="high"), value=10))
        pcs = make_pcs("t", [("a", 2), ("b", 1)], groups=[("g", ["b"], 2, 1)],
                       startup="CliqueStartupTypeInOrder")
        pcs.metadata.labels = {"pcslabel": "1"}
        pcs.metadata.annotations = {"pcsnote": "2"}
        pcs.spec.template.priority_class_name = "high"
        pcs.spec.template.pod_clique_scaling_groups[0].annotations = {"x": "y"}
        for c in pcs.spec.template.cliques:
            c.labels, c.annotations = {"x": "y"}, {"n": "v"}
        await env.create(pcs)
        await env.run_for(60)
        env.cluster.stats.reset()
        env.op.podcliqueset._replica_synced.clear()
        env.op.podcliqueset.controller.queue.add(f"{NS}/t")
        groups = env.op.ctx.pcsgs.keys()  # an informer's keys
        for key in groups:
            env.op.scalinggroup.controller.queue.add(key)
        await env.settle()
        stats = env.cluster.stats
        for kind in ("PodGang", "PodClique", "PodCliqueScalingGroup"):
            assert stats.total_writes(kind) == 0, stats.table()
        assert sum(stats.noops.values()) == 0, stats.noops

    run(scenario)
