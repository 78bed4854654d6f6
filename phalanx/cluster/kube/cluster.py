"""`KubeCluster`: the `cluster.Client` protocol on a real Kubernetes API server.

Any `phalanx.api` Resource class works without per-kind code: its API_VERSION, PLURAL and
NAMESPACED class variables give the REST path (generic resources), `model_validate` /
`to_dict` convert. Writes that modify existing objects are JSON merge patches carrying the
resourceVersion as a precondition, so optimistic concurrency is exactly the API server's,
and fields our models do not describe are never overwritten (see convert.py).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, TypeVar, overload

from phalanx.api.base import ObjectMeta, Resource
from phalanx.api.core import Event
from phalanx.cluster.client import (
    Conflict,
    NotFound,
    ObjectList,
    PropagationPolicy,
    Selector,
)
from phalanx.cluster.clock import Clock, RealClock
from phalanx.cluster.scale import Scale, scale_paths

from .config import ConnectionConfig, load_connection
from .convert import (
    BaseCache,
    decode,
    decode_lenient,
    decode_list,
    decode_metadata_list,
    dumped,
    merge_patch,
    normalized,
    prune,
)
from .discovery import Discovery
from .events import EventWriter
from .paths import (
    APPLY_PATCH,
    DEFAULT_NAMESPACE,
    MERGE_PATCH,
    collection_path,
    object_path,
    selector_queries,
)
from .transport import Transport
from .watch import KubeWatchStream, watch_events

T = TypeVar("T", bound=Resource)

LIST_PAGE_SIZE = 500
# The metadata of each object (kube-apiserver's PartialObjectMetadataList), else whole objects.
METADATA_LIST_ACCEPT = ("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
                        "application/json")
WATCH_OPEN_WAIT = 10.0  # seconds a write waits for watches opened before it


class KubeCluster:
    """A `cluster.Client` for a real API server. Create with `await KubeCluster.connect()`."""

    def __init__(
        self,
        transport: Transport,
        *,
        field_manager: str = "phalanx",
        clock: Clock | None = None,
        default_namespace: str = DEFAULT_NAMESPACE,
    ) -> None:
        self.transport = transport
        self.field_manager = field_manager
        self.default_namespace = default_namespace
        self._clock = clock or RealClock()
        self._bases = BaseCache()
        self._opening: set[asyncio.Future[None]] = set()
        self._events = EventWriter(self)
        self._discovery = Discovery(transport)
        # Kinds decoded without keeping their server form as merge-patch bases: lists are
        # validated straight from the raw JSON (convert.decode_list), watch events and reads
        # without the pruned copy, at about half the CPU. For kinds the client reads in bulk
        # and never `update`s (the scheduler's nodes and pods: it patches them); an update
        # of one would read it once first.
        self.lists_without_bases: set[type[Resource]] = set()

    @classmethod
    async def connect(
        cls,
        kubeconfig: str | os.PathLike[str] | None = None,
        *,
        context: str | None = None,
        field_manager: str = "phalanx",
        qps: float = 50.0,
        burst: int = 100,
    ) -> KubeCluster:
        """Connect with a kubeconfig, or the in-cluster service account when none is given."""
        conn = await load_connection(kubeconfig, context)
        return cls.from_connection(conn, field_manager=field_manager, qps=qps, burst=burst)

    @classmethod
    def from_connection(
        cls, conn: ConnectionConfig, *, field_manager: str = "phalanx", qps: float = 50.0,
        burst: int = 100,
    ) -> KubeCluster:
        conn.start_refresh()
        transport = Transport(conn, qps=qps, burst=burst, user_agent=f"phalanx/{field_manager}")
        return cls(transport, field_manager=field_manager, default_namespace=conn.namespace)

    async def close(self) -> None:
        await self.transport.close()
        await self.transport.conn.close()

    async def __aenter__(self) -> KubeCluster:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def server(self) -> str:
        return self.transport.server

    def __repr__(self) -> str:
        return f"KubeCluster({self.transport.conn.source}, server={self.server})"

    # --- conversion -------------------------------------------------------------------

    def decode(self, kind: type[T], data: dict[str, Any]) -> T:
        """A model from server JSON; remembers the server's form for later merge patches.

        `prune` shares no container with `data`, so the model (which may hold opaque dicts
        of the pruned form by reference) and the cached base are independent without a deep
        copy of either: a caller mutating the model cannot change the base its next merge
        patch is diffed against. The base is pruned again only when an update needs it.
        Kinds in `lists_without_bases` keep no base (watch events, gets): validated as sent."""
        if kind in self.lists_without_bases:
            return decode_lenient(kind, data)
        obj = kind.model_validate(prune(kind, data))
        self.remember(kind, data)
        return obj

    def remember(self, kind: type[Resource], data: dict[str, Any]) -> None:
        """What `decode` keeps of a write's answer, for a caller that wants no object back:
        the server's form as the base of the next merge patch."""
        if kind in self.lists_without_bases:
            return
        meta = data.get("metadata")
        if isinstance(meta, dict):
            meta.pop("managedFields", None)  # never part of a model; often half the object
        self._bases.put(data)

    def forget_base(self, uid: str | None) -> None:
        """Drop the remembered server form of a deleted object."""
        self._bases.discard(uid)

    def _ns(self, kind: type[Resource], namespace: str | None) -> str | None:
        return (namespace or self.default_namespace) if kind.NAMESPACED else None

    def _write_query(self) -> list[tuple[str, str]]:
        # Strict: an unknown or duplicate field is an error naming it (as kubectl does),
        # not a warning header while the server silently drops the field.
        return [("fieldManager", self.field_manager), ("fieldValidation", "Strict")]

    # --- reads ------------------------------------------------------------------------

    async def get(self, kind: type[T], name: str, namespace: str | None = None) -> T:
        data = await self.transport.request(
            "GET", object_path(kind, name, self._ns(kind, namespace)), kind=kind.KIND, name=name
        )
        return self.decode(kind, data)

    async def list(
        self,
        kind: type[T],
        namespace: str | None = None,
        *,
        label_selector: Selector = None,
        field_selector: Selector = None,
    ) -> ObjectList[T]:
        """All pages of a consistent list (one resourceVersion for the whole snapshot)."""
        async def page(query: list[tuple[str, str]]) -> tuple[list[T], dict[str, Any]]:
            if kind in self.lists_without_bases:
                raw = await self.transport.request_bytes("GET", path, query=query,
                                                         kind=kind.KIND)
                return decode_list(kind, raw)
            data = await self.transport.request("GET", path, query=query, kind=kind.KIND)
            return ([self.decode(kind, item) for item in data.get("items") or ()],
                    data.get("metadata") or {})

        path = collection_path(kind, namespace)
        return await _all_pages(selector_queries(kind, label_selector, field_selector), page)

    async def list_metadata(self, kind: type[Resource], namespace: str | None = None, *,
                            label_selector: Selector = None) -> ObjectList[ObjectMeta]:
        """All pages, as `list`, of the objects' metadata alone (PartialObjectMetadataList;
        a server that cannot answer so sends whole objects, whose metadata is read)."""
        async def page(query: list[tuple[str, str]]) -> tuple[list[ObjectMeta], dict[str, Any]]:
            return decode_metadata_list(await self.transport.request_bytes(
                "GET", path, query=query, kind=kind.KIND, accept=METADATA_LIST_ACCEPT))

        path = collection_path(kind, namespace)
        return await _all_pages(selector_queries(kind, label_selector, None), page)

    async def current_resource_version(self, kind: type[Resource], namespace: str | None) -> str:
        """The collection's current resourceVersion (a one-item list)."""
        data = await self.transport.request(
            "GET", collection_path(kind, namespace), query=[("limit", "1")], kind=kind.KIND
        )
        return str((data.get("metadata") or {}).get("resourceVersion") or "")

    def watch(
        self,
        kind: type[T],
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: Selector = None,
        field_selector: Selector = None,
    ) -> KubeWatchStream[T]:
        """Opened in the background; this client's later writes wait until the server has
        accepted it (see KubeWatchStream)."""
        established: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        source = watch_events(self, kind, namespace, resource_version, label_selector,
                              field_selector, established=established)
        self._opening.add(established)
        established.add_done_callback(self._opening.discard)
        return KubeWatchStream(source, established)

    async def _after_opening_watches(self) -> None:
        """Writes wait for watches opened before them (bounded, so a stuck open cannot
        block writes for long)."""
        if self._opening:
            await asyncio.wait(list(self._opening), timeout=WATCH_OPEN_WAIT)

    # --- writes -----------------------------------------------------------------------

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
        """Core/v1 Events are created through events.k8s.io/v1 (see events.py).
        `returning=False` skips decoding the server's answer; `"metadata"` decodes only
        its metadata. `hand_over` changes nothing here: the object is serialised anyway."""
        await self._after_opening_watches()
        kind = type(obj)
        if kind is Event:
            event = await self._events.create(obj, returning=bool(returning))  # type: ignore[arg-type]
            return event.metadata if returning == "metadata" and event is not None else event  # type: ignore[return-value]
        ns = self._ns(kind, obj.metadata.namespace)
        data = await self.transport.request(
            "POST",
            collection_path(kind, ns),
            query=self._write_query(),
            body=obj.to_dict(warnings=False),  # the server names a bad field
            kind=kind.KIND,
            name=obj.name,
        )
        if returning == "metadata":
            return decode(ObjectMeta, data.get("metadata") or {})
        return self.decode(kind, data) if returning else None

    async def _base_for(self, obj: Resource, status_only: bool) -> dict[str, Any]:
        """The object as last decoded at obj's resourceVersion (read once on a miss), in
        `normalized` form (its status alone with `status_only`)."""
        kind = type(obj)
        meta = obj.metadata
        cached = self._bases.get(meta.uid, meta.resource_version)
        if cached is not None:
            return normalized(kind, cached, status_only=status_only)
        live = await self.transport.request(
            "GET", object_path(kind, obj.name, self._ns(kind, meta.namespace)),
            kind=kind.KIND, name=obj.name,
        )
        live_meta = live.get("metadata") or {}
        if meta.resource_version and live_meta.get("resourceVersion") != meta.resource_version:
            raise Conflict(
                f'Operation cannot be fulfilled on {kind.PLURAL} "{obj.name}": the object has '
                "been modified; please apply your changes to the latest version and try again",
                kind=kind.KIND, name=obj.name,
            )
        if meta.uid and live_meta.get("uid") != meta.uid:
            raise Conflict(
                f"{kind.KIND} {obj.key} was deleted and re-created (uid changed)",
                kind=kind.KIND, name=obj.name,
            )
        return normalized(kind, live, status_only=status_only)

    async def _patch_from(self, obj: T, part: Literal["main", "status"],
                          returning: bool = True) -> T | None:
        await self._after_opening_watches()
        kind = type(obj)
        # Status goes where the server keeps it: its own subresource, or the object itself
        # for a CRD without one (discovery.py).
        status_sub = part == "status" and await self._discovery.status_subresource(kind)
        status_only = part == "status"
        old = await self._base_for(obj, status_only)
        new = dumped(obj, status_only=status_only)
        # The resourceVersion is a precondition (added below), never part of the diff: a
        # `resourceVersion: null` would be read as "0" and rejected.
        for doc in (old, new):
            (doc.get("metadata") or {}).pop("resourceVersion", None)
        if part == "status":
            body = {"status": merge_patch(old.get("status") or {}, new.get("status") or {})}
        else:
            if kind.HAS_STATUS:
                old.pop("status", None)
                new.pop("status", None)
            body = merge_patch(old, new)
        if obj.metadata.resource_version:
            body.setdefault("metadata", {})["resourceVersion"] = obj.metadata.resource_version
        for sub in ("status", None) if status_sub else (None,):
            try:
                data = await self.transport.request(
                    "PATCH", object_path(kind, obj.name, self._ns(kind, obj.metadata.namespace),
                                         sub), query=self._write_query(), body=body,
                    content_type=MERGE_PATCH, kind=kind.KIND, name=obj.name)
                break
            except NotFound as err:  # a CRD that lost its status subresource since discovery
                if sub is None or "is not served" not in str(err):
                    raise
                self._discovery.forget(kind)
        return self._answer(kind, data, returning)

    def _answer(self, kind: type[T], data: dict[str, Any], returning: bool) -> T | None:
        if returning:
            return self.decode(kind, data)
        self.remember(kind, data)
        return None

    async def update(self, obj: T, *, returning: bool = True) -> T | None:
        """A merge patch of the difference from the object as decoded, with its
        resourceVersion as precondition (see `_patch_from`)."""
        return await self._patch_from(obj, "main", returning)

    async def update_status(self, obj: T, *, returning: bool = True,
                            hand_over: bool = False) -> T | None:
        """As `update`, for the status: on the status subresource, or with the object where
        the served CRD has none (Volcano's, Koordinator's PodGroups), from discovery.
        `hand_over` changes nothing here: the status is serialised anyway."""
        return await self._patch_from(obj, "status", returning)

    async def status_subresource(self, kind: type[Resource]) -> bool:
        """Whether the server keeps `kind`'s status in a subresource (discovery)."""
        return await self._discovery.status_subresource(kind)

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
        """A merge patch. On a core/v1 Event, a count bump becomes a `series` patch through
        events.k8s.io/v1 (see events.py)."""
        await self._after_opening_watches()
        if kind is Event and subresource is None:
            event = await self._events.patch(name, patch, namespace)
            return event if returning else None  # type: ignore[return-value]
        return await self._merge_patch(kind, name, patch, namespace, subresource, returning)

    async def _merge_patch(self, kind: type[T], name: str, patch: Mapping[str, Any],
                           namespace: str | None, subresource: str | None,
                           returning: bool = True) -> T | None:
        sub = subresource if subresource and await self._discovery.status_subresource(kind) \
            else None
        data = await self.transport.request(
            "PATCH",
            object_path(kind, name, self._ns(kind, namespace), sub),
            query=self._write_query(),
            body=dict(patch),
            content_type=MERGE_PATCH,
            kind=kind.KIND,
            name=name,
        )
        return self._answer(kind, data, returning)

    async def apply(self, obj: T, *, force: bool = True, status: bool = False) -> T:
        """Server-side apply of `obj` as this client's field manager.

        For objects Phalanx owns outright (CRDs, webhook configurations, backend CRs):
        the server merges by field ownership, so fields set by others are left alone.
        """
        await self._after_opening_watches()
        kind = type(obj)
        query = [*self._write_query(), ("force", "true" if force else "false")]
        sub = "status" if status and kind.HAS_STATUS else None
        data = await self.transport.request(
            "PATCH",
            object_path(kind, obj.name, self._ns(kind, obj.metadata.namespace), sub),
            query=query,
            body=obj.to_dict(warnings=False),  # the server names a bad field
            content_type=APPLY_PATCH,
            kind=kind.KIND,
            name=obj.name,
        )
        return self.decode(kind, data)

    async def delete(
        self,
        kind: type[T],
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: PropagationPolicy = "Background",
        uid: str | None = None,
    ) -> T | None:
        await self._after_opening_watches()
        options: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "propagationPolicy": propagation_policy,
        }
        if uid:
            options["preconditions"] = {"uid": uid}
        data = await self.transport.request(
            "DELETE",
            object_path(kind, name, self._ns(kind, namespace)),
            body=options,
            kind=kind.KIND,
            name=name,
        )
        # The answer is the object: with a deletionTimestamp while finalizers (or a pod's
        # grace period) keep it, without one once it is gone (or a Status, for some kinds).
        if not isinstance(data, dict) or data.get("kind") == "Status":
            return None
        if not (data.get("metadata") or {}).get("deletionTimestamp"):
            return None
        return self.decode(kind, data)

    async def get_scale(self, kind: type[Resource], name: str,
                        namespace: str | None = None) -> Scale:
        """GET NAME/scale: the server reads it through the CRD's scale paths."""
        scale_paths(kind, name)  # the server's bare 404 would read as "CRD not installed"
        data = await self.transport.request(
            "GET", object_path(kind, name, self._ns(kind, namespace), "scale"),
            kind=kind.KIND, name=name)
        return Scale.from_dict(data)

    async def update_scale(self, kind: type[Resource], scale: Scale) -> Scale:
        """PUT NAME/scale: the server validates the Scale and writes the spec path."""
        scale_paths(kind, scale.name)
        await self._after_opening_watches()
        data = await self.transport.request(
            "PUT", object_path(kind, scale.name, self._ns(kind, scale.namespace), "scale"),
            query=self._write_query(), body=scale.to_dict(), kind=kind.KIND, name=scale.name)
        return Scale.from_dict(data)

    async def bind(self, pod_name: str, namespace: str, node_name: str) -> None:
        """POST pods/NAME/binding: the API server sets spec.nodeName exactly once."""
        await self._after_opening_watches()
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod_name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        ns = namespace or self.default_namespace
        await self.transport.request(
            "POST",
            f"/api/v1/namespaces/{ns}/pods/{pod_name}/binding",
            query=self._write_query(),
            body=body,
            kind="Pod",
            name=pod_name,
        )

    # --- discovery --------------------------------------------------------------------

    async def server_version(self) -> dict[str, Any]:
        """GET /version (also a cheap liveness probe of the connection)."""
        return await self.transport.request("GET", "/version")

    async def serves(self, kind: type[Resource]) -> bool:
        """Whether the API server serves this kind (e.g. its CRD is installed)."""
        group_version = kind.API_VERSION
        path = f"/api/{group_version}" if "/" not in group_version else f"/apis/{group_version}"
        try:
            data = await self.transport.request("GET", path)
        except NotFound:
            return False
        return any(r.get("name") == kind.PLURAL for r in data.get("resources") or ())


__all__ = ["KubeCluster", "decode"]


async def _all_pages(
    base: list[tuple[str, str]],
    page: Callable[[list[tuple[str, str]]], Awaitable[tuple[list[Any], dict[str, Any]]]],
) -> ObjectList[Any]:
    """Every page of a list, `LIST_PAGE_SIZE` at a time, following `continue` tokens; the
    first page's resourceVersion is the snapshot's."""
    items: list[Any] = []
    token = ""
    rv = ""
    while True:
        query = [*base, ("limit", str(LIST_PAGE_SIZE))]
        if token:
            query.append(("continue", token))
        found, meta = await page(query)
        items.extend(found)
        rv = rv or str(meta.get("resourceVersion") or "")
        token = meta.get("continue") or ""
        if not token:
            return ObjectList(items=items, resource_version=rv)
