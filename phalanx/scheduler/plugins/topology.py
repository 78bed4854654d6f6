"""TopologyPacking: keep a gang's pods within one topology domain (PodGang / PodGroup pack
constraints), required (Filter) or preferred (Score).

A pack scope (phalanx.scheduler.gang.model.PackScope) names a node-label key and the gang
members it covers (the whole gang, one group, or a set of groups). For a member of a scope:

- Required, some members of the scope already placed (assumed or bound): only nodes in their
  domain pass (PreFilter narrows the nodes, so the diagnosis says "N node(s) outside the
  gang's rack=r7"). Preemption cannot change that (the code is unresolvable).
- Required, nobody placed yet: the first member picks the domain for all of them, so Filter
  drops every domain whose feasible nodes cannot hold the scope's remaining members (counted
  per shape on the nodes that passed the other filters). Without this the first member could
  pick a domain the rest cannot fit in, fail, and pick it again. Preemption may help here.
- Preferred: Score favours nodes in the domain holding most of the scope's placed members;
  before any is placed, the domain with the most room for the scope.

- Together: a required scope over some groups with nobody placed yet also prefers the
  domains where the gang's other members are (its sibling scopes), so the gang packs as
  tightly as its constraints allow.
- Following: a gang that follows another (a scaled PodGang its base PodGang, `Gang.follows`)
  gets one more scope per constraint of the base's whole-gang pack scope (the PodCliqueSet-
  level constraint), in the domain the base's placed members are in: required filters,
  preferred scores (so it is tried first and anything else is a fallback).

Pods in no gang, or in gangs without pack constraints, are skipped (PreFilter Skip).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from phalanx.scheduler.framework.config import TOPOLOGY_PACKING
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import MAX_NODE_SCORE, Handle, Plugin
from phalanx.scheduler.framework.pluginargs import NoArgs
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.status import Status
from phalanx.scheduler.framework.types import (
    ASSIGNED_POD,
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    FilterResult,
    PodInfo,
    PreFilterResult,
    Rejection,
)
from phalanx.scheduler.gang.fit import Need, capacity
from phalanx.scheduler.gang.model import PackScope
from phalanx.scheduler.gang.runtime import GangRuntime, member_info
from phalanx.scheduler.gang.state import GangState
from phalanx.scheduler.snapshot import Snapshot

STATE_KEY = "TopologyPacking/plan"


@dataclass(slots=True)
class ScopePlan:
    scope: PackScope
    key: str  # node-label key
    required: bool
    # Domain value id the placed members are in (0: nobody placed; -1: placed members
    # already span several domains, so no single domain can satisfy the constraint).
    domain: int
    placed_rows: list[int]
    # Remaining members of the scope to place, by request shape.
    needs: list[Need] = field(default_factory=list)
    label: str = ""  # "rack=r7" for messages


@dataclass(slots=True)
class Plan:
    gang: str
    scopes: list[ScopePlan]


@register_plugin
class TopologyPacking(Plugin):
    NAME = TOPOLOGY_PACKING
    Args = NoArgs  # none: the pack constraints are the gang's own

    def __init__(self, handle: Handle, args: Any = None) -> None:
        super().__init__(handle, args)
        self.runtime = GangRuntime.for_handle(handle)

    async def start(self) -> None:
        """Watch the gang kinds the server serves (shared with the other gang plugins)."""
        await self.runtime.start(self.handle.client)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        # Freed room can make a domain big enough for the gang; a new or relabelled node can
        # add a domain or grow one.
        return [
            ClusterEventWithHint(
                ClusterEvent(ASSIGNED_POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN)
            ),
            ClusterEventWithHint(
                ClusterEvent(
                    NODE,
                    ActionType.ADD
                    | ActionType.UPDATE_NODE_LABEL
                    | ActionType.UPDATE_NODE_ALLOCATABLE,
                )
            ),
        ]

    # --- PreFilter -------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        st = self.runtime.cache.gang_of(pod.key)
        if (
            st is None
            or st.spec is None
            or not st.spec.is_gang
            or not (st.spec.packs or st.spec.follows)
        ):
            return None, Status.skip()
        ref = self.runtime.cache.member_ref(pod.key)
        scopes = st.spec.packs_for(ref.group if ref else None)
        followed = self._followed(st, snap)
        if not scopes and not followed:
            return None, Status.skip()
        plans: list[ScopePlan] = []
        allowed: np.ndarray | None = None
        why = ""
        for scope in scopes:
            for c in scope.constraints:
                plans.append(self._plan(st, scope, c.topology_key, c.required, pod, snap))
        plans.extend(followed)
        plans.extend(self._siblings(st, plans, snap))
        for plan in plans:
            scope = plan.scope
            if not plan.required:
                continue
            if plan.domain == -1:
                return None, Status.unresolvable(
                    f"{st.spec.display}: members of {scope.name} already span several {plan.key} domains"
                )
            if plan.domain > 0:
                col = snap.label_column(plan.key)
                rows = snap.valid_rows()
                rows = rows[col[rows] == plan.domain]
                allowed = (
                    rows if allowed is None else np.intersect1d(allowed, rows, assume_unique=True)
                )
                why = f"node(s) outside {st.spec.display}'s {plan.label}"
        state.write(STATE_KEY, Plan(st.id, plans))
        return PreFilterResult(allowed, why), Status()

    def _siblings(self, st: GangState, plans: list[ScopePlan], snap: Snapshot) -> list[ScopePlan]:
        """A required scope nobody of which is placed yet (one scaling-group replica of a
        gang whose replicas each pack into a rack) prefers the domains where the gang's other
        members already are, so the gang packs as tightly as its constraints allow (KAI places
        a PodGroup's sub-groups together the same way)."""
        open_keys = {
            p.key for p in plans if p.required and p.domain == 0 and p.scope.groups is not None
        }
        if not open_keys:
            return []
        rows = [
            r
            for r in (snap.row(n) for n in (*st.assumed.values(), *st.bound.values()))
            if r is not None
        ]
        if not rows:
            return []
        scope = PackScope(f"{st.spec.display if st.spec else st.id} (together)", None, ())
        return [ScopePlan(scope, key, False, 0, rows, label=key) for key in sorted(open_keys)]

    def _followed(self, st: GangState, snap: Snapshot) -> list[ScopePlan]:
        """The domain of the gang this one follows (a scaled PodGang's base), per constraint
        of the base's whole-gang pack scope, once the base has members placed there."""
        spec = st.spec
        base = self.runtime.cache.get(spec.follows) if spec is not None and spec.follows else None
        if base is None or base.spec is None:
            return []
        out: list[ScopePlan] = []
        placed = [*base.assumed.values(), *base.bound.values()]
        rows = [r for r in (snap.row(n) for n in placed) if r is not None]
        if not rows:
            return []
        for scope in base.spec.packs:
            if scope.groups is not None:
                continue
            for c in scope.constraints:
                col = snap.label_column(c.topology_key)
                domains = np.unique(col[np.asarray(rows)])
                domains = domains[domains > 0]
                if domains.size != 1:
                    continue  # the base is not in one domain of this level: nothing to follow
                domain = int(domains[0])
                value = next(
                    (v for v, i in snap.label_values(c.topology_key).items() if i == domain), "?"
                )
                label = f"{c.topology_key.rpartition('/')[2]}={value} (of {base.spec.display})"
                out.append(
                    ScopePlan(
                        PackScope(f"follows {base.spec.display}", None, (c,)),
                        c.topology_key,
                        c.required,
                        domain,
                        rows,
                        label=label,
                    )
                )
        return out

    def _plan(
        self,
        st: GangState,
        scope: PackScope,
        key: str,
        required: bool,
        pod: PodInfo,
        snap: Snapshot,
    ) -> ScopePlan:
        col = snap.label_column(key)
        placed_rows: list[int] = []
        pending: list[Any] = []
        for k, m in st.members.items():
            if not scope.covers(m.group):
                continue
            node = st.assumed.get(k) or st.bound.get(k)
            if node is not None:
                row = snap.row(node)
                if row is not None:
                    placed_rows.append(row)
            elif not m.gated:
                pending.append(m)
        domains = {int(col[r]) for r in placed_rows}
        domain = 0 if not domains else (domains.pop() if len(domains) == 1 else -1)
        label = key
        if domain > 0:
            value = next((v for v, i in snap.label_values(key).items() if i == domain), "?")
            label = f"{key.rpartition('/')[2]}={value}"
        plan = ScopePlan(scope, key, required, domain, placed_rows, label=label)
        if required and domain == 0:
            plan.needs = self._needs(st, scope, pending, pod, snap)
        return plan

    def _needs(
        self,
        st: GangState, scope: PackScope, pending: list[Any], pod: PodInfo, snap: Snapshot
    ) -> list[Need]:
        """Shapes still to place in the scope: its share of minMember, sized by the members."""
        covered = {m.key for m in pending}
        # The scope's share of the gang's minimum (per group), this pod first.
        chosen = [m for m in st.needed_members(first=pod.key) if m.key in covered]
        if not chosen:
            chosen = [m for m in pending if m.key == pod.key] or pending[:1]
        shapes: dict[tuple[Any, ...], Need] = {}
        for m in chosen:
            info = pod if m.key == pod.key or m.pod is None else member_info(self.handle, m)
            cols, vals = self.handle.fit_vector(info)
            k = (tuple(cols.tolist()), tuple(vals.tolist()))
            if k in shapes:
                shapes[k].count += 1
            else:
                shapes[k] = Need(cols, vals, 1)
        return list(shapes.values())

    # --- Filter ----------------------------------------------------------------------------

    def filter(
        self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray
    ) -> FilterResult:
        plan: Plan | None = state.read(STATE_KEY)
        feasible = np.ones(idx.size, dtype=bool)
        if plan is None:
            return FilterResult(feasible)
        rejections: list[Rejection] = []
        for sp in plan.scopes:
            if not sp.required:
                continue
            col = snap.label_column(sp.key)[idx]
            if sp.domain > 0:
                bad = col != sp.domain
                if bad.any():
                    rejections.append(
                        Rejection(f"node(s) outside the gang's {sp.label}", bad, unresolvable=True)
                    )
                    feasible &= ~bad
                continue
            missing = col == 0
            if missing.any():
                rejections.append(
                    Rejection(
                        f"node(s) without topology label {sp.key}", missing, unresolvable=True
                    )
                )
                feasible &= ~missing
            # Nobody placed yet: keep only domains with room for the scope's remaining members.
            if not sp.needs or not feasible.any() or self._planned(pod):
                continue
            free = snap.free(idx)
            ok_domain = np.ones(int(col.max()) + 1, dtype=bool)
            for need in sp.needs:
                cap = np.where(feasible, capacity(free, need), 0)
                per_domain = np.bincount(col, weights=cap, minlength=ok_domain.size)
                ok_domain &= per_domain >= need.count
            small = feasible & ~ok_domain[col]
            if small.any():
                total = sum(n.count for n in sp.needs)
                rejections.append(
                    Rejection(
                        f"topology domain ({sp.key}) without room for the gang's {total} pods",
                        small,
                    )
                )
                feasible &= ~small
        return FilterResult(feasible, rejections)

    def _planned(self, pod: PodInfo) -> bool:
        """Coscheduling planned the whole gang into one domain (and steers this member to
        its planned node): the domain's room is already accounted for."""
        st = self.runtime.cache.gang_of(pod.key)
        plan = self.runtime.manager.unit(st).plan if st is not None else None
        return bool(plan) and pod.key in plan  # type: ignore[operator]

    # --- Score -----------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray) -> Status:
        plan: Plan | None = state.read(STATE_KEY)
        if plan is None or not any(not sp.required for sp in plan.scopes):
            return Status.skip()
        return Status()

    def score(self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        plan: Plan | None = state.read(STATE_KEY)
        total = np.zeros(idx.size, dtype=np.float64)
        if plan is None:
            return total
        preferred = [sp for sp in plan.scopes if not sp.required]
        for sp in preferred:
            col = snap.label_column(sp.key)
            cidx = col[idx]
            if sp.placed_rows:
                counts = np.bincount(col[np.asarray(sp.placed_rows)], minlength=int(col.max()) + 1)
                s = counts[cidx] / max(1, len(sp.placed_rows))
            else:
                # Nobody placed: favour the domain with the most room for this pod's shape.
                cols, vals = self.handle.fit_vector(pod)
                cap = capacity(snap.free(idx), Need(cols, vals, 1)).astype(np.float64)
                per_domain = np.bincount(
                    cidx, weights=cap, minlength=int(cidx.max()) + 1 if cidx.size else 1
                )
                top = per_domain[1:].max() if per_domain.size > 1 else 0.0
                s = per_domain[cidx] / top if top > 0 else np.zeros(idx.size)
            s[cidx == 0] = 0.0
            total += s
        return total * (MAX_NODE_SCORE / max(1, len(preferred)))
