"""The operator and the scheduler are SIGKILLed and restarted at random points (a dozen
cycles) while PodCliqueSets of every backend and shape arrive, once on a healthy API and once
while 3% of writes fail and watches drop; each run must end in the same state as an
undisturbed run with the same seed.

"Random points": each kill is armed to fire at the component's n-th next API write (n drawn
from the seed), just before or just after that write lands, so kills fall in the middle of
reconciles and binding cycles; a component with nothing left to write is killed at a random
moment instead. The successor starts from whatever the API holds.

Same end state: every derived object (PodGangs, PodCliques, scaling groups, pods, scheduler
PodGroups/Workloads) and every status, compared field by field once uids, resourceVersions,
timestamps and condition order are set aside. Placement is compared as invariants, not node
by node: two undisturbed runs place every pod identically, but a restarted scheduler starts
its tie-break random stream and node-sampling offset afresh and queues the remaining pods in
a different order, so it may legitimately choose other (equally good) nodes. So: every gang
fully bound, no node overcommitted, packed gangs in one rack.
"""

from __future__ import annotations

import asyncio
import random

from phalanx.api import labels
from phalanx.api.core import Node, Pod
from phalanx.api.grove import PodCliqueSet, PodGang, TopologyConstraint, TopologyPackConstraint
from phalanx.bench.stack import EmbeddedStack
from phalanx.bench.tracker import PodTracker
from phalanx.bench.workload import (
    ALL_SCHEDULERS,
    gpu_cluster,
    job_podcliqueset,
    leader_workers_podcliqueset,
    scheduler_queues,
)
from phalanx.cluster.client import Conflict, ServerError
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.sim.clusterspec import RACK_KEY
from phalanx.sim.runner import DEFAULT_TOPOLOGY_NAME

from .invariants import (
    create_retrying,
    diff_states,
    env_int,
    everything,
    gang_binding,
    normal_form,
    orphans,
    overcommitted,
    packed,
)

RESTARTS = env_int("PHALANX_RELIABILITY_RESTARTS", 12)
SEED = env_int("PHALANX_RELIABILITY_SEED", 7)
NODES = 96
SUBMIT_EVERY = 1.0  # virtual seconds between PodCliqueSets


def workload(seed: int) -> list[PodCliqueSet]:
    rng = random.Random(seed)
    out = []
    for i in range(40):
        scheduler = ALL_SCHEDULERS[i % len(ALL_SCHEDULERS)]
        pcs = job_podcliqueset(f"job-{i:03d}", rng.choice([2, 3, 4, 8]), rng.choice([0, 1, 2, 4]),
                               scheduler=scheduler)
        # Some gangs must sit in one rack (default-scheduler cannot place by topology).
        if i % 8 == 3 and scheduler != labels.SCHEDULER_DEFAULT:
            pcs.spec.template.topology_constraint = TopologyConstraint(
                topology_name=DEFAULT_TOPOLOGY_NAME, pack=TopologyPackConstraint(required="rack"))
        out.append(pcs)
    for i in range(5):
        out.append(leader_workers_podcliqueset(
            f"serve-{i}", replicas=2, workers=2, group_replicas=3, group_min=1,
            scheduler=ALL_SCHEDULERS[(i + 2) % len(ALL_SCHEDULERS)]))
    rng.shuffle(out)
    return out


async def _submit(stack: EmbeddedStack, jobs: list[PodCliqueSet]) -> None:
    for queue in scheduler_queues(list(ALL_SCHEDULERS)):  # KAI's pods name one
        await create_retrying(stack.cluster, queue)
    for pcs in jobs:
        await create_retrying(stack.cluster, pcs)
        await asyncio.sleep(SUBMIT_EVERY)


async def _chaos(stack: EmbeddedStack, rng: random.Random, cycles: int) -> list[str]:
    """Kill and restart the operator or the scheduler `cycles` times; returns what happened."""
    log = []
    for _ in range(cycles):
        which = rng.choice(["operator", "scheduler"])
        process = stack.operator_process if which == "operator" else stack.scheduler_process
        assert process is not None
        client = process.client
        writes, before = rng.randint(1, 60), rng.random() < 0.5
        client.kill_after(writes, before_write=before)
        patience = rng.uniform(1.0, 8.0)
        try:
            await asyncio.wait_for(client.killed.wait(), patience)
            how = f"at its {writes}th write ({'before' if before else 'after'} it landed)"
        except TimeoutError:
            how = f"idle, after {patience:.1f}s"
        downtime = rng.uniform(0.0, 5.0)
        if which == "operator":
            await stack.restart_operator(kill=True, downtime=downtime)
        else:
            await stack.restart_scheduler(kill=True, downtime=downtime)
        log.append(f"{which} killed {how}, down {downtime:.1f}s")
    return log


