"""MemoryCluster's pod validation agrees with a real kube-apiserver 1.36 (issue 20, item 5).

Each case is a pod spec (plus pod labels) that touches a field the scheduler reads: node
selector and affinity, pod (anti-)affinity with matchLabelKeys, tolerations, topology spread,
ports and host ports, scheduling gates, nodeName, volumes and mounts, resource claims,
pod-level resources. It is created on the real server (server-side dry run, so admission
and defaulting run as for a real pod) and on a MemoryCluster. Both must accept it, or both
refuse it naming the same first field (the first cause the API server lists), and that
must be the field the case expects, so a case cannot silently turn into "both accept".

Left out: spec.overhead (the RuntimeClass admission plugin refuses any overhead that no
RuntimeClass set, with 403 Forbidden, before validation; MemoryCluster has no RuntimeClasses)
and mirror pods (the kubelet's). Runs on the session's real control plane
(tests/conftest.py), skipped without binaries.
"""

from __future__ import annotations

import asyncio
from typing import Any

from phalanx.api.pod import Pod
from phalanx.cluster.client import Invalid
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.cluster.objects import from_dict

REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"
NA = f"spec.affinity.nodeAffinity.{REQ}.nodeSelectorTerms"
PA = f"spec.affinity.podAffinity.{REQ}[0]"
TSC = "spec.topologySpreadConstraints[0]"
C0 = "spec.containers[0]"


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, **({"values": list(values)} if values else {})}


def na_required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"affinity": {"nodeAffinity": {REQ: {"nodeSelectorTerms": list(terms)}}}}


def pa_required(term: dict[str, Any], kind: str = "podAffinity") -> dict[str, Any]:
    return {"affinity": {kind: {REQ: [term]}}}


def tol(**fields: Any) -> dict[str, Any]:
    return {"tolerations": [fields]}


def spread(*constraints: dict[str, Any]) -> dict[str, Any]:
    return {"topologySpreadConstraints": list(constraints)}


def tsc(**extra: Any) -> dict[str, Any]:
    return {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", **extra}


def ports(*lists: list[dict[str, Any]], init: bool = False) -> dict[str, Any]:
    key = "initContainers" if init else "containers"
    return {key: [{"name": f"c{i}", "image": "busybox", "ports": p} for i, p in enumerate(lists)]}


def uses_claims(*names: str) -> dict[str, Any]:
    return {"containers": [{"name": "c", "image": "busybox", "resources": {
        "claims": [{"name": n} for n in names]}}]}


TEMPLATE = {"spec": {"accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1Gi"}}}}
WEB = {"app": "web"}

