"""`phalanx export`: the workload without what only `phalanx run` reads (issue 25 item 13)."""

from pathlib import Path

import yaml

from phalanx.sim.export import export_workload
from phalanx.sim.workload import load_workload

from .workloads import pcs

SIM_ONLY = """
---
apiVersion: sim.phalanx.dev/v1alpha1
kind: ClusterSpec
metadata: {name: small}
spec:
  nodePools:
  - {name: n, count: 2, allocatable: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "8"}}
---
apiVersion: sim.phalanx.dev/v1alpha1
kind: Scenario
metadata: {name: later}
spec:
  steps:
  - at: 2m
    apply:
"""


def test_sim_documents_and_annotations_are_left_out(tmp_path: Path) -> None:
    later = "\n".join("      " + line for line in pcs("later").splitlines())
    f = tmp_path / "w.yaml"
    f.write_text(pcs("now") + SIM_ONLY + later.replace("      apiVersion", "    - apiVersion",
                                                        1) + "\n")
    text, notes = export_workload(load_workload([f]))
    docs = list(yaml.safe_load_all(text))
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [
        ("PodCliqueSet", "now"), ("PodCliqueSet", "later")]
    assert "sim.phalanx.dev" not in text
    assert "# applied by the Scenario at 2m" in text
    assert any("ClusterSpec small" in n for n in notes)
    assert any("4 sim.phalanx.dev/ annotation(s)" in n for n in notes)
