"""Gangs declared by their own pods (Koordinator's annotations), and why a pod that names a
gang declares none.

Every pod may carry the declaration; the oldest pod's wins (by creation time, then key), as
Koordinator initialises a gang from the first pod that declares it validly. A source may
explain a pod that names a gang but declares nothing usable (`declaration_problem(pod)`, an
optional method of a GangSource): while the gang has no spec, PreEnqueue's reason and the
pods' Warning Events say so instead of a silent wait.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .model import Gang, GangId, MemberRef
from .sources.base import GangSource


class Declarations:
    def __init__(self, sources_by_scheduler: Mapping[str, Sequence[GangSource]]) -> None:
        self._sources = sources_by_scheduler
        # gang id -> "<creation time>/<pod key>" -> the gang that pod declares
        self._declared: dict[GangId, dict[str, Gang]] = {}
        self._slot: dict[tuple[GangId, str], str] = {}  # (gang id, pod key) -> its key above
        # gang id -> pod key -> why that pod, naming the gang, declares none
        self._problems: dict[GangId, dict[str, str]] = {}

    def oldest(self, gid: GangId) -> Gang | None:
        declared = self._declared.get(gid)
        return declared[min(declared)] if declared else None

    def has(self, gid: GangId) -> bool:
        return gid in self._declared

    def problems(self, gid: GangId) -> list[str]:
        probs = self._problems.get(gid)
        return [probs[k] for k in sorted(probs)] if probs else []

    def note(self, key: str, pod: Any, ref: MemberRef) -> tuple[bool, bool]:
        """Record what the pod declares about its gang. Returns (whether the pod declares it
        or did until now, whether what is wrong with its declaration changed)."""
        sched = getattr(pod.spec, "scheduler_name", None) or "default-scheduler"
        sources = self._sources.get(sched, ())
        problem = self._note_problem(key, pod, ref.gang_id, sources)
        for src in sources:
            g = src.gang_from_pod(pod)
            if g is None or g.id != ref.gang_id:
                continue
            ts = pod.metadata.creation_timestamp
            slot = f"{ts.timestamp() if ts else 0.0:020.6f}/{key}"
            declared = self._declared.setdefault(g.id, {})
            old = self._slot.get((g.id, key))
            if old is not None and old != slot:
                declared.pop(old, None)
            declared[slot] = g
            self._slot[(g.id, key)] = slot
            return True, problem
        return self._drop(key, ref.gang_id), problem

    def forget(self, key: str, gid: GangId) -> None:
        """The pod is gone."""
        self._drop(key, gid)
        self._drop_problem(key, gid)

    def _drop(self, key: str, gid: GangId) -> bool:
        slot = self._slot.pop((gid, key), None)
        if slot is None:
            return False
        declared = self._declared.get(gid)
        if declared is not None:
            declared.pop(slot, None)
            if not declared:
                del self._declared[gid]
        return True

    def _note_problem(self, key: str, pod: Any, gid: GangId, sources: Sequence[GangSource]) -> bool:
        msg: str | None = None
        for src in sources:
            fn = getattr(src, "declaration_problem", None)
            if fn is not None and (msg := fn(pod)):
                break
        probs = self._problems.get(gid)
        if (probs.get(key) if probs else None) == msg:
            return False
        if msg:
            self._problems.setdefault(gid, {})[key] = msg
        else:
            self._drop_problem(key, gid)
        return True

    def _drop_problem(self, key: str, gid: GangId) -> None:
        probs = self._problems.get(gid)
        if probs is not None and probs.pop(key, None) is not None and not probs:
            del self._problems[gid]
