"""MemoryCluster: an in-process API server with Kubernetes semantics.

What it does as kube-apiserver + etcd do:
- one global resourceVersion counter, bumped by every write; `list` returns it, so a
  `watch` from the list's version misses and duplicates nothing;
- optimistic concurrency (Conflict on a stale resourceVersion), AlreadyExists, NotFound,
  uid preconditions; generation bumps on spec changes; status subresource; the scale
  subresource of kinds whose CRD declares one (`scale.py`);
- finalizers, deletionTimestamp and ownerReference garbage collection (see `gc.py`);
- pod scheduling gates, pod spec immutability and the binding subresource (`pods.py`),
  which, with a create of a pod on a node, labels the pod with the node's zone and region
  (kube-apiserver's PodTopologyLabels admission, on by default since 1.35);
- bounded per-kind watch history (Gone when a watch asks for a version older than it).

Deliberate choices, where Kubernetes leaves room or differs:
- `update` without metadata.resourceVersion is unconditional (last write wins), a client
  convenience; custom resources on a real server reject it.
- `watch(resource_version=None)` starts from now (no initial state); "0" replays the current
  state as ADDED events first. Kubernetes gives the state for both.
- Writes that change nothing store nothing: same resourceVersion, no event (as the API
  server does); they are counted in `stats.noops`.
- Status is reset on create for kinds with a status subresource (as for CRDs and pods),
  except Nodes, which register with their status.
- Namespaces need not exist; a namespaced object without one goes to "default".
- The Priority admission plugin is built in (`priority.py`), as in kube-apiserver.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Literal, TypeVar, overload

from phalanx.api.base import ObjectMeta, Resource, copy_data

from . import pods, rules
from .admission import OPERATIONS, AdmissionChain, AdmissionHook, Operation
from .client import (
    ApiError,
    Conflict,
    Invalid,
    NotFound,
    ObjectList,
    PropagationPolicy,
    Selector,
    WatchEvent,
)
from .clock import Clock, RealClock
from .faults import FaultInjector
from .gc import GarbageCollector
from .model_patch import patched
from .objects import clone, clone_part, from_dict, merge_patch, object_key
from .scale import Scale, replicas_patch, scale_of, scale_paths
from .selectors import SelectorError, parse_field_selector, parse_label_selector
from .stats import ClusterStats
from .store import KindStore, WatchStream

T = TypeVar("T", bound=Resource)

_STATUS_KEPT_ON_CREATE = {("v1", "Node")}
_REAL_CLOCK = RealClock()


def _running_loop_clock() -> Clock | None:
    """The running loop's virtual clock, wall time on a loop without one, None off a loop."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return getattr(loop, "clock", None) or _REAL_CLOCK


