"""Grove's cascade-delete e2e test (operator/e2e/tests/cascade_delete_test.go) on the embedded
cluster, with Grove's workload1.yaml unmodified: deleting the PodCliqueSet removes every
object it owns (garbage collection by owner references)."""

from __future__ import annotations

from pathlib import Path

from .harness import PART_OF, run_e2e

# Grove counts these kinds by the app.kubernetes.io/part-of label (Phalanx creates no
# Services, ServiceAccounts, Secrets, Roles, RoleBindings or HPAs: they count 0 throughout).
OWNED = ("PodCliqueScalingGroup", "PodClique", "PodGang", "Pod", "Service", "ServiceAccount",
         "Secret", "Role", "RoleBinding", "HorizontalPodAutoscaler")


def _counts(objects: dict, name: str) -> dict[str, int]:
    out = {"PodCliqueSet": sum(1 for o in objects.get("PodCliqueSet", [])
                               if o["metadata"]["name"] == name)}
    for kind in OWNED:
        out[kind] = sum(1 for o in objects.get(kind, [])
                        if o["metadata"].get("labels", {}).get(PART_OF) == name)
    return out


def test_CascadeDelete1_podcliqueset(tmp_path: Path) -> None:
    steps = [{"at": "1m", "delete": {"kind": "PodCliqueSet", "name": "workload1"}}]
    run = run_e2e(tmp_path, "workload1.yaml", nodes=10, steps=steps)
    before = _counts(run.before(1), "workload1")
    assert before["PodCliqueScalingGroup"] and before["PodClique"] and before["PodGang"]
    assert before["Pod"] == 10
    assert _counts(run.final, "workload1") == dict.fromkeys(before, 0)
