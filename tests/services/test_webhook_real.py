"""The operator's admission webhook called by a real kube-apiserver, as `kubectl apply` users
meet it: a PodCliqueSet the webhook refuses is denied with the field named, one it admits
with a field the scheduler backend ignores is created with kubectl's "Warning: ...", and the
defaulting webhook's changes are stored.

The operator serves its webhook on this host with a certificate made for `localhost`
(`certProvisionMode: manual`, as with a mounted cert-manager Secret); the webhook
configurations point kube-apiserver at it by URL. Each configuration selects only this test's
namespace, and both are removed at the end, so no other test's PodCliqueSets go through it.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.api.crds import crds
from phalanx.envtest import install_crds, operator_config, start_operator
from phalanx.envtest.ports import free_port
from phalanx.services.certs import CA_FILE, generate_bundle

pytestmark = [pytest.mark.real_cluster, pytest.mark.timeout(150)]

READY_TIMEOUT = 60.0  # the operator's start-up: imports, informer sync, webhook server


def _pcs(ns: str, name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"replicas": 1, "template": {"cliques": [{
                "name": "w", "spec": {"roleName": "w", "replicas": 1, "podSpec": {
                    "schedulerName": "koord-scheduler",
                    "containers": [{"name": "c", "image": "busybox"}]}}}]}}}


def _hooks(ns: str, port: int, ca: bytes) -> list[dict[str, Any]]:
    def hook(path: str) -> dict[str, Any]:
        return {"name": f"podcliquesets{path.replace('/', '.')}.test.phalanx.dev",
                "admissionReviewVersions": ["v1"], "sideEffects": "None",
                "failurePolicy": "Fail", "timeoutSeconds": 10,
                "clientConfig": {"url": f"https://localhost:{port}{path}",
                                 "caBundle": base64.b64encode(ca).decode()},
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                "rules": [{"apiGroups": ["grove.io"], "apiVersions": ["v1alpha1"],
                           "resources": ["podcliquesets"],
                           "operations": ["CREATE", "UPDATE"], "scope": "*"}]}

    meta = {"name": f"phalanx-test-{ns}"}
    return [{"apiVersion": "admissionregistration.k8s.io/v1",
             "kind": "MutatingWebhookConfiguration", "metadata": meta,
             "webhooks": [hook("/mutate")]},
            {"apiVersion": "admissionregistration.k8s.io/v1",
             "kind": "ValidatingWebhookConfiguration", "metadata": meta,
             "webhooks": [hook("/validate")]}]


def _kubectl(plane: Any, doc: dict[str, Any], tmp_path: Path,
             *args: str) -> subprocess.CompletedProcess[str]:
    f = tmp_path / f"{doc['metadata']['name']}-{doc['kind']}.yaml"
    f.write_text(yaml.safe_dump(doc))
    # --validate=false: the shipped kube-apiserver build answers 503 to the protobuf OpenAPI
    # kubectl's client-side validation reads (tests/cli/test_manifests_real.py).
    extra = ["--validate=false"] if args[0] == "apply" else []
    return subprocess.run([str(plane.binaries.kubectl), "--kubeconfig", str(plane.kubeconfig),
                           *args, *extra, "-f", str(f)], capture_output=True, text=True,
                          check=False, timeout=60)


def test_kubectl_apply_meets_the_operators_webhook(control_plane: Any, kube_namespace: str,
                                                    tmp_path: Path) -> None:
    plane, ns = control_plane, kube_namespace

    async def install() -> None:
        async with plane.client() as kube:
            await install_crds(kube, crds())

    asyncio.run(install())
    certs = tmp_path / "certs"
    generate_bundle(["localhost"], dt.datetime.now(dt.UTC)).write(certs)
    port = free_port()
    cfg = operator_config(profiles=("default-scheduler", "koordinator", "phalanx-scheduler"),
                          probe_port=free_port(), metrics_port=free_port(), webhook_port=port,
                          lease_namespace=ns)
    cfg["server"]["webhooks"].update({"certProvisionMode": "manual",
                                      "serverCertDir": str(certs)})
    operator = start_operator(plane, config=cfg, webhook=True, namespace=ns,
                              timeout=READY_TIMEOUT)
    hooks = _hooks(ns, int(port), (certs / CA_FILE).read_bytes())
    try:
        for doc in hooks:
            made = _kubectl(plane, doc, tmp_path, "apply")
            assert made.returncode == 0, made.stderr
        # Refused by the webhook (kube-apiserver does not look inside a CRD's template),
        # the field named: a clique template label the PodClique could never carry.
        bad = _pcs(ns, "bad", {})
        bad["spec"]["template"]["cliques"][0]["labels"] = {"bad key!": "x"}
        refused = _kubectl(plane, bad, tmp_path, "apply")
        assert refused.returncode != 0
        assert 'spec.template.cliques[0].labels: Invalid value: "bad key!"' in refused.stderr, \
            refused.stderr
        # Admitted, with the ignored field said as kubectl says an API server's warnings.
        ok = _kubectl(plane, _pcs(ns, "job", {"volcano.sh/queue-name": "research"}), tmp_path,
                      "apply")
        assert ok.returncode == 0, ok.stderr
        assert "Warning: metadata.labels[volcano.sh/queue-name]: " in ok.stderr, ok.stderr
        # The defaulting webhook's changes are stored (minAvailable from replicas).
        got = subprocess.run([str(plane.binaries.kubectl), "--kubeconfig", str(plane.kubeconfig),
                              "get", "pcs", "job", "-n", ns, "-o", "yaml"],
                             capture_output=True, text=True, check=True, timeout=60)
        stored = yaml.safe_load(got.stdout)
        assert stored["spec"]["template"]["cliques"][0]["spec"]["minAvailable"] == 1
        assert "Traceback" not in operator.log_text()
    finally:
        for doc in hooks:
            _kubectl(plane, doc, tmp_path, "delete", "--ignore-not-found")
        subprocess.run([str(plane.binaries.kubectl), "--kubeconfig", str(plane.kubeconfig),
                        "delete", "pcs", "--all", "-n", ns, "--ignore-not-found"],
                       capture_output=True, check=False, timeout=60)
        operator.stop()
