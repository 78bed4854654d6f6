"""GangCache: every gang the scheduler knows, fed by informers on pods and gang objects.

The cache indexes gangs by id and pods by key, keeps per-gang counts (created, assumed,
bound) current from informer events and from the coscheduling plugin's Reserve / Unreserve /
PostBind calls, and tells listeners what changed:

- `on_change(gang_id)`: the status controller re-evaluates that gang's condition and events;
- `on_activate(pod_keys)`: pods PreEnqueue held that may now pass (the gang became complete,
  or it has a new representative), for the plugin to hand to `Handle.activate`.

It makes no scheduling decision itself (see manager.py). Objects handed in are the informers'
shared, read-only objects; the cache keeps only what it derived from them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from phalanx.scheduler.resources import CPU, GPU, MEMORY, pod_requests

from . import satisfied
from .declared import Declarations
from .defaults import FALLBACK, PEER_DEFAULTS, GangDefaults, defaults_for
from .model import Gang, GangId, MemberRef, Source
from .sources.base import GangSource
from .state import GangState, Member

log = logging.getLogger(__name__)

ChangeListener = Callable[[GangId], None]
_EMPTY: frozenset[str] = frozenset()
ActivateListener = Callable[[list[str]], None]


def _pod_key(pod: Any) -> str:
    meta = pod.metadata
    return f"{meta.namespace}/{meta.name}" if meta.namespace else (meta.name or "")


def _size(pod: Any) -> tuple[float, float, float]:
    """Representative-order key: larger pods first (GPUs, then cpu, then memory)."""
    try:
        req = pod_requests(pod)
    except (AttributeError, ValueError):
        return (0.0, 0.0, 0.0)
    return (-req.get(GPU, 0.0), -req.get(CPU, 0.0), -req.get(MEMORY, 0.0))


def _is_live(pod: Any) -> bool:
    """Counts as a gang member: not being deleted, not finished."""
    if pod.metadata.deletion_timestamp is not None:
        return False
    phase = getattr(getattr(pod, "status", None), "phase", None)
    return phase not in ("Succeeded", "Failed")


class GangCache:
    """Gangs by id; the sources to consult per pod schedulerName."""

    def __init__(self, sources_by_scheduler: Mapping[str, Sequence[GangSource]]) -> None:
        self._sources_by_scheduler = {k: tuple(v) for k, v in sources_by_scheduler.items()}
        # Every distinct source object, for object events (dedup by identity, stable order).
        seen: dict[int, GangSource] = {}
        for srcs in self._sources_by_scheduler.values():
            for s in srcs:
                seen.setdefault(id(s), s)
        self._sources: tuple[GangSource, ...] = tuple(seen.values())
        self._gangs: dict[GangId, GangState] = {}
        # pod key -> (gang id, group) for live members
        self._pods: dict[str, MemberRef] = {}
        # object (source, key) -> gang ids it produced, to notice gangs removed from an object
        self._from_object: dict[tuple[Source, str], tuple[GangId, ...]] = {}
        self._object_gangs: set[GangId] = set()  # gang ids some object currently describes
        # Gangs their pods declare (Koordinator annotations; the oldest pod's declaration).
        self._declarations = Declarations(self._sources_by_scheduler)
        self._change_listeners: list[ChangeListener] = []
        self._activate_listeners: list[ActivateListener] = []
        # Manager hooks: representative hand-over when a member goes away / a gang completes.
        self._member_removed: list[Callable[[GangState, str], None]] = []
        self._became_complete: list[Callable[[GangState], None]] = []
        # Manager hook: a gang's spec changed or the gang was forgotten (its group's shared
        # state may have to go with it).
        self._gang_changed: list[Callable[[GangId], None]] = []
        # Gang id -> ids of the gangs whose spec follows it (gang/family.py).
        self._followers: dict[GangId, set[GangId]] = {}
        # schedulerName -> its profile's defaults (set by the Coscheduling plugin of each
        # profile; the peer's defaults, gang/defaults.py, until then).
        self._defaults: dict[str, GangDefaults] = {}
        # source -> "apiVersion Kind" of its gang objects while the server does not serve
        # them (their CRD not installed yet): GangNotFound says so (gang/runtime.py).
        self.unserved: dict[Source, str] = {}

    # --- listeners ---------------------------------------------------------------------------

    def add_change_listener(self, fn: ChangeListener) -> None:
        self._change_listeners.append(fn)

    def add_activate_listener(self, fn: ActivateListener) -> None:
        self._activate_listeners.append(fn)

    def changed(self, gid: GangId) -> None:
        st = self._gangs.get(gid)
        if st is not None:
            st.touch()
        for fn in self._change_listeners:
            fn(gid)

    def request_activation(self, keys: Iterable[str]) -> None:
        batch = [k for k in keys if k]
        if batch:
            for fn in self._activate_listeners:
                fn(batch)

    # --- queries -----------------------------------------------------------------------------

    @property
    def sources(self) -> tuple[GangSource, ...]:
        return self._sources

    def sources_for(self, scheduler_name: str) -> tuple[GangSource, ...]:
        return self._sources_by_scheduler.get(scheduler_name, ())

    def get(self, gid: GangId) -> GangState | None:
        return self._gangs.get(gid)

    def gangs(self) -> list[GangState]:
        return [self._gangs[g] for g in sorted(self._gangs)]

    def member_ref(self, pod_key: str) -> MemberRef | None:
        return self._pods.get(pod_key)

    def gang_of(self, pod_key: str) -> GangState | None:
        ref = self._pods.get(pod_key)
        return self._gangs.get(ref.gang_id) if ref else None

    def resolve(self, pod: Any) -> MemberRef | None:
        """Which gang a pod belongs to (asks the sources for its schedulerName)."""
        key = _pod_key(pod)
        ref = self._pods.get(key)
        if ref is not None:
            return ref
        return self._member_of(pod)

    def set_defaults(self, scheduler_name: str, defaults: GangDefaults) -> None:
        """A profile's defaults for its gangs (its Coscheduling args)."""
        self._defaults[scheduler_name] = defaults
        for st in self._gangs.values():
            if st.scheduler == scheduler_name:
                self._resolve(st)

    def defaults_of(self, st: GangState) -> GangDefaults:
        name = st.scheduler
        if name is None:
            return FALLBACK
        d = self._defaults.get(name)
        return d if d is not None else defaults_for(name)

    def known_defaults(self, scheduler_name: str | None) -> GangDefaults | None:
        """The profile's defaults, else its peer's; None for a name neither knows."""
        if scheduler_name is None:
            return None
        return self._defaults.get(scheduler_name) or PEER_DEFAULTS.get(scheduler_name)

    def _resolve(self, st: GangState) -> None:
        """The gang's match policy (its spec's, else the profile's) and satisfied scope."""
        d = self.defaults_of(st)
        spec = st.spec
        st.policy = spec.match_policy if spec is not None and spec.match_policy else d.match_policy
        st.scope = d.satisfied_scope

    def problems(self, gid: GangId) -> list[str]:
        """Why the pods naming this gang declare none (sorted by pod)."""
        return self._declarations.problems(gid)

    def followers(self, gid: GangId) -> set[GangId]:
        """Ids of the gangs that follow `gid` (a base PodGang's scaled gangs). Read-only."""
        return self._followers.get(gid, _EMPTY)

    def _set_spec(self, st: GangState, spec: Gang | None) -> None:
        old = st.spec.follows if st.spec is not None else None
        new = spec.follows if spec is not None else None
        if old != new:
            if old is not None:
                ids = self._followers.get(old)
                if ids is not None:
                    ids.discard(st.id)
                    if not ids:
                        del self._followers[old]
            if new is not None:
                self._followers.setdefault(new, set()).add(st.id)
        st.spec = spec
        self._resolve(st)
        for fn in self._gang_changed:
            fn(st.id)

    def group_states(self, st: GangState) -> list[GangState | None]:
        """The states of every gang in `st`'s gang group (None for gangs not seen yet)."""
        if st.spec is None:
            return [st]
        return [self._gangs.get(g) for g in st.spec.gang_group]

    def _state(self, gid: GangId) -> GangState:
        st = self._gangs.get(gid)
        if st is None:
            st = self._gangs[gid] = GangState(gid)
        return st

    def _member_of(self, pod: Any) -> MemberRef | None:
        sched = getattr(pod.spec, "scheduler_name", None) or "default-scheduler"
        for src in self._sources_by_scheduler.get(sched, ()):
            ref = src.member(pod)
            if ref is not None:
                return ref
        return None

    def _gc(self, gid: GangId) -> None:
        """Forget a gang nobody refers to any more."""
        st = self._gangs.get(gid)
        if st is not None and st.spec is None and not st.members and not st.assumed:
            del self._gangs[gid]
            for fn in self._gang_changed:
                fn(gid)

    # --- gang objects ------------------------------------------------------------------------

    def set_object(self, source: GangSource, obj: Any) -> None:
        """A gang object was added or updated."""
        okey = (source.source, _pod_key(obj))
        try:
            gangs = source.gangs(obj)
        except Exception:  # a malformed object must not take the scheduler down
            log.exception("cannot read gangs from %s %s", source.source, okey[1])
            gangs = []
        new_ids = tuple(g.id for g in gangs)
        old_ids = self._from_object.get(okey, ())
        self._from_object[okey] = new_ids
        self._object_gangs.update(new_ids)
        for g in gangs:
            st = self._state(g.id)
            if st.spec != g:
                was_complete = st.complete
                self._set_spec(st, g)
                self._recover_satisfied(st)
                self.changed(g.id)
                if st.complete and not was_complete:
                    self._on_became_complete(st)
        for gid in old_ids:
            if gid not in new_ids:
                self._object_gangs.discard(gid)
                self._drop_spec(gid)

    def delete_object(self, source: GangSource, obj: Any) -> None:
        okey = (source.source, _pod_key(obj))
        for gid in self._from_object.pop(okey, ()):
            self._object_gangs.discard(gid)
            self._drop_spec(gid)

    def _drop_spec(self, gid: GangId) -> None:
        st = self._gangs.get(gid)
        if st is None:
            return
        satisfied.on_object_deleted(st)
        self._set_spec(st, self._declarations.oldest(gid))
        self.changed(gid)
        self._gc(gid)

    # --- pods --------------------------------------------------------------------------------

    def add_pod(self, pod: Any) -> None:
        self.update_pod(None, pod)

    def update_pod(self, old: Any, pod: Any) -> None:
        key = _pod_key(pod)
        prev = self._pods.get(key)
        if not _is_live(pod):
            st = self.gang_of(key) if getattr(pod.status, "phase", None) == "Succeeded" else None
            if st is not None and key in st.members:
                st.succeeded += 1  # a finished gang is not an incomplete one (verdict.py)
            self.delete_pod(pod)
            return
        ref = prev if prev is not None else self._member_of(pod)
        if ref is None:
            return
        st = self._state(ref.gang_id)
        was_complete = st.complete
        if st.scheduler is None:
            st.scheduler = getattr(pod.spec, "scheduler_name", None) or "default-scheduler"
            self._resolve(st)
        changed = self._declare(key, pod, ref)
        gated = bool(getattr(pod.spec, "scheduling_gates", None))
        m = st.members.get(key)
        if m is None:
            ts = pod.metadata.creation_timestamp
            m = Member(key, pod.metadata.uid or key, ref.group, ts.timestamp() if ts else 0.0, gated=gated, size=_size(pod))
            st.add_member(m)
            self._pods[key] = ref
            changed = True
        elif m.gated != gated:
            st.set_gated(m, gated)
            changed = True
        m.pod = pod
        node = getattr(pod.spec, "node_name", None)
        if node and st.bound.get(key) != node:
            st.bind(key, node)
            self._recover_satisfied(st)
            changed = True
        if changed:
            self.changed(ref.gang_id)
            if st.complete and not was_complete:
                self._on_became_complete(st)

    def delete_pod(self, pod: Any) -> None:
        key = _pod_key(pod)
        ref = self._pods.pop(key, None)
        if ref is None:
            return
        self._declarations.forget(key, ref.gang_id)
        st = self._gangs.get(ref.gang_id)
        if st is None:
            return
        st.remove_member(key)
        satisfied.on_member_removed(st, ref.gang_id in self._object_gangs)
        if (
            not st.members
            and st.spec is not None
            and ref.gang_id not in self._object_gangs
            and not self._declarations.has(ref.gang_id)
        ):
            self._set_spec(st, None)  # declared by pods, and the last of them is gone
        self.changed(ref.gang_id)
        for fn in self._member_removed:
            fn(st, key)
        self._gc(ref.gang_id)

    def add_gang_changed_hook(self, fn: Callable[[GangId], None]) -> None:
        self._gang_changed.append(fn)

    def add_member_removed_hook(self, fn: Callable[[GangState, str], None]) -> None:
        self._member_removed.append(fn)

    def add_became_complete_hook(self, fn: Callable[[GangState], None]) -> None:
        self._became_complete.append(fn)

    def _on_became_complete(self, st: GangState) -> None:
        for fn in self._became_complete:
            fn(st)

    def _recover_satisfied(self, st: GangState) -> None:
        for g in satisfied.on_bound(st, self.group_states(st)):
            self.request_activation(m.key for m in g.pending_members())

    def _declare(self, key: str, pod: Any, ref: MemberRef) -> bool:
        """Gangs their pods declare: the oldest declaration is the spec unless an object
        describes the gang. True when the spec, or what is wrong with the pod's
        declaration, changed."""
        touched, problem = self._declarations.note(key, pod, ref)
        if touched and ref.gang_id not in self._object_gangs:
            st = self._state(ref.gang_id)
            spec = self._declarations.oldest(ref.gang_id)
            if st.spec != spec:
                self._set_spec(st, spec)
                return True
        return problem

    # --- scheduler-side bookkeeping (the coscheduling plugin calls these) ----------------------

    def assume(self, pod_key: str, node: str) -> GangState | None:
        st = self.gang_of(pod_key)
        if st is None:
            return None
        st.assume(pod_key, node)
        self.changed(st.id)
        return st

    def forget(self, pod_key: str) -> GangState | None:
        st = self.gang_of(pod_key)
        if st is None:
            return None
        if st.forget(pod_key):
            self.changed(st.id)
        return st

    def mark_bound(self, pod_key: str, node: str) -> GangState | None:
        st = self.gang_of(pod_key)
        if st is None:
            return None
        st.bind(pod_key, node)
        self._recover_satisfied(st)
        self.changed(st.id)
        return st

