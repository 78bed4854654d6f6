"""Errors retrying cannot fix (issue 15 items 5 and 7, issue 12): reported once as a condition,
lastErrors and an Event on the object; retried with backoff, one log line per retry, no
traceback; semantic validation applies even when no webhook ran it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from op_harness import NS, Binder, make_pcs

from phalanx.api.base import get_condition
from phalanx.api.config import load_operator_config
from phalanx.api.core import Event, Pod
from phalanx.api.grove import PodClique, PodCliqueSet, PodGang
from phalanx.cluster.client import Forbidden
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.operator import OperatorManager
from phalanx.operator.errors import CONDITION_RECONCILE_FAILURE


def _run(scenario: Callable[[MemoryCluster, OperatorManager], Awaitable[Any]],
         config: Any = None) -> Any:
    """The operator as `phalanx operator --no-webhook` runs it: no admission in the cluster."""
    async def main() -> Any:
        cluster = MemoryCluster()
        op = OperatorManager(cluster, config, admission=False)
        await op.start()
        binder = Binder(cluster)
        await binder.start()
        try:
            return await scenario(cluster, op)
        finally:
            await binder.stop()
            await op.stop()

    return run_virtual(main)


async def _events(cluster: MemoryCluster, name: str) -> list[Event]:
    return [e for e in (await cluster.list(Event, NS)).items if e.involved_object.name == name]


def _operator_logs(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("phalanx.")
            and r.levelno >= logging.WARNING]


def test_an_invalid_podcliqueset_is_not_materialised_without_the_webhook(
        caplog: pytest.LogCaptureFixture) -> None:
    bad = make_pcs("bad", [("a", 1), ("b", 1)], groups=[("g", ["b", "nope"], 1, 1)])

    async def scenario(cluster: MemoryCluster, op: OperatorManager) -> Any:
        await cluster.create(bad)
        await op.wait_idle(timeout=60)
        await asyncio.sleep(120)  # two minutes of retries with backoff
        await op.wait_idle(timeout=60)
        pcs = await cluster.get(PodCliqueSet, "bad", NS)
        gangs = (await cluster.list(PodGang, NS)).items
        cliques = (await cluster.list(PodClique, NS)).items
        events = await _events(cluster, "bad")
        fixed = pcs.copy_deep()  # the user fixes the spec: the report goes, children come
        fixed.spec.template.pod_clique_scaling_groups[0].clique_names = ["b"]
        await cluster.update(fixed)
        await op.wait_idle(timeout=60)
        after = await cluster.get(PodCliqueSet, "bad", NS)
        made = len((await cluster.list(PodClique, NS)).items)
        return pcs, gangs, cliques, events, op.podcliqueset.controller, after, made

    with caplog.at_level(logging.INFO):
        pcs, gangs, cliques, events, ctrl, after, made = _run(scenario)
    assert get_condition(after.status.conditions, CONDITION_RECONCILE_FAILURE) is None
    assert not after.status.last_errors and made == 2
    assert gangs == [] and cliques == []
    cond = get_condition(pcs.status.conditions, CONDITION_RECONCILE_FAILURE)
    assert cond is not None and (cond.status, cond.reason) == ("True", "InvalidSpec")
    field = "spec.template.podCliqueScalingGroups[0].cliqueNames[1]"
    assert field in cond.message and "'nope'" in cond.message
    assert [(e.code, e.description) for e in pcs.status.last_errors] == [
        ("InvalidSpec", cond.message)]
    invalid = [e for e in events if e.reason == "InvalidSpec"]
    assert len(invalid) == 1 and invalid[0].type == "Warning"
    assert (invalid[0].occurrences or 1) == 1  # once, not once per retry
    logs = _operator_logs(caplog)
    assert not [r for r in logs if r.exc_info]
    retries = [r for r in logs if "InvalidSpec" in r.getMessage()]
    assert len(retries) == ctrl.permanent_errors >= 3  # one line per retry, backed off
    assert ctrl.permanent_errors < 20


def test_an_unknown_scheduler_is_a_configuration_error_reported_once(
        caplog: pytest.LogCaptureFixture) -> None:
    """Issue 12: `scheduler 'phalanx-scheduler' is not enabled` was a traceback per retry."""
    pcs = make_pcs("web", [("a", 2)], scheduler="phalanx-scheduler")

    async def scenario(cluster: MemoryCluster, op: OperatorManager) -> Any:
        await cluster.create(pcs)
        await op.wait_idle(timeout=60)
        await asyncio.sleep(60)
        await op.wait_idle(timeout=60)
        return (await cluster.get(PodCliqueSet, "web", NS),
                (await cluster.list(PodGang, NS)).items)

    with caplog.at_level(logging.INFO):
        got, gangs = _run(scenario)  # default configuration: only default-scheduler
    assert gangs == []
    cond = get_condition(got.status.conditions, CONDITION_RECONCILE_FAILURE)
    assert cond is not None and cond.reason == "InvalidSpec"
    assert "'phalanx-scheduler' is not enabled" in cond.message
    assert "spec.template.cliques[0].spec.podSpec.schedulerName" in cond.message
    compatible = get_condition(got.status.conditions, "SchedulerCompatible")
    assert compatible is not None and compatible.status == "False"
    assert not [r for r in _operator_logs(caplog) if r.exc_info]


def test_a_forbidden_pod_creation_is_reported_on_the_podclique_until_it_succeeds(
        caplog: pytest.LogCaptureFixture) -> None:
    async def scenario(cluster: MemoryCluster, op: OperatorManager) -> Any:
        def forbid(verb: str, kind: str, key: str) -> Forbidden | None:
            if verb == "create" and kind == "Pod":
                return Forbidden(f'pods "{key}" is forbidden: exceeded quota: gpu-quota',
                                 kind="Pod", name=key)
            return None

        cluster.faults.add_hook(forbid)
        await cluster.create(make_pcs("q", [("a", 2)]))
        await op.wait_idle(timeout=60)
        await asyncio.sleep(30)
        await op.wait_idle(timeout=60)
        failing = await cluster.get(PodClique, "q-0-a", NS)
        events = await _events(cluster, "q-0-a")
        cluster.faults.remove(forbid)  # the quota was raised
        await asyncio.sleep(60)
        await op.wait_idle(timeout=60)
        fixed = await cluster.get(PodClique, "q-0-a", NS)
        pods = (await cluster.list(Pod, NS)).items
        return failing, events, fixed, pods

    with caplog.at_level(logging.INFO):
        failing, events, fixed, pods = _run(scenario)
    cond = get_condition(failing.status.conditions, CONDITION_RECONCILE_FAILURE)
    assert cond is not None and (cond.status, cond.reason) == ("True", "FailedCreate")
    assert "exceeded quota" in cond.message
    assert failing.status.last_errors[0].code == "FailedCreate"
    assert len([e for e in events if e.reason == "FailedCreate"]) == 1
    assert not [e for e in events if e.reason == "PodCreateFailed"]  # no Event per retry
    assert get_condition(fixed.status.conditions, CONDITION_RECONCILE_FAILURE) is None
    assert not fixed.status.last_errors
    assert len(pods) == 2
    assert not [r for r in _operator_logs(caplog) if r.exc_info]


def test_a_valid_podcliqueset_carries_no_failure_condition() -> None:
    async def scenario(cluster: MemoryCluster, op: OperatorManager) -> Any:
        await cluster.create(make_pcs("ok", [("a", 2)]))
        await op.wait_idle(timeout=60)
        return await cluster.get(PodCliqueSet, "ok", NS), (await cluster.list(Pod, NS)).items

    pcs, pods = _run(scenario, load_operator_config(None))
    assert get_condition(pcs.status.conditions, CONDITION_RECONCILE_FAILURE) is None
    assert len(pods) == 2
