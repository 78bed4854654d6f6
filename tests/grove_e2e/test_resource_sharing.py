"""Grove's resource-sharing e2e test RS1 (operator/e2e/tests/resource_sharing_test.go) on the
embedded cluster, with Grove's workload-resource-sharing.yaml unmodified: ResourceClaims from
ResourceClaimTemplates shared at PodCliqueSet, scaling-group and clique level (AllReplicas /
PerReplica, with filters), created and deleted as each level scales, referenced by the pods,
owned by their level, immutable, and garbage-collected with the PodCliqueSet.

Grove waits for each state after a step; here each state is read from the snapshot taken
just before the next step (a minute of virtual time later). The pods' device classes do not
exist (as in Grove's e2e cluster), so the pods stay Pending: RS1 only counts them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .harness import PART_OF, PODCLIQUE, name_of, objects, pods_of, run_e2e

PCS = "rs-test"
PCS_API = "grove.io/v1alpha1"


def _claims(objs: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Grove's rcLabelSelector: managed-by grove-operator, part-of rs-test, component
    resource-claim."""
    want = {"app.kubernetes.io/managed-by": "grove-operator", PART_OF: PCS,
            "app.kubernetes.io/component": "resource-claim"}
    return {n: c for n, c in objects(objs, "ResourceClaim").items()
            if all(c["metadata"].get("labels", {}).get(k) == v for k, v in want.items())
            and not c["metadata"].get("deletionTimestamp")}


def _replica_claims(r: int, sga: int) -> list[str]:
    names = [f"rs-test-{r}-ext-tpl", f"rs-test-{r}-int-tpl", f"rs-test-{r}-worker-a-0-int-tpl4",
             f"rs-test-{r}-worker-a-all-ext-ns-tpl", f"rs-test-{r}-sga-all-int-tpl2",
             f"rs-test-{r}-sga-all-int-tpl8"]
    for j in range(sga):
        names += [f"rs-test-{r}-sga-{j}-int-tpl3", f"rs-test-{r}-sga-{j}-worker-b-all-int-tpl6"]
    return names


def _claim_names(*replica_sga: int) -> list[str]:
    """RS1's expected claim lists (initialRCNames, pcsgScaleInRCNames, ...), by the number of
    `sga` replicas in each PodCliqueSet replica."""
    names = ["rs-test-all-int-tpl5", "rs-test-all-int-tpl7"]
    for r, sga in enumerate(replica_sga):
        names += _replica_claims(r, sga)
    return sorted(names)


def _worker_a_refs(r: int) -> list[str]:
    return ["rs-test-all-int-tpl5", f"rs-test-{r}-ext-tpl", f"rs-test-{r}-int-tpl",
            f"rs-test-{r}-worker-a-0-int-tpl4", f"rs-test-{r}-worker-a-all-ext-ns-tpl"]


def _worker_b_refs(r: int, j: int) -> list[str]:
    return ["rs-test-all-int-tpl5", f"rs-test-{r}-ext-tpl", "rs-test-all-int-tpl7",
            f"rs-test-{r}-sga-all-int-tpl2", f"rs-test-{r}-sga-{j}-int-tpl3",
            f"rs-test-{r}-sga-all-int-tpl8", f"rs-test-{r}-sga-{j}-worker-b-all-int-tpl6"]


def _pod_refs(*replica_sga: int) -> dict[str, list[str]]:
    """RS1's expected references by PodClique (initialPodRefs, pcsgScaleInPodRefs, ...)."""
    out: dict[str, list[str]] = {}
    for r, sga in enumerate(replica_sga):
        out[f"rs-test-{r}-worker-a"] = sorted(_worker_a_refs(r))
        for j in range(sga):
            out[f"rs-test-{r}-sga-{j}-worker-b"] = sorted(_worker_b_refs(r, j))
    return out


def _pod_claims(pod: dict[str, Any]) -> list[str]:
    return sorted(c["name"] for c in pod["spec"].get("resourceClaims") or ())


def _assert_state(objs: dict[str, list[dict[str, Any]]], pods: int,
                  claims: list[str], refs: dict[str, list[str]]) -> None:
    """Grove's verifyRCState + verifyPodState: the claims by name, the pods by count, and
    each pod's spec.resourceClaims and every container's resources.claims."""
    assert sorted(_claims(objs)) == claims
    found = pods_of(objs, PCS)
    assert len(found) == pods, sorted(name_of(p) for p in found)
    matched = set()
    for p in found:
        pclq = p["metadata"]["labels"][PODCLIQUE]
        assert pclq in refs, (name_of(p), pclq)
        matched.add(pclq)
        assert _pod_claims(p) == refs[pclq], name_of(p)
        for c in p["spec"]["containers"]:
            got = sorted(x["name"] for x in c.get("resources", {}).get("claims") or ())
            assert got == refs[pclq], (name_of(p), c["name"])
        for rc in p["spec"].get("resourceClaims") or ():
            assert rc["resourceClaimName"] == rc["name"]
    assert matched == set(refs)


