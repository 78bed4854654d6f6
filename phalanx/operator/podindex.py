"""Which indices a PodClique's new pods take (Grove's index tracker, internal/index/tracker.go).

A pod's index is the number at the end of its hostname `<podclique>-<k>`. Only active pods
(not ended, not terminating) hold their index, so a failed or deleted pod's index is taken
again, and new pods fill the lowest free indices first: holes left by deletions before new
ones. Beyond Grove, the indices of creates still in flight (expectations.py) are held too.
"""

from __future__ import annotations

from collections.abc import Iterable

from phalanx.api.core import Pod

from . import naming


class PodIndexError(ValueError):
    """A pod's hostname gives no index, or two active pods claim one (Grove refuses both)."""


def pod_active(pod: Pod) -> bool:
    """Grove's IsPodActive: not Succeeded or Failed, and not terminating."""
    return pod.metadata.deletion_timestamp is None and pod.status.phase not in (
        "Succeeded", "Failed")


def used_indices(pods: Iterable[Pod]) -> set[int]:
    used: set[int] = set()
    for pod in pods:
        if not pod_active(pod):
            continue
        index = naming.pod_index(pod)
        if index is None:
            raise PodIndexError(f"pod {pod.name}: hostname {pod.spec.hostname!r} ends in no "
                              "pod index")
        if index in used:
            raise PodIndexError(f"pod {pod.name}: duplicate index {index} "
                              f"(hostname {pod.spec.hostname})")
        used.add(index)
    return used


def free_indices(used: set[int], count: int) -> list[int]:
    """The `count` lowest indices not in `used`."""
    out: list[int] = []
    k = 0
    while len(out) < count:
        if k not in used:
            out.append(k)
        k += 1
    return out


def available_indices(pods: Iterable[Pod], count: int, held: Iterable[int] = ()) -> list[int]:
    """The indices `count` new pods take: the lowest that no active pod and no in-flight
    create (`held`) holds. Raises PodIndexError as Grove's GetAvailableIndices errors."""
    return free_indices(used_indices(pods) | set(held), count)
