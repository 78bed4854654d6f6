"""Issue 28: status writes that change nothing a reader needs are not made, and the final
status is still right. One test per rule, each with exact write counts on the embedded
cluster, the rule on against the rule off:

- PodClique status settles: while a clique's pods keep changing (one bind every 0.4 s), the
  write waits for a quiet `status_report_period`, at most `status_settle_longest` after the
  first change (podclique_status.py). The rule off is a longest hold equal to the period,
  the fixed window of before.
- A PodGang whose PodCliqueSet is being deleted gets no reference or status write while
  its pods go (podgang.py `_collected`). The embedded garbage collector removes a deleted
  owner's dependents at once; a real one takes seconds, and removes PodCliques (so pods)
  before PodGangs that wait on backend finalizers. The test holds the PodCliqueSet with a
  finalizer of its own and deletes the PodCliques first, the real order.
"""

from __future__ import annotations

import asyncio

import pytest
from op_harness import NS, Env, make_pcs, run

from phalanx.api.core import Pod
from phalanx.api.grove import PodClique, PodCliqueSet
from phalanx.cluster.memory import MemoryCluster
from phalanx.operator.conditions import BACKEND_SYNCED
from phalanx.operator.podgang import PodGangController
from phalanx.operator.podgang_backend import PodGangBackendController

HOLD = "test.phalanx/hold"  # keeps the deleted PodCliqueSet while its PodCliques go
STEP = 0.4  # virtual seconds between binds: inside the 1 s quiet period


def _settle_run(longest: float) -> tuple[int, int, int]:
    """(PodClique status writes while 4 pods are bound one by one, scheduledReplicas and
    replicas in the status afterwards)."""

    async def scenario(env: Env) -> tuple[int, int, int]:
        env.op.tunables.status_settle_longest = longest
        assert env.binder is not None
        env.binder.paused = True
        await env.create(make_pcs("job", [("w", 4)]))
        await env.settle()
        env.cluster.stats.reset()
        for pod in sorted(await env.pods(), key=lambda p: p.name):
            await env.cluster.bind(pod.name, NS, "node-0")
            await asyncio.sleep(STEP)
        await env.settle()
        writes = env.cluster.stats.writes[("update_status", "PodClique")]
        status = (await env.cliques())["job-0-w"].status
        return writes, status.scheduled_replicas, status.replicas

    return run(scenario, kubelet=False)


def test_podclique_status_settles_while_pods_keep_changing() -> None:
    settled = _settle_run(longest=2.0)
    fixed = _settle_run(longest=1.0)  # the rule off: a write 1 s after the first change
    assert settled == (1, 4, 4)
    assert fixed == (2, 4, 4)


