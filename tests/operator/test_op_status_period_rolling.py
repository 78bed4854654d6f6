"""While a PodCliqueSet rolls, PodClique status is reported within
`status_report_period_rolling` (50 ms), not the 1 s report period: the rolling update waits on
each PodClique's ready count before its next replacement, so the period paced the roll
(`phalanx bench rollout --real`, 10 replicas: 23.2 s at 1 s, 10.6 s at 50 ms)."""

from __future__ import annotations

import asyncio

from op_harness import Env, make_pcs, run


def _roll_seconds(rolling_period: float) -> tuple[float, int]:
    """Virtual seconds from an image change to the PodCliqueSet's updateEndedAt, and how
    many pods the roll replaced."""

    async def scenario(env: Env) -> tuple[float, int]:
        env.op.tunables.status_report_period_rolling = rolling_period
        await env.create(make_pcs("web", [("a", 3)], replicas=2))
        await env.settle()
        before = {p.metadata.uid for p in await env.pods()}
        pcs = await env.pcs("web")
        pcs.spec.template.cliques[0].spec.pod_spec.containers[0].image = "new:2"
        loop = asyncio.get_running_loop()
        start = loop.time()
        await env.cluster.update(pcs)
        await env.settle()
        progress = (await env.pcs("web")).status.update_progress
        assert progress is not None and progress.update_ended_at is not None
        pods = await env.pods()
        assert all(p.spec.containers[0].image == "new:2" for p in pods)
        return loop.time() - start, len(before - {p.metadata.uid for p in pods})

    return run(scenario)


def test_a_roll_is_paced_by_the_rolling_period_not_the_report_period() -> None:
    fast, replaced_fast = _roll_seconds(0.05)
    slow, replaced_slow = _roll_seconds(1.0)
    assert replaced_fast == replaced_slow == 6  # each pod once, both ways
    # The replacements wait on status reports; with pods that start at once (the embedded
    # kubelet, no start delay) those waits are all of the roll's time but the last report.
    assert fast < slow / 2, (fast, slow)
