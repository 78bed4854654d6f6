"""The AllScheduledReplicasLost Warning (Grove's emitAllScheduledReplicasLostIfNeeded, on
PodCliques and scaling groups): emitted when scheduledReplicas drops from non-zero to zero,
and not on startup (zero to zero) or a partial loss."""

from __future__ import annotations

from op_harness import NS, Env, make_pcs, run

from phalanx.api.core import Event


async def lost_events(env: Env) -> list[Event]:
    await env.op.recorder.flush()
    return [e for e in (await env.cluster.list(Event, NS)).items
            if e.reason == "AllScheduledReplicasLost"]


def test_emit_all_scheduled_replicas_lost_if_needed() -> None:
    async def scenario(env: Env) -> None:
        assert env.binder is not None
        await env.create(make_pcs("lost", [("a", 2), ("leader", 1)],
                                  groups=[("grp", ["leader"], 1, 1)]))
        await env.settle()
        assert await lost_events(env) == []  # startup is no loss
        env.binder.paused = True
        await env.delete_pod("lost-0-a-0")
        await env.settle()
        assert await lost_events(env) == []  # one of two left scheduled
        for name in ("lost-0-a-1", "lost-0-grp-0-leader-0"):
            await env.delete_pod(name)
        await env.settle()
        events = {(e.involved_object.kind, e.involved_object.name): e
                  for e in await lost_events(env)}
        assert set(events) == {("PodClique", "lost-0-a"),
                               ("PodClique", "lost-0-grp-0-leader"),
                               ("PodCliqueScalingGroup", "lost-0-grp")}
        assert all(e.type == "Warning" for e in events.values())
        assert events[("PodClique", "lost-0-a")].message.startswith(
            "All scheduled pods lost (was 1)")
        assert events[("PodCliqueScalingGroup", "lost-0-grp")].message.startswith(
            "All scheduled replicas lost (was 1)")

    run(scenario)
