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
