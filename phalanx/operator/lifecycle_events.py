"""Normal Events for what the operator created, changed or deleted, with Grove's reasons.

Grove's operator tells `kubectl get events` what it did: on the PodCliqueSet (or scaling
group) each child it created or updated, on each PodClique the pods it created or deleted.
Phalanx uses the same reasons. One difference, on purpose: Grove writes one Event per pod
("Created Pod: <name>"); Phalanx writes one per batch of pods a reconcile created or
deleted ("Created 8 pods: x-0, ..., x-7"), so a 1,000-pod clique costs a handful of Event
writes instead of a thousand (the recorder still folds repeats into one Event).
"""

from __future__ import annotations

from phalanx.api.base import Resource

# Grove's reasons (operator/internal/.../events and constants in ai-dynamo/grove).
POD_CREATE_SUCCESSFUL = "PodCreateSuccessful"
POD_DELETE_SUCCESSFUL = "PodDeleteSuccessful"
PODCLIQUE_CREATE_OR_UPDATE_SUCCESSFUL = "PodCliqueCreateOrUpdateSuccessful"
PODCLIQUE_DELETE_SUCCESSFUL = "PodCliqueDeleteSuccessful"
PODGANG_CREATE_OR_UPDATE_SUCCESSFUL = "PodGangCreateOrUpdateSuccessful"
PODGANG_DELETE_SUCCESSFUL = "PodGangDeleteSuccessful"
PCSG_CREATE_SUCCESSFUL = "PodCliqueScalingGroupCreateSuccessful"
PCSG_DELETE_SUCCESSFUL = "PodCliqueScalingGroupDeleteSuccessful"

_CREATED = {"PodClique": PODCLIQUE_CREATE_OR_UPDATE_SUCCESSFUL,
            "PodGang": PODGANG_CREATE_OR_UPDATE_SUCCESSFUL,
            "PodCliqueScalingGroup": PCSG_CREATE_SUCCESSFUL}
_DELETED = {"PodClique": PODCLIQUE_DELETE_SUCCESSFUL, "PodGang": PODGANG_DELETE_SUCCESSFUL,
            "PodCliqueScalingGroup": PCSG_DELETE_SUCCESSFUL, "Pod": POD_DELETE_SUCCESSFUL}
_LISTED = 5  # names shown in a batch message


def names(items: list[str]) -> str:
    shown = ", ".join(items[:_LISTED])
    return shown if len(items) <= _LISTED else f"{shown} and {len(items) - _LISTED} more"


def child_created(recorder: object, owner: Resource, child: Resource, *,
                  updated: bool = False) -> None:
    verb = "Updated" if updated else "Created"
    recorder.normal(owner, _CREATED[child.KIND],  # type: ignore[attr-defined]
                    f"{verb} {child.KIND} {child.namespace}/{child.name}")


def children_deleted(recorder: object, owner: Resource, kind: str, deleted: list[str]) -> None:
    if deleted:
        recorder.normal(owner, _DELETED[kind],  # type: ignore[attr-defined]
                        f"Deleted {len(deleted)} {kind}(s): {names(deleted)}")


def pods_created(recorder: object, clique: Resource, created: list[str]) -> None:
    if created:
        what = "pod" if len(created) == 1 else "pods"
        recorder.normal(clique, POD_CREATE_SUCCESSFUL,  # type: ignore[attr-defined]
                        f"Created {len(created)} {what}: {names(created)}")


ALL_SCHEDULED_REPLICAS_LOST = "AllScheduledReplicasLost"  # Grove's ReasonAllScheduledReplicasLost


def all_scheduled_lost(recorder: object, obj: Resource, was: int, now: int) -> None:
    """Warning when a PodClique's or scaling group's scheduledReplicas drops from non-zero to
    zero (Grove's emitAllScheduledReplicasLostIfNeeded): a running workload is fully down and
    gang termination is armed."""
    if was > 0 and now == 0:
        what, who = ("pods", "PodClique") if obj.KIND == "PodClique" else ("replicas", "PCSG")
        recorder.warning(obj, ALL_SCHEDULED_REPLICAS_LOST,  # type: ignore[attr-defined]
                         f"All scheduled {what} lost (was {was}). Gang termination will fire "
                         f"after TerminationDelay if the {who} stays below MinAvailable; "
                         "investigate node availability or capacity.")
