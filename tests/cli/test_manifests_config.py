"""`phalanx manifests all --config FILE`: what the OperatorConfiguration's server and
leaderElection sections need from the install (a Lease Role where the Lease is, the manual
certificate's Secret mounted, one replica without leader election), and what it says about
fields Phalanx does not act on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from phalanx.api.config import ConfigError
from phalanx.cli.main import app
from phalanx.manifests.validate import check_document

HEAD = "apiVersion: operator.config.grove.io/v1alpha1\nkind: OperatorConfiguration\n"
PROFILES = "scheduler: {profiles: [{name: phalanx-scheduler}]}\n"


def install(tmp_path: Path, config: str, *args: str) -> tuple[list[dict[str, Any]], str]:
    path = tmp_path / "config.yaml"
    path.write_text(HEAD + PROFILES + config)
    result = CliRunner().invoke(app, ["manifests", "all", "--config", str(path), *args])
    assert result.exit_code == 0, (result.output, result.exception)
    docs = [d for d in yaml.safe_load_all(result.stdout) if d]
    for doc in docs:
        assert check_document(doc) == [], (doc["kind"], doc["metadata"]["name"])
    return docs, result.stderr


def refused(tmp_path: Path, config: str, *args: str) -> ConfigError:
    path = tmp_path / "config.yaml"
    path.write_text(HEAD + PROFILES + config)
    result = CliRunner().invoke(app, ["manifests", "all", "--config", str(path), *args])
    assert isinstance(result.exception, ConfigError), result.output
    return result.exception


def roles(docs: list[dict[str, Any]]) -> dict[tuple[str, str], list[str]]:
    """(namespace, name) of each operator Role -> the resources it grants."""
    return {(d["metadata"]["namespace"], d["metadata"]["name"]):
            sorted(r for rule in d["rules"] for r in rule["resources"])
            for d in docs if d["kind"] == "Role" and d["metadata"]["name"] == "phalanx-operator"}


def operator_pod(docs: list[dict[str, Any]]) -> tuple[int, dict[str, Any]]:
    [dep] = [d for d in docs if d["kind"] == "Deployment"
             and d["metadata"]["name"] == "phalanx-operator"]
    return dep["spec"]["replicas"], dep["spec"]["template"]["spec"]


def test_the_lease_role_is_where_resource_namespace_says(tmp_path: Path) -> None:
    docs, _ = install(tmp_path, "leaderElection: {enabled: true, resourceNamespace: kube-system}\n")
    assert roles(docs) == {("phalanx-system", "phalanx-operator"): ["secrets", "secrets"],
                           ("kube-system", "phalanx-operator"): ["leases"]}
    [binding] = [d for d in docs if d["kind"] == "RoleBinding"
                 and d["metadata"]["namespace"] == "kube-system"]
    assert binding["roleRef"]["name"] == "phalanx-operator"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "phalanx-operator",
                                    "namespace": "phalanx-system"}]
    # The same namespace as the install: one Role, as before.
    docs, _ = install(tmp_path, "leaderElection: {enabled: true, "
                                "resourceNamespace: phalanx-system}\n")
    assert roles(docs) == {("phalanx-system", "phalanx-operator"):
                           ["leases", "secrets", "secrets"]}


def test_manual_certificates_mount_the_secret_at_server_cert_dir(tmp_path: Path) -> None:
    """As Grove's chart: the Secret `secretName` at `serverCertDir`, where the operator
    reads tls.crt and tls.key; it needs no Secret permission then."""
    docs, _ = install(tmp_path, "leaderElection: {enabled: true}\nserver:\n  webhooks: "
                                "{certProvisionMode: manual, secretName: my-cert, "
                                "serverCertDir: /etc/certs}\n")
    _, pod = operator_pod(docs)
    [mount] = [m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "webhook-certs"]
    assert mount == {"name": "webhook-certs", "mountPath": "/etc/certs", "readOnly": True}
    [volume] = [v for v in pod["volumes"] if v["name"] == "webhook-certs"]
    assert volume["secret"]["secretName"] == "my-cert"
    assert roles(docs) == {("phalanx-system", "phalanx-operator"): ["leases"]}
    # auto (the default) and --no-webhook mount nothing.
    for config, args in (("", ()), ("server: {webhooks: {certProvisionMode: manual}}\n",
                                     ("--no-webhook",))):
        _, pod = operator_pod(install(tmp_path, config, *args)[0])
        assert "webhook-certs" not in {v["name"] for v in pod["volumes"]}


def test_a_cert_dir_the_install_uses_for_something_else_is_refused(tmp_path: Path) -> None:
    err = refused(tmp_path, "server: {webhooks: {certProvisionMode: manual, "
                            "serverCertDir: /etc/phalanx}}\n")
    assert [e.path for e in err.errors] == ["server.webhooks.serverCertDir"]


def test_without_leader_election_one_operator_replica(tmp_path: Path) -> None:
    """Leader election is off unless set (as in Grove): one operator, the scheduler's 2 stay
    (it always elects); asking for more operators without election is refused."""
    docs, _ = install(tmp_path, "")
    assert operator_pod(docs)[0] == 1
    assert roles(docs) == {("phalanx-system", "phalanx-operator"): ["secrets", "secrets"]}
    [sched] = [d for d in docs if d["kind"] == "Deployment"
               and d["metadata"]["name"] == "phalanx-scheduler"]
    assert sched["spec"]["replicas"] == 2
    assert operator_pod(install(tmp_path, "", "--replicas", "1")[0])[0] == 1
    err = refused(tmp_path, "leaderElection: {enabled: false}\n", "--replicas", "2")
    assert [e.path for e in err.errors] == ["leaderElection.enabled"]
    # With election on: 2 by default, as many as asked.
    assert operator_pod(install(tmp_path, "leaderElection: {enabled: true}\n")[0])[0] == 2
    assert operator_pod(install(tmp_path, "leaderElection: {enabled: true}\n",
                                "--replicas", "3")[0])[0] == 3


def test_the_default_install_elects_its_two_replicas() -> None:
    result = CliRunner().invoke(app, ["manifests", "all"])
    docs = [d for d in yaml.safe_load_all(result.stdout) if d]
    replicas, _ = operator_pod(docs)
    [cm] = [d for d in docs if d["kind"] == "ConfigMap"]
    assert replicas == 2 and yaml.safe_load(cm["data"]["config.yaml"])["leaderElection"][
        "enabled"] is True


def test_the_scheduler_plugins_profile_is_known(tmp_path: Path) -> None:
    """Registered by the backends package: known before the configuration is checked."""
    path = tmp_path / "sp.yaml"
    path.write_text(HEAD + "scheduler:\n  profiles:\n  - name: scheduler-plugins\n"
                    "    config: {scheduleTimeout: 90s}\n")
    result = CliRunner().invoke(app, ["manifests", "all", "--no-scheduler", "--config",
                                      str(path)])
    assert result.exit_code == 0, result.output
    cm = next(d for d in yaml.safe_load_all(result.stdout) if d and d["kind"] == "ConfigMap")
    assert "scheduler-plugins" in cm["data"]["config.yaml"]


def test_what_phalanx_does_not_do_is_said_on_stderr(tmp_path: Path) -> None:
    docs, err = install(tmp_path, "authorizer: {enabled: true}\n")
    assert "warning:" in err and "authorizer.enabled: ignored: Phalanx has no authorizer" in err
    assert docs  # still installed: Grove's Helm-rendered configuration carries it