# (id, pod labels, spec fragment, the first field both must name; None = accepted)
CASES: list[tuple[str, dict[str, str] | None, dict[str, Any], str | None]] = [
    # ---- node affinity and node selector
    ("na-valid", None, {
        "affinity": {"nodeAffinity": {
            REQ: {"nodeSelectorTerms": [{"matchExpressions": [expr("zone", "In", "a", "b")],
                                         "matchFields": [expr("metadata.name", "In", "n-1")]}]},
            PREF: [{"weight": 100, "preference": {
                "matchExpressions": [expr("gpu", "Exists")]}}]}}}, None),
    ("na-value-not-a-label-value", None, na_required({"matchExpressions": [
        expr("zone", "In", "-1")]}), f"{NA}[0].matchExpressions[0].values[0]"),
    ("na-match-fields-two-values", None, na_required({"matchFields": [
        expr("metadata.name", "In", "n-1", "n-2")]}), f"{NA}[0].matchFields[0].values"),
    ("na-match-fields-other-key", None, na_required({"matchFields": [
        expr("metadata.namespace", "In", "ns")]}), f"{NA}[0].matchFields[0].key"),
    ("na-match-fields-exists", None, na_required({"matchFields": [
        expr("metadata.name", "Exists")]}), f"{NA}[0].matchFields[0].operator"),
    ("na-match-fields-bad-node-name", None, na_required({"matchFields": [
        expr("metadata.name", "In", "Not_A_Node")]}), f"{NA}[0].matchFields[0].values[0]"),
    ("na-no-terms", None, na_required(), NA),
    ("na-in-without-values", None, na_required({"matchExpressions": [expr("zone", "In")]}),
     f"{NA}[0].matchExpressions[0].values"),
    ("na-exists-with-values", None, na_required({"matchExpressions": [
        expr("zone", "Exists", "a")]}), f"{NA}[0].matchExpressions[0].values"),
    ("na-gt-two-values", None, na_required({"matchExpressions": [
        expr("cores", "Gt", "1", "2")]}), f"{NA}[0].matchExpressions[0].values"),
    ("na-gt-non-integer-accepted", None, na_required({"matchExpressions": [
        expr("cores", "Gt", "many")]}), None),
    ("na-bad-key", None, na_required({"matchExpressions": [expr("bad key", "Exists")]}),
     f"{NA}[0].matchExpressions[0].key"),
    ("na-preferred-weight-0", None, {"affinity": {"nodeAffinity": {PREF: [
        {"weight": 0, "preference": {"matchExpressions": [expr("gpu", "Exists")]}}]}}},
     f"spec.affinity.nodeAffinity.{PREF}[0].weight"),
    ("na-preferred-any-value-accepted", None, {"affinity": {"nodeAffinity": {PREF: [
        {"weight": 1, "preference": {"matchExpressions": [expr("zone", "In", "-1")]}}]}}},
     None),
    ("node-selector-bad-value", None, {"nodeSelector": {"zone": "-a"}}, "spec.nodeSelector"),
    ("node-selector-bad-key-prefix", None, {"nodeSelector": {"a..b/zone": "a"}},
     "spec.nodeSelector"),
    # ---- pod (anti-)affinity
    ("pa-valid", None, {"affinity": {
        "podAffinity": {REQ: [{"labelSelector": {"matchLabels": WEB}, "topologyKey": "zone",
                               "namespaces": ["other"],
                               "namespaceSelector": {"matchExpressions": [
                                   expr("team", "In", "a")]}}]},
        "podAntiAffinity": {PREF: [{"weight": 50, "podAffinityTerm": {
            "labelSelector": {"matchExpressions": [expr("app", "Exists")]},
            "topologyKey": "kubernetes.io/hostname"}}]}}}, None),
    ("pa-no-topology-key", None, pa_required({"labelSelector": {"matchLabels": WEB}}),
     f"{PA}.topologyKey"),
    ("pa-bad-topology-key", None, pa_required({"labelSelector": {"matchLabels": WEB},
                                               "topologyKey": "bad key"}),
     f"{PA}.topologyKey"),
    ("pa-weight-101", None, {"affinity": {"podAntiAffinity": {PREF: [{
        "weight": 101, "podAffinityTerm": {"labelSelector": {"matchLabels": WEB},
                                           "topologyKey": "zone"}}]}}},
     f"spec.affinity.podAntiAffinity.{PREF}[0].weight"),
    ("pa-exists-with-values", None, pa_required({"labelSelector": {"matchExpressions": [
        expr("app", "Exists", "web")]}, "topologyKey": "zone"}),
     f"{PA}.labelSelector.matchExpressions[0].values"),
    ("pa-bad-operator", None, pa_required({"labelSelector": {"matchExpressions": [
        expr("app", "Equals", "web")]}, "topologyKey": "zone"}),
     f"{PA}.labelSelector.matchExpressions[0].operator"),
    ("pa-bad-selector-value", None, pa_required({"labelSelector": {"matchExpressions": [
        expr("app", "In", "not valid")]}, "topologyKey": "zone"}),
     f"{PA}.labelSelector.matchExpressions[0].values[0]"),
    ("pa-bad-match-labels", None, pa_required({"labelSelector": {"matchLabels": {
        "app": "-web"}}, "topologyKey": "zone"}), f"{PA}.labelSelector.matchLabels"),
    ("pa-bad-namespace", None, pa_required({"labelSelector": {"matchLabels": WEB},
                                            "topologyKey": "zone",
                                            "namespaces": ["Not_A_Namespace"]}),
     f"{PA}.namespace"),
    ("pa-namespace-selector-in-without-values", None, pa_required({
        "namespaceSelector": {"matchExpressions": [expr("team", "In")]},
        "topologyKey": "zone"}), f"{PA}.namespaceSelector.matchExpressions[0].values"),
    ("pa-match-label-keys-valid", WEB, pa_required({
        "labelSelector": {"matchLabels": {"tier": "db"}}, "topologyKey": "zone",
        "matchLabelKeys": ["app"], "mismatchLabelKeys": ["other"]}), None),
    ("pa-match-label-key-also-in-selector", WEB, pa_required({
        "labelSelector": {"matchLabels": WEB}, "topologyKey": "zone",
        "matchLabelKeys": ["app"]}), f"{PA}[0]"),
    ("pa-match-label-key-in-selector-pod-unlabelled", None, pa_required({
        "labelSelector": {"matchLabels": WEB}, "topologyKey": "zone",
        "matchLabelKeys": ["app"]}), None),
    ("pa-key-in-match-and-mismatch", None, pa_required({
        "labelSelector": {"matchLabels": {"tier": "db"}}, "topologyKey": "zone",
        "matchLabelKeys": ["app"], "mismatchLabelKeys": ["app"]}),
     f"{PA}.matchLabelKeys[0]"),
    # Labelled, the pod gets `app In (web)` and `app NotIn (web)` merged first: that is
    # reported before the two lists' overlap.
    ("pa-key-in-match-and-mismatch-pod-labelled", WEB, pa_required({
        "labelSelector": {"matchLabels": {"tier": "db"}}, "topologyKey": "zone",
        "matchLabelKeys": ["app"], "mismatchLabelKeys": ["app"]}), f"{PA}[0]"),
    ("pa-match-label-keys-without-selector", WEB, pa_required({
        "topologyKey": "zone", "matchLabelKeys": ["app"]}), f"{PA}.matchLabelKeys"),
    ("paa-bad-mismatch-label-key", None, pa_required({
        "labelSelector": {"matchLabels": WEB}, "topologyKey": "zone",
        "mismatchLabelKeys": ["/simple"]}, kind="podAntiAffinity"),
     f"spec.affinity.podAntiAffinity.{REQ}[0].mismatchLabelKeys[0]"),
    # ---- tolerations
    ("tol-valid", None, {"tolerations": [
        {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "zone", "value": "a"},
        {"operator": "Exists"},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
         "tolerationSeconds": 30}]}, None),
    ("tol-bad-key", None, tol(key="bad key!", operator="Exists"), "spec.tolerations[0].key"),
    ("tol-empty-key-equal", None, tol(operator="Equal", value="x"),
     "spec.tolerations[0].operator"),
    ("tol-exists-with-value", None, tol(key="k", operator="Exists", value="v"),
     "spec.tolerations[0].operator"),
    ("tol-seconds-without-no-execute", None, tol(key="k", operator="Exists",
                                                 effect="NoSchedule", tolerationSeconds=5),
     "spec.tolerations[0].effect"),
    ("tol-value-not-a-label-value", None, tol(key="k", value="not valid"),
     "spec.tolerations[0].operator"),
    ("tol-lt-operator", None, tol(key="sla", operator="Lt", value="5"),
     "spec.tolerations[0].operator"),
    ("tol-unknown-effect", None, tol(key="k", operator="Exists", effect="NoWay"),
     "spec.tolerations[0].effect"),
    # ---- topology spread
    ("tsc-valid", None, spread(
        tsc(minDomains=2, nodeAffinityPolicy="Honor", nodeTaintsPolicy="Ignore",
            labelSelector={"matchLabels": WEB}, matchLabelKeys=["pod-template-hash"]),
        tsc(topologyKey="kubernetes.io/hostname", whenUnsatisfiable="ScheduleAnyway")), None),
    ("tsc-max-skew-0", None, spread(tsc(maxSkew=0)), f"{TSC}.maxSkew"),
    ("tsc-no-topology-key", None, spread(tsc(topologyKey="")), f"{TSC}.topologyKey"),
    ("tsc-unknown-action", None, spread(tsc(whenUnsatisfiable="Never")),
     f"{TSC}.whenUnsatisfiable"),
    ("tsc-duplicate", None, spread(tsc(), tsc(maxSkew=2)),
     f"{TSC}.{{topologyKey, whenUnsatisfiable}}"),
    ("tsc-min-domains-schedule-anyway", None, spread(tsc(whenUnsatisfiable="ScheduleAnyway",
                                                         minDomains=2)), f"{TSC}.minDomains"),
    ("tsc-min-domains-0", None, spread(tsc(minDomains=0)), f"{TSC}.minDomains"),
    ("tsc-unknown-policy", None, spread(tsc(nodeAffinityPolicy="Always")),
     f"{TSC}.nodeAffinityPolicy"),
    ("tsc-match-label-keys-without-selector", WEB, spread(tsc(matchLabelKeys=["app"])),
     f"{TSC}.matchLabelKeys"),
    ("tsc-match-label-key-also-in-selector", WEB, spread(tsc(
        labelSelector={"matchLabels": WEB}, matchLabelKeys=["app"])), f"{TSC}[0]"),
    ("tsc-bad-selector-value", None, spread(tsc(labelSelector={"matchExpressions": [
        expr("app", "In", "not valid")]})), f"{TSC}.labelSelector.matchExpressions[0].values[0]"),
    # ---- ports
    ("ports-valid", None, ports([{"name": "http", "containerPort": 80, "hostPort": 8080},
                                 {"containerPort": 53, "hostPort": 53, "protocol": "UDP"},
                                 {"containerPort": 53, "hostPort": 53, "protocol": "TCP"}]),
     None),
    ("port-zero", None, ports([{"containerPort": 0}]), f"{C0}.ports[0].containerPort"),
    ("host-port-out-of-range", None, ports([{"containerPort": 80, "hostPort": 70000}]),
     f"{C0}.ports[0].hostPort"),
    ("host-port-twice", None, ports([{"containerPort": 80, "hostPort": 8080}],
                                    [{"containerPort": 81, "hostPort": 8080}]),
     "spec.containers[1].ports[0].hostPort"),
    ("port-name-twice", None, ports([{"name": "http", "containerPort": 80},
                                     {"name": "http", "containerPort": 81}]),
     f"{C0}.ports[1].name"),
    ("port-name-bad", None, ports([{"name": "a.b", "containerPort": 80}]),
     f"{C0}.ports[0].name"),
    ("host-network-host-port-unset", None, {"hostNetwork": True,
                                            **ports([{"containerPort": 2600}])}, None),
    ("host-network-host-port-differs", None, {"hostNetwork": True, **ports(
        [{"containerPort": 2600, "hostPort": 8080}])}, f"{C0}.ports[0].hostPort"),
    ("init-host-port-twice", None, ports([{"containerPort": 80, "hostPort": 80},
                                          {"containerPort": 81, "hostPort": 80}], init=True),
     "spec.initContainers[0].ports[1].hostPort"),
    # ---- gates and nodeName
    ("gate-twice", None, {"schedulingGates": [{"name": "example.com/a"},
                                              {"name": "example.com/a"}]},
     "spec.schedulingGates[1]"),
    ("gate-bad-name", None, {"schedulingGates": [{"name": "a/b/c"}]}, "spec.schedulingGates[0]"),
    ("node-name-bad", None, {"nodeName": "Node_1"}, "spec.nodeName"),
    ("node-name-with-gates", None, {"nodeName": "node-1",
                                    "schedulingGates": [{"name": "example.com/a"}]},
     "spec.nodeName"),
    # ---- volumes and resource claims
    ("volumes-valid", None, {
        "volumes": [{"name": "scratch", "emptyDir": {}}, {"name": "defaulted"},
                    {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                    {"name": "tmp", "ephemeral": {"volumeClaimTemplate": TEMPLATE}}],
        "containers": [{"name": "c", "image": "busybox", "volumeMounts": [
            {"name": "data", "mountPath": "/data"}, {"name": "defaulted", "mountPath": "/d"},
            {"name": "tmp", "mountPath": "/tmp"}]}]}, None),
    ("volume-two-sources", None, {"volumes": [
        {"name": "v", "emptyDir": {}, "persistentVolumeClaim": {"claimName": "c"}}]},
     "spec.volumes[0].persistentVolumeClaim"),
    ("volume-bad-name", None, {"volumes": [{"name": "Vol", "emptyDir": {}}]},
     "spec.volumes[0].name"),
    ("volume-name-twice", None, {"volumes": [{"name": "v", "emptyDir": {}},
                                             {"name": "v", "emptyDir": {}}]},
     "spec.volumes[1].name"),
    ("pvc-without-claim-name", None, {"volumes": [{"name": "v", "persistentVolumeClaim": {}}]},
     "spec.volumes[0].persistentVolumeClaim.claimName"),
    ("mount-of-unknown-volume", None, {"containers": [{"name": "c", "image": "busybox",
                                                       "volumeMounts": [{"name": "nope",
                                                                         "mountPath": "/x"}]}]},
     f"{C0}.volumeMounts[0].name"),
    ("claims-valid", None, {**uses_claims("gpu"), "resourceClaims": [
        {"name": "gpu", "resourceClaimTemplateName": "one-gpu"},
        {"name": "shared", "resourceClaimName": "shared-nic"}]}, None),
    ("claim-both-sources", None, {"resourceClaims": [
        {"name": "gpu", "resourceClaimName": "a", "resourceClaimTemplateName": "b"}]},
     "spec.resourceClaims[0]"),
    ("claim-no-source", None, {"resourceClaims": [{"name": "gpu"}]}, "spec.resourceClaims[0]"),
    ("claim-reference-not-found", None, {**uses_claims("gpu"), "resourceClaims": [
        {"name": "nic", "resourceClaimName": "a"}]}, f"{C0}.resources.claims[0]"),
    ("claim-bad-name", None, {"resourceClaims": [{"name": "GPU", "resourceClaimName": "a"}]},
     "spec.resourceClaims[0].name"),
    # ---- pod-level resources
    ("pod-resources-valid", None, {"resources": {"requests": {"cpu": "2"},
                                                 "limits": {"cpu": "4", "memory": "1Gi"}}},
     None),
    ("pod-resources-unsupported", None, {"resources": {"requests": {
        "ephemeral-storage": "1Gi"}}}, "spec.resources.requests[ephemeral-storage]"),
    ("pod-resources-below-containers", None, {
        "resources": {"requests": {"cpu": "1"}},
        "containers": [{"name": "c", "image": "busybox", "resources": {
            "requests": {"cpu": "2"}}}]}, "spec.resources.requests[cpu]"),
]


