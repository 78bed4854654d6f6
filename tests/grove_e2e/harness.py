"""Grove's e2e harness, rebuilt on the embedded cluster.

Grove's e2e cluster (operator/e2e/setup, hack/e2e-cluster/create-e2e-cluster.py) is a k3d
cluster of worker ("agent") nodes with 150Mi of memory each (so one 80Mi workload pod fits a
node), the label and taint `node_role.e2e.grove.nvidia.com=agent`, and topology labels
assigned by node index: zones of 28 nodes, blocks of 14, racks of 7. A test asks for N
schedulable nodes and the harness cordons the rest; here the cluster simply has N nodes,
named `agent-000`, `agent-001`, ... in that order. KAI is the default scheduler and
`grove-topology` the cluster's ClusterTopologyBinding (TAS1 creates it once for every test).

A test is one `phalanx run` of Grove's YAML (unmodified, from ./yaml) plus a Scenario of the
steps the Grove test takes (cordon, uncordon, scale, deletePod...). What Grove polls for
after a step is asserted on the snapshot the run saves just before the next step, by when the
embedded cluster has long settled: steps are a minute or more apart in virtual time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from phalanx.cluster.clock import run_virtual
from phalanx.sim.record import RunRecord
from phalanx.sim.runner import RunOptions, Simulation
from phalanx.sim.workload import load_cluster_spec, load_config, load_workload

FIXTURES = Path(__file__).resolve().parent / "yaml"

WORKER_LABEL = "node_role.e2e.grove.nvidia.com"
ZONE, BLOCK, RACK, HOST = ("kubernetes.io/zone", "kubernetes.io/block", "kubernetes.io/rack",
                           "kubernetes.io/hostname")
PART_OF = "app.kubernetes.io/part-of"
PODCLIQUE = "grove.io/podclique"
PCSG = "grove.io/podcliquescalinggroup"
PCSG_REPLICA = "grove.io/podcliquescalinggroup-replica-index"
PCS_REPLICA = "grove.io/podcliqueset-replica-index"
BASE_PODGANG = "grove.io/base-podgang"
KAI_PODGROUP = "PodGroup.scheduling.run.ai"
# The embedded scheduler reports an unschedulable pod as kube-scheduler does (FailedScheduling)
# and a waiting gang as Koordinator's gang plugin does; Grove's tests look for KAI's
# "Unschedulable". Any of them, as a Warning, is the same fact.
UNSCHEDULABLE_REASONS = ("Unschedulable", "FailedScheduling", "GangUnschedulable")


def node(i: int) -> str:
    return f"agent-{i:03d}"


def nodes(first: int, last: int) -> list[str]:
    """Grove's `nodesToCordon[first:last]`."""
    return [node(i) for i in range(first, last)]


def cluster_spec(count: int) -> dict[str, Any]:
    return {
        "apiVersion": "sim.phalanx.dev/v1alpha1", "kind": "ClusterSpec",
        "metadata": {"name": f"grove-e2e-{count}"},
        "spec": {
            "topology": [{"domain": "zone", "key": ZONE}, {"domain": "block", "key": BLOCK},
                         {"domain": "rack", "key": RACK}, {"domain": "host", "key": HOST}],
            "nodePools": [{
                "name": "agent", "count": count,
                "allocatable": {"cpu": "8", "memory": "150Mi", "pods": "110"},
                "nodesPer": {"zone": 28, "block": 14, "rack": 7},
                "labels": {WORKER_LABEL: "agent"},
                "taints": [{"key": WORKER_LABEL, "value": "agent", "effect": "NoSchedule"}],
            }],
        },
    }


def cluster_topology(name: str = "grove-topology",
                     levels: Iterable[tuple[str, str]] = (("zone", ZONE), ("block", BLOCK),
                                                          ("rack", RACK), ("host", HOST))
                     ) -> dict[str, Any]:
    """Grove's current topology kind, ClusterTopologyBinding (`ct`)."""
    return {"apiVersion": "grove.io/v1alpha1", "kind": "ClusterTopologyBinding",
            "metadata": {"name": name},
            "spec": {"levels": [{"domain": d, "key": k} for d, k in levels]}}


# Grove's e2e install: KAI the default scheduler, topology-aware scheduling on.
OPERATOR_CONFIG = {
    "apiVersion": "operator.config.grove.io/v1alpha1", "kind": "OperatorConfiguration",
    "scheduler": {"defaultProfileName": "kai-scheduler", "profiles": [{"name": "kai-scheduler"}]},
    "topologyAwareScheduling": {"enabled": True},
}


@dataclass
class Run:
    record: RunRecord
    steps: list[dict[str, Any]]

    def before(self, step: int) -> dict[str, list[dict[str, Any]]]:
        """Every object just before step `step` (1-based, in the order given) ran."""
        label = f"before step {step} ({_action(self.steps[step - 1])})"
        found = [s for s in self.record.snapshots if s.label == label]
        assert found, f"no snapshot {label!r}: {[s.label for s in self.record.snapshots]}"
        return found[-1].objects

    def t(self, step: int) -> float:
        """The virtual time of step `step` (1-based)."""
        return _seconds(self.steps[step - 1]["at"])

    @property
    def final(self) -> dict[str, list[dict[str, Any]]]:
        return self.record.objects

    def events_for_pod(self, name: str, until: float) -> list[Any]:
        """The pod's Events before `until` (a step's time: its snapshot comes first)."""
        return [e for e in self.record.events if e.kind == "Pod" and e.name == name
                and e.t < until]


