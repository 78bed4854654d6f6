"""A RollingRecreate update that cannot go on, made visible (issue 23 item 8).

Grove's update simply waits when a replacement pod cannot be placed (RU10). Phalanx waits the
same way, without deleting anything more, and says so: while the updating PodCliqueSet replica
has a pod of the new template that the scheduler reported Unschedulable, the PodCliqueSet
carries `UpdateStalled=True` (reason `ReplacementUnschedulable`, naming the pod and the
scheduler's message) and a Warning Event of that reason is recorded; it turns False once no
such pod is left, or the update ends.
"""

from __future__ import annotations

from phalanx.api import labels as L
from phalanx.api.base import get_condition, set_condition
from phalanx.api.core import Pod
from phalanx.api.grove import PodClique, PodCliqueSet, PodCliqueSetStatus

from . import naming
from .context import OperatorContext
from .updateprogress import expected_hash

UPDATE_STALLED = "UpdateStalled"
REASON_REPLACEMENT_UNSCHEDULABLE = "ReplacementUnschedulable"
REASON_UPDATE_PROGRESSING = "UpdateProgressing"
REASON_NO_UPDATE = "NoUpdateInProgress"


def unschedulable_message(pod: Pod) -> str | None:
    for c in pod.status.conditions or ():
        if c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable":
            return c.message or "no node fits"
    return None


def scheduling_changed(old: Pod, new: Pod) -> bool:
    return unschedulable_message(old) != unschedulable_message(new)


def find_stall(ctx: OperatorContext, pcs: PodCliqueSet, replica: int | None,
               cliques: list[PodClique]) -> str | None:
    """Why the update of `replica` waits, in words, or None when nothing blocks it."""
    if replica is None:
        return None
    for pclq in sorted(cliques, key=lambda c: c.name):
        if naming.replica_of(pclq.metadata.labels) != replica:
            continue
        want = expected_hash(pcs, pclq)
        for pod in sorted(ctx.pods_of(pclq.key), key=lambda p: p.name):
            if pod.metadata.deletion_timestamp is not None or pod.spec.node_name or \
                    pod.metadata.labels.get(L.LABEL_POD_TEMPLATE_HASH) != want:
                continue
            why = unschedulable_message(pod)
            if why is not None:
                return f"replica {replica}: replacement pod {pod.name} is unschedulable: {why}"
    return None


def set_stall(ctx: OperatorContext, pcs: PodCliqueSet, status: PodCliqueSetStatus,
              stall: str | None, rolling: bool, notes: list[tuple[str, str, str]]) -> None:
    """Write the condition into `status`; a Warning Event (into `notes`, sent once the
    status is written) when a (new) stall appears."""
    prev = get_condition(status.conditions, UPDATE_STALLED)
    now = ctx.client.clock.now_dt()
    if stall is not None:
        if prev is None or prev.status != "True" or prev.message != stall:
            notes.append(("Warning", REASON_REPLACEMENT_UNSCHEDULABLE, stall))
        set_condition(status.conditions, UPDATE_STALLED, True,
                      REASON_REPLACEMENT_UNSCHEDULABLE, stall, now=now)
    elif prev is not None or rolling:
        reason = REASON_UPDATE_PROGRESSING if rolling else REASON_NO_UPDATE
        msg = "every replacement pod so far was scheduled" if rolling else \
            "no RollingRecreate update is in progress"
        set_condition(status.conditions, UPDATE_STALLED, False, reason, msg, now=now)
