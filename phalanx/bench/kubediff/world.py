"""A kubediff case's objects on the API server, and knowing when kube-scheduler sees them.

- `create` / `delete`: StorageClasses, PVs and PVCs, and the DRA DeviceClasses and
  ResourceSlices (one copy per driver, draparts.py) first, then the nodes (registered Ready;
  their taints then replace the not-ready taint the API server adds), then the existing pods,
  bound at creation. Deletion is by the case's label, pods with grace period 0 (no kubelet).
- `place`: create one pod (and its ResourceClaim, on the placement's driver), wait until it
  is bound or PodScheduled=False, delete it. Claims stay until the case is deleted (their
  finalizer is dropped then: no kube-controller-manager runs to deallocate them).
- `wait_kube_sees`: a canary pod kube-scheduler cannot place (10^6 cpu, tolerates every
  taint, requires the case's label); its message must read `0/K nodes are available:
  K Insufficient cpu` with K the case's nodes: kube-scheduler's snapshot then holds exactly
  those nodes. Pods reach it on one watch, in order, so the existing pods (created before the
  canary) are in it too. A canary placed too early is deleted and another one tried.
- `pin_by_taint`: taint every node of the case but one, and wait (a canary again) until
  kube-scheduler sees the taints.
"""

from __future__ import annotations

import asyncio
import copy
import time
from typing import Any

from phalanx.cluster.client import NotFound

from .compare import MessageError, Outcome, parse_message
from .draparts import CLAIM, DRIVER, driver_names
from .generate import CASE_LABEL, TAINTS, Case

MERGE_PATCH = "application/merge-patch+json"
CANARY_CPU = "1000000"
PIN_TAINT = {"key": "kubediff.phalanx.io/pin", "value": "elsewhere", "effect": "NoSchedule"}
UNTOLERATED = "node(s) had untolerated taint(s)"  # kube-scheduler 1.36's TaintToleration
POLL = 0.005  # seconds between reads while waiting on a scheduler
CANARY_ATTEMPTS = 20


