"""One simulated run: the embedded cluster, the operator, the scheduler and the kubelet,
driven on virtual time until the workload settles (or a given duration passes).

    sim = Simulation(workload, cluster_spec, operator_config, RunOptions(until=None))
    record = run_virtual(sim.run())

Nothing is written here: the caller saves the record and renders reports once the run
succeeded, so a failed run leaves no half-written files behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from phalanx.api.base import ObjectMeta, Resource
from phalanx.api.config import OperatorConfiguration
from phalanx.api.core import Event, Lease, Node
from phalanx.api.grove import AnyTopology, ClusterTopologyBinding, ClusterTopologyBindingSpec
from phalanx.api.grove import TopologyLevel as GroveLevel
from phalanx.cluster.memory import MemoryCluster

from . import explain_state
from .admit import RunFailed, create_workload
from .clusterspec import ClusterSpec, build_nodes
from .feasibility import Feasibility
from .history import ObjectHistory, history_kinds, kind_label
from .lifecycle import PodScripts
from .record import RunMeta, RunRecord, Snapshot, StepRecord, TopologyLevel
from .recorder import RunRecorder
from .steps import run_scenario
from .workload import Workload

if TYPE_CHECKING:
    from phalanx.scheduler.framework.config import SchedulerConfiguration

DEFAULT_TOPOLOGY_NAME = "phalanx-topology"
__all__ = ["Components", "RunFailed", "RunOptions", "Simulation"]


@dataclass(slots=True)
class RunOptions:
    until: float | None = None  # None: until settled
    max_duration: float = 24 * 3600.0  # give up on settling after this much virtual time
    quiet_period: float = 60.0  # settled = nothing changed for this long (and nothing due)
    check_feasibility: bool = True
    phalanx_version: str = ""
    history: bool = True  # keep every object's versions (for `phalanx get --at` any time)


# (virtual time, until or None, what is going on: "1,200 pods, 800 running")
ProgressFn = Callable[[float, float | None, str], None]
CreateProgressFn = Callable[[int, int], None]  # (objects created, of how many)


@dataclass(slots=True)
class Components:
    """What runs against the embedded cluster. Each factory gets (client, simulation) and
    returns an object with `async start()` and `async stop()`; the scheduler also offers
    `is_idle()` and `diagnosis(pod_key)`. Defaults: the real operator, scheduler, kubelet."""

    operator: Callable[[Any, Simulation], Any]
    scheduler: Callable[[Any, Simulation], Any]
    kubelet: Callable[[Any, Simulation], Any]
    # kube-controller-manager's volume controllers (PV binding, provisioning); None: none.
    volumes: Callable[[Any, Simulation], Any] | None = None
    # kube-controller-manager's resourceclaim controller, plus the simulated DRA driver of
    # the pools that ask for one (ClusterSpec nodePools[].dra); None: none.
    dra: Callable[[Any, Simulation], Any] | None = None
    # kube-controller-manager's HPA controller, driven by Scenario `metric` steps (hpa.py).
    hpa: Callable[[Any, Simulation], Any] | None = None

    @staticmethod
    def default() -> Components:
        def operator(client: Any, sim: Simulation) -> Any:
            from phalanx.operator.manager import OperatorManager

            # `phalanx run` and `validate` print what the configuration sets in vain.
            return OperatorManager(client, sim.config, report_ignored=False)

        def scheduler(client: Any, sim: Simulation) -> Any:
            from phalanx.scheduler import Scheduler
            from phalanx.scheduler.configfile import embedded

            return Scheduler(client, embedded(sim.scheduler_config))

        def kubelet(client: Any, sim: Simulation) -> Any:
            from .kubelet import Kubelet

            return Kubelet(client, start_delay=sim.cluster_spec.spec.kubelet.start_delay_seconds)

        def volumes(client: Any, sim: Simulation) -> Any:
            from .volumes import VolumeControllers

            return VolumeControllers(client)

        def dra(client: Any, sim: Simulation) -> Any:
            from .clusterspec import dra_pools
            from .dradriver import SimDraDriver
            from .resourceclaims import ResourceClaimController

            pools = dra_pools(sim.cluster_spec)
            return _Both(ResourceClaimController(client),
                         SimDraDriver(client, pools) if pools else None)

        def hpa(client: Any, sim: Simulation) -> Any:
            from .hpa import SimHPAController

            return SimHPAController(client)

        return Components(operator=operator, scheduler=scheduler, kubelet=kubelet,
                          volumes=volumes, dra=dra, hpa=hpa)


class _Both:
    """Components started together (the claim controller and the DRA driver)."""

    def __init__(self, *parts: Any) -> None:
        self.parts = [p for p in parts if p is not None]

    async def start(self) -> None:
        for p in self.parts:
            await p.start()

    async def stop(self) -> None:
        for p in reversed(self.parts):
            await p.stop()


class Simulation:
    def __init__(self, workload: Workload, cluster: ClusterSpec,
                 config: OperatorConfiguration, options: RunOptions | None = None, *,
                 cluster_source: str = "", config_source: str = "",
                 progress: ProgressFn | None = None,
                 components: Components | None = None,
                 scheduler_config: SchedulerConfiguration | None = None,
                 scheduler_config_source: str = "") -> None:
        self.workload = workload
        self.cluster_spec = cluster
        self.config = config
        self.options = options or RunOptions()
        self.cluster_source = cluster_source
        self.config_source = config_source
        # The user's KubeSchedulerConfiguration (None: the embedded defaults), given or in
        # the workload files.
        if scheduler_config is None:
            scheduler_config = workload.scheduler_config
            scheduler_config_source = workload.scheduler_config_source
        self.scheduler_config = scheduler_config
        self.scheduler_config_source = scheduler_config_source
        self.progress = progress
        self.create_progress: CreateProgressFn | None = None
        self.components = components or Components.default()
        self.steps: list[StepRecord] = []
        # PodGang name -> why it can never be scheduled on this cluster. Such a gang stays
        # Pending (as it would on a real cluster) and the run goes on; its explanation says so.
        self.never_fit: dict[tuple[str, str], str] = {}  # (namespace, gang) -> why
        self.snapshots: list[Snapshot] = []
        self._checks: set[asyncio.Task[None]] = set()
        self._hpa: Any = None  # the embedded HPA controller of the current run
        self._checked: set[str] = set()
        self.client: MemoryCluster | None = None

    # ------------------------------------------------------------------ set-up

    def prepare(self) -> list[Resource]:
        """Build the nodes and check the workload's topology against them (RunFailed when
        they cannot carry it); returns what to create before the workload (the
        ClusterTopologyBinding made from the cluster spec, if the workload has none)."""
        self.nodes = build_nodes(self.cluster_spec)
        self.feasibility = Feasibility(self.nodes)
        self.levels, made = self._topology(self.nodes)
        return [made] if made is not None else []

    def _topology(self, nodes: list[Node]) -> tuple[list[TopologyLevel], AnyTopology | None]:
        """The workload's ClusterTopologyBinding or legacy ClusterTopology (checked against the
        nodes), else a ClusterTopologyBinding made from the
        cluster spec (returned for creation)."""
        given = self.workload.topology
        if given is not None:
            carried = {k for n in nodes for k in n.metadata.labels}
            for level in given.spec.levels:
                if level.key not in carried:
                    raise RunFailed(
                        f"{given.KIND} {given.name}: level {level.domain} uses node label "
                        f"{level.key}, which no node of the cluster carries. The cluster "
                        f"labels its nodes with: "
                        + ", ".join(f"{t.domain}={t.key}" for t in self.cluster_spec.spec.topology)
                    )
            return [TopologyLevel(domain=lv.domain, key=lv.key) for lv in given.spec.levels], None
        levels = [TopologyLevel(domain=t.domain, key=t.key) for t in self.cluster_spec.spec.topology]
        if not levels:
            return [], None
        made = ClusterTopologyBinding(
            metadata=ObjectMeta(name=DEFAULT_TOPOLOGY_NAME),
            spec=ClusterTopologyBindingSpec(levels=[GroveLevel(domain=t.domain, key=t.key)
                                             for t in levels]),
        )
        return levels, made

    async def _create_workload(self, client: MemoryCluster, extra: list[Resource]) -> None:
        await create_workload(client, [*extra, *self.workload.objects], self.create_progress)

    # ------------------------------------------------------------------ feasibility

    def _on_gang_state(self, state: str, gang: Any) -> None:
        if not self.options.check_feasibility or state not in ("Initialized", "Queued"):
            return
        key = f"{gang.namespace}/{gang.name}"
        if key in self._checked:
            return
        self._checked.add(key)
        task = asyncio.create_task(self._check_gang(gang.namespace, gang.name))
        self._checks.add(task)
        task.add_done_callback(self._checks.discard)

    async def _check_gang(self, namespace: str, name: str) -> None:
        assert self.client is not None
        need = await explain_state.gang_need(self.client, namespace, name, self.levels)
        if need is None:
            return
        why = self.feasibility.never_fits(need)
        if why is not None:
            self.never_fit.setdefault((namespace, name), why)

    # ------------------------------------------------------------------ the run

    async def run(self) -> RunRecord:
        wall0 = time.perf_counter()
        loop = asyncio.get_running_loop()
        client = self.client = MemoryCluster()
        extra = self.prepare()
        for node in self.nodes:
            await client.create(node)
        recorder = RunRecorder(client, self.levels)
        recorder.listeners.append(self._on_gang_state)
        history = ObjectHistory(client) if self.options.history else None
        operator = self.components.operator(client, self)
        scheduler = self.components.scheduler(client, self)
        kubelet = self.components.kubelet(client, self)
        scripts = PodScripts(client)
        t0 = loop.time()
        started_at = client.clock.now_dt().isoformat()
        await recorder.start()
        if history is not None:
            await history.start()
        if self.progress is not None:
            recorder.on_pods = lambda: self._progress(loop.time() - t0, recorder)
        components: list[Any] = []
        scenario: asyncio.Task[None] | None = None
        snapper: asyncio.Task[None] | None = None
        try:
            volumes = self.components.volumes(client, self) if self.components.volumes else None
            dra = self.components.dra(client, self) if self.components.dra else None
            hpa = self._hpa = self.components.hpa(client, self) if self.components.hpa else None
            for component in (dra, operator, scheduler, kubelet, scripts, volumes, hpa):
                if component is None:
                    continue
                await component.start()
                components.append(component)

            def step_done(step: StepRecord) -> None:
                self.steps.append(step)
                recorder.last_change = max(recorder.last_change, step.t)  # activity

            async def before(t: float, step: Any) -> None:
                index = self.workload.steps.index(step) + 1
                self.snapshots.append(Snapshot(t=t, label=f"before step {index} ({step.action})",
                                               objects=await _dump_objects(client)))

            # Node steps at 0s prepare the cluster before anything is created (cordon, label).
            early = [s for s in self.workload.steps if s.seconds == 0 and s.acts_on_nodes_only]
            later = [s for s in self.workload.steps if not any(s is e for e in early)]
            await run_scenario(client, early, t0, step_done, before)
            await self._create_workload(client, extra)
            scenario = asyncio.create_task(
                run_scenario(client, later, t0, step_done, before), name="scenario")
            if self.workload.snapshot_every:
                snapper = asyncio.create_task(
                    self._snapshot_every(client, t0, self.workload.snapshot_every),
                    name="snapshots")
            settled = await self._wait(loop, t0, recorder, scheduler, scripts, scenario)
            end = loop.time() - t0
            if settled:
                tail = min(self.options.quiet_period, max(5.0, 0.1 * recorder.last_change))
                end = min(end, recorder.last_change + tail)
            explanations = await explain_state.pending_explanations(client, scheduler, recorder)
            objects = await _dump_objects(client)
        finally:
            for task in (scenario, snapper):
                if task is not None:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
            for task in list(self._checks):
                task.cancel()
            for component in reversed(components):
                with contextlib.suppress(Exception):
                    await component.stop()
            await recorder.stop()
            if history is not None:
                await history.stop()
        record = recorder.finish()
        if history is not None:
            record.history = history.changes()
        explain_state.apply_explanations(record, explanations)
        self._explain_never_fit(record)
        record.steps = list(self.steps)
        record.objects = objects
        record.snapshots = sorted(self.snapshots, key=lambda s: s.t)  # stable: steps in order
        _fill_priorities(record)
        record.meta = RunMeta(
            inputs=list(self.workload.sources),
            cluster=self.cluster_spec.name or self.cluster_source,
            config=self.config_source,
            scheduler_config=self.scheduler_config_source,
            until="settled" if self.options.until is None else f"{self.options.until:g}s",
            duration=end,
            settled=settled,
            started_at=started_at,
            wall_seconds=round(time.perf_counter() - wall0, 3),
            phalanx_version=self.options.phalanx_version,
        )
        return record

    async def _wait(self, loop: asyncio.AbstractEventLoop, t0: float, recorder: RunRecorder,
                    scheduler: Any, scripts: PodScripts, scenario: asyncio.Task[None]) -> bool:
        """Until the deadline, or until settled. Returns whether the run settled."""
        opts = self.options
        limit = opts.until if opts.until is not None else opts.max_duration
        last_step = max((s.seconds for s in self.workload.steps), default=0.0)
        while True:
            now = loop.time() - t0
            self._progress(now, recorder)
            if now >= limit:
                return False
            if opts.until is None and scenario.done() and now >= last_step:
                quiet = now - recorder.last_change >= opts.quiet_period
                # An HPA holding a recommendation back (stabilisation, policy) is still due.
                hpa_due = getattr(self._hpa, "pending", 0)
                if quiet and scripts.pending == 0 and not self._checks and scheduler.is_idle() \
                        and not hpa_due:
                    return True
            # Fine steps early (short runs read well), coarser later (long runs stay fast).
            tick = 1.0 if now < 600 else 5.0
            await asyncio.sleep(min(tick, max(limit - now, 0.001)))


    def _progress(self, now: float, recorder: RunRecorder) -> None:
        if self.progress is not None:
            until = self.options.until
            self.progress(now, until, recorder.progress_note())

    async def _snapshot_every(self, client: MemoryCluster, t0: float, every: float) -> None:
        loop = asyncio.get_running_loop()
        k = 1
        while True:
            await asyncio.sleep(max(t0 + k * every - loop.time(), 0.0))
            self.snapshots.append(Snapshot(t=loop.time() - t0, label=f"every {every:g}s",
                                           objects=await _dump_objects(client)))
            k += 1

    def _explain_never_fit(self, record: RunRecord) -> None:
        cluster = self.cluster_spec.name or self.cluster_source
        for (namespace, name), why in self.never_fit.items():
            g = record.gang(name, namespace)
            if g is None or g.scheduled is not None or g.deleted is not None:
                continue
            first = (f"can never be scheduled on cluster {cluster}: {why} (use a bigger "
                     "cluster, fewer replicas, or a broader topology pack domain)")
            if g.explanation:
                g.reasons.insert(0, g.explanation)
            g.explanation = first


def _fill_priorities(record: RunRecord) -> None:
    """Gangs whose pods carry no resolved priority get their PriorityClass's value."""
    values = {o["metadata"]["name"]: int(o.get("value", 0))
              for o in record.objects.get("PriorityClass", [])}
    for g in record.gangs:
        if not g.priority and g.priority_class in values:
            g.priority = values[g.priority_class]


async def _dump_objects(client: MemoryCluster) -> dict[str, list[dict[str, Any]]]:
    """Every stored object but Events (recorded separately) and Leases, by kind."""
    out: dict[str, list[dict[str, Any]]] = {}
    kinds = [k for k in client.kinds() if k not in (Event, Lease)]
    served = history_kinds()  # labels as in the run's history, whatever this run stored
    for kind in kinds:
        items = client.dump(kind)
        if items:
            # Several schedulers call their kind "PodGroup": qualify those by API group.
            out[kind_label(kind, served)] = items
    return out
