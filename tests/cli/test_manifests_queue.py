"""`phalanx manifests all` installs KAI's Queue CRD (KAI's own file, unchanged) with
phalanx-scheduler, and lets the scheduler read Queues and write their status."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from phalanx.cli.main import app
from phalanx.envtest.peer_crds import PeerCRDsNotFound, peer_crds
from phalanx.manifests.validate import check_document

runner = CliRunner()
QUEUE_CRD = "queues.scheduling.run.ai"


@cache
def _docs(*args: str) -> list[dict[str, Any]]:
    result = runner.invoke(app, ["manifests", "all", *args])
    assert result.exit_code == 0, result.output
    return [d for d in yaml.safe_load_all(result.stdout) if d]


def _crd(docs: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((d for d in docs if d["kind"] == "CustomResourceDefinition"
                 and d["metadata"]["name"] == QUEUE_CRD), None)


def test_install_carries_kais_queue_crd_unchanged() -> None:
    crd = _crd(_docs())
    assert crd is not None and check_document(crd) == []
    try:
        (kai,) = peer_crds("kai", only=("Queue",))
    except PeerCRDsNotFound as exc:
        pytest.skip(str(exc))
    assert crd == kai


def test_scheduler_may_read_queues_and_write_their_status() -> None:
    docs = _docs()
    role = next(d for d in docs if d["kind"] == "ClusterRole"
                and d["metadata"]["name"] == "phalanx-scheduler")
    verbs = {r: set(rule["verbs"]) for rule in role["rules"]
             if "scheduling.run.ai" in rule["apiGroups"] for r in rule["resources"]}
    assert {"get", "list", "watch", "patch"} <= verbs["queues"]
    assert "patch" in verbs["queues/status"]


def test_no_queue_crd_without_the_scheduler() -> None:
    assert _crd(_docs("--no-scheduler")) is None
