"""examples/backends.yaml through the CLI: one gang per backend, each scheduled, each
backend's own scheduler object in the saved run."""

from __future__ import annotations

from .helpers import examples_tmp, run_example


def test_every_backend_gets_its_gang_scheduled(tmp_path_factory) -> None:
    _, rec, _ = run_example("backends", examples_tmp(tmp_path_factory))
    by_pcs = {g.podcliqueset: g for g in rec.gangs}
    assert set(by_pcs) == {"on-phalanx", "on-kube", "on-kai", "on-volcano", "on-koordinator"}
    for name, g in by_pcs.items():
        assert g.phase == "Running", f"{name}: {g.phase}: {g.explanation}"
        assert len(g.nodes) == 4
    assert {by_pcs[n].scheduler for n in by_pcs} == {
        "phalanx-scheduler", "default-scheduler", "kai-scheduler", "volcano", "koord-scheduler"}
    assert {"PodGroup.scheduling.run.ai", "PodGroup.scheduling.volcano.sh",
            "PodGroup.scheduling.sigs.k8s.io", "Workload.scheduling.k8s.io"} <= set(rec.objects)
