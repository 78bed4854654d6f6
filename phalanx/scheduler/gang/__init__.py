"""Gangs: one model for every backend's gang objects, the cache the informers feed, and the
scheduling rules the gang plugins apply.

- model.py    Gang (id "<source>:<ns>/<name>", minMember, sub-groups, Strict/NonStrict,
              gang group, schedule timeout, pack scopes, match policy), MemberRef
- defaults.py per-schedulerName defaults: Permit wait, match policy, satisfied scope
- sources/    PodGang, Workload (+ standalone PodGroups), KAI, Volcano and scheduler-plugins
              PodGroup (+ Koordinator annotations) -> Gang; `default_sources()` per schedulerName
- state.py    GangState: incremental counts, representative order
- cache.py    GangCache: gangs and members from informer events
- declared.py gangs their pods declare (Koordinator annotations), and why a pod declares none
- satisfied.py when a gang counts as satisfied once, and when it stops
- manager.py  GangManager: PreEnqueue holding, representatives, Permit, failure, timeout
- units.py    each gang group's shared state (representative, Permit deadline)
- verdict.py  what the status controller reports for a gang
- runtime.py  GangRuntime: one cache+manager per Scheduler, shared by Coscheduling,
              TopologyPacking and DefaultPreemption; `find`/`explain` for `phalanx explain`
- fit.py      vectorised "does this set of pods fit" for the pre-check and preemption

The plugins live in phalanx/scheduler/plugins/{coscheduling,topology,preemption}.py and the
status controller (GangScheduled condition, per-pod Events) in phalanx/scheduler/gang_status.py.
"""

from __future__ import annotations

from .cache import GangCache
from .manager import Admission, GangManager, PermitDecision
from .defaults import GangDefaults
from .model import (
    Gang,
    GangId,
    GangMode,
    MatchPolicy,
    MemberGroup,
    MemberRef,
    ObjectRef,
    PackConstraint,
    SatisfiedScope,
    Source,
    gang_id,
)
from .state import Failure, GangState, Member, Phase

__all__ = [
    "Admission",
    "Failure",
    "Gang",
    "GangCache",
    "GangDefaults",
    "GangId",
    "GangManager",
    "GangMode",
    "GangState",
    "MatchPolicy",
    "Member",
    "MemberGroup",
    "MemberRef",
    "ObjectRef",
    "PackConstraint",
    "PermitDecision",
    "Phase",
    "SatisfiedScope",
    "Source",
    "gang_id",
]