class World:
    def __init__(self, kube: Any, namespace: str, *, timeout: float = 20.0) -> None:
        self.kube = kube
        self.t = kube.transport
        self.namespace = namespace
        self.timeout = timeout
        self.pods_path = f"/api/v1/namespaces/{namespace}/pods"

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self.t.request("POST", path, body=body, kind=body.get("kind", ""),
                                    name=body["metadata"]["name"])

    async def _set_taints(self, name: str, taints: list[dict[str, Any]]) -> None:
        await self.t.request("PATCH", f"/api/v1/nodes/{name}", body={"spec": {
            "taints": taints or None}}, content_type=MERGE_PATCH, kind="Node", name=name)

    # --- objects ------------------------------------------------------------------------

    async def create(self, case: Case) -> None:
        for obj in case.volumes:
            await self._post(_volume_path(obj, self.namespace), self._namespaced(obj))
        for obj in dra_objects(case):
            plural = {"DeviceClass": "deviceclasses", "ResourceSlice": "resourceslices"}
            await self._post(f"/apis/{RESOURCE_API}/{plural[obj['kind']]}", obj)

        async def node(obj: dict[str, Any]) -> None:
            created = await self._post("/api/v1/nodes", _registered(obj))
            want = obj["spec"].get("taints") or []
            if ((created.get("spec") or {}).get("taints") or []) != want:
                await self._set_taints(obj["metadata"]["name"], want)

        await asyncio.gather(*(node(n) for n in case.nodes))
        await asyncio.gather(*(self._post(self.pods_path, p) for p in case.existing))

    def _namespaced(self, obj: dict[str, Any]) -> dict[str, Any]:
        if obj["kind"] != "PersistentVolume":
            return obj
        obj = copy.deepcopy(obj)
        obj["spec"]["claimRef"]["namespace"] = self.namespace
        return obj

    async def delete(self, case: Case) -> None:
        query = [("labelSelector", f"{CASE_LABEL}={case.prefix}")]
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}
        paths = [(self.pods_path, "Pod"), ("/api/v1/nodes", "Node")]
        if case.volumes:
            paths += [(f"/api/v1/namespaces/{self.namespace}/persistentvolumeclaims",
                       "PersistentVolumeClaim"),
                      ("/api/v1/persistentvolumes", "PersistentVolume"),
                      ("/apis/storage.k8s.io/v1/storageclasses", "StorageClass")]
        if case.devices or case.claim is not None:
            claims = f"/apis/{RESOURCE_API}/namespaces/{self.namespace}/resourceclaims"
            listed = await self.t.request("GET", claims, query=query, kind="ResourceClaim")
            for c in listed.get("items") or ():
                if c["metadata"].get("finalizers"):
                    name = c["metadata"]["name"]
                    await self.t.request("PATCH", f"{claims}/{name}", body={"metadata": {
                        "finalizers": None}}, content_type=MERGE_PATCH, kind="ResourceClaim",
                        name=name)
            paths += [(claims, "ResourceClaim"),
                      (f"/apis/{RESOURCE_API}/resourceslices", "ResourceSlice"),
                      (f"/apis/{RESOURCE_API}/deviceclasses", "DeviceClass")]
        for path, kind in paths:
            await self.t.request("DELETE", path, query=query, body=body, kind=kind)

    # --- placing one pod ----------------------------------------------------------------

    async def until(self, check: Any, what: str) -> Any:
        """Await `check()` until it returns something else than None/False (returned)."""
        deadline = time.monotonic() + self.timeout
        while True:
            got = await check()
            if got is not None and got is not False:
                return got
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} (after {self.timeout:g}s)")
            await asyncio.sleep(POLL)

    async def place(self, pod: dict[str, Any], scheduler: str,
                    claim: dict[str, Any] | None = None, driver: str = "") -> Outcome:
        """Create the pod (and its claim on `driver`), wait until it is bound or
        Unschedulable, delete the pod."""
        name = pod["metadata"]["name"]
        path = f"{self.pods_path}/{name}"
        started = time.perf_counter()
        if claim is not None:
            await self._create_claim(pod, claim, driver)
        await self._post(self.pods_path, pod)

        async def outcome() -> Outcome | None:
            got = await self.t.request("GET", path, kind="Pod", name=name)
            node = (got.get("spec") or {}).get("nodeName")
            if node:
                return Outcome(scheduler, True, node=node)
            for c in (got.get("status") or {}).get("conditions") or ():
                if c.get("type") == "PodScheduled" and c.get("status") == "False":
                    return Outcome(scheduler, False, message=c.get("message") or "",
                                   reason=c.get("reason") or "")
            return None

        try:
            result = await self.until(outcome, f"{scheduler} to place pod {name}")
        finally:
            try:
                await self.t.request("DELETE", path, kind="Pod", name=name, body={
                    "apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})
            except NotFound:
                pass
        result.seconds = time.perf_counter() - started
        return result

    async def _create_claim(self, pod: dict[str, Any], spec: dict[str, Any],
                            driver: str) -> None:
        claim_name = f"{pod['metadata']['name']}-gpu"
        for ref in pod["spec"].get("resourceClaims") or ():
            if ref.get("resourceClaimName") == CLAIM:
                ref["resourceClaimName"] = claim_name
        labels = {CASE_LABEL: pod["metadata"]["labels"][CASE_LABEL]}
        await self._post(f"/apis/{RESOURCE_API}/namespaces/{self.namespace}/resourceclaims", {
            "apiVersion": RESOURCE_API, "kind": "ResourceClaim",
            "metadata": {"name": claim_name, "labels": labels},
            "spec": _on_driver(spec, driver)})

    # --- kube-scheduler's view ----------------------------------------------------------

    async def _canary_until(self, case: Case, tag: str, pod_spec: dict[str, Any],
                            expected: dict[str, int], scheduler: str) -> None:
        k = len(case.nodes)
        last = ""
        for attempt in range(CANARY_ATTEMPTS):
            name = f"{case.prefix}-{tag}{attempt}"
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": name, "labels": {CASE_LABEL: case.prefix}},
                   "spec": copy.deepcopy(pod_spec)}
            pod["spec"]["schedulerName"] = scheduler
            outcome = await self.place(pod, scheduler)
            if outcome.scheduled:
                raise RuntimeError(f"the canary {name} was bound to {outcome.node}")
            last = outcome.message
            try:
                parsed = parse_message(outcome.message)
            except MessageError:  # e.g. "no nodes available to schedule pods": none seen yet
                continue
            # Other reasons may come on top (a full node is also "Too many pods").
            if parsed.total == k and all(parsed.reasons.get(r) == n for r, n in expected.items()):
                return
        raise TimeoutError(f"{scheduler} never showed the state of case {case.seed} to a "
                           f"canary; last: {last}")

    async def wait_kube_sees(self, case: Case, scheduler: str) -> None:
        """kube-scheduler's snapshot holds exactly the case's nodes (and its pods)."""
        spec = _canary_spec(case, [{"operator": "Exists"}])
        await self._canary_until(case, "canary", spec, {"Insufficient cpu": len(case.nodes)},
                                 scheduler)

    async def pin_by_taint(self, case: Case, node: str, scheduler: str) -> None:
        """Taint every node of the case but `node` with PIN_TAINT; return once kube-scheduler
        sees it (a canary tolerating the case's own taints only is rejected by the taint on
        exactly the others)."""
        others = [n for n in case.nodes if n["metadata"]["name"] != node]
        await asyncio.gather(*(self._set_taints(n["metadata"]["name"],
                                                [*(n["spec"].get("taints") or ()), PIN_TAINT])
                               for n in others))
        tolerate = [{"key": key, "operator": "Exists"}
                    for key in dict.fromkeys(t[0] for t in TAINTS)]
        tolerate.append({"key": "node.kubernetes.io/unschedulable", "operator": "Exists"})
        expected = {"Insufficient cpu": 1}
        if others:
            expected[UNTOLERATED] = len(others)
        await self._canary_until(case, "pincanary", _canary_spec(case, tolerate), expected,
                                 scheduler)


RESOURCE_API = "resource.k8s.io/v1"


def dra_objects(case: Case) -> list[dict[str, Any]]:
    """Per driver: its DeviceClass (named as the driver) and one ResourceSlice per node with
    GPUs; none when the case has no devices and no claim."""
    if not case.devices and case.claim is None:
        return []
    labels = {CASE_LABEL: case.prefix}
    out: list[dict[str, Any]] = []
    for driver in driver_names(case.prefix):
        out.append({"apiVersion": RESOURCE_API, "kind": "DeviceClass",
                    "metadata": {"name": driver, "labels": labels},
                    "spec": {"selectors": [{"cel": {
                        "expression": f'device.driver == "{driver}"'}}]}})
        for node, devices in case.devices.items():
            out.append({"apiVersion": RESOURCE_API, "kind": "ResourceSlice",
                        "metadata": {"name": f"{node}-{driver.split('.', 1)[0]}",
                                     "labels": labels},
                        "spec": {"driver": driver, "nodeName": node,
                                 "pool": {"name": node, "generation": 1,
                                          "resourceSliceCount": 1},
                                 "devices": copy.deepcopy(devices)}})
    return out


def _on_driver(spec: dict[str, Any], driver: str) -> dict[str, Any]:
    """The claim spec with DRIVER (class names, attribute domains) replaced by `driver`."""
    if isinstance(spec, dict):
        return {k: _on_driver(v, driver) for k, v in spec.items()}
    if isinstance(spec, list):
        return [_on_driver(v, driver) for v in spec]
    return spec.replace(DRIVER, driver) if isinstance(spec, str) else spec


def _canary_spec(case: Case, tolerations: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": CANARY_CPU}}}],
        "tolerations": tolerations,
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": CASE_LABEL, "operator": "In", "values": [case.prefix]}]}]}}},
    }


def _registered(node: dict[str, Any]) -> dict[str, Any]:
    """The node as a kubelet registers it: Ready, with the usual conditions."""
    obj = copy.deepcopy(node)
    status = obj.setdefault("status", {})
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    conds = [{"type": t, "status": "False", "reason": r, "message": "",
              "lastHeartbeatTime": now, "lastTransitionTime": now}
             for t, r in (("MemoryPressure", "KubeletHasSufficientMemory"),
                          ("DiskPressure", "KubeletHasNoDiskPressure"),
                          ("PIDPressure", "KubeletHasSufficientPID"))]
    conds.append({"type": "Ready", "status": "True", "reason": "KubeletReady",
                  "message": "kubediff", "lastHeartbeatTime": now, "lastTransitionTime": now})
    status["conditions"] = conds
    status["nodeInfo"] = {"kubeletVersion": "v1.36.0", "architecture": "amd64",
                          "operatingSystem": "linux", "machineID": "", "systemUUID": "",
                          "bootID": "", "kernelVersion": "", "osImage": "",
                          "containerRuntimeVersion": "", "kubeProxyVersion": ""}
    return obj


def _volume_path(obj: dict[str, Any], namespace: str) -> str:
    kind = obj["kind"]
    if kind == "StorageClass":
        return "/apis/storage.k8s.io/v1/storageclasses"
    if kind == "PersistentVolume":
        return "/api/v1/persistentvolumes"
    if kind == "PersistentVolumeClaim":
        return f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
    raise ValueError(f"not a volume object: {kind}")
