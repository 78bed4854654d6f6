"""The scaling group's GangTerminationInProgress condition (Grove's
`podcliquesetreplica/gangterminate.go` and `podcliquescalinggroup/reconcilestatus.go`):
set on every scaling group of a PodCliqueSet replica that gang termination recreated, it
keeps that group from firing the PodCliqueSet level again until the group has recovered,
when the group's status clears it. Ported: gangterminate_test.go's
TestGetMinAvailableBreachedPCSGInfoGangTerminationGate and
TestCreatePCSReplicaDeleteTaskIgnoresStaleSiblingFlag, reconcilestatus_test.go's
TestMutateMinAvailableBreachedConditionClearsGangTerminationInProgress; and the flag's
life through a termination end to end."""

from __future__ import annotations

import asyncio

from op_harness import NS, Env, make_pcs, run

from phalanx.api.base import get_condition, set_condition
from phalanx.api.grove import PodCliqueScalingGroup
from phalanx.operator.conditions import GANG_TERMINATION_IN_PROGRESS, MIN_AVAILABLE_BREACHED


async def _group(env: Env, name: str) -> PodCliqueScalingGroup:
    return await env.cluster.get(PodCliqueScalingGroup, name, NS)


async def _flag(env: Env, name: str) -> str | None:
    cond = get_condition((await _group(env, name)).status.conditions,
                         GANG_TERMINATION_IN_PROGRESS)
    return None if cond is None else cond.status


async def _set_flag(env: Env, name: str) -> None:
    group = await _group(env, name)
    set_condition(group.status.conditions, GANG_TERMINATION_IN_PROGRESS, True,
                  "GangTerminationActive", "an earlier fire")
    await env.cluster.update_status(group)


async def _breach(env: Env, pod: str, group: str) -> None:
    assert env.kubelet is not None
    assert await env.kubelet.fail_pod(await env.pod_name(pod), restart=False)  # for good
    await env.settle()
    cond = get_condition((await _group(env, group)).status.conditions, MIN_AVAILABLE_BREACHED)
    assert cond is not None and cond.status == "True"


def test_gang_termination_sets_and_recovery_clears_the_flag() -> None:
    async def scenario(env: Env) -> None:
        assert env.binder is not None
        await env.create(make_pcs("gip", [("leader", 1), ("worker", 1)],
                                  groups=[("grp", ["leader", "worker"], 2, 2)],
                                  termination_delay="5m"))
        await env.settle()
        assert await _flag(env, "gip-0-grp") is None
        await _breach(env, "gip-0-grp-1-leader-0", "gip-0-grp")
        env.binder.paused = True  # the recreated replica waits for the scheduler
        await asyncio.sleep(6 * 60)
        await env.settle()
        assert env.op.gang_termination.terminations == 1
        group = await _group(env, "gip-0-grp")
        cond = get_condition(group.status.conditions, GANG_TERMINATION_IN_PROGRESS)
        assert cond is not None and cond.status == "True"
        assert cond.reason == "GangTerminationActive"
        assert cond.message.startswith("gang termination of PodCliqueSet replica 0")
        await env.binder.resume()
        await env.settle()
        assert await _flag(env, "gip-0-grp") is None  # recovered: re-armed
        assert env.op.gang_termination.terminations == 1

    run(scenario)


def test_get_min_available_breached_pcsg_info_gang_termination_gate() -> None:
    """A breached group that carries the flag does not fire the PodCliqueSet level."""
    async def scenario(env: Env) -> None:
        await env.create(make_pcs("gate", [("leader", 1), ("worker", 1)],
                                  groups=[("grp", ["leader", "worker"], 2, 2)],
                                  termination_delay="5m"))
        await env.settle()
        await _breach(env, "gate-0-grp-1-leader-0", "gate-0-grp")
        await _set_flag(env, "gate-0-grp")
        await env.settle()
        assert await _flag(env, "gate-0-grp") == "True"  # still breached: kept
        await asyncio.sleep(20 * 60)
        await env.settle()
        assert env.op.gang_termination.terminations == 0

    run(scenario)


def test_create_pcs_replica_delete_task_ignores_stale_sibling_flag() -> None:
    """A sibling group's flag from an earlier fire (its replicas not recovered yet) does not
    stop a new breach of another group: the replica is recreated and both are flagged."""
    async def scenario(env: Env) -> None:
        assert env.binder is not None
        await env.create(make_pcs("sib", [("a", 1), ("b", 1)],
                                  groups=[("sga", ["a"], 2, 2), ("sgb", ["b"], 2, 2)],
                                  termination_delay="5m"))
        await env.settle()
        env.binder.paused = True  # replacements stay unscheduled: sgb does not recover
        await _breach(env, "sib-0-sgb-0-b-0", "sib-0-sgb")
        await _set_flag(env, "sib-0-sgb")
        await env.settle()
        assert await _flag(env, "sib-0-sgb") == "True"
        await _breach(env, "sib-0-sga-0-a-0", "sib-0-sga")
        await asyncio.sleep(6 * 60)
        await env.settle()
        assert env.op.gang_termination.terminations == 1
        assert await _flag(env, "sib-0-sga") == "True"
        assert await _flag(env, "sib-0-sgb") == "True"

    run(scenario)


def test_mutate_min_available_breached_condition_clears_gang_termination_in_progress() -> None:
    async def scenario(env: Env) -> None:
        await env.create(make_pcs("clr", [("w", 1)], groups=[("grp", ["w"], 2, 1)]))
        await env.settle()
        await _set_flag(env, "clr-0-grp")
        await env.settle()
        group = await _group(env, "clr-0-grp")
        cond = get_condition(group.status.conditions, MIN_AVAILABLE_BREACHED)
        assert cond is not None and cond.status == "False"
        assert get_condition(group.status.conditions, GANG_TERMINATION_IN_PROGRESS) is None

    run(scenario)