def _collect_run(rule: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """(PodGang writes, spec and status, from the PodCliqueSet's delete until everything it
    owned is gone; PodGangs left)."""
    if not rule:
        monkeypatch.setattr(PodGangController, "_collected", lambda self, gang: False)

    async def scenario(env: Env) -> tuple[int, int]:
        await env.create(make_pcs("job", [("a", 3), ("b", 2)], replicas=3))
        await env.settle()
        assert len(await env.gangs()) == 3
        pcs = await env.pcs("job")
        pcs.metadata.finalizers.append(HOLD)
        await env.cluster.update(pcs)
        env.cluster.stats.reset()
        await env.cluster.delete(PodCliqueSet, "job", NS)
        for name in await env.cliques():
            await env.cluster.delete(PodClique, name, NS)
        await env.settle()
        stats = env.cluster.stats
        writes = stats.writes[("update", "PodGang")] + stats.writes[("update_status", "PodGang")]
        assert not (await env.cluster.list(Pod, NS)).items
        pcs = await env.pcs("job")
        pcs.metadata.finalizers.remove(HOLD)
        await env.cluster.update(pcs)
        await env.settle()
        return writes, len(await env.gangs())

    return run(scenario)


def test_collected_podgang_gets_no_reference_or_status_write(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with_rule = _collect_run(True, monkeypatch)
    without = _collect_run(False, monkeypatch)
    assert with_rule == (0, 0)
    # Without the rule: each of the 3 gangs drops its references and rewrites its status.
    assert without == (6, 0)


# ---------------------------------------------------------------- held writes
# A real server's lags, on the embedded cluster: pod creates that take `pod_delay` virtual
# seconds, a backend whose first verdict comes `backend_delay` after the PodGang, and binds
# that wait `bind_after` seconds. `status_hold_longest = backend_verdict_wait = 0` is every
# hold off.


def _held_run(hold: float, *, pod_delay: float = 0.0, backend_delay: float = 0.0,
              bind_after: float = 0.0) -> dict[str, object]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        return _held_run_patched(monkeypatch, hold, pod_delay, backend_delay, bind_after)


def _held_run_patched(monkeypatch: pytest.MonkeyPatch, hold: float, pod_delay: float,
                      backend_delay: float, bind_after: float) -> dict[str, object]:
    if pod_delay:
        create = MemoryCluster.create

        async def slow_create(self: MemoryCluster, obj: object, *args: object,
                              **kwargs: object) -> object:
            if isinstance(obj, Pod):
                await asyncio.sleep(pod_delay)
            return await create(self, obj, *args, **kwargs)

        monkeypatch.setattr(MemoryCluster, "create", slow_create)
    if backend_delay:
        sync = PodGangBackendController.reconcile

        async def slow_sync(self: PodGangBackendController, key: str) -> object:
            await asyncio.sleep(backend_delay)
            return await sync(self, key)

        monkeypatch.setattr(PodGangBackendController, "reconcile", slow_sync)

    async def scenario(env: Env) -> dict[str, object]:
        env.op.tunables.status_hold_longest = hold
        env.op.tunables.backend_verdict_wait = hold
        assert env.binder is not None
        env.binder.paused = bind_after > 0
        await env.create(make_pcs("job", [("w", 2)]))
        if bind_after:
            await asyncio.sleep(bind_after)
            await env.binder.resume()
        await env.settle()
        stats = env.cluster.stats
        clique = (await env.cliques())["job-0-w"].status
        gang = (await env.gangs())["job-0"]
        return {"clique_writes": stats.writes[("update_status", "PodClique")],
                "gang_writes": stats.writes[("update_status", "PodGang")],
                "clique": (clique.replicas, clique.schedule_gated_replicas,
                           clique.scheduled_replicas, clique.ready_replicas),
                "gang": (gang.status.phase, gang.is_initialized,
                         gang.is_condition_true(BACKEND_SYNCED))}

    return run(scenario)


DONE = {"clique": (2, 0, 2, 2), "gang": ("Running", True, True)}


def test_podclique_first_status_waits_for_its_pods() -> None:
    held = _held_run(10.0, pod_delay=3.0)
    off = _held_run(0.0, pod_delay=3.0)
    # The PodGang's 3: Initialized=False (its pods still missing after the 1 s grace),
    # Initialized with BackendSynced, Running.
    assert held == {**DONE, "clique_writes": 1, "gang_writes": 3}
    assert off == {**DONE, "clique_writes": 2, "gang_writes": 3}  # + "0 pods scheduled"


def test_gates_lifted_alone_wait_for_the_binds() -> None:
    held = _held_run(10.0, backend_delay=3.0, bind_after=6.0)
    off = _held_run(0.0, backend_delay=3.0, bind_after=6.0)
    assert held["clique_writes"] == 2 and held["clique"] == DONE["clique"]
    assert off["clique_writes"] == 3 and off["clique"] == DONE["clique"]  # + gated 2 -> 0


def test_initialized_waits_for_the_backend_verdict() -> None:
    held = _held_run(10.0, backend_delay=3.0)
    off = _held_run(0.0, backend_delay=3.0)
    assert held["gang_writes"] == 2 and held["gang"] == DONE["gang"]
    assert off["gang_writes"] == 3 and off["gang"] == DONE["gang"]  # + Initialized alone
