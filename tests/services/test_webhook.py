"""The admission webhook over real TLS: AdmissionReview in, JSONPatch / denial out."""

from __future__ import annotations

import base64
import json
import ssl
from typing import Any

import aiohttp
from pydantic import Field

from phalanx.api.base import KubeModel, Resource
from phalanx.cluster.admission import AdmissionChain
from phalanx.cluster.client import Invalid
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.cluster.objects import merge_patch as _unused  # noqa: F401
from phalanx.services.certs import (
    ReloadingContext, ensure_shared_bundle, generate_bundle, patch_ca_bundle, service_dns_names,
)
from phalanx.services.kinds import MutatingWebhookConfiguration, ValidatingWebhookConfiguration
from phalanx.services.metrics import PhalanxMetrics
from phalanx.services.server import Probes, ServiceServer
from phalanx.services.webhook import AdmissionWebhook, json_patch


class GizmoSpec(KubeModel):
    queue: str | None = None
    replicas: int = 1


class Gizmo(Resource):
    API_VERSION = "webhook.test/v1"
    KIND = "Gizmo"
    PLURAL = "gizmos"
    spec: GizmoSpec = Field(default_factory=GizmoSpec)


def default_queue(obj: Gizmo, old: Gizmo | None) -> None:
    if not obj.spec.queue:
        obj.spec.queue = "default"
    obj.metadata.labels.setdefault("example.com/queue", obj.spec.queue)


def check(obj: Gizmo, old: Gizmo | None) -> list[str]:
    if obj.spec.replicas < 0:
        raise Invalid("must be >= 0", field="spec.replicas")
    if old is not None and old.spec.queue != obj.spec.queue:
        raise Invalid("queue is immutable", field="spec.queue")
    return ["spec.replicas: above 100 is ignored"] if obj.spec.replicas > 100 else []


def review(op: str, obj: dict[str, Any] | None, old: dict[str, Any] | None = None) -> dict:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u-1", "operation": op,
                        "kind": {"group": "webhook.test", "version": "v1", "kind": "Gizmo"},
                        "object": obj, "oldObject": old}}


def gizmo(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "webhook.test/v1", "kind": "Gizmo",
            "metadata": {"name": "g", "namespace": "ns", "managedFields": [{"x": 1}]},
            "spec": {**spec, "fieldFromANewerVersion": True}}


def apply_json_patch(doc: Any, ops: list[dict[str, Any]]) -> Any:
    """A minimal RFC 6902 applier (add/remove/replace), enough to check our patches."""
    import copy
    doc = copy.deepcopy(doc)
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        target = doc
        for p in parts[:-1]:
            target = target[int(p)] if isinstance(target, list) else target[p]
        if op["op"] == "remove":
            del target[parts[-1]]
        else:
            target[parts[-1]] = op["value"]
    return doc