def _seconds(at: Any) -> float:
    from phalanx.api.duration import parse_duration

    return float(at) if isinstance(at, int | float) else parse_duration(str(at))


def _action(step: dict[str, Any]) -> str:
    return next(k for k in step if k != "at")


def run_e2e(tmp: Path, workload: str | list[str], *, nodes: int,
            steps: list[dict[str, Any]] = (), extra: list[dict[str, Any]] = (),  # type: ignore[assignment]
            grove_topology: bool = True, until: str | None = None) -> Run:
    """Grove's workload file(s) from ./yaml (or inline documents in `extra`) on an
    `nodes`-node e2e cluster, with the Scenario `steps`."""
    # Grove's e2e setup applies its KAI queues (queues.yaml) before any workload.
    names = [workload] if isinstance(workload, str) else list(workload)
    files = [FIXTURES / w for w in ["queues.yaml", *(w for w in names if w != "queues.yaml")]]
    docs: list[dict[str, Any]] = [cluster_spec(nodes), OPERATOR_CONFIG]
    if grove_topology:
        docs.append(cluster_topology())
    docs.extend(extra)
    if steps:
        docs.append({"apiVersion": "sim.phalanx.dev/v1alpha1", "kind": "Scenario",
                     "metadata": {"name": "grove-e2e"}, "spec": {"steps": list(steps)}})
    setup = tmp / "e2e-setup.yaml"
    setup.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    wl = load_workload([*files, setup])
    spec, _ = load_cluster_spec(None, wl)
    cfg, _ = load_config(None, wl)
    options = RunOptions(until=_seconds(until) if until else None)
    record = run_virtual(Simulation(wl, spec, cfg, options).run())
    return Run(record, list(steps))


# --- pods, as Grove's tests look at them -------------------------------------------------


def pods_of(objects: dict[str, list[dict[str, Any]]], part_of: str) -> list[dict[str, Any]]:
    """The workload's pods (`app.kubernetes.io/part-of=<pcs>`), not being deleted."""
    return [p for p in objects.get("Pod", [])
            if p["metadata"].get("labels", {}).get(PART_OF) == part_of
            and not p["metadata"].get("deletionTimestamp")]


def phase(p: dict[str, Any]) -> str:
    return str(p.get("status", {}).get("phase") or "Pending")


def is_ready(p: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in p.get("status", {}).get("conditions") or ())


def node_of(p: dict[str, Any]) -> str:
    return str(p.get("spec", {}).get("nodeName") or "")


def name_of(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["name"])


def label(obj: dict[str, Any], key: str) -> str | None:
    return obj["metadata"].get("labels", {}).get(key)


def running(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in pods if phase(p) == "Running"]


def pending(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in pods if phase(p) == "Pending"]


def counts(pods: list[dict[str, Any]]) -> tuple[int, int]:
    """(running, pending), Grove's two counters."""
    return len(running(pods)), len(pending(pods))


def by_clique(pods: list[dict[str, Any]], clique_suffix: str) -> list[dict[str, Any]]:
    """Grove's getPodsByCliquePattern: pods whose name contains `-<clique>-`."""
    pattern = clique_suffix if clique_suffix.startswith("-") else f"-{clique_suffix}-"
    return [p for p in pods if pattern in name_of(p)]


def uids(pods: list[dict[str, Any]]) -> set[str]:
    return {p["metadata"]["uid"] for p in pods}


def assert_distinct_nodes(pods: list[dict[str, Any]]) -> None:
    """Grove's assertPodsOnDistinctNodes."""
    placed = [node_of(p) for p in pods]
    assert all(placed), [name_of(p) for p in pods if not node_of(p)]
    assert len(set(placed)) == len(placed), sorted(placed)


def assert_all_running_and_ready(pods: list[dict[str, Any]], expected: int) -> None:
    """Grove's WaitForPods / WaitForReadyPods."""
    assert len(pods) == expected, (len(pods), expected)
    not_ready = [(name_of(p), phase(p)) for p in pods if phase(p) != "Running" or not is_ready(p)]
    assert not not_ready, not_ready


def assert_pending_with_unschedulable_events(run: Run, pods: list[dict[str, Any]], at: float,
                                             *, all_pending: bool = True) -> None:
    """Grove's verifyPodsArePendingWithUnschedulableEvents: (all) pods Pending, and the most
    recent Event of every pending pod is a Warning saying it cannot be scheduled."""
    if all_pending:
        assert all(phase(p) == "Pending" for p in pods), [(name_of(p), phase(p)) for p in pods]
    for p in pending(pods):
        events = run.events_for_pod(name_of(p), at)
        assert events, f"pod {name_of(p)} has no Event by {at}s"
        last = max(events, key=lambda e: e.t)
        assert last.type == "Warning" and last.reason in UNSCHEDULABLE_REASONS, (
            name_of(p), last.type, last.reason, last.message)


def objects(objs: dict[str, list[dict[str, Any]]], kind: str) -> dict[str, dict[str, Any]]:
    return {name_of(o): o for o in objs.get(kind, [])}


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in obj.get("status", {}).get("conditions") or ()
                 if c.get("type") == type_), None)


def domain_of(run: Run, pod: dict[str, Any], key: str) -> str:
    info = run.record.node(node_of(pod))
    assert info is not None, f"pod {name_of(pod)} is not on a node"
    return info.labels.get(key, "")


def assert_same_domain(run: Run, pods: list[dict[str, Any]], key: str) -> None:
    """Grove's VerifyPodsInSameTopologyDomain."""
    assert pods
    values = {domain_of(run, p, key) for p in pods}
    assert len(values) == 1 and "" not in values, (key, sorted(values))
