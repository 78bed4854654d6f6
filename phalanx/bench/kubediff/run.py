"""Run kubediff cases on one real API server: kube-scheduler and phalanx-scheduler in turn.

    async with plane.client() as kube:
        runner = DiffRunner(kube, namespace)
        await runner.start()                 # phalanx-scheduler, in process, on `kube`
        result = await runner.run_case(case) # a CaseRun: both outcomes and their differences
        await runner.stop()

One case, in order (only the case's nodes exist on the server while it runs, as kube-scheduler
counts every node; world.py does the server side):

1. Create its objects: volumes, nodes, existing pods (bound at creation: spec.nodeName and a
   schedulerName nobody serves; no kubelet runs, so they stay Pending, and both schedulers
   count assigned pods whatever their phase).
2. Wait until both schedulers see exactly that world: phalanx-scheduler runs in this process,
   so its cache (and its informers of volume kinds) are read; kube-scheduler is asked with a
   canary pod (world.py). For kube-scheduler the volume objects, created first, are assumed
   seen by then (separate watches; nothing proves it).
3. phalanx-scheduler places the pod (schedulerName `kubediff-phalanx`, a profile as kube's
   default: LeastAllocated, none of phalanx's own plugins). The outcome is the pod's state on
   the server: bound, or PodScheduled=False with its message.
4. kube-scheduler places the same pod (same labels and spec, another name). When phalanx bound
   it to node X, kube-scheduler must find X feasible too: its pod is pinned to X. Bound there
   means X is feasible (and the pod schedulable); rejected means it is not, and the pod is
   then placed unpinned for kube's own verdict. The pin is a nodeSelector on a label each
   node carries with its own name, except for a pod with a topology spread constraint that
   honours node affinity (the default), whose domains a nodeSelector would narrow to X's: it is
   placed unpinned first, then pinned by tainting every other node (spread ignores taints
   unless nodeTaintsPolicy is Honor, and then, or when the pod tolerates every taint, the
   node check is skipped, with the reason).
5. Delete everything of the case.

Each pod is deleted before the next is created, and both schedulers read pods from one watch
in order, so neither sees another's pod of the case.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from phalanx.cluster.client import ApiError

from .compare import Difference, MessageError, Outcome, compare
from .draparts import driver_names
from .generate import NODE_LABEL, Case
from .world import PIN_TAINT, World, dra_objects

KUBE = "default-scheduler"
PHALANX = "kubediff-phalanx"


def phalanx_profile(name: str = PHALANX) -> Any:
    """phalanx-scheduler's profile as kube-scheduler's default one: NodeResourcesFit with
    LeastAllocated, and none of phalanx's own plugins (gangs, topology packing, gang
    reservation), which kube's default profile has no counterpart of."""
    from phalanx.scheduler.framework.config import (
        COSCHEDULING,
        GANG_RESERVATION,
        NODE_RESOURCES_FIT,
        TOPOLOGY_PACKING,
        PluginConfig,
        PluginRef,
        Plugins,
        PluginSet,
        SchedulerProfile,
    )

    off = [PluginRef(name=n) for n in (COSCHEDULING, TOPOLOGY_PACKING, GANG_RESERVATION)]
    return SchedulerProfile(
        scheduler_name=name,
        plugins=Plugins(multi_point=PluginSet(disabled=off)),
        plugin_config=[PluginConfig(name=NODE_RESOURCES_FIT,
                                    args={"scoringStrategy": {"type": "LeastAllocated"}})])


