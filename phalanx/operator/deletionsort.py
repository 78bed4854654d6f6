"""Which pods a PodClique gives up first when it has more than it wants (Grove's
DeletionSorter, podclique/components/pod/deletionsort.go): the ReplicaSet order, with an
outdated `grove.io/pod-template-hash` before an updated one, so a scale-in during an OnDelete
update removes outdated pods first.

Earlier in the order (deleted first), comparing each rule until one differs:
terminating; not on a node; phase Pending, then Unknown, then Running (others as Pending);
not Ready; carrying another template hash than the expected one; no creation time; newer.
Pods alike in all of these (created in the same instant) go highest index first, so the order
is deterministic where Go's unstable sort is not.
"""

from __future__ import annotations

from datetime import datetime

from phalanx.api import labels as L
from phalanx.api.core import Pod

from . import naming

_PHASE_ORDER = {"Pending": 0, "Unknown": 1, "Running": 2}


def _created(pod: Pod) -> datetime | None:
    return pod.metadata.creation_timestamp


def deletion_key(pod: Pod, expected_hash: str | None) -> tuple:
    """Sort key: ascending order is deletion order."""
    created = _created(pod)
    index = naming.pod_index(pod)
    return (
        pod.metadata.deletion_timestamp is None,
        bool(pod.spec.node_name),
        _PHASE_ORDER.get(pod.status.phase or "Pending", 0),
        pod.is_ready,
        pod.metadata.labels.get(L.LABEL_POD_TEMPLATE_HASH) == expected_hash,
        created is not None,
        -created.timestamp() if created is not None else 0.0,
        -(index if index is not None else -1),
    )


def deletion_order(pods: list[Pod], expected_hash: str | None) -> list[Pod]:
    """`pods`, the first to delete first."""
    return sorted(pods, key=lambda p: deletion_key(p, expected_hash))