def _run(seed: int, cycles: int, fault_rate: float = 0.0
         ) -> tuple[dict, dict, list[str], dict[str, str]]:
    jobs = workload(seed)
    chaos_rng = random.Random(seed * 7919 + 1)

    async def main() -> tuple[dict, dict, list[str], dict[str, str]]:
        stack = EmbeddedStack(gpu_cluster(NODES, start_delay="2s"), cluster=MemoryCluster(seed=seed))
        await stack.start()
        if fault_rate:
            faults = stack.cluster.faults
            faults.fail_writes(fault_rate, error=ServerError)
            faults.fail_writes(fault_rate, verbs={"update", "update_status", "patch"}, error=Conflict)
            faults.drop_watches(fault_rate)
        tracker = PodTracker(stack.cluster)
        await tracker.start()
        submit = asyncio.create_task(_submit(stack, jobs))
        log = await _chaos(stack, chaos_rng, cycles) if cycles else []
        await submit
        await stack.settle(timeout=4 * 3600)
        state = await everything(stack.cluster)
        form = normal_form(state, placement=False)
        placement = {f"{p.metadata.namespace}/{p.spec.hostname or p.name}": p.spec.node_name or ""
                     for p in state[Pod]}
        counts = {"operator_restarts": stack.restarts["operator"],
                  "scheduler_restarts": stack.restarts["scheduler"],
                  "faults_injected": stack.cluster.faults.total}
        stack.cluster.faults.clear()
        await tracker.stop()
        await stack.stop()
        return form, {"state": state, **counts}, log, placement

    return run_virtual(main)


def _check_against_the_undisturbed_run(report, fault_rate: float) -> None:
    calm, _, _, calm_placement = _run(SEED, 0)
    chaotic, info, log, placement = _run(SEED, RESTARTS, fault_rate)
    print("\n".join(log))
    state = info["state"]
    pods, gangs, nodes = state[Pod], state[PodGang], state[Node]

    # Placement invariants (see the module docstring for why not node by node).
    partly, unbound = gang_binding(pods, gangs)
    assert partly == [] and unbound == []
    assert overcommitted(pods, nodes) == []
    assert orphans(state) == []
    rack_gangs = [f"{s.name}-0" for s in state[PodCliqueSet] if s.spec.template.topology_constraint]
    assert rack_gangs
    assert all(packed(pods, nodes, g, RACK_KEY) for g in rack_gangs), rack_gangs
    # Everything else is exactly what the undisturbed run ended with.
    if fault_rate:
        # The Koordinator backend annotates a pod with its gang only when the PodGang was
        # synced before the pod was prepared (contracts.md): with failed writes that order,
        # and so those annotations, may differ. The label and the PodGroup are always there.
        calm, chaotic = _without_koordinator_pod_annotations(calm), _without_koordinator_pod_annotations(chaotic)
    assert set(chaotic) == set(calm)
    differences = diff_states(calm, chaotic)
    assert differences == [], "\n".join(differences)
    assert all(p.status.phase == "Running" for p in pods)

    same_node = sum(1 for k, n in placement.items() if calm_placement.get(k) == n)
    extra = {"faults_injected": info["faults_injected"]} if fault_rate else {}
    report(kill_restart_cycles=len(log), operator_restarts=info["operator_restarts"],
           scheduler_restarts=info["scheduler_restarts"], **extra,
           podcliquesets=len(state[PodCliqueSet]), podgangs=len(gangs), pods=len(pods),
           pods_on_same_node_as_undisturbed=same_node, packed_gangs_checked=len(rack_gangs))


def _without_koordinator_pod_annotations(form: dict[str, dict]) -> dict[str, dict]:
    for pod in form.get("v1/Pod", {}).values():
        ann = pod.get("metadata", {}).get("annotations") or {}
        for k in [k for k in ann if k.startswith("gang.scheduling.koordinator.sh/")]:
            del ann[k]
        if "annotations" in pod.get("metadata", {}) and not ann:
            del pod["metadata"]["annotations"]
    return form


def test_kill_and_restart_operator_and_scheduler_reaches_the_undisturbed_end_state(report) -> None:
    _check_against_the_undisturbed_run(report, 0.0)


def test_kills_under_api_faults_reach_the_undisturbed_end_state(report) -> None:
    """The same kills, while 3% of writes fail (500s and conflicts) and 3% of watch events
    end their stream."""
    _check_against_the_undisturbed_run(report, 0.03)


def test_gang_group_member_whose_bind_failed_is_placed_by_the_next_scheduler() -> None:
    """Found by kills combined with injected faults: a Koordinator gang group (router, leader,
    workers: one PodGroup each) whose router bind failed just before the scheduler died; the
    next scheduler must still place the router, not leave the group partly bound forever."""

    async def main() -> list[str]:
        stack = EmbeddedStack(gpu_cluster(8))
        await stack.start()
        tracker = PodTracker(stack.cluster)
        await tracker.start()
        router = "default/serve-0-router-"  # its one pod: generateName `serve-0-router-`
        refused: list[str] = []

        def refuse_router_bind(verb: str, kind: str, key: str) -> ServerError | None:
            if verb == "bind" and key.startswith(router):
                refused.append(key)
                return ServerError("injected", kind=kind, name=key)
            return None

        hook = stack.cluster.faults.add_hook(refuse_router_bind)
        await stack.cluster.create(leader_workers_podcliqueset(
            "serve", workers=2, group_replicas=1, group_min=1, scheduler=labels.SCHEDULER_KOORDINATOR))
        assert await tracker.wait(lambda t: t.bound == 3 and bool(refused), timeout=600), (tracker.bound, tracker.pods, refused)
        await stack.stop_scheduler(kill=True)
        stack.cluster.faults.remove(hook)
        await stack.start_scheduler()
        await stack.settle()
        state = await everything(stack.cluster)
        partly, unbound = gang_binding(state[Pod], state[PodGang])
        await tracker.stop()
        await stack.stop()
        return partly + unbound

    assert run_virtual(main) == []