def _owners(*replica_sga: int) -> dict[str, tuple[str, str]]:
    """initialOwnerRefs / pcsScaleOutOwnerRefs: each claim's owning level."""
    out = {"rs-test-all-int-tpl5": ("PodCliqueSet", PCS),
           "rs-test-all-int-tpl7": ("PodCliqueSet", PCS)}
    for r, sga in enumerate(replica_sga):
        out[f"rs-test-{r}-ext-tpl"] = out[f"rs-test-{r}-int-tpl"] = ("PodCliqueSet", PCS)
        for n in (f"rs-test-{r}-worker-a-0-int-tpl4", f"rs-test-{r}-worker-a-all-ext-ns-tpl"):
            out[n] = ("PodClique", f"rs-test-{r}-worker-a")
        g = ("PodCliqueScalingGroup", f"rs-test-{r}-sga")
        out[f"rs-test-{r}-sga-all-int-tpl2"] = out[f"rs-test-{r}-sga-all-int-tpl8"] = g
        for j in range(sga):
            out[f"rs-test-{r}-sga-{j}-int-tpl3"] = g
            out[f"rs-test-{r}-sga-{j}-worker-b-all-int-tpl6"] = (
                "PodClique", f"rs-test-{r}-sga-{j}-worker-b")
    return out


def _assert_owners(objs: dict[str, list[dict[str, Any]]], expected: dict) -> None:
    claims = _claims(objs)
    for name, (kind, owner) in expected.items():
        refs = claims[name]["metadata"].get("ownerReferences") or []
        assert any(r["kind"] == kind and r["name"] == owner and r.get("controller")
                   for r in refs), (name, refs)


def _cross_namespace_template() -> dict[str, Any]:
    """createCrossNamespaceRCT: rs-shared/ext-ns-tpl."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "ext-ns-tpl", "namespace": "rs-shared"},
            "spec": {"spec": {"devices": {"requests": [
                {"name": "ext-ns-dev", "exactly": {"deviceClassName": "ext-ns-class"}}]}}}}


def _scale(kind: str, name: str, replicas: int) -> dict[str, Any]:
    return {"scale": {"kind": kind, "name": name, "replicas": replicas}}


def _flipped_scope_pcs() -> dict[str, Any]:
    """verifyImmutabilityRejection: the workload with resourceSharing[0]'s scope flipped."""
    import yaml

    from .harness import FIXTURES

    docs = list(yaml.safe_load_all((FIXTURES / "workload-resource-sharing.yaml").read_text()))
    pcs = next(d for d in docs if d and d["kind"] == "PodCliqueSet")
    pcs["spec"]["replicas"] = 1
    first = pcs["spec"]["template"]["resourceSharing"][0]
    first["scope"] = "AllReplicas" if first["scope"] == "PerReplica" else "PerReplica"
    return pcs


def test_RS1_HierarchicalResourceSharing(tmp_path: Path) -> None:
    steps = [
        {"at": "1m", **_scale("PodCliqueScalingGroup", "rs-test-0-sga", 1)},  # Grove step 8
        {"at": "2m", **_scale("PodCliqueScalingGroup", "rs-test-0-sga", 3)},  # 9
        {"at": "3m", **_scale("PodClique", "rs-test-0-worker-a", 2)},  # 10
        {"at": "4m", **_scale("PodClique", "rs-test-0-worker-a", 1)},  # 11
        {"at": "5m", **_scale("PodCliqueSet", PCS, 2)},  # 12
        {"at": "6m", **_scale("PodCliqueSet", PCS, 1)},  # 14
        {"at": "7m", "apply": [_flipped_scope_pcs()]},  # 15
        {"at": "8m", "delete": {"kind": "PodCliqueSet", "name": PCS}},  # 16
    ]
    run = run_e2e(tmp_path, "workload-resource-sharing.yaml", nodes=7, steps=steps,
                  extra=[_cross_namespace_template()], grove_topology=False, until="9m")

    # 4-7. the initial 12 claims, their labels, the 3 pods' references, the owners
    initial = run.before(1)
    _assert_state(initial, 3, _claim_names(2), _pod_refs(2))
    _assert_owners(initial, _owners(2))
    # 8. scaling group scale-in 2 -> 1: its replica's per-replica claims go
    _assert_state(run.before(2), 2, _claim_names(1), _pod_refs(1))
    # 9. scale-out 1 -> 3
    _assert_state(run.before(3), 4, _claim_names(3), _pod_refs(3))
    # 10. standalone clique scale-out 1 -> 2: a per-pod claim for the new pod
    after = run.before(4)
    assert sorted(_claims(after)) == sorted([*_claim_names(3), "rs-test-0-worker-a-1-int-tpl4"])
    worker_a = [p for p in pods_of(after, PCS)
                if p["metadata"]["labels"][PODCLIQUE] == "rs-test-0-worker-a"]
    assert len(pods_of(after, PCS)) == 5 and len(worker_a) == 2
    common = set(_worker_a_refs(0)) - {"rs-test-0-worker-a-0-int-tpl4"}
    unique = set()
    for p in worker_a:
        refs = set(_pod_claims(p))
        assert len(refs) == len(common) + 1 and common <= refs, (name_of(p), refs)
        unique |= refs - common
    assert unique == {"rs-test-0-worker-a-0-int-tpl4", "rs-test-0-worker-a-1-int-tpl4"}
    # 11. and back to 1
    _assert_state(run.before(5), 4, _claim_names(3), _pod_refs(3))
    # 12-13. PodCliqueSet scale-out 1 -> 2: replica 1 with the template's 2 sga replicas
    scaled = run.before(6)
    _assert_state(scaled, 7, _claim_names(3, 2), _pod_refs(3, 2))
    _assert_owners(scaled, _owners(3, 2))
    # 14. PodCliqueSet scale-in 2 -> 1
    _assert_state(run.before(7), 4, _claim_names(3), _pod_refs(3))
    # 15. resourceSharing is immutable
    rejected = run.record.steps[6]
    assert rejected.action == "apply" and not rejected.ok
    assert "field is immutable" in rejected.error
    assert "spec.template.resourceSharing" in rejected.error
    # 16. deleting the PodCliqueSet garbage-collects every claim
    assert _claims(run.final) == {}
