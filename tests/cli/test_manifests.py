"""`phalanx manifests all`: a complete, least-privilege install that fits the API's shapes."""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from phalanx.cli.main import app
from phalanx.manifests.validate import check_document, has_model

runner = CliRunner()


def manifests(*args: str) -> list[dict[str, Any]]:
    result = runner.invoke(app, ["manifests", "all", *args])
    assert result.exit_code == 0, result.output
    return [d for d in yaml.safe_load_all(result.stdout) if d]


def by_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def test_every_document_fits_its_openapi_shape() -> None:
    docs = manifests()
    kinds = sorted({d["kind"] for d in docs})
    assert kinds == sorted([
        "ClusterRole", "ClusterRoleBinding", "ConfigMap", "CustomResourceDefinition",
        "Deployment", "MutatingWebhookConfiguration", "Namespace", "Role", "RoleBinding",
        "Service", "ServiceAccount", "ValidatingWebhookConfiguration",
    ])
    for doc in docs:
        assert has_model(doc["apiVersion"], doc["kind"]), doc["kind"]
        assert check_document(doc) == [], (doc["kind"], doc["metadata"]["name"])
    names = [(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]) for d in docs]
    assert len(names) == len(set(names))
    # Namespace and CRDs come before anything that needs them.
    assert docs[0]["kind"] == "Namespace"
    assert {d["spec"]["names"]["kind"] for d in by_kind(docs, "CustomResourceDefinition")} >= {
        "PodCliqueSet", "PodClique", "PodCliqueScalingGroup", "PodGang"}


def test_the_shape_check_catches_mistakes() -> None:
    bad = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
           "spec": {"selector": {"matchLabels": {"a": "b"}}, "replica": 2,
                    "template": {"spec": {"containers": {"name": "c"}}}}}
    errors = check_document(bad)
    assert "Deployment.spec.replica: unknown field in V1DeploymentSpec" in errors
    assert any("spec.template.spec.containers: expected a list" in e for e in errors)


def test_rbac_follows_the_enabled_backends(tmp_path) -> None:
    def operator_groups(docs: list[dict[str, Any]]) -> set[str]:
        role = next(d for d in by_kind(docs, "ClusterRole")
                    if d["metadata"]["name"] == "phalanx-operator")
        return {g for rule in role["rules"] for g in rule["apiGroups"]}

    default = operator_groups(manifests())
    assert "scheduling.run.ai" not in default
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: operator.config.grove.io/v1alpha1\nkind: OperatorConfiguration\n"
        "scheduler:\n  profiles:\n  - name: kai-scheduler\n  defaultProfileName: kai-scheduler\n"
    )
    with_kai = operator_groups(manifests("--config", str(config), "--no-scheduler"))
    assert "scheduling.run.ai" in with_kai and with_kai > default
    # The installed ConfigMap carries the configuration given.
    cm = by_kind(manifests("--config", str(config), "--no-scheduler"), "ConfigMap")[0]
    assert "kai-scheduler" in cm["data"]["config.yaml"]


def test_scheduler_cannot_write_what_it_only_reads() -> None:
    docs = manifests()
    role = next(d for d in by_kind(docs, "ClusterRole")
                if d["metadata"]["name"] == "phalanx-scheduler")
    writes = {(g, r) for rule in role["rules"] for g in rule["apiGroups"]
              for r in rule["resources"] if {"create", "update", "patch"} & set(rule["verbs"])}
    assert ("", "pods/binding") in writes
    assert ("", "nodes") not in writes and ("", "pods") not in writes
    assert all(rule.get("resourceNames") or "*" not in rule["verbs"] for rule in role["rules"])


def test_every_role_that_may_update_may_also_patch() -> None:
    """KubeCluster.update is a merge patch: a role with `update` but not `patch` lets a
    leader acquire its Lease (create) and then fail every renewal (403), as the real server
    showed (tests/services/test_replicas_real.py)."""
    roles = [d for d in manifests() if d["kind"] in ("ClusterRole", "Role")]
    assert len(roles) == 4
    missing = [(d["kind"], d["metadata"]["name"], rule["resources"]) for d in roles
               for rule in d["rules"] if "update" in rule["verbs"]
               and "patch" not in rule["verbs"]]
    assert missing == []