def _pod(i: int, labels: dict[str, str] | None, spec: dict[str, Any],
         ns: str = "default") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"case-{i}", "namespace": ns}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}


def test_memory_cluster_validates_pods_as_the_api_server_does(control_plane: Any,
                                                              kube_namespace: str) -> None:
    async def real_verdicts() -> list[Invalid | None]:
        out: list[Invalid | None] = []
        async with control_plane.client() as kube:
            for i, (_, labels, spec, _) in enumerate(CASES):
                try:
                    await asyncio.wait_for(kube.transport.request(
                        "POST", f"/api/v1/namespaces/{kube_namespace}/pods",
                        query=[("dryRun", "All")], body=_pod(i, labels, spec, kube_namespace)),
                        30)
                    out.append(None)
                except Invalid as err:
                    out.append(err)
        return out

    async def our_verdicts() -> list[Invalid | None]:
        cluster = MemoryCluster()
        out: list[Invalid | None] = []
        for i, (_, labels, spec, _) in enumerate(CASES):
            try:
                await cluster.create(from_dict(Pod, _pod(i, labels, spec)), returning=False)
                out.append(None)
            except Invalid as err:
                out.append(err)
        return out

    real = asyncio.run(real_verdicts())
    ours = run_virtual(our_verdicts)
    disagreements = []
    for (name, _, _, expected), got, mine in zip(CASES, real, ours):
        real_field = got and got.field
        our_field = mine and mine.field
        if not (real_field == our_field == expected):
            disagreements.append(f"{name}: expected {expected}, API server {real_field} "
                                 f"({got and got.message}), MemoryCluster {our_field} "
                                 f"({mine and mine.message})")
    assert not disagreements, "\n".join(disagreements)
