"""Gangs: one model for every backend's gang objects, the cache the informers feed, and the
scheduling rules the coscheduling plugin applies (see manager.py)."""

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
