"""When a gang counts as "satisfied once", and when it stops (model.SatisfiedScope).

Permit sets `GangState.once_satisfied` on every gang of a group when the group reaches its
minimum. Under the `once-satisfied` match policy its later members then schedule like
ordinary pods (a replacement for a crashed pod does not wait for a new minimum). The scope,
a profile default (gang/defaults.py), says how long that lasts:

- OBJECT (koord-scheduler, as Koordinator's GangGroupInfo.OnceResourceSatisfied): while the
  gang's object exists, or, for a gang its pods declare, while any of its pods exists. Any
  bound member marks the whole group: a gang member binds only once its gang passed Permit.
- PLACEMENT (the others): while some member holds a node. A gang found with minMember bound
  (an earlier scheduler process placed it, before a restart) is marked.
"""

from __future__ import annotations

from collections.abc import Sequence

from .model import SatisfiedScope
from .state import GangState


def on_bound(st: GangState, group: Sequence[GangState | None]) -> list[GangState]:
    """A member of `st` was found or reported bound. Returns the gangs it marked (their
    pending members, held in PreEnqueue until now, may go)."""
    if st.spec is None or st.once_satisfied:
        return []
    if st.scope is SatisfiedScope.OBJECT:
        if not st.bound:
            return []
    # PLACEMENT: minMember bound, for every gang of the group (a group counts only as a
    # whole, as Permit sets it: when one of its gangs is not bound yet, e.g. its bind failed
    # before a restart, the group's pending members are still gang-scheduled). Cheap in the
    # steady state, where Permit has set the flag before the binds arrive.
    elif not bound_satisfied(st) or not all(
        g is not None and (g.once_satisfied or bound_satisfied(g)) for g in group
    ):
        return []
    marked = [g for g in group if g is not None and not g.once_satisfied]
    for g in marked:
        g.once_satisfied = True
    return marked


def on_member_removed(st: GangState, has_object: bool) -> None:
    """A member of `st` is gone (deleted, finished)."""
    if st.scope is SatisfiedScope.PLACEMENT:
        if not st.assumed and not st.bound:
            # Every placed member is gone (e.g. the gang was preempted): a new set of pods
            # must be gang-scheduled again.
            st.once_satisfied = False
    elif not st.members and not has_object:
        # Koordinator forgets a gang its pods declared once the last of them is gone.
        st.once_satisfied = False


def on_object_deleted(st: GangState) -> None:
    """The object describing `st` was deleted."""
    if st.scope is SatisfiedScope.OBJECT:
        st.once_satisfied = False  # it lasted as long as its object


def bound_satisfied(st: GangState) -> bool:
    """minMember (in total and per group) bound, by informer-confirmed binds alone."""
    spec = st.spec
    if spec is None or len(st.bound) < spec.min_member:
        return False
    per_group: dict[str | None, int] = {}
    for key in st.bound:
        m = st.members.get(key)
        if m is not None:
            per_group[m.group] = per_group.get(m.group, 0) + 1
    return sum(per_group.values()) >= spec.min_member and all(
        per_group.get(g.name, 0) >= g.min_member for g in spec.groups
    )
