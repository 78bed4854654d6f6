"""The gate-free path on default-scheduler (issue 28 item 2): with `gangScheduling: true,
podSchedulingGate: false` the operator creates base PodGangs' pods without Grove's gate, and
the scheduler holds them as kube-scheduler's GangScheduling does (PreEnqueue: the PodGroup
exists and minCount of its pods exist; Permit: minCount placed together). Property, on the
embedded cluster with the real operator, scheduler and kubelet: no pod is bound before its
PodGroup exists and every pod of its gang exists (admission's `reject` policy keeps each
multi-group clique at its minimum, so minCount is every pod), and every pod is bound in the
end. Plus the configuration side: the setting is refused, naming the field, where
kube-scheduler would not hold the pods. The same on the real servers:
tests/backends/test_kube_gate_free_real.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from gate_free_harness import GateRecordingCluster, podcliquesets, run_until_bound
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from op_harness import make_pcs

from phalanx.api.config import (
    OperatorConfiguration,
    default_operator_config,
    validate_operator_config,
)
from phalanx.api.core import Pod
from phalanx.api.workloads import WORKLOAD_KINDS
from phalanx.backends.registry import BackendConfigError, BackendRegistry
from phalanx.cluster.client import Forbidden, NotFound
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster

GATE_FREE = {"gangScheduling": True, "podSchedulingGate": False}
PODGROUP_KINDS = tuple(podgroup for _workload, podgroup in WORKLOAD_KINDS.values() if podgroup)


def _config(profile_config: dict[str, Any]) -> OperatorConfiguration:
    return OperatorConfiguration.model_validate({"scheduler": {
        "profiles": [{"name": "default-scheduler", "config": profile_config}],
        "defaultProfileName": "default-scheduler"}})


class CheckedCluster(GateRecordingCluster):
    """Records, at each bind, whether the pod's PodGroup existed and held minCount pods."""

    def __init__(self, refused_podgroup_creates: int = 0) -> None:
        super().__init__()
        # The first creates of PodGroups are refused (an admission policy would), so pods
        # exist before their PodGroup and the scheduler must hold them for it.
        self.refusals_left = refused_podgroup_creates
        self.pods_before_podgroup = 0

    async def create(self, obj: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(obj, PODGROUP_KINDS):
            if self.refusals_left > 0:
                self.refusals_left -= 1
                raise Forbidden("PodGroups refused (test)", kind=obj.kind, name=obj.name)
            self.pods_before_podgroup += len(
                await self._members(obj.name, obj.metadata.namespace))
        return await super().create(obj, *args, **kwargs)

    async def bind(self, pod_name: str, namespace: str, node_name: str) -> None:
        pod = await self.get(Pod, pod_name, namespace)
        group = pod.spec.scheduling_group
        if group is None or not group.pod_group_name:
            self.violations.append(f"{pod_name}: bound with no scheduling group")
        else:
            podgroup = await self._podgroup(group.pod_group_name, namespace)
            if podgroup is None:
                self.violations.append(f"{pod_name}: bound before PodGroup "
                                       f"{group.pod_group_name} exists")
            else:
                members = await self._members(group.pod_group_name, namespace)
                if len(members) < podgroup.min_count:
                    self.violations.append(
                        f"{pod_name}: bound with {len(members)} of {group.pod_group_name}'s "
                        f"minCount {podgroup.min_count} pods in existence")
        await super().bind(pod_name, namespace, node_name)

    async def _members(self, podgroup: str, namespace: str) -> list[Pod]:
        """The pods that point at `podgroup`."""
        return [p for p in (await self.list(Pod, namespace)).items
                if p.spec.scheduling_group is not None
                and p.spec.scheduling_group.pod_group_name == podgroup]

    async def _podgroup(self, name: str, namespace: str) -> Any:
        """The PodGroup in whichever served version the backend writes (here the newest)."""
        for kind in PODGROUP_KINDS:
            try:
                return await self.get(kind, name, namespace)
            except NotFound:
                continue
        return None


async def _run(pcs: Any, profile_config: dict[str, Any], refused_podgroup_creates: int = 0
               ) -> CheckedCluster:
    cluster = CheckedCluster(refused_podgroup_creates)
    await run_until_bound(cluster, _config(profile_config), pcs)
    return cluster


@settings(max_examples=10, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(pcs=podcliquesets("default-scheduler", at_minimum=True), refused=st.integers(0, 3))
def test_no_pod_binds_before_its_podgroup_and_gang_exist_without_gates(
        pcs: Any, refused: int) -> None:
    cluster = run_virtual(lambda: _run(pcs, GATE_FREE, refused))
    assert cluster.violations == []
    if refused:  # the case the refusals are for: pods waited for their PodGroup
        assert cluster.pods_before_podgroup > 0
    assert any(not gated for gated in cluster.created_gated.values()), cluster.created_gated
    assert {name for name, gated in cluster.created_gated.items() if gated} == cluster.scaled


def test_gated_default_scheduler_keeps_the_gate() -> None:
    pcs = make_pcs("job", [("a", 2, 2), ("b", 3, 3)], scheduler="default-scheduler")
    cluster = run_virtual(lambda: _run(pcs, {"gangScheduling": True}))
    assert cluster.violations == []
    assert cluster.created_gated and all(cluster.created_gated.values())


@pytest.mark.parametrize(("profile_config", "why"), [
    ({"podSchedulingGate": False}, "needs gangScheduling: true"),
    ({**GATE_FREE, "workloadAPIVersion": "v1alpha1"}, "needs the PodGroup API"),
])
def test_default_scheduler_refuses_to_go_without_the_gate_where_nothing_holds_the_pods(
        profile_config: dict[str, Any], why: str) -> None:
    errors = validate_operator_config(default_operator_config(_config(profile_config)))
    assert [e.path for e in errors] == ["scheduler.profiles[0].config.podSchedulingGate"]
    assert why in errors[0].message
    with pytest.raises(BackendConfigError, match=why) as err:
        BackendRegistry.from_profiles([("default-scheduler", profile_config)],
                                      "default-scheduler")
    assert err.value.field == "scheduler.profiles[0].config.podSchedulingGate"


def test_default_scheduler_goes_without_the_gate_with_gang_scheduling() -> None:
    assert validate_operator_config(default_operator_config(_config(GATE_FREE))) == []
    registry = BackendRegistry.from_profiles([("default-scheduler", GATE_FREE)],
                                             "default-scheduler")
    assert registry.get_or_default("default-scheduler").config.pod_scheduling_gate is False


def test_a_server_serving_only_the_1_35_api_refuses_gate_free_at_start(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import phalanx.backends.kube as kube_backend
    from phalanx.api.workloads import V1ALPHA1

    async def only_v1alpha1(_client: Any) -> list[str]:
        return [V1ALPHA1]

    monkeypatch.setattr(kube_backend, "served_workload_versions", only_v1alpha1)
    backend = kube_backend.KubeBackend(kube_backend.KubeBackendConfig.model_validate(GATE_FREE))
    with pytest.raises(BackendConfigError, match="needs the PodGroup API") as err:
        run_virtual(lambda: backend.init(MemoryCluster()))
    assert err.value.field == "config.podSchedulingGate"
