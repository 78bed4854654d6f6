"""`phalanx manifests all` applied to a real kube-apiserver: server-side apply with strict
field validation (what `kubectl apply --server-side --validate=strict` sends), a server-side
dry run, and kubectl's client-side validation (which this server build cannot serve).

It gets a control plane of its own: the install registers admission webhooks for
PodCliqueSets whose backend does not run here, which would break the shared server.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
import yaml

from phalanx.cluster.client import ApiError
from phalanx.envtest import BinariesNotFound, ControlPlane, apply_documents, find_binaries

pytestmark = [pytest.mark.real_cluster, pytest.mark.timeout(150)]


@pytest.fixture(scope="module")
def own_plane():
    try:
        binaries = find_binaries()
    except BinariesNotFound as err:
        pytest.skip(str(err))
    if binaries.kubectl is None:
        pytest.skip("kubectl is not in the control-plane binaries")
    plane = ControlPlane.start(binaries=binaries)
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="module")
def stream() -> str:
    out = subprocess.run([sys.executable, "-m", "phalanx.cli.main", "manifests", "all"],
                         capture_output=True, text=True, timeout=60, check=True)
    return out.stdout


def kubectl(plane: ControlPlane, *args: str, stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(plane.binaries.kubectl), "--kubeconfig", str(plane.kubeconfig),
                           *args], input=stdin, capture_output=True, text=True, timeout=60)


def on_server(plane: ControlPlane, body):
    async def main():
        async with plane.client() as kube:
            return await asyncio.wait_for(body(kube), 90)

    return asyncio.run(main())


@pytest.mark.xfail(strict=True, reason="the shipped kube-apiserver v1.36 build answers 503 to "
                   "the protobuf /openapi/v2 kubectl validates with ('$root has invalid "
                   "property: Extensions' in its log); JSON /openapi/v2 and /openapi/v3 are 200")
def test_kubectl_client_side_validation(own_plane, stream):
    builtin = "\n---\n".join(d for d in stream.split("\n---\n") if "grove.io/" not in d)
    out = kubectl(own_plane, "apply", "--dry-run=client", "--validate=strict", "-f", "-",
                  stdin=builtin)
    assert out.returncode == 0, out.stderr


def test_the_install_applies_with_strict_field_validation(own_plane, stream):
    docs = [d for d in yaml.safe_load_all(stream) if d]
    assert len(docs) == 24  # seven CRDs: Grove's five, the legacy ClusterTopology, KAI's Queue

    async def body(kube):
        first = await apply_documents(kube, docs)
        again = await apply_documents(kube, docs)  # applied again, nothing moves
        return first, again

    first, again = on_server(own_plane, body)
    assert [d["kind"] for d in first] == [d["kind"] for d in docs]
    # CRDs excepted: the server itself updates their status (Established) meanwhile.
    unchanged = [(a["kind"], a["metadata"]["resourceVersion"] == b["metadata"]["resourceVersion"])
                 for a, b in zip(first, again) if a["kind"] != "CustomResourceDefinition"]
    assert all(same for _, same in unchanged), unchanged


def test_a_server_side_dry_run_changes_nothing(own_plane, stream):
    docs = [d for d in yaml.safe_load_all(stream) if d]

    async def body(kube):
        await apply_documents(kube, docs)
        for d in docs:  # a change the dry run must not store
            d.setdefault("metadata", {}).setdefault("labels", {})["dry-run"] = "yes"
        dry = await apply_documents(kube, docs, dry_run=True)
        assert all(d["metadata"]["labels"]["dry-run"] == "yes" for d in dry)
        live = await apply_documents(kube, [], dry_run=True)
        assert live == []
        ns = next(d for d in docs if d["kind"] == "Namespace")["metadata"]["name"]
        stored = await kube.transport.request("GET", f"/api/v1/namespaces/{ns}")
        assert "dry-run" not in (stored["metadata"].get("labels") or {})

    on_server(own_plane, body)


def test_strict_validation_rejects_a_mistyped_field(own_plane, stream):
    """The checks above can fail: a misspelt field in a custom resource is refused."""
    docs = [d for d in yaml.safe_load_all(stream) if d]
    bad = {"apiVersion": "grove.io/v1alpha1", "kind": "ClusterTopology",
           "metadata": {"name": "bad"}, "spec": {"levels": [], "levelz": []}}

    async def body(kube):
        await apply_documents(kube, [d for d in docs if d["kind"] ==
                                     "CustomResourceDefinition"])
        # The server answers an undeclared field in an apply with a 500 naming it.
        with pytest.raises(ApiError) as err:
            await apply_documents(kube, [bad])
        return err.value

    err = on_server(own_plane, body)
    assert ".spec.levelz: field not declared in schema" in str(err)


def test_an_install_from_a_configuration_applies(own_plane, tmp_path):
    """`--config` with a manual certificate (its Secret mounted at serverCertDir) and the
    Lease in another namespace (a Role there): the server takes every document strictly."""
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "apiVersion": "operator.config.grove.io/v1alpha1", "kind": "OperatorConfiguration",
        "scheduler": {"profiles": [{"name": "phalanx-scheduler"}]},
        "leaderElection": {"enabled": True, "resourceNamespace": "kube-system"},
        "server": {"webhooks": {"certProvisionMode": "manual", "secretName": "my-cert",
                                "serverCertDir": "/etc/certs"}}}))
    out = subprocess.run([sys.executable, "-m", "phalanx.cli.main", "manifests", "all",
                          "-n", "phalanx-from-config", "--config", str(config)],
                         capture_output=True, text=True, timeout=60, check=True)
    docs = [d for d in yaml.safe_load_all(out.stdout) if d]

    async def body(kube):
        return await apply_documents(kube, docs)

    applied = on_server(own_plane, body)
    by = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]): d for d in applied}
    role = by[("Role", "kube-system", "phalanx-operator")]
    assert role["rules"][0]["resources"] == ["leases"]
    pod = by[("Deployment", "phalanx-from-config", "phalanx-operator")]["spec"]["template"]["spec"]
    assert {"name": "webhook-certs", "mountPath": "/etc/certs", "readOnly": True} in \
        pod["containers"][0]["volumeMounts"]
    assert any(v.get("secret", {}).get("secretName") == "my-cert" for v in pod["volumes"])
