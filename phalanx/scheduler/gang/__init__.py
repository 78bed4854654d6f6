"""Gangs: one model for every backend's gang objects, the cache the informers feed, and the
scheduling rules the gang plugins apply.

- model.py    Gang (id "<source>:<ns>/<name>", minMember, sub-groups, Strict/NonStrict,
              gang group, schedule timeout, pack scopes), MemberRef
- sources/    PodGang, Workload (+ standalone PodGroups), KAI, Volcano and scheduler-plugins
              PodGroup (+ Koordinator annotations) -> Gang; `default_sources()` per schedulerName
- state.py    GangState: incremental counts, representative order
- cache.py    GangCache: gangs and members from informer events
- manager.py  GangManager: PreEnqueue holding, representatives, Permit, failure, timeout
- runtime.py  GangRuntime: one cache+manager per Scheduler, shared by Coscheduling,
              TopologyPacking and DefaultPreemption; `find`/`explain` for `phalanx explain`
- fit.py      vectorised "does this set of pods fit" for the pre-check and preemption

The plugins live in phalanx/scheduler/plugins/{coscheduling,topology,preemption}.py and the
status controller (GangScheduled condition, per-pod Events) in phalanx/scheduler/gang_status.py.
"""

from __future__ import annotations

from .cache import GangCache
from .manager import Admission, GangManager, PermitDecision
from .model import Gang, GangId, GangMode, MemberGroup, MemberRef, ObjectRef, PackConstraint, Source, gang_id
from .state import Failure, GangState, Member, Phase

__all__ = [
    "Admission",
    "Failure",
    "Gang",
    "GangCache",
    "GangId",
    "GangManager",
    "GangMode",
    "GangState",
    "Member",
    "MemberGroup",
    "MemberRef",
    "ObjectRef",
    "PackConstraint",
    "PermitDecision",
    "Phase",
    "Source",
    "gang_id",
]
