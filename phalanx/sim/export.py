"""The workload of `phalanx run` files, ready for `kubectl apply`: `phalanx export`.

Left out: the documents only `phalanx run` reads (Scenario, ClusterSpec), the
OperatorConfiguration (it configures the operator; `phalanx manifests all --config` installs
it), the KubeSchedulerConfiguration (it configures the scheduler; `phalanx manifests all
--scheduler-config` installs it), and the `sim.phalanx.dev/` annotations that script simulated pods. Objects a Scenario
applies later are kept, after the rest, with a comment saying when they arrive.
"""

from __future__ import annotations

from typing import Any

from phalanx.api import registry
from phalanx.api.base import Resource
from phalanx.api.loader import dump_yaml

from .workload import Workload

SIM_PREFIX = "sim.phalanx.dev/"


def _strip(data: dict[str, Any]) -> int:
    """Remove sim annotations in place (object and clique templates); how many."""
    removed = 0
    places = [data.get("metadata") or {}]
    template = (data.get("spec") or {}).get("template") or {}
    places += [c for c in template.get("cliques") or () if isinstance(c, dict)]
    for place in places:
        notes = place.get("annotations")
        if not isinstance(notes, dict):
            continue
        for key in [k for k in notes if k.startswith(SIM_PREFIX)]:
            del notes[key]
            removed += 1
        if not notes:
            del place["annotations"]
    return removed


def export_workload(workload: Workload) -> tuple[str, list[str]]:
    """(YAML documents, notes on what was left out)."""
    docs: list[str] = []
    stripped = 0
    for obj in workload.objects:
        data = obj.to_dict()
        stripped += _strip(data)
        docs.append(dump_yaml(data))
    for step in workload.steps:
        for raw in step.apply or ():
            obj: Resource = registry.from_dict(raw)
            data = obj.to_dict()
            stripped += _strip(data)
            docs.append(f"# applied by the Scenario at {step.at}\n" + dump_yaml(data))
    notes = []
    if workload.steps:
        notes.append(f"left out the Scenario ({len(workload.steps)} step(s)); objects it "
                     "applies are included")
    if workload.cluster is not None:
        notes.append(f"left out the ClusterSpec {workload.cluster.name}")
    if workload.operator_config is not None:
        notes.append("left out the OperatorConfiguration (install it with "
                     "`phalanx manifests all --config FILE`)")
    if workload.scheduler_config is not None:
        notes.append("left out the KubeSchedulerConfiguration (install it with "
                     "`phalanx manifests all --scheduler-config FILE`)")
    if stripped:
        notes.append(f"removed {stripped} {SIM_PREFIX} annotation(s) (simulated run times)")
    return "---\n".join(docs), notes
