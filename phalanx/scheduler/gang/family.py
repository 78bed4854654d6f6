"""A PodCliqueSet replica's gangs: its base PodGang and the scaled PodGangs that follow it.

`Gang.follows` links a scaled gang to its base (the `grove.io/base-podgang` label on the
PodGang, or on the KAI / Volcano PodGroup made for it). The family is placed together
(TopologyPacking: the base's domain) and an extra member of one of them (beyond every
minimum) waits while another of them is short of its minimum, so it never takes the room
that minimum needs (Grove's GS7: the scaled gang's minimum before the base gang's extras).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .cache import GangCache
from .state import GangState


def family_of(cache: GangCache, st: GangState) -> list[GangState]:
    """The other gangs of `st`'s family: its base (or itself) and every gang following it."""
    spec = st.spec
    if spec is None:
        return []
    root = spec.follows or st.id
    ids = [root, *sorted(cache.followers(root))]
    return [g for g in (cache.get(i) for i in ids) if g is not None and g is not st]


def in_a_family(cache: GangCache, group: Sequence[GangState | None]) -> bool:
    """Whether any of these gangs follows another or is followed."""
    return any(
        g is not None and ((g.spec is not None and g.spec.follows) or cache.followers(g.id))
        for g in group
    )


def blocking_minimum(
    cache: GangCache, st: GangState, pod_key: str, blocked: Callable[[GangState], Any]
) -> GangState | None:
    """A gang of `st`'s family that tried and failed to place its minimum (and is not held
    for other reasons), when `pod_key` is an extra of `st`; else None."""
    if not st.is_extra(pod_key):
        return None
    for g in family_of(cache, st):
        if (
            g.spec is not None
            and g.spec.is_gang
            and not g.once_satisfied
            and g.last_failure is not None
            and blocked(g) is None
        ):
            return g
    return None