def test_options_drop_the_scheduler_and_webhook() -> None:
    docs = manifests("--no-scheduler", "--no-webhook", "-n", "gangs", "--image", "me/phalanx:dev")
    deployments = by_kind(docs, "Deployment")
    assert [d["metadata"]["name"] for d in deployments] == ["phalanx-operator"]
    assert not by_kind(docs, "ValidatingWebhookConfiguration")
    pod = deployments[0]["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == "me/phalanx:dev"
    assert "--no-webhook" in pod["containers"][0]["args"]
    assert all(d["metadata"].get("namespace") in (None, "gangs") for d in docs)


def test_bad_config_is_one_clear_error(tmp_path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("apiVersion: operator.config.grove.io/v1alpha1\n"
                      "kind: OperatorConfiguration\nscheduler:\n  defaultProfileName: nope\n")
    result = runner.invoke(app, ["manifests", "all", "--config", str(config)])
    assert result.exit_code != 0


def test_a_backend_config_the_operator_would_refuse_is_refused_here(tmp_path) -> None:
    from phalanx.backends.registry import BackendConfigError

    config = tmp_path / "config.yaml"
    config.write_text("apiVersion: operator.config.grove.io/v1alpha1\n"
                      "kind: OperatorConfiguration\nscheduler:\n  profiles:\n"
                      "  - {name: kai-scheduler, config: {defaultQueu: team-a}}\n")
    result = runner.invoke(app, ["manifests", "all", "--config", str(config)])
    assert result.exit_code != 0 and isinstance(result.exception, BackendConfigError)
    assert result.exception.field == "scheduler.profiles[0].config.defaultQueu"


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_parses_the_stream_offline() -> None:
    """kubectl's own YAML decoder accepts the stream (`--dry-run=client` itself needs an API
    server for discovery; the envtest suite runs it against a real one)."""
    result = runner.invoke(app, ["manifests", "all"])
    out = subprocess.run(
        ["kubectl", "create", "--dry-run=client", "--validate=false", "-o", "name", "-f", "-",
         "--kubeconfig", "/dev/null", "--server", "http://127.0.0.1:1"],
        input=result.stdout, capture_output=True, text=True, timeout=60,
    )
    # Without a server kubectl stops at discovery, after decoding every document.
    assert "error converting YAML" not in out.stderr and "yaml:" not in out.stderr, out.stderr


def _installed_config(docs: list[dict[str, Any]]) -> Any:
    from phalanx.api.config import load_operator_config

    return load_operator_config(by_kind(docs, "ConfigMap")[0]["data"]["config.yaml"])


def test_the_install_enables_the_scheduler_it_deploys() -> None:
    """Issue 15 item 3: the default install deployed phalanx-scheduler but its configuration
    enabled only default-scheduler, so the documented example was refused."""
    cfg = _installed_config(manifests())
    assert cfg.scheduler.profile_names() == ["default-scheduler", "phalanx-scheduler"]
    assert cfg.scheduler.default_profile_name == "default-scheduler"
    assert cfg.topology_aware_scheduling.enabled
    # Without the scheduler, GREP-375's default: only default-scheduler.
    bare = _installed_config(manifests("--no-scheduler"))
    assert bare.scheduler.profile_names() == ["default-scheduler"]


def test_a_config_that_does_not_enable_the_deployed_scheduler_is_refused(tmp_path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("apiVersion: operator.config.grove.io/v1alpha1\n"
                      "kind: OperatorConfiguration\n")
    result = runner.invoke(app, ["manifests", "all", "--config", str(config)])
    assert result.exit_code != 0
    message = str(result.exception)
    assert "scheduler.profiles" in message and "phalanx-scheduler" in message
    assert "--no-scheduler" in message


def test_the_installed_configuration_admits_the_documented_example() -> None:
    from pathlib import Path

    from phalanx.api.loader import load_file
    from phalanx.backends.registry import BackendRegistry
    from phalanx.operator.admission import check_all, default_podcliqueset

    import phalanx.backends  # noqa: F401  (registers every backend)
    import phalanx.sim.workload  # noqa: F401  (registers Scenario, the file's 2nd document)

    registry = BackendRegistry.from_config(_installed_config(manifests()))
    example = Path(__file__).resolve().parents[2] / "examples" / "multinode-aggregated.yaml"
    pcs = [o for o in load_file(example) if o.kind == "PodCliqueSet"]
    assert pcs
    for obj in pcs:
        assert check_all(default_podcliqueset(obj), None, registry) == []
