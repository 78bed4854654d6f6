"""Queue admission of PodCliqueSets: a PodCliqueSet that puts its pods in a queue that does not
exist is refused, naming the label (or annotation) -- its gangs would otherwise wait forever for
a queue no one made. Apply the queues first, as on a real cluster (Grove's e2e setup applies
queues.yaml first).

Each scheduler reads its own queue key only (phalanx.backends.hints), so each is checked only
for a backend whose scheduler reads it:

- a KAI queue (`kai.scheduler/queue`; for kai-scheduler also KAI's `project` fallback) for a
  backend with `KAIQueues` (kai-scheduler, phalanx-scheduler), where the cluster serves KAI's
  Queue kind (a cluster without KAI's CRD has no queues to look in);
- a Volcano queue (`scheduling.volcano.sh/queue-name`, `volcano.sh/queue-name`) for a backend
  with `VolcanoQueues` (volcano), as Volcano's PodGroup webhook checks it: the queue must exist
  and be `Open`. Where the server serves Volcano's Queue, it is read; where it does not
  (Volcano not installed) nothing is checked. The embedded cluster serves no Volcano Queue
  kind: only Volcano's `default` queue exists there, so any other is refused.

The queue a clique's pods get is the one its precedence chain picks (a KAI queue on the
PodCliqueSet before a clique template's; a Volcano annotation before the label). An update is
checked only for queues it newly names: a queue deleted under a running workload does not
freeze the workload's spec.
"""

from __future__ import annotations

from typing import Any

from phalanx.api.grove import PodCliqueSet
from phalanx.api.queue import Queue
from phalanx.api.volcano_queue import QUEUE_OPEN, VOLCANO_DEFAULT_QUEUE, VolcanoQueue
from phalanx.backends import hints
from phalanx.backends.base import Capability
from phalanx.backends.kai_metadata import NODE_POOL, PROJECT
from phalanx.cluster.client import ApiError, NotFound

FieldErrors = list[tuple[str, str]]


def _named(pcs: PodCliqueSet, chain: hints.Chain, *, project: bool = False
           ) -> dict[str, str]:
    """queue -> the field that names it first, over every clique's pods."""
    out: dict[str, str] = {}
    for i in range(len(pcs.spec.template.cliques)):
        found = hints.first(pcs, chain, [i])
        if found is None and project and (named := hints.first(pcs, PROJECT, [i])):
            pool = hints.first(pcs, NODE_POOL, [i])
            found = (named[0], f"{named[1]}-{pool[1]}" if pool else named[1])
        if found is not None:
            out.setdefault(found[1], found[0])
    return out


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


def _new(pcs: PodCliqueSet, old: PodCliqueSet | None, chain: hints.Chain,
         project: bool = False) -> dict[str, str]:
    named = _named(pcs, chain, project=project)
    if old is not None:
        before = _named(old, chain, project=project)
        named = {q: f for q, f in named.items() if q not in before}
    return named


async def queue_errors(pcs: PodCliqueSet, old: PodCliqueSet | None, reader: Any,
                       backend: Any) -> FieldErrors:
    if backend is None:
        return []
    caps = backend.capabilities
    errs: FieldErrors = []
    if Capability.KAI_QUEUES in caps:
        project = backend.name == "kai-scheduler"
        for queue, field in _new(pcs, old, hints.KAI_QUEUE, project).items():
            if await queue_exists(reader, queue) is False:
                errs.append((field, (f"Not found: queue {queue!r} ({_key(field)}) does not "
                                    f"exist; create the {Queue.API_VERSION} Queue first "
                                    f"(scheduler {backend.name!r} schedules the PodCliqueSet's "
                                    "pods in that queue)")))
    if Capability.VOLCANO_QUEUES in caps:
        for queue, field in _new(pcs, old, hints.VOLCANO_QUEUE).items():
            why = await volcano_queue_problem(reader, queue)
            if why:
                errs.append((field, (f"{why} ({_key(field)}; scheduler {backend.name!r} puts "
                                    "the PodCliqueSet's PodGroups in that queue)")))
    return errs


def _key(field: str) -> str:
    kind = "annotation" if ".annotations[" in field else "label"
    return f"{kind} {field.rsplit('[', 1)[1].rstrip(']')}"


async def volcano_queue_problem(reader: Any, queue: str) -> str:
    """Why Volcano's PodGroup webhook would refuse a PodGroup in `queue` ("" when it would
    not, or when the server cannot tell)."""
    serves = getattr(reader, "serves", None)
    if serves is None:  # the embedded cluster: no Volcano Queue kind, only `default`
        if queue == VOLCANO_DEFAULT_QUEUE:
            return ""
        return (f"Not found: Volcano queue {queue!r} does not exist: the embedded cluster "
                "serves no Volcano Queue kind and has only Volcano's "
                f"{VOLCANO_DEFAULT_QUEUE!r} queue (on a cluster running Volcano, the queue "
                "must exist and be Open)")
    try:
        if not await serves(VolcanoQueue):
            return ""  # Volcano's CRD is not installed: nothing to look in
        found = await reader.get(VolcanoQueue, queue)
    except NotFound:
        return (f"Not found: Volcano queue {queue!r} does not exist; create the "
                f"{VolcanoQueue.API_VERSION} Queue first")
    except ApiError:
        return ""  # discovery or the read failed: Volcano's own webhook still checks
    state = found.status.state
    if state != QUEUE_OPEN:
        return (f"Volcano queue {queue!r} is {state or 'not Open yet'}: Volcano accepts "
                f"PodGroups only in a queue whose state is {QUEUE_OPEN!r}")
    return ""
