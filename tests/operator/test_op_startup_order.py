"""Startup order: AnyOrder, InOrder and Explicit (startsAfter), enforced by the pods'
grove-initc init container (test_op_startup_waiter.py), which the simulated kubelet honours;
the `phalanx.dev/starts-after` annotation carries the same list."""

from __future__ import annotations

from op_harness import Env, make_pcs, run

from phalanx.api.core import Pod
from phalanx.operator import ANNOTATION_STARTS_AFTER
from tests.podnames import hostname

DELAY = 10.0


async def start_offsets(env: Env, prefix: str) -> dict[str, float]:
    """Seconds from the first pod start to each clique's last pod start."""
    pods: list[Pod] = [p for p in await env.pods() if hostname(p).startswith(prefix)]
    assert pods and all(p.status.phase == "Running" for p in pods), \
        [(hostname(p), p.status.phase) for p in pods]
    first = min(p.status.start_time.timestamp() for p in pods)  # type: ignore[union-attr]
    out: dict[str, float] = {}
    for p in pods:
        clique = p.metadata.labels["grove.io/podclique"]
        t = p.status.start_time.timestamp() - first  # type: ignore[union-attr]
        out[clique] = max(out.get(clique, 0.0), t)
    return out


def test_any_order_starts_everything_together() -> None:
    async def scenario(env: Env) -> None:
        await env.create(make_pcs("any", [("a", 2), ("b", 2), ("c", 1)],
                                  startup="CliqueStartupTypeAnyOrder"))
        await env.run_for(10 * DELAY)
        assert set((await start_offsets(env, "any-")).values()) == {0.0}
        assert not any(ANNOTATION_STARTS_AFTER in p.metadata.annotations
                       for p in await env.pods())

    run(scenario, start_delay=DELAY)


def test_in_order_starts_each_clique_after_the_previous_one() -> None:
    async def scenario(env: Env) -> None:
        await env.create(make_pcs("ord", [("a", 2), ("b", 3, 2), ("c", 1)],
                                  startup="CliqueStartupTypeInOrder"))
        await env.run_for(10 * DELAY)
        offsets = await start_offsets(env, "ord-")
        assert offsets == {"ord-0-a": 0.0, "ord-0-b": DELAY, "ord-0-c": 2 * DELAY}
        c = (await env.cliques())["ord-0-c"]
        assert c.spec.starts_after == ["ord-0-b"]
        pod = next(p for p in await env.pods() if hostname(p) == "ord-0-c-0")
        assert pod.metadata.annotations[ANNOTATION_STARTS_AFTER] == "ord-0-b:2"

    run(scenario, start_delay=DELAY)


def test_explicit_starts_after() -> None:
    async def scenario(env: Env) -> None:
        await env.create(make_pcs("ex", [("a", 1), ("b", 1), ("c", 2), ("d", 1)],
                                  startup="CliqueStartupTypeExplicit",
                                  starts_after={"c": ["a", "b"], "d": ["c"]}))
        await env.run_for(10 * DELAY)
        offsets = await start_offsets(env, "ex-")
        assert offsets == {"ex-0-a": 0.0, "ex-0-b": 0.0, "ex-0-c": DELAY, "ex-0-d": 2 * DELAY}

    run(scenario, start_delay=DELAY)


def test_waiting_pod_reports_why() -> None:
    async def scenario(env: Env) -> None:
        assert env.kubelet is not None
        await env.create(make_pcs("w", [("a", 1), ("b", 1)],
                                  startup="CliqueStartupTypeInOrder"))
        await env.op.wait_idle()
        await env.kubelet.wait_idle()
        pod = next(p for p in await env.pods() if hostname(p) == "w-0-b-0")
        assert pod.status.phase == "Pending" and pod.spec.node_name
        cond = pod.get_condition("Initialized")
        assert cond is not None and cond.reason == "WaitingForStartupDependencies"
        assert cond.message == "waiting for 1 Ready pod(s) of w-0-a"

    run(scenario, start_delay=DELAY)


def test_in_order_within_a_scaling_group_replica() -> None:
    async def scenario(env: Env) -> None:
        await env.create(make_pcs("lw", [("leader", 1), ("worker", 2)],
                                  groups=[("grp", ["leader", "worker"], 2, 1)],
                                  startup="CliqueStartupTypeInOrder"))
        await env.run_for(10 * DELAY)
        w1 = (await env.cliques())["lw-0-grp-1-worker"]
        assert w1.spec.starts_after == ["lw-0-grp-1-leader"]  # its own replica's leader
        offsets = await start_offsets(env, "lw-")
        assert offsets["lw-0-grp-0-leader"] == 0.0
        assert offsets["lw-0-grp-0-worker"] == DELAY
        # The scaled replica waits for the base gang to be scheduled, then its own leader.
        assert offsets["lw-0-grp-1-worker"] == offsets["lw-0-grp-1-leader"] + DELAY

    run(scenario, start_delay=DELAY)
