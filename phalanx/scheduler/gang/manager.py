"""GangManager: the gang scheduling decisions, independent of the framework's types.

The coscheduling plugin translates each extension point into one call here and the answer
back into a framework Status. Keeping the rules in one framework-free class makes them easy
to test exhaustively and to read in one place:

- admit (PreEnqueue): a member may enter activeQ only when its gang (and every gang of its
  gang group) exists and has at least minMember members created, and only if it is the
  unit's *representative*: one pod per gang group in the queue at a time. When the
  representative is assumed, the role passes to the next pending member (returned so the
  plugin activates it), so a gang flows through the queue back-to-back without flooding it.
- permit: wait until every gang of the group has minMember assumed (per sub-group too),
  then allow all of them at once. The first member to wait starts the group's schedule
  timeout; later ones wait only for what remains of it.
- failure (BeforePostFilter): the failed member becomes the representative and, in Strict
  mode, every waiting member of the group is rejected (their reservations released) before
  any PostFilter plugin (preemption) runs. The plugin asks preemption to act for the whole
  gang afterwards.
- unreserve: a released member in Strict mode releases the whole group (a timeout or a
  failed bind of one member must not leave the others holding nodes).

Which members count towards minMember follows the gang's match policy (model.MatchPolicy);
the wait, the policy and how long "satisfied once" lasts default per schedulerName
(gang/defaults.py), settable per profile with the Coscheduling plugin's args.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass, field
from typing import Any

from .cache import GangCache
from .defaults import SCHEDULER_PLUGINS_DEFAULT_TIMEOUT
from .family import blocking_minimum, family_of, in_a_family
from .model import GangId, GangMode
from .state import Failure, GangState, Phase
from .units import Units, UnitState, unit_key

# The wait of gangs whose schedulerName has no default of its own (scheduler-plugins'
# Coscheduling: 60 s). Each profile's default is in gang/defaults.py (koord-scheduler: 600 s,
# as Koordinator; default-scheduler: 300 s, as kube-scheduler's GangScheduling).
DEFAULT_SCHEDULE_TIMEOUT = SCHEDULER_PLUGINS_DEFAULT_TIMEOUT


@dataclass(frozen=True, slots=True)
class Admission:
    """PreEnqueue's answer. `reason` is CamelCase; `hold` says the pod is parked, not failed."""

    ok: bool
    reason: str = ""
    message: str = ""

    @classmethod
    def admit(cls) -> Admission:
        return _ADMIT


_ADMIT = Admission(True)


@dataclass(slots=True)
class PermitDecision:
    wait: bool
    timeout: float = 0.0
    # Keys of waiting pods (across the gang group) to allow now, when the group is satisfied.
    allow: list[str] = field(default_factory=list)
    message: str = ""