def test_webhook_over_tls_defaults_and_validates(tmp_path) -> None:
    bundle = generate_bundle(service_dns_names("phalanx-webhook", "phalanx-system") +
                             ["localhost"], __import__("datetime").datetime.now(
                                 __import__("datetime").UTC))
    bundle.write(tmp_path)
    chain = AdmissionChain()
    chain.register(Gizmo, mutate=default_queue, validate=check)
    metrics = PhalanxMetrics()
    hook = AdmissionWebhook(chain, lambda av, k: Gizmo if (av, k) == Gizmo.gvk() else None,
                            observe=metrics.observe_admission)

    async def main() -> None:
        server = ServiceServer(probes=Probes(), registry=metrics.registry, host="127.0.0.1",
                               http_port=0, webhook_port=0, webhook_routes=hook.routes(),
                               tls=ReloadingContext(tmp_path).context)
        await server.start()
        trust = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
        # An IP, not "localhost": name resolution runs in a thread, which virtual time
        # does not wait for; the certificate is checked against the name all the same.
        base = f"https://127.0.0.1:{server.webhook_port}"
        try:
            async with aiohttp.ClientSession() as http:
                async def post(path: str, body: dict) -> dict:
                    async with http.post(base + path, json=body, ssl=trust,
                                         server_hostname="localhost") as resp:
                        assert resp.status == 200
                        return (await resp.json())["response"]

                raw = gizmo(replicas=2)
                out = await post("/mutate", review("CREATE", raw))
                assert out["allowed"] and out["patchType"] == "JSONPatch"
                ops = json.loads(base64.b64decode(out["patch"]))
                patched = apply_json_patch(raw, ops)
                assert patched["spec"]["queue"] == "default"
                assert patched["metadata"]["labels"] == {"example.com/queue": "default"}
                # Fields our model does not know are not touched by the patch.
                assert patched["spec"]["fieldFromANewerVersion"] is True
                assert patched["metadata"]["managedFields"] == [{"x": 1}]

                denied = await post("/validate", review("CREATE", gizmo(replicas=-1)))
                assert denied["allowed"] is False and denied["status"]["code"] == 422
                assert denied["status"]["details"]["causes"][0]["field"] == "spec.replicas"
                assert "spec.replicas" in denied["status"]["message"]

                plain = await post("/validate", review("CREATE", gizmo(replicas=2)))
                assert plain["allowed"] and "warnings" not in plain
                # Admitted with a warning: the API server relays it (kubectl: "Warning: ...").
                warned = await post("/validate", review("CREATE", gizmo(replicas=101)))
                assert warned["allowed"]
                assert warned["warnings"] == ["spec.replicas: above 100 is ignored"]

                update = await post("/validate", review("UPDATE", gizmo(queue="b"),
                                                        gizmo(queue="a")))
                assert update["allowed"] is False
                assert (await post("/validate", review("DELETE", None, gizmo())))["allowed"]

                async with http.get(f"http://127.0.0.1:{server.http_port}/metrics") as resp:
                    text = await resp.text()
                assert ('phalanx_admission_requests_total{allowed="false",hook="validate",'
                        'kind="Gizmo"} 2.0') in text
        finally:
            await server.stop()

    run_virtual(main())


def test_json_patch_escapes_label_keys() -> None:
    ops = json_patch({"labels": {}}, {"labels": {"grove.io/podgang": "x"}})
    assert ops == [{"op": "add", "path": "/labels/grove.io~1podgang", "value": "x"}]


def test_replicas_share_one_certificate_and_the_ca_is_patched_in() -> None:
    async def main() -> None:
        mem = MemoryCluster()
        names = service_dns_names("phalanx-webhook", "phalanx-system")
        for kind, name in ((MutatingWebhookConfiguration, "phalanx-mutating"),
                           (ValidatingWebhookConfiguration, "phalanx-validating")):
            await mem.create(kind.model_validate({
                "metadata": {"name": name},
                "webhooks": [{"name": "pcs.grove.io", "clientConfig": {"service": {
                    "name": "phalanx-webhook", "namespace": "phalanx-system"}},
                    "sideEffects": "None", "admissionReviewVersions": ["v1"]}]}))
        first = await ensure_shared_bundle(mem, secret_name="tls", namespace="phalanx-system",
                                           dns_names=names)
        second = await ensure_shared_bundle(mem, secret_name="tls", namespace="phalanx-system",
                                            dns_names=names)
        assert first == second  # the second replica reuses the Secret
        assert sorted(first.dns_names()) == sorted(names)
        assert await patch_ca_bundle(mem, first.ca_pem, mutating="phalanx-mutating",
                                     validating="phalanx-validating") == 2
        assert await patch_ca_bundle(mem, first.ca_pem, mutating="phalanx-mutating",
                                     validating="phalanx-validating") == 0  # idempotent
        cfg = await mem.get(ValidatingWebhookConfiguration, "phalanx-validating")
        assert base64.b64decode(cfg.webhooks[0]["clientConfig"]["caBundle"]) == first.ca_pem
        assert cfg.webhooks[0]["sideEffects"] == "None"  # the rest is left as it was
        # A different service name: the bundle no longer fits and is renewed.
        third = await ensure_shared_bundle(mem, secret_name="tls", namespace="phalanx-system",
                                           dns_names=["other.phalanx-system.svc"])
        assert third != first and third.dns_names() == ["other.phalanx-system.svc"]

    run_virtual(main())