@dataclass
class CaseRun:
    case: Case
    phalanx: Outcome | None = None
    kube: Outcome | None = None
    kube_pinned: Outcome | None = None
    node_check: str = ""  # feasible | infeasible: <kube's message> | skipped: <why> | ""
    differences: list[Difference] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0

    @property
    def agrees(self) -> bool:
        return not self.error and not any(d.blocking for d in self.differences)

    def to_dict(self, *, with_case: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"seed": self.case.seed, "uses": self.case.uses}
        for name in ("kube", "phalanx", "kube_pinned"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value.to_dict()
        if self.node_check:
            out["node_check"] = self.node_check
        if self.differences:
            out["differences"] = [d.to_dict() for d in self.differences]
        if self.error:
            out["error"] = self.error
        out["seconds"] = round(self.seconds, 3)
        if with_case:
            out["case"] = self.case.to_dict()
        return out


SELECTOR, TAINT = "selector", "taint"


def pin_method(case: Case) -> tuple[str, str]:
    """How to pin the pod to one node without changing its semantics there: ("selector", ""),
    ("taint", "") or ("", why neither keeps them)."""
    spread = case.pod["spec"].get("topologySpreadConstraints") or ()
    if all(c.get("nodeAffinityPolicy", "Honor") == "Ignore" for c in spread):
        return SELECTOR, ""
    if any(c.get("nodeTaintsPolicy") == "Honor" for c in spread):
        return "", ("a topology spread constraint honours node affinity and taints: any pin "
                    "changes its domains")
    for t in case.pod["spec"].get("tolerations") or ():
        if t.get("operator") == "Exists" and t.get("key", "") in ("", PIN_TAINT["key"]):
            return "", ("a topology spread constraint honours node affinity and the pod "
                        "tolerates every taint: no pin keeps its domains")
    return TAINT, ""


class DiffRunner:
    """Runs cases one at a time against `kube` (a KubeCluster) in `namespace`; kube-scheduler
    must be running against the same server (phalanx-scheduler is started here)."""

    def __init__(self, kube: Any, namespace: str, *, timeout: float = 20.0,
                 scheduler: Any = None) -> None:
        self.world = World(kube, namespace, timeout=timeout)
        self.kube = kube
        self.namespace = namespace
        self.timeout = timeout
        self.scheduler = scheduler
        self._own_scheduler = scheduler is None
        self._serial = 0
        self._placements = 0  # of the current case: which of its DRA drivers is next

    async def start(self) -> None:
        if self.scheduler is None:
            from phalanx.scheduler import Scheduler

            self.scheduler = Scheduler(self.kube, [phalanx_profile()])
        await self.scheduler.start(sync_timeout=self.timeout)

    async def stop(self) -> None:
        if self._own_scheduler and self.scheduler is not None:
            await self.scheduler.stop()

    async def run_case(self, case: Case) -> CaseRun:
        run = CaseRun(case)
        started = time.perf_counter()
        self._placements = 0
        try:
            await self.world.create(case)
            await self._wait_phalanx_sees(case)
            await self.world.wait_kube_sees(case, KUBE)
            await self._place_both(case, run)
            assert run.kube is not None and run.phalanx is not None
            run.differences = compare(run.kube, run.phalanx, run.node_check)
        except (ApiError, TimeoutError, RuntimeError, MessageError) as err:
            run.error = f"{type(err).__name__}: {err}"
        finally:
            try:
                await self.world.delete(case)
            except Exception as err:  # noqa: BLE001 - reported with the case
                run.error = run.error or f"cleanup failed: {err}"
        run.seconds = time.perf_counter() - started
        return run

    async def _place_both(self, case: Case, run: CaseRun) -> None:
        run.phalanx = await self._place(case, PHALANX)
        if not run.phalanx.scheduled:
            run.kube = await self._place(case, KUBE)
            return
        node = run.phalanx.node
        method, why = pin_method(case)
        if method == SELECTOR:
            pinned = await self._place(case, KUBE, pin=node)
            self._check_pinned(run, pinned)
            if pinned.scheduled:
                run.kube = Outcome(KUBE, True, pinned_to=node, seconds=pinned.seconds)
                return
            run.kube = await self._place(case, KUBE)
            return
        run.kube = await self._place(case, KUBE)
        if method == "":
            run.node_check = f"skipped: {why}"
        elif run.kube.scheduled:
            await self.world.pin_by_taint(case, node, KUBE)
            pinned = await self._place(case, KUBE)
            pinned.pinned_to = node
            self._check_pinned(run, pinned)

    @staticmethod
    def _check_pinned(run: CaseRun, pinned: Outcome) -> None:
        run.kube_pinned = pinned
        if pinned.scheduled and pinned.node == pinned.pinned_to:
            run.node_check = "feasible"
        elif pinned.scheduled:
            run.node_check = f"skipped: the pinned pod was bound to {pinned.node} instead"
        else:
            run.node_check = f"infeasible: {pinned.message or pinned.reason}"

    async def _wait_phalanx_sees(self, case: Case) -> None:
        want_nodes = set(case.node_names)
        want_pods = [f"{self.namespace}/{p['metadata']['name']}" for p in case.existing]
        cache = self.scheduler.cache

        # Volume objects, for the informers phalanx-scheduler has of their kinds.
        want_objects = [(v["kind"], _key(v, self.namespace))
                        for v in [*case.volumes, *dra_objects(case)]]
        informers = [i for i in self.scheduler.informers.informers
                     if i.namespace in (None, self.namespace)
                     and i.label_selector is None and i.field_selector is None]

        def has(kind: str, key: str) -> bool:
            return all(inf.get(key) is not None for inf in informers if inf.kind.KIND == kind)

        async def seen() -> bool:
            snap = cache.snapshot
            nodes = {snap.names[int(r)] for r in snap.valid_rows()}
            return (nodes == want_nodes and all(k in cache.bound for k in want_pods)
                    and all(has(kind, key) for kind, key in want_objects))

        await self.world.until(seen, f"phalanx-scheduler to see the {len(want_nodes)} nodes "
                                     f"and {len(want_pods)} pods of case {case.seed}")

    async def _place(self, case: Case, scheduler: str, pin: str = "") -> Outcome:
        self._serial += 1
        who = "k" if scheduler == KUBE else "p"
        pod = case.pod_named(f"{case.prefix}-{who}{self._serial}", scheduler)
        if pin:
            pod["spec"]["nodeSelector"] = {**(pod["spec"].get("nodeSelector") or {}),
                                           NODE_LABEL: pin}
        driver = driver_names(case.prefix)[self._placements]
        self._placements += 1
        outcome = await self.world.place(pod, scheduler, case.claim, driver)
        outcome.pinned_to = pin
        return outcome


def _key(obj: dict[str, Any], namespace: str) -> str:
    name = obj["metadata"]["name"]
    return f"{namespace}/{name}" if obj["kind"] == "PersistentVolumeClaim" else name


__all__ = ["CaseRun", "DiffRunner", "KUBE", "PHALANX", "phalanx_profile", "pin_method"]
