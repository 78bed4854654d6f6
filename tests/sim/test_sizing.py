"""The size of a run, known before it starts (issue 25 item 7)."""

from pathlib import Path

from phalanx.sim.clusterspec import build_nodes, default_cluster_spec
from phalanx.sim.sizing import estimate, scan_files
from phalanx.sim.workload import load_workload

from .workloads import PCS, pcs

SCALING_GROUP = PCS.replace("    cliques:\n", """\
    podCliqueScalingGroups:
    - {{name: model, cliqueNames: [w], replicas: 3}}
    cliques:
""")


def test_pods_objects_and_gpus_of_a_workload(tmp_path: Path) -> None:
    f = tmp_path / "w.yaml"
    f.write_text(pcs("a", replicas=1000, pods=8, gpus=8) + "---\n" + pcs("b", replicas=0))
    nodes = build_nodes(default_cluster_spec())
    size = estimate(load_workload([f]), len(nodes), 512)
    assert (size.podcliquesets, size.pcs_replicas, size.pods) == (2, 1000, 8000)
    assert size.objects == 2 + 1000 * (8 + 1 + 0 + 1)
    assert size.gpus == 64_000 and size.cluster_gpus == 512
    assert size.describe() == ("2 PodCliqueSet(s) with 1,000 replicas make 8,000 pods "
                               "(10,002 objects) asking for 64,000 GPUs; the cluster has 512")
    assert size.cost() == "simulating them takes about 24 s and 960.0 MB of memory"


def test_a_scaling_group_multiplies_its_cliques(tmp_path: Path) -> None:
    f = tmp_path / "w.yaml"
    f.write_text(SCALING_GROUP.format(name="g", replicas=2, pods=4, gpus=1,
                                      scheduler="phalanx-scheduler"))
    size = estimate(load_workload([f]), 1, 8)
    assert size.pods == 2 * 3 * 4


def test_files_are_sized_without_parsing(tmp_path: Path) -> None:
    f = tmp_path / "w.yaml"
    f.write_text("---\n".join([pcs(f"p{i}") for i in range(5)]))
    size = scan_files([f, tmp_path / "missing.yaml"])
    assert size.documents == 5 and size.bytes == f.stat().st_size
