"""Run one of KAI's action-test rows (kai_rows.py) on the embedded cluster with Phalanx's
scheduler, and compare what happened with what KAI expects.

The row's cluster, as KAI's test builder makes it:
- nodes: the row's GPUs, 20000 cpu and 20G memory each unless the row says (KAI's fake
  node; KAI's builder writes its numbers as quantities, "8000" cpu, as here);
- queues: each row queue is a leaf with its GPU quota, weight and limit (-1 when not set),
  cpu and memory quota and limit -1 unless set (weight 1); under the row's departments, or
  one `default` department with unlimited quota when the row has none (KAI's builder adds
  it). A department's over-quota weight is its GPU quota (KAI's builder), 1 when that is
  -1 (one top-level queue: the weight never matters then);
- jobs: pods of `RequiredGPUsPerTask` GPUs, 1 cpu and 1G memory unless the row says, the
  job's priority; a job of several tasks is one PodGang needing all of them (KAI's
  MinAvailable is the task count); Running tasks are created bound to their node;
  jobs are created highest priority first, a second apart (KAI's builder sorts them so).

The queues are written without Phalanx's Queue admission: KAI accepts (and its tests use)
a child quota above its parent's, which Phalanx's admission refuses.

Then the scheduler runs until idle (it keeps scheduling: a row's KAI session runs one
action; here every action that applies runs, which the row expectations must survive).
KAI's states map to: Releasing -> the job's pods were evicted; Running / Pipelined /
Allocated / Bound -> every pod bound (on the expected node when the row names one);
Pending -> no pod bound.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from phalanx.api import labels, registry
from phalanx.api.core import Pod
from phalanx.api.queue import queue_dict
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.framework.config import SchedulerProfile

from ..gang.builders import podgang
from ..helpers import node, pod

JOB_LABEL = "kai-test/job"
RESUBMITTED = "kai-test/resubmitted"
BOUND_STATES = ("Running", "Pipelined", "Allocated", "Bound", "Binding")


@dataclass
class Outcome:
    pods: dict[str, list[tuple[str, str | None]]] = field(default_factory=dict)  # job -> (pod, node)
    evictions: int = 0
    events: list[str] = field(default_factory=list)

    def state(self, job: str) -> str:
        pods = self.pods.get(job, [])
        if not pods:
            return "Releasing"
        return "Bound" if all(n for _, n in pods) else "Pending"


def qname(name: str | None) -> str | None:
    """KAI's test queue names use underscores; Queue names are DNS subdomains."""
    return name.replace("_", "-") if name else name


def _unlimited(weight: float = 1) -> dict[str, float]:
    return {"quota": -1, "limit": -1, "overQuotaWeight": weight}


def queue_docs(row: dict[str, Any]) -> list[dict[str, Any]]:
    docs = []
    depts = row.get("Departments") or []
    default = not depts and not row.get("DisableDefaultDepartment")
    if default:
        docs.append(queue_dict("default", gpu=_unlimited(), cpu=_unlimited(), memory=_unlimited()))
    for d in depts:
        gpu = d.get("DeservedGPUs", 0)
        limit = d.get("MaxAllowedGPUs") or -1
        docs.append(queue_dict(
            qname(d["Name"]), gpu={"quota": gpu, "limit": limit, "overQuotaWeight": gpu if gpu >= 0 else 1},
            cpu={"quota": -1, "limit": d.get("MaxAllowedCPUs", -1), "overQuotaWeight": 1},
            memory={"quota": -1, "limit": d.get("MaxAllowedMemory", -1), "overQuotaWeight": 1}))
    for q in row["Queues"]:
        parent = "default" if default else qname(q.get("ParentQueue")) or None
        docs.append(queue_dict(
            qname(q["Name"]), parent=parent, priority=q.get("Priority"),
            gpu={"quota": q.get("DeservedGPUs", 0), "limit": q.get("MaxAllowedGPUs") or -1,
                 "overQuotaWeight": q.get("GPUOverQuotaWeight", 0)},
            cpu={"quota": q.get("DeservedCPUs", -1), "limit": q.get("MaxAllowedCPUs", -1),
                 "overQuotaWeight": 1},
            memory={"quota": q.get("DeservedMemory", -1), "limit": q.get("MaxAllowedMemory", -1),
                    "overQuotaWeight": 1}))
    return docs


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else str(v)


def job_pods(job: dict[str, Any]) -> list[Pod]:
    tasks = job.get("Tasks") or []
    gpus = job.get("RequiredGPUsPerTask", 0)
    out = []
    gang = job["Name"].replace("_", "-").lower()
    for i, task in enumerate(tasks):
        lbl = {JOB_LABEL: job["Name"], labels.LABEL_KAI_QUEUE: qname(job["QueueName"]) or ""}
        if len(tasks) > 1:
            lbl[labels.LABEL_PODGANG] = gang
            lbl[labels.LABEL_PODCLIQUE] = gang
        prio = task.get("Priority", job.get("Priority", 0))
        p = pod(f"{gang}-{i}", gpu=int(gpus), labels=lbl, priority=prio,
                cpu=_num(job["RequiredCPUsPerTask"]) if job.get("RequiredCPUsPerTask") else "1",
                memory=_num(job["RequiredMemoryPerTask"]) if job.get("RequiredMemoryPerTask")
                else "1G")
        if task.get("NodeName") and task.get("State") not in (None, "Pending"):
            p.spec.node_name = task["NodeName"]
        out.append(p)
    return out


