"""Queue admission of PodCliqueSets: a PodCliqueSet that names a KAI queue (the
`kai.scheduler/queue` label, on a clique template or the PodCliqueSet) which does not exist is
refused, naming the label -- its gangs would otherwise wait forever for a queue no one made.
Apply the queues first, as on a real cluster (Grove's e2e setup applies queues.yaml first).

Checked only when the PodCliqueSet's scheduler backend declares the `Queues` capability (it
reads the queue), and only where the cluster serves KAI's Queue kind (a cluster without
KAI's CRD has no queues to look in). An update is checked only when it changes the queue: a
queue deleted under a running workload does not freeze the workload's spec.
"""

from __future__ import annotations

from typing import Any

from phalanx.api import labels
from phalanx.api.grove import PodCliqueSet
from phalanx.api.queue import Queue
from phalanx.backends.base import Capability
from phalanx.cluster.client import ApiError, NotFound

FieldErrors = list[tuple[str, str]]
LABEL = labels.LABEL_KAI_QUEUE


def queue_label(pcs: PodCliqueSet) -> tuple[str, str] | None:
    """(field path, queue) of the first `kai.scheduler/queue` label: clique templates first
    (where Grove's workloads put it; the pods carry it), then the PodCliqueSet."""
    for i, c in enumerate(pcs.spec.template.cliques):
        value = (c.labels or {}).get(LABEL)
        if value:
            return f"spec.template.cliques[{i}].labels[{LABEL}]", value
    value = pcs.metadata.labels.get(LABEL)
    return (f"metadata.labels[{LABEL}]", value) if value else None


async def queue_exists(reader: Any, name: str) -> bool | None:
    """True/False, or None when `reader` does not serve Queues at all."""
    try:
        await reader.get(Queue, name)
        return True
    except NotFound:
        pass
    try:
        await reader.list(Queue)
    except ApiError:
        return None  # no Queue kind here (KAI's CRD not installed)
    return False


async def queue_errors(pcs: PodCliqueSet, old: PodCliqueSet | None, reader: Any,
                       backend: Any) -> FieldErrors:
    named = queue_label(pcs)
    if named is None or backend is None or Capability.QUEUES not in backend.capabilities:
        return []
    field, queue = named
    if old is not None and (before := queue_label(old)) is not None and before[1] == queue:
        return []
    if await queue_exists(reader, queue) is not False:
        return []
    return [(field, f"Not found: queue {queue!r} (label {LABEL}) does not exist; create the "
                    f"{Queue.API_VERSION} Queue first (scheduler {backend.name!r} schedules "
                    "the PodCliqueSet's pods in that queue)")]

