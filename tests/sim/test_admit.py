"""Creating a workload: every object the cluster refuses is reported, not only the first
(issue 25 item 10); `validate` checks admission without a run (item 13)."""

from pathlib import Path

import pytest

from phalanx.api.config import load_operator_config
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.sim.admit import RunFailed, create_workload, validate
from phalanx.sim.clusterspec import build_nodes, default_cluster_spec
from phalanx.sim.workload import load_workload

from .workloads import pcs

CONFIG = {"apiVersion": "operator.config.grove.io/v1alpha1", "kind": "OperatorConfiguration",
          "scheduler": {"profiles": [{"name": "default-scheduler"},
                                     {"name": "phalanx-scheduler"}]}}


def _workload(tmp_path: Path):  # type: ignore[no-untyped-def]
    f = tmp_path / "w.yaml"
    f.write_text("---\n".join([pcs("ok"), pcs("on-kai", scheduler="kai-scheduler"),
                               pcs("on-volcano", scheduler="volcano")]))
    return load_workload([f])


def test_every_rejected_object_is_listed(tmp_path: Path) -> None:
    from phalanx.api.config import default_operator_config
    from phalanx.backends.registry import BackendRegistry
    from phalanx.operator.admission import install_admission

    wl = _workload(tmp_path)

    async def main() -> None:
        c = MemoryCluster()
        cfg = default_operator_config(load_operator_config(CONFIG))
        install_admission(c, BackendRegistry.from_config(cfg))
        await create_workload(c, wl.objects)

    with pytest.raises(RunFailed) as err:
        run_virtual(main())
    message = str(err.value)
    assert message.startswith("admission rejected 2 objects:\n")
    assert "PodCliqueSet on-kai:" in message and "PodCliqueSet on-volcano:" in message
    assert "'kai-scheduler' is not enabled" in message and "'volcano' is not enabled" in message


def test_validate_admits_without_running(tmp_path: Path) -> None:
    wl = _workload(tmp_path)
    nodes = build_nodes(default_cluster_spec())
    admitted = run_virtual(validate(wl, load_operator_config(CONFIG), nodes, []))
    assert admitted.accepted == ["PodCliqueSet ok"]
    assert [r.split(":")[0] for r in admitted.rejected] == ["PodCliqueSet on-kai",
                                                            "PodCliqueSet on-volcano"]


def _validate(tmp_path: Path, text: str, config: dict | None = None):  # type: ignore[no-untyped-def]
    f = tmp_path / "w.yaml"
    f.write_text(text)
    return run_virtual(validate(load_workload([f]), load_operator_config(config or CONFIG),
                                build_nodes(default_cluster_spec()), []))


CONSTRAINED = pcs("tc").replace(
    "    cliques:\n", "    topologyConstraint: {topologyName: zzz, pack: {required: rack}}\n"
                     "    cliques:\n")


@pytest.mark.parametrize(("enabled", "says"), [
    (True, "ClusterTopologyBinding 'zzz' not found"),
    (False, "topology constraints are not allowed when Topology Aware Scheduling is disabled"),
])
def test_validate_applies_the_topology_rules_the_run_applies(tmp_path: Path, enabled: bool,
                                                             says: str) -> None:
    """B6: the operator's admission as `phalanx run` installs it, topology rules included."""
    config = {**CONFIG, "topologyAwareScheduling": {"enabled": enabled}}
    admitted = _validate(tmp_path, CONSTRAINED, config)
    assert admitted.accepted == []
    [rejected] = admitted.rejected
    assert rejected.startswith("PodCliqueSet tc:") and says in rejected, rejected


SCENARIO = """\
---
apiVersion: sim.phalanx.dev/v1alpha1
kind: Scenario
metadata: {name: s}
spec:
  steps:
"""


def _step(at: str, doc: str) -> str:
    body = "\n".join("      " + line for line in doc.strip().splitlines())
    return f"  - at: {at}\n    apply:\n" + body.replace("      apiVersion", "    - apiVersion",
                                                         1) + "\n"


def test_validate_checks_a_scenario_apply_of_an_existing_object_as_an_update(
        tmp_path: Path) -> None:
    """B6: an `apply` of an object that exists replaces it, as the run's step does: the
    update rules apply (here: minAvailable is immutable, and replicas 4 -> 6 without it
    re-defaults it to 6). A `delete` step before an `apply` makes it a create again."""
    bigger = pcs("job", pods=6)
    text = pcs("job") + SCENARIO + _step("1m", bigger) + _step("2m", pcs("job", replicas=2))
    admitted = _validate(tmp_path, text)
    assert admitted.accepted == ["PodCliqueSet job", "PodCliqueSet job (at 2m, an update)"]
    [rejected] = admitted.rejected
    assert rejected.startswith("PodCliqueSet job (at 1m, an update): ")
    assert "spec.template.cliques[0].spec.minAvailable: Invalid value: 6: field is immutable" \
        in rejected
    deleted = SCENARIO + "  - at: 1m\n    delete: {kind: PodCliqueSet, name: job}\n"
    admitted = _validate(tmp_path, pcs("job") + deleted + _step("2m", bigger).replace(
        "  - at: 2m", "  - at: 2m", 1))
    assert admitted.rejected == []
    assert admitted.accepted == ["PodCliqueSet job", "PodCliqueSet job (at 2m)"]