class GangManager:
    def __init__(self, cache: GangCache, *, default_timeout: float = DEFAULT_SCHEDULE_TIMEOUT) -> None:
        self.cache = cache
        self.default_timeout = default_timeout
        self.units = Units(cache)  # each gang group's shared state (units.py)
        cache.add_member_removed_hook(self._on_member_removed)
        cache.add_became_complete_hook(self._on_became_complete)

    # --- units -------------------------------------------------------------------------------

    @staticmethod
    def unit_key(st: GangState) -> str:
        return unit_key(st)

    def unit(self, st: GangState) -> UnitState:
        return self.units.of(st)

    def representative(self, gid: GangId) -> str | None:
        st = self.cache.get(gid)
        return self.unit(st).representative if st is not None else None

    def group(self, st: GangState) -> list[GangState]:
        """The states of `st`'s gang group that exist (just `st` for a lone gang)."""
        return self._group(st)

    def _group(self, st: GangState) -> list[GangState]:
        if st.spec is None or len(st.spec.gang_group) == 1:
            return [st]
        return [g for g in self.cache.group_states(st) if g is not None]

    def _is_pending(self, pod_key: str) -> bool:
        """A member that could be scheduled now (created, ungated, not placed)."""
        st = self.cache.gang_of(pod_key)
        return st is not None and st.is_pending(pod_key)

    def _pick_representative(self, st: GangState, exclude: Container[str] = ()) -> str | None:
        """The first pending member of the unit's gangs (in gang-group order) becomes it."""
        u = self.unit(st)
        for g in self._group(st):
            key = g.first_pending(exclude)
            if key is not None:
                u.representative = key
                return key
        u.representative = None
        return None

    @staticmethod
    def free(st: GangState) -> bool:
        """Members schedule like ordinary pods: the gang was satisfied once (under the
        `once-satisfied` match policy), or its group has no gang policy."""
        return st.free

    # --- PreEnqueue --------------------------------------------------------------------------

    def blocked(self, st: GangState) -> Admission | None:
        """Why the gang cannot be scheduled at all yet (object missing, members missing)."""
        if st.spec is None:
            source, _, name = st.id.partition(":")
            message = f"gang {name} not found: waiting for its scheduling object"
            unserved = self.cache.unserved.get(source)
            if unserved:
                message += (f"; {unserved} is not served by the API server (is its CRD "
                            "installed?): it is read once it is")
            problems = self.cache.problems(st.id)
            if problems:
                more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
                message += f"; no pod declares it: {'; '.join(problems[:3])}{more}"
            return Admission(False, Phase.NOT_FOUND, message)
        missing = st.missing_members()
        if missing:
            need = st.spec.min_member - st.created
            tail = f", waiting for {need} more" if need > 0 else ""
            return Admission(False, Phase.INCOMPLETE, f"{'; '.join(missing)}{tail}")
        if st.spec.in_group:
            for gid in st.spec.gang_group:
                if gid == st.id:
                    continue
                other = self.cache.get(gid)
                if other is None or other.spec is None:
                    return Admission(
                        False, Phase.GROUP_INCOMPLETE, f"gang group of {st.spec.display}: {gid.partition(':')[2]} not found"
                    )
                miss = other.missing_members()
                if miss:
                    return Admission(
                        False, Phase.GROUP_INCOMPLETE, f"gang group of {st.spec.display}: {other.spec.display}: {'; '.join(miss)}"
                    )
        return None

    def admit(self, pod_key: str, pod: Any = None) -> Admission:
        """PreEnqueue. Pods outside any gang pass; see the module docstring for members."""
        st = self.cache.gang_of(pod_key)
        if st is None:
            if pod is None:
                return Admission.admit()
            ref = self.cache.resolve(pod)
            if ref is None:
                return Admission.admit()
            # The informer has not delivered the pod yet (or it is not live): count it first.
            self.cache.add_pod(pod)
            st = self.cache.gang_of(pod_key)
            if st is None:
                return Admission.admit()
        if self.free(st):
            return Admission.admit()
        blocked = self.blocked(st)
        if blocked is not None:
            return blocked
        if not st.counts_towards_minimum(pod_key):
            # An extra: placing it now could take the room another group's minimum needs.
            # Permit wakes it once the gang is satisfied.
            ref = self.cache.member_ref(pod_key)
            group = f"group {ref.group}" if ref is not None and ref.group else "the gang"
            return Admission(False, "WaitingForGangMinimum",
                             f"{group} has its minimum placed or queued; extra members wait until every group of {st.spec.display if st.spec else st.id} reaches its minimum")
        u = self.unit(st)
        rep = u.representative
        if rep == pod_key:
            return Admission.admit()
        if rep is None or not self._is_pending(rep):
            u.representative = pod_key
            return Admission.admit()
        return Admission(
            False, "WaitingForRepresentative", f"gang member queued behind representative {rep}"
        )

    def family(self, st: GangState) -> list[GangState]:
        return family_of(self.cache, st)

    def blocking_minimum(self, st: GangState, pod_key: str) -> GangState | None:
        return blocking_minimum(self.cache, st, pod_key, self.blocked)

    def check(self, pod_key: str) -> Admission:
        """PreFilter: the gang may have changed since PreEnqueue (object deleted, member gone).
        An extra of a satisfied gang waits while a gang of its family (a replica's base and
        scaled PodGangs) is short of its minimum."""
        st = self.cache.gang_of(pod_key)
        if st is not None and self.free(st) and st.spec is not None and st.spec.is_gang:
            g = self.blocking_minimum(st, pod_key)
            if g is not None:
                return Admission(
                    False,
                    "WaitingForGangMinimum",
                    f"extra member: waits until {g.spec.display if g.spec else g.id} reaches its minimum",
                )
        if st is None or self.free(st):
            return Admission.admit()
        blocked = self.blocked(st)
        if blocked is None and not st.counts_towards_minimum(pod_key):
            return Admission(
                False,
                "WaitingForGangMinimum",
                "extra member: waits until every group reaches its minimum",
            )
        return blocked if blocked is not None else Admission.admit()

    # --- Reserve / Permit --------------------------------------------------------------------

    def reserved(self, pod_key: str, node: str) -> list[str]:
        """The member is assumed on `node`. Returns pods to activate (the next representative)."""
        st = self.cache.assume(pod_key, node)
        if st is None or self.free(st):
            return []
        u = self.unit(st)
        u.failed.clear()  # progress: members that failed before may be tried again
        if (
            u.representative == pod_key
            or u.representative is None
            or not self._is_pending(u.representative)
        ):
            nxt = self._pick_representative(st)
            return [nxt] if nxt else []
        return []

    def permit(self, pod_key: str, now: float) -> PermitDecision:
        st = self.cache.gang_of(pod_key)
        if st is None or self.free(st):
            return PermitDecision(False)
        if st.spec is None:
            # Its object went away after PreFilter: wait for it as for a missing gang of the
            # group (Koordinator: an uninitialised gang never passes Permit).
            st.waiting.add(pod_key)
            u = self.unit(st)
            if u.deadline is None:
                u.deadline = now + self.default_timeout_of(st)
            return PermitDecision(True, max(u.deadline - now, 1e-3), message="gang object missing")
        st.waiting.add(pod_key)
        group = self.cache.group_states(st)
        short: list[str] = []
        for g in group:
            if g is None or g.spec is None:
                short.append("a gang of the group is missing")
            elif not g.min_satisfied():
                short.append(f"{g.spec.display}: {g.counted}/{g.spec.min_member} placed")
        u = self.unit(st)
        if short:
            if u.deadline is None:
                u.deadline = now + self._timeout_of(group)
            return PermitDecision(True, max(u.deadline - now, 1e-3), message="; ".join(short))
        allow: list[str] = []
        for g in group:
            assert g is not None
            allow.extend(sorted(g.waiting))
            g.waiting.clear()
            g.once_satisfied = True
            g.last_failure = None
            self.cache.changed(g.id)
        u.deadline = None
        u.representative = None
        u.plan = None
        # Members still pending (beyond minMember) now schedule freely: wake them, and the
        # extras of the family that waited for this minimum.
        related = (
            [f for g in group if g is not None for f in self.family(g)]
            if in_a_family(self.cache, group)
            else []
        )
        wake = [
            k
            for g in [*group, *related]
            if g is not None
            for k in (m.key for m in g.pending_members())
        ]
        if wake:
            self.cache.request_activation(wake)
        return PermitDecision(False, allow=[k for k in allow if k != pod_key])

    def default_timeout_of(self, st: GangState) -> float:
        """The wait of a gang whose object sets none: its profile's (or its peer's) default,
        else this manager's."""
        d = self.cache.known_defaults(st.scheduler)
        return d.timeout if d is not None else self.default_timeout

    def _timeout_of(self, group: list[GangState | None]) -> float:
        """The shortest wait of the group's gangs (each its own, else its default)."""
        timeouts = [
            g.spec.schedule_timeout or self.default_timeout_of(g)
            for g in group
            if g is not None and g.spec is not None
        ]
        return min(timeouts) if timeouts else self.default_timeout

    def is_strict(self, st: GangState) -> bool:
        return st.spec is None or st.spec.mode is GangMode.STRICT

    # --- failure paths -----------------------------------------------------------------------

    def failed(
        self,
        pod_key: str,
        reason: str,
        message: str,
        now: float,
        diagnosis: dict[str, Any] | None = None,
    ) -> list[str]:
        """BeforePostFilter: the member failed its cycle.

        Strict: it becomes the representative (the one pod of the gang that retries) and
        every waiting member of the gang group is returned for rejection.
        NonStrict: nobody else is affected; the role passes to the next pending member, which
        is activated, so the gang keeps accumulating while the failed pod waits for an event
        (it leads again once it is the last one pending)."""
        st = self.cache.gang_of(pod_key)
        if st is None or self.free(st):
            return []
        u = self.unit(st)
        st.last_failure = Failure(reason, message, pod_key, now, diagnosis, frozenset((pod_key,)))
        self.cache.changed(st.id)
        if not self.is_strict(st):
            u.failed.add(pod_key)
            nxt = self._pick_representative(st, exclude=u.failed)
            if nxt is None:
                u.representative = pod_key  # everyone pending failed: it waits for an event
            else:
                self.cache.request_activation([nxt])
            return []
        u.representative = pod_key
        reject = self._release_group(st)
        st.last_failure.attempted = frozenset((pod_key, *reject))
        return reject

    def unreserved(self, pod_key: str, now: float) -> tuple[list[str], bool]:
        """Unreserve of an assumed member. Returns (waiting pods to reject, whether it was the
        gang's schedule timeout). Strict gangs, and any gang at its timeout, release the group."""
        st = self.cache.gang_of(pod_key)
        if st is None or self.free(st):
            self.cache.forget(pod_key)
            return [], False
        u = self.unit(st)
        # Tolerance: the Permit timer runs on the loop clock, `now` on the wall clock.
        timed_out = u.deadline is not None and now >= u.deadline - 0.05
        # Counted before this member is forgotten: what the gang had reached at the timeout.
        short = [
            f"{g.spec.display}: {g.counted}/{g.spec.min_member} placed"
            for g in self._group(st)
            if timed_out and g.spec is not None and not g.min_satisfied()
        ]
        self.cache.forget(pod_key)
        if timed_out:
            st.timeouts += 1
            st.last_failure = Failure(
                Phase.TIMED_OUT,
                f"not all members could be placed within the schedule timeout ({'; '.join(short) or 'gang group incomplete'})",
                pod_key,
                now,
            )
            self.cache.changed(st.id)
        if not self.is_strict(st) and not timed_out:
            if not st.waiting:
                u.deadline = None
            return [], False
        # A timeout releases the group in both modes: its waiting members share the deadline,
        # and partial holdings kept past it are how gangs deadlock each other.
        # The released member must be retried: if nobody else is queued for the unit, it is.
        if u.representative is None or not self._is_pending(u.representative):
            u.representative = pod_key
        reject = self._release_group(st)
        if timed_out and st.last_failure is not None:
            st.last_failure.attempted = frozenset((pod_key, *reject))
        return reject, timed_out

    def _release_group(self, st: GangState) -> list[str]:
        """Every waiting member of the gang group, for the plugin to reject. The waiting sets
        are cleared now, so the Unreserve calls those rejections cause find nothing more."""
        reject: list[str] = []
        for g in self._group(st):
            if g.waiting or g.assumed:
                g.resets += 1
            reject.extend(sorted(g.waiting))
            g.waiting.clear()
        u = self.unit(st)
        u.deadline = None
        u.failed.clear()
        u.plan = None
        return reject

    def bound(self, pod_key: str, node: str) -> None:
        self.cache.mark_bound(pod_key, node)

    # --- cache hooks -------------------------------------------------------------------------

    def _on_member_removed(self, st: GangState, pod_key: str) -> None:
        if st.spec is None:
            return
        u = self.unit(st)
        if u.representative == pod_key:
            nxt = self._pick_representative(st)
            if nxt and self.blocked(st) is None:
                self.cache.request_activation([nxt])

    def _on_became_complete(self, st: GangState) -> None:
        """The gang (and its group) can now be scheduled: wake its representative."""
        if st.once_satisfied or self.blocked(st) is not None:
            return
        u = self.unit(st)
        if u.representative is None or not self._is_pending(u.representative):
            self._pick_representative(st)
        if u.representative:
            self.cache.request_activation([u.representative])
        # Gangs of the same group that waited on this one.
        if st.spec is not None:
            for gid in st.spec.gang_group:
                other = self.cache.get(gid)
                if other is not None and other is not st and other.spec is not None:
                    ou = self.unit(other)
                    if ou is not u and ou.representative:
                        self.cache.request_activation([ou.representative])