def unsupported(row: dict[str, Any]) -> str:
    """Why a row cannot be expressed here ("" when it can)."""
    for job in row["Jobs"]:
        g = job.get("RequiredGPUsPerTask", 0)
        if g and not float(g).is_integer():
            return "fractional GPUs (GPU sharing) are not modelled"
        if job.get("RequiredGpuMemory") or job.get("RequiredMultiFractionDevicesPerTask"):
            return "GPU memory requests (GPU sharing) are not modelled"
        if job.get("RootSubGroupSet") is not None:
            return "KAI subgroup sets are not modelled by this harness"
        for t in job.get("Tasks") or ():
            if t.get("State") == "Releasing":
                return "a task already Releasing (terminating) when the row starts"
            if t.get("RequiredMigInstances") or t.get("ResourceClaimNames") or \
                    t.get("NodeAffinityNames") or t.get("GPUGroups"):
                return "MIG, DRA, node affinity or GPU groups in a task"
    for n in row["Nodes"].values():
        if n.get("MigStrategy") or n.get("MigInstances") or n.get("GPUMemory"):
            return "MIG or GPU-memory nodes are not modelled"
    if row.get("Mocks", {}).get("SchedulerConf"):
        return "a custom KAI scheduler configuration"
    return ""


def run_row(row: dict[str, Any], profile: SchedulerProfile | None = None, *,
            resubmit: bool = False) -> Outcome:
    """`resubmit`: KAI's integration tests run every action over several sessions, and an
    evicted job comes back Pending (its controller recreates it): evicted pods are then
    created again, unbound, and the scheduler runs on until nothing changes."""
    async def main() -> Outcome:
        client = MemoryCluster(builtin_admission=False)
        for doc in queue_docs(row):
            await client.create(registry.from_dict(doc))
            await asyncio.sleep(1)
        for name in sorted(row["Nodes"]):
            spec = row["Nodes"][name]
            await client.create(node(name, gpu=int(spec.get("GPUs", 0)),
                                     cpu=_num(spec.get("CPUMillis") or 20000),
                                     memory=_num(spec.get("CPUMemory") or 0) if
                                     spec.get("CPUMemory") else "20G"))
        jobs = sorted(row["Jobs"], key=lambda j: -j.get("Priority", 0))
        created: dict[str, Pod] = {}
        for job in jobs:
            tasks = job.get("Tasks") or []
            if len(tasks) > 1:
                gang = job["Name"].replace("_", "-").lower()
                await client.create(podgang(gang, {gang: len(tasks)}))
            for p in job_pods(job):
                created[p.name] = p.model_copy(deep=True)
                await client.create(p)
            await asyncio.sleep(1)
        sched = Scheduler(client, [profile] if profile is not None else None)
        await sched.start()
        try:
            assert await sched.wait_idle(timeout=600)
            for _ in range(5 if resubmit else 0):
                alive = {p.name for p in (await client.list(Pod)).items}
                gone = [p for name, p in created.items() if name not in alive]
                if not gone:
                    break
                for p in gone:
                    again = p.model_copy(deep=True)
                    again.spec.node_name = None
                    again.metadata.labels[RESUBMITTED] = "true"
                    del created[p.name]
                    await client.create(again)
                assert await sched.wait_idle(timeout=600)
            out = Outcome()
            for p in (await client.list(Pod)).items:
                job = p.metadata.labels.get(JOB_LABEL)
                if job and p.metadata.deletion_timestamp is None:
                    out.pods.setdefault(job, []).append((p.name, p.spec.node_name))
            out.evictions = sum(getattr(pl, "evictions", 0) for fw in sched.frameworks.values()
                                for pl in {id(x): x for x in fw.plugins.values()}.values())
            return out
        finally:
            await sched.stop()

    return run_virtual(main)


def check(row: dict[str, Any], out: Outcome) -> list[str]:
    """What differs from KAI's expectations (empty when everything matches)."""
    problems = []
    for job, exp in (row.get("JobExpectedResults") or {}).items():
        want = exp.get("Status", "")
        got = out.state(job)
        if want == "Releasing" and got != "Releasing":
            problems.append(f"{job}: expected evicted, got {got} {out.pods.get(job)}")
        elif want in BOUND_STATES:
            if got != "Bound":
                problems.append(f"{job}: expected {want}, got {got} {out.pods.get(job)}")
            elif exp.get("NodeName") and \
                    any(n != exp["NodeName"] for _, n in out.pods[job]):
                problems.append(f"{job}: expected on {exp['NodeName']}, got {out.pods[job]}")
        elif want == "Pending" and got != "Pending":
            problems.append(f"{job}: expected Pending, got {got} {out.pods.get(job)}")
    return problems
