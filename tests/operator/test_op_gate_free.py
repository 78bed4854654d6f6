"""The gate-free path (issue 28): with `podSchedulingGate: false` on the phalanx-scheduler
profile the operator creates base PodGangs' pods without Grove's gate, and the scheduler's
PreEnqueue holds them instead. Property, on the embedded cluster with the real operator,
scheduler and kubelet: no pod is bound before its PodGang is Initialized and BackendSynced,
and every pod is bound in the end. Plus the admission side: profiles whose scheduler cannot
hold such pods refuse the setting, naming the field (default-scheduler's own rules:
test_op_gate_free_kube.py).
"""

from __future__ import annotations

from typing import Any

import pytest
from gate_free_harness import GateRecordingCluster, podcliquesets, run_until_bound
from hypothesis import HealthCheck, given, settings
from op_harness import make_pcs

from phalanx.api import labels as L
from phalanx.api.config import OperatorConfiguration
from phalanx.api.core import Pod
from phalanx.api.grove import PodGang
from phalanx.api.podgang import PODGANG_INITIALIZED
from phalanx.backends.registry import BackendConfigError, BackendRegistry
from phalanx.cluster.clock import run_virtual
from phalanx.operator.conditions import BACKEND_SYNCED


def _config(gate: bool) -> OperatorConfiguration:
    return OperatorConfiguration.model_validate({"scheduler": {
        "profiles": [{"name": "phalanx-scheduler", "config": {"podSchedulingGate": gate}}],
        "defaultProfileName": "phalanx-scheduler"}})


class CheckedCluster(GateRecordingCluster):
    """Records, at each bind, whether the pod's PodGang was ready for it then."""

    async def bind(self, pod_name: str, namespace: str, node_name: str) -> None:
        pod = await self.get(Pod, pod_name, namespace)
        gang_name = pod.metadata.labels.get(L.LABEL_PODGANG)
        gang = await self.get(PodGang, gang_name, namespace) if gang_name else None
        if gang is None:
            self.violations.append(f"{pod_name}: bound with no PodGang")
        else:
            for cond in (PODGANG_INITIALIZED, BACKEND_SYNCED):
                if not gang.is_condition_true(cond):
                    self.violations.append(f"{pod_name}: bound while {gang_name} not {cond}")
            refs = {r.name for g in gang.spec.pod_groups for r in g.pod_references}
            if pod_name not in refs:
                self.violations.append(f"{pod_name}: bound before {gang_name} references it")
        await super().bind(pod_name, namespace, node_name)


async def _run(pcs: Any, gate: bool) -> CheckedCluster:
    cluster = CheckedCluster()
    await run_until_bound(cluster, _config(gate), pcs)
    return cluster


@settings(max_examples=12, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(pcs=podcliquesets("phalanx-scheduler"))
def test_no_pod_binds_before_its_podgang_is_initialized_without_gates(pcs: Any) -> None:
    cluster = run_virtual(lambda: _run(pcs, gate=False))
    assert cluster.violations == []
    base_pods = [name for name, gated in cluster.created_gated.items() if not gated]
    # Every replica's base PodGang has at least one clique's pods, created gate-free.
    assert base_pods, cluster.created_gated
    # Only pods of scaled PodGangs keep the gate: they also wait for their base PodGang.
    assert {name for name, gated in cluster.created_gated.items() if gated} == cluster.scaled


def test_gated_path_keeps_the_same_guarantee() -> None:
    pcs = make_pcs("job", [("a", 2, 1), ("b", 3, 2)], scheduler="phalanx-scheduler")
    cluster = run_virtual(lambda: _run(pcs, gate=True))
    assert cluster.violations == []
    assert cluster.created_gated and all(cluster.created_gated.values())


@pytest.mark.parametrize("profile", ["kai-scheduler", "volcano", "koordinator"])
def test_schedulers_that_need_the_gate_refuse_to_go_without_it(profile: str) -> None:
    with pytest.raises(BackendConfigError) as err:
        BackendRegistry.from_profiles([(profile, {"podSchedulingGate": False})], profile)
    assert "podSchedulingGate" in str(err.value) and "not supported" in str(err.value)
