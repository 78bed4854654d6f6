"""KAI's Queue CRD (`queues.scheduling.run.ai`, v2), installed with phalanx-scheduler so that
KAI users' queues work unchanged, and what the scheduler may do with Queues.

The CRD is KAI's own file, shipped unchanged (crds/NOTICE): the schema is KAI's, not a
variant of ours. On a cluster that already runs KAI, applying it again is a no-op.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import yaml

from phalanx.api.queue import Queue

from .rbac import READ

CRD_FILE = "scheduling.run.ai_queues.yaml"


@cache
def _crd_text() -> str:
    return resources.files(__package__).joinpath("crds", CRD_FILE).read_text()


def queue_crd() -> dict[str, Any]:
    """KAI's Queue CustomResourceDefinition, as a fresh dict."""
    docs = [d for d in yaml.safe_load_all(_crd_text()) if d]
    (crd,) = docs
    return dict(crd)


def queue_rules() -> list[dict[str, Any]]:
    """phalanx-scheduler reads Queues, and writes their status (allocated, requested) and
    the fair-share annotation."""
    group = Queue.API_VERSION.split("/", 1)[0]
    return [{"apiGroups": [group], "resources": [Queue.PLURAL], "verbs": [*READ, "patch"]},
            {"apiGroups": [group], "resources": [f"{Queue.PLURAL}/status"],
             "verbs": ["patch", "update"]}]
