"""Units: the state a gang group shares while it is scheduled (Koordinator's GangGroupInfo):
its representative, its Permit deadline, the NonStrict members that failed since it last
made progress, and its whole-gang placement plan.

A unit is keyed by its gang group (the sorted gang ids, "|"-joined; a lone gang's own id), made
on first use and forgotten once none of its gangs maps to it any more (they are gone, or now
name another group), as Koordinator deletes a GangGroupInfo with the group's last gang.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .cache import GangCache
from .model import GangId
from .state import GangState


@dataclass(slots=True)
class UnitState:
    """A gang group's shared queue state: its representative and Permit deadline."""

    representative: str | None = None
    deadline: float | None = None
    # NonStrict: members that failed since the gang last made progress. The role skips
    # them, so two failing members never hand it back and forth without a backoff.
    failed: set[str] = field(default_factory=set)
    # Whole-gang placement of the minimum (pod key -> node), set when the unit starts and
    # its needed members differ in shape; dropped when the attempt ends (see gang/plan.py).
    plan: dict[str, str] | None = None


def unit_key(st: GangState) -> str:
    return "|".join(st.spec.gang_group) if st.spec is not None else st.id


class Units:
    def __init__(self, cache: GangCache) -> None:
        self._cache = cache
        self._units: dict[str, UnitState] = {}
        self._keys_of: dict[GangId, set[str]] = {}  # gang id -> keys of its units
        cache.add_gang_changed_hook(self._forget)

    def keys(self) -> list[str]:
        return sorted(self._units)

    def of(self, st: GangState) -> UnitState:
        key = unit_key(st)
        u = self._units.get(key)
        if u is None:
            u = self._units[key] = UnitState()
            for gid in key.split("|"):
                self._keys_of.setdefault(gid, set()).add(key)
        return u

    def _forget(self, gid: GangId) -> None:
        keys = self._keys_of.get(gid)
        if not keys:
            return
        for key in sorted(keys):
            parts = key.split("|")
            if any((g := self._cache.get(p)) is not None and unit_key(g) == key for p in parts):
                continue
            self._units.pop(key, None)
            for p in parts:
                owned = self._keys_of.get(p)
                if owned is not None:
                    owned.discard(key)
                    if not owned:
                        del self._keys_of[p]