class MemoryCluster(GarbageCollector):
    """The embedded API server. Implements `phalanx.cluster.client.Client`."""

    def __init__(
        self,
        clock: Clock | None = None,
        *,
        admission: AdmissionChain | None = None,
        history_size: int = 10_000,
        seed: int = 0,
        builtin_admission: bool = True,
    ) -> None:
        super().__init__()
        # Built inside a running loop, the cluster lives on it: its clock is looked up once
        # (each `get_running_loop()` costs a getpid() system call, on every write otherwise).
        self._clock = clock if clock is not None else _running_loop_clock()
        self.admission = admission or AdmissionChain()
        self.faults = FaultInjector(seed)
        self.stats = ClusterStats()
        self.history_size = history_size
        self._stores: dict[tuple[str, str], KindStore] = {}
        self._rv = 0
        self._uid_seq = 0
        # Checks of status-subresource writes, per kind (sync: (new, old) -> raise Invalid).
        self._status_checks: dict[tuple[str, str], list[Any]] = {}
        self._name_seq = 0
        self.last_warnings: list[str] = []
        if builtin_admission:
            # Admission plugins kube-apiserver enables by default and the layers above rely on.
            from .priority import install_priority_admission

            install_priority_admission(self)
            from .storage import install_storage_admission  # PV/PVC/StorageClass rules

            install_storage_admission(self)
            from .dra import install_dra_admission  # resource.k8s.io (DRA) rules

            install_dra_admission(self)
            from .storage_csi import install_csi_admission  # CSINode, CSIDriver, VA rules

            install_csi_admission(self)
            from .runtimeclass import install_runtimeclass_admission  # RuntimeClass plugin

            install_runtimeclass_admission(self)
            from .hpavalidation import install_hpa_validation  # autoscaling/v2 metrics

            install_hpa_validation(self)
            from .queues import install_queue_admission  # KAI Queue: numbers, tree, quotas

            install_queue_admission(self)

    # ------------------------------------------------------------------ basics

    @property
    def clock(self) -> Clock:
        """The clock given, else the one of the loop the cluster was built in, else the
        virtual clock of the running loop, else wall time."""
        if self._clock is not None:
            return self._clock
        return _running_loop_clock() or _REAL_CLOCK

    @property
    def resource_version(self) -> str:
        """The current global resourceVersion."""
        return str(self._rv)

    def register_admission(
        self, kind: type[Resource], mutate: AdmissionHook | None = None,
        validate: AdmissionHook | None = None, *,
        operations: tuple[Operation, ...] = OPERATIONS,
    ) -> None:
        self.admission.register(kind, mutate=mutate, validate=validate, operations=operations)

    def register_status_validation(self, kind: type[Resource], check: Any) -> None:
        """Validate status writes of `kind` (`check(new, old)` raises Invalid), as the API
        server's status strategy does."""
        self._status_checks.setdefault(kind.gvk(), []).append(check)

    def _store(self, cls: type[Resource]) -> KindStore:
        store = self._stores.get((cls.API_VERSION, cls.KIND))
        if store is None:
            if not cls.KIND or not cls.API_VERSION:
                raise TypeError(f"{cls.__name__} is not a top-level resource (no KIND/API_VERSION)")
            store = self._stores[(cls.API_VERSION, cls.KIND)] = KindStore(cls, self.history_size)
        elif store.cls is not cls:
            raise TypeError(f"{cls.API_VERSION}/{cls.KIND} is already stored as "
                            f"{store.cls.__module__}.{store.cls.__qualname__}; one class per kind")
        return store

    @staticmethod
    def _ns(kind: type[Resource], namespace: str | None) -> str | None:
        return (namespace or "default") if kind.NAMESPACED else None

    def _live(self, store: KindStore, key: str) -> Resource:
        obj = store.objects.get(key)
        if obj is None:
            raise NotFound(f'{store.cls.PLURAL or store.kind} "{key}" not found',
                           kind=store.kind, name=key)
        return obj

    def _commit(self, store: KindStore, key: str, obj: Resource, prev: Resource | None,
                type_: Literal["ADDED", "MODIFIED", "DELETED"], verb: str) -> Resource:
        """Store a new version (never mutated afterwards) and tell the watchers."""
        self._rv += 1
        obj.metadata.resource_version = str(self._rv)
        if type_ == "DELETED":
            store.pop(key, obj)
        else:
            store.put(key, obj)
        self.stats.writes[(verb, store.kind)] += 1
        self.stats.watch_events += 1
        store.record(self._rv, WatchEvent(type_, obj), prev, self.faults)
        return obj

    # ------------------------------------------------------------------ reads

    async def get(self, kind: type[T], name: str, namespace: str | None = None) -> T:
        store = self._store(kind)
        key = object_key(self._ns(kind, namespace), name)
        if self.faults.active:
            self.faults.check("get", store.kind, key)
        self.stats.reads[("get", store.kind)] += 1
        return clone(self._live(store, key))  # type: ignore[return-value]

    async def list(
        self,
        kind: type[T],
        namespace: str | None = None,
        *,
        label_selector: Selector = None,
        field_selector: Selector = None,
    ) -> ObjectList[T]:
        found = self._listed(kind, namespace, label_selector, field_selector)
        return ObjectList([clone(obj) for obj in found], str(self._rv))  # type: ignore[arg-type]

    async def list_metadata(self, kind: type[Resource], namespace: str | None = None, *,
                            label_selector: Selector = None) -> ObjectList[ObjectMeta]:
        found = self._listed(kind, namespace, label_selector, None)
        return ObjectList([obj.metadata.copy_deep() for obj in found], str(self._rv))

    def _listed(self, kind: type[Resource], namespace: str | None, label_selector: Selector,
                field_selector: Selector) -> list[Resource]:
        """The stored objects a list returns (shared: the caller copies what it hands out)."""
        store = self._store(kind)
        if self.faults.active:
            self.faults.check("list", store.kind, namespace or "")
        self.stats.reads[("list", store.kind)] += 1
        try:
            labels = parse_label_selector(label_selector)
            fields = parse_field_selector(field_selector)
        except SelectorError as err:
            raise Invalid(str(err), kind=store.kind, field="selector") from None
        return [obj for obj in store.scan(namespace if kind.NAMESPACED else None)
                if labels.matches(obj.metadata.labels) and fields.matches(obj)]

    def watch(
        self,
        kind: type[T],
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: Selector = None,
        field_selector: Selector = None,
    ) -> WatchStream[T]:
        """Injected faults, like the other errors, are raised by the first `__anext__`."""
        store = self._store(kind)
        try:
            if self.faults.active:
                self.faults.check("watch", store.kind, namespace or "")
            labels = parse_label_selector(label_selector)
            fields = parse_field_selector(field_selector)
        except SelectorError as err:
            return WatchStream(store.failed_watcher(
                Invalid(f"watch {store.kind}: {err}", kind=store.kind, field="selector")))
        except ApiError as err:
            return WatchStream(store.failed_watcher(err))
        try:
            since = None if resource_version in (None, "", "0") else int(resource_version)
        except ValueError:
            return WatchStream(store.failed_watcher(Invalid(
                f"watch {store.kind}: resourceVersion {resource_version!r} is not a number",
                kind=store.kind, field="resourceVersion")))
        self.stats.reads[("watch", store.kind)] += 1
        ns = namespace if kind.NAMESPACED else None
        watcher = store.add_watcher(ns, labels, fields, since, self._rv,
                                    initial_state=resource_version == "0")
        return WatchStream(watcher)

    # ------------------------------------------------------------------ create

    @overload
    async def create(self, obj: T, *, returning: Literal[True] = True) -> T: ...

    @overload
    async def create(self, obj: T, *, returning: Literal[False],
                     hand_over: bool = False) -> None: ...

    @overload
    async def create(self, obj: T, *, returning: Literal["metadata"],
                     hand_over: bool = False) -> ObjectMeta: ...

    async def create(self, obj: T, *, returning: bool | Literal["metadata"] = True,
                     hand_over: bool = False) -> T | ObjectMeta | None:
        cls = type(obj)
        store = self._store(cls)
        meta = obj.metadata
        ns = self._ns(cls, meta.namespace)
        if self.faults.active:
            self.faults.check("create", store.kind, object_key(ns, meta.name or
                                                                f"{meta.generate_name or ''}*"))
        if meta.resource_version:
            raise Invalid(f'{cls.KIND} "{meta.name}": metadata.resourceVersion must not be set '
                          "on create", kind=cls.KIND, name=meta.name or "",
                          field="metadata.resourceVersion")
        name = meta.name
        if not name:
            if not meta.generate_name:
                raise Invalid(f"{cls.KIND}: metadata.name or metadata.generateName is required",
                              kind=cls.KIND, field="metadata.name")
            name = self._generate_name(store, ns, meta.generate_name)
        key = object_key(ns, name)
        if key in store.objects:
            raise rules.already_exists(cls, name)
        uid = f"00000000-0000-4000-8000-{self._uid_seq + 1:012x}"
        drop_status = cls.HAS_STATUS and cls.gvk() not in _STATUS_KEPT_ON_CREATE and \
            rules.status_resettable(cls)
        if hand_over and returning is not True:
            # The caller's object, validated when built and never touched again, is stored
            # as it is: no private copy to dump and validate (an Event a recorder writes, a
            # Pod the operator builds).
            new = obj
            if drop_status:  # status is the subresource's business
                new.status = rules.status_default(cls)()  # type: ignore[attr-defined]
            m = new.metadata
            # Only what differs is assigned: each assignment goes through pydantic.
            if m.name != name:
                m.name = name
            if m.namespace != ns:
                m.namespace = ns
            if m.generation != 1:
                m.generation = 1
            m.uid, m.creation_timestamp = uid, self.clock.now_dt()
            if m.deletion_timestamp is not None or m.deletion_grace_period_seconds is not None:
                m.deletion_timestamp = m.deletion_grace_period_seconds = None
        else:
            # Server-set fields go into the dump, so the private copy is built (and the
            # caller's object validated) in one pass.
            data = copy_data(obj)
            md = data["metadata"]
            md["name"], md["namespace"], md["generation"] = name, ns, 1
            md["uid"] = uid
            md["creation_timestamp"] = self.clock.now_dt()
            for server_only in ("deletion_timestamp", "deletion_grace_period_seconds"):
                md.pop(server_only, None)
            if drop_status:
                data.pop("status", None)  # status is the subresource's business
            new = from_dict(cls, data, name)
        self._uid_seq += 1
        if self.admission.handles(cls):
            m = new.metadata
            fixed = (m.name, m.namespace, m.uid, m.creation_timestamp)
            new = await self.admission.mutate(new, None)  # type: ignore[assignment]
            m = new.metadata
            m.name, m.namespace, m.uid, m.creation_timestamp = fixed
            m.generation, m.deletion_timestamp, m.deletion_grace_period_seconds = 1, None, None
            m.resource_version = None
        rules.validate_meta(new)
        if pods.is_pod(cls):
            pods.apply_defaults(new)
            pods.validate_create(new)
            pods.set_gated_condition(new, self.clock.now_dt())
            bound_to = pods.node_name(new)
            if bound_to:
                pods.set_topology_labels(new, self._node_topology_labels(bound_to))
        if self.admission.handles(cls):
            # Warnings of the last admitted write, as kube-apiserver returns them in
            # Warning headers (kubectl prints them); `phalanx validate` reads them.
            self.last_warnings = await self.admission.validate(new, None)
            if key in store.objects:  # created while admission awaited
                raise rules.already_exists(cls, name)
        self._commit(store, key, new, None, "ADDED", "create")
        self._track(store, key, new, None)
        # The stored object is shared with watchers: callers get their own copy, if any.
        if returning == "metadata":
            return new.metadata.copy_deep()
        return clone(new) if returning else None

    def _generate_name(self, store: KindStore, ns: str | None, prefix: str) -> str:
        while True:
            self._name_seq += 1
            name = rules.generated_name(prefix, self._name_seq)
            if object_key(ns, name) not in store.objects:
                return name

    # ------------------------------------------------------------------ update

    async def update(self, obj: T, *, returning: bool = True) -> T | None:
        store, key, old = self._target(obj, "update")
        return await self._apply_update(  # type: ignore[return-value]
            store, key, old, clone(obj), "update", returning)

    async def update_status(self, obj: T, *, returning: bool = True,
                            hand_over: bool = False) -> T | None:
        store, key, old = self._target(obj, "update_status")
        status = getattr(obj, "status", None)
        if status is not None and (returning or not hand_over):
            status = clone_part(obj, status, "status")  # else the caller's, stored as it is
        return self._apply_status(  # type: ignore[return-value]
            store, key, old, status, obj.metadata, "update_status", returning)

    async def patch(
        self,
        kind: type[T],
        name: str,
        patch: Mapping[str, Any],
        namespace: str | None = None,
        *,
        subresource: Literal["status"] | None = None,
        returning: bool = True,
    ) -> T | None:
        store = self._store(kind)
        key = object_key(self._ns(kind, namespace), name)
        if self.faults.active:
            self.faults.check("patch", store.kind, key)
        old = self._live(store, key)
        if not isinstance(patch, Mapping):
            raise Invalid(f"{kind.KIND} {key}: a merge patch must be an object",
                          kind=kind.KIND, name=name)
        wanted_rv = (patch.get("metadata") or {}).get("resourceVersion")
        # Only what the patch names is re-validated, the rest shared with the stored object,
        # unless an admission hook may change the object on updates (it would change the
        # shared parts in place).
        new = None if self.admission.mutates_updates(kind) else patched(old, patch)
        if new is not None:
            if new.metadata is old.metadata:  # the server sets its resourceVersion
                new.metadata = old.metadata.model_copy()
            new.metadata.resource_version = wanted_rv or old.metadata.resource_version
        else:
            current = old.model_dump(by_alias=True, exclude_none=True, mode="json")
            data = merge_patch(current, patch)
            data.setdefault("metadata", {})["resourceVersion"] = (
                wanted_rv or old.metadata.resource_version)
            new = from_dict(kind, data, name)
        if subresource == "status":
            return self._apply_status(  # type: ignore[return-value]
                store, key, old, getattr(new, "status", None), new.metadata, "patch_status", returning)
        if subresource is not None:
            raise NotFound(f"{kind.KIND} has no subresource {subresource!r}", kind=kind.KIND)
        return await self._apply_update(  # type: ignore[return-value]
            store, key, old, new, "patch", returning)

    def _target(self, obj: Resource, verb: str) -> tuple[KindStore, str, Resource]:
        cls = type(obj)
        store = self._store(cls)
        key = object_key(self._ns(cls, obj.metadata.namespace), obj.metadata.name or "")
        if self.faults.active:
            self.faults.check(verb, store.kind, key)
        return store, key, self._live(store, key)

    async def _apply_update(self, store: KindStore, key: str, old: Resource, new: Resource,
                            verb: str, returning: bool = True) -> Resource | None:
        cls, m, om = store.cls, new.metadata, old.metadata
        rules.check_preconditions(old, m.resource_version, m.uid)
        if self.admission.handles(cls):
            new = await self.admission.mutate(new, old)
            m = new.metadata
            if store.objects.get(key) is not old:
                raise Conflict(f'Operation cannot be fulfilled on {store.kind} "{old.name}": '
                               "the object changed during admission; retry",
                               kind=store.kind, name=old.name)
        rules.keep_server_metadata(new, old)
        if cls.HAS_STATUS and "status" in cls.model_fields:
            new.status = old.status  # type: ignore[attr-defined]  # status subresource only
        if m.labels != om.labels or m.annotations != om.annotations:
            rules.validate_meta(new)
        if om.deletion_timestamp is not None:
            rules.check_deleting_update(old, new)
        if pods.is_pod(cls):
            pods.apply_defaults(new)
        spec_fields = rules.spec_field_changes(old, new)
        if pods.is_pod(cls):
            pods.validate_update(old, new, spec_fields)
        if self.admission.handles(cls):
            self.last_warnings = await self.admission.validate(new, old)
        if rules.spec_changed(cls, old, new, spec_fields):
            m.generation = (om.generation or 0) + 1
        if rules.unchanged(cls, old, new, spec_fields):
            self.stats.noops[(verb, store.kind)] += 1
            return clone(old) if returning else None
        self._commit(store, key, new, old, "MODIFIED", verb)
        self._track(store, key, new, old)
        if om.deletion_timestamp is not None and not m.finalizers:
            self._remove(store, key, new, "gc_delete")  # the last finalizer went
        return clone(new) if returning else None

    def _apply_status(self, store: KindStore, key: str, old: Resource, status: Any,
                      meta: Any, verb: str, returning: bool = True) -> Resource | None:
        cls = store.cls
        if not cls.HAS_STATUS or "status" not in cls.model_fields:
            raise NotFound(f"{cls.KIND} has no status subresource; use update", kind=cls.KIND,
                           name=old.name)
        rules.check_preconditions(old, meta.resource_version, meta.uid)
        if status == old.status:  # type: ignore[attr-defined]
            self.stats.noops[(verb, store.kind)] += 1
            return clone(old) if returning else None
        new = old.model_copy(update={"status": status})
        new.metadata = old.metadata.model_copy()
        for check in self._status_checks.get(cls.gvk(), ()):
            check(new, old)
        self._commit(store, key, new, old, "MODIFIED", verb)
        return clone(new) if returning else None

    # ------------------------------------------------------------------ scale subresource

    async def get_scale(self, kind: type[Resource], name: str,
                        namespace: str | None = None) -> Scale:
        scale_paths(kind, name)
        return scale_of(await self.get(kind, name, namespace))

    async def update_scale(self, kind: type[Resource], scale: Scale) -> Scale:
        patch = replicas_patch(kind, scale)
        return scale_of(await self.patch(kind, scale.name, patch, scale.namespace))

    # ------------------------------------------------------------------ delete and bind

    async def delete(
        self,
        kind: type[T],
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: PropagationPolicy = "Background",
        uid: str | None = None,
    ) -> T | None:
        store = self._store(kind)
        key = object_key(self._ns(kind, namespace), name)
        if self.faults.active:
            self.faults.check("delete", store.kind, key)
        if propagation_policy not in ("Background", "Foreground", "Orphan"):
            raise Invalid(f"propagationPolicy {propagation_policy!r} is not one of Background, "
                          "Foreground, Orphan", kind=kind.KIND, name=name,
                          field="propagationPolicy")
        obj = self._live(store, key)
        rules.check_preconditions(obj, None, uid)
        self._delete_object(store, key, obj, propagation_policy, verb="delete")
        left = store.objects.get(key)
        if left is None or left.metadata.uid != obj.metadata.uid:
            return None
        return clone(left)  # type: ignore[return-value]

    async def bind(self, pod_name: str, namespace: str, node_name: str) -> None:
        store = self._stores.get(pods.POD_GVK)
        key = object_key(namespace or "default", pod_name)
        if self.faults.active:
            self.faults.check("bind", "Pod", key)
        if store is None or key not in store.objects:
            raise NotFound(f'pods "{pod_name}" not found', kind="Pod", name=pod_name)
        pod = store.objects[key]
        pods.check_bindable(pod, node_name)
        bound = pods.bound_copy(pod, node_name, self.clock.now_dt(),
                                self._node_topology_labels(node_name))
        self._commit(store, key, bound, pod, "MODIFIED", "bind")

    def _node_topology_labels(self, node_name: str) -> dict[str, str]:
        nodes = self._stores.get(pods.NODE_GVK)
        return pods.node_topology_labels(nodes.objects.get(object_key("", node_name))
                                         if nodes is not None else None)

    # ------------------------------------------------------------------ introspection

    def kinds(self) -> list[type[Resource]]:
        return [s.cls for s in self._stores.values()]

    def count(self, kind: type[Resource], namespace: str | None = None) -> int:
        """Number of stored objects (no copies; for tests and reports)."""
        store = self._stores.get(kind.gvk())
        if store is None:
            return 0
        if namespace is None:
            return len(store.objects)
        return len(store.by_namespace.get(namespace, ()))

    def dump(self, kind: type[Resource]) -> list[dict[str, Any]]:
        """Every stored object of `kind` as kubectl shows it (`to_dict`), by key: read off
        the store, with no private copy of each object first (for a whole-cluster export)."""
        store = self._stores.get(kind.gvk())
        if store is None:
            return []
        return [o.to_dict() for o in sorted(store.objects.values(), key=lambda o: o.key)]
