"""One reason for a pending gang, kube-style, and the rest as details (issue 25 item 5)."""

from phalanx.sim.explain_state import _dedupe, choose_reason

DIAG = ("0/64 nodes are available: 64 Insufficient nvidia.com/gpu. preemption: no "
        "lower-priority pods to preempt for PodGang default/batch-0 (8 members)")
PERMIT = ("Permit: PodGang default/batch-0 rejected: member default/batch-0-worker-7 is "
          "unschedulable; 0/64 nodes are available: 64 Insufficient nvidia.com/gpu.")


def test_the_node_count_diagnosis_is_the_reason() -> None:
    conditions = ["Scheduled: batch-0-worker: 0/8 scheduled"]
    assert choose_reason([], [PERMIT, DIAG], conditions) == DIAG
    assert choose_reason([], [PERMIT], conditions) == PERMIT
    assert choose_reason([], [], conditions) == conditions[0]
    assert choose_reason(["3/8 pods exist"], [DIAG], conditions) == "3/8 pods exist"
    assert choose_reason([], [], []) == "the scheduler has not reported a reason yet"


def test_nothing_is_said_twice() -> None:
    short = "0/64 nodes are available: 64 Insufficient nvidia.com/gpu."
    assert _dedupe([short, DIAG, DIAG, "", short]) == [DIAG]
    assert _dedupe(["a b", "c"]) == ["a b", "c"]


def test_gang_need_takes_the_referenced_pods_that_carry_the_gang_label() -> None:
    import asyncio

    from phalanx.api import labels
    from phalanx.api.base import ObjectMeta
    from phalanx.api.core import Container, Pod, PodSpec
    from phalanx.api.podgang import NamespacedName, PodGang, PodGangGroup, PodGangSpec
    from phalanx.cluster.memory import MemoryCluster
    from phalanx.sim.explain_state import gang_need

    def pod(name: str, gang: str | None) -> Pod:
        return Pod(metadata=ObjectMeta(name=name, namespace="ns",
                                       labels={labels.LABEL_PODGANG: gang} if gang else {}),
                   spec=PodSpec(containers=[Container(name="c", image="i")]))

    async def main() -> None:
        client = MemoryCluster()
        refs = [NamespacedName(namespace="ns", name=n) for n in ("a", "b", "c", "d")]
        await client.create(PodGang(metadata=ObjectMeta(name="g", namespace="ns"), spec=PodGangSpec(
            pod_groups=[PodGangGroup(name="w", pod_references=refs, min_replicas=2)])))
        # "b" is referenced but belongs to another gang; "x" is labelled but not referenced;
        # "d" does not exist yet.
        for p in (pod("a", "g"), pod("b", "other"), pod("c", "g"), pod("x", "g")):
            await client.create(p)
        need = await gang_need(client, "ns", "g", [])
        assert need is not None and [p.name for p in need.pods] == ["a", "c"]
        await client.delete(Pod, "c", "ns")
        assert await gang_need(client, "ns", "g", []) is None  # fewer than minReplicas

    asyncio.run(main())
