"""The one way controllers and the scheduler talk to a cluster.

`Client` is implemented by `MemoryCluster` (embedded, in-process) and `KubeCluster` (a real
API server). Code above this layer never knows which one it has. Every method is async and
behaves as the Kubernetes API server does (errors, resourceVersions, watch semantics).

Objects returned by `get`/`list`/`create`/`update` are private copies the caller may mutate.
Objects delivered by `watch` (and held in informer caches) are shared and read-only: copy
them with `.copy_deep()` before changing them, as with controller-runtime's cache.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING,
    Any,
    Generic,
    Literal,
    Protocol,
    TypeVar,
    overload,
    runtime_checkable,
)

from phalanx.api.base import ObjectMeta, Resource

from .clock import Clock

if TYPE_CHECKING:
    from .scale import Scale

T = TypeVar("T", bound=Resource)
Item = TypeVar("Item")

EventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]
PropagationPolicy = Literal["Background", "Foreground", "Orphan"]


class ApiError(Exception):
    """An error the API server returned. `reason` is the metav1.Status reason."""

    code: int = 500
    reason: str = "InternalError"

    def __init__(self, message: str, *, kind: str = "", name: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.name = name


class NotFound(ApiError):
    code, reason = 404, "NotFound"


class AlreadyExists(ApiError):
    code, reason = 409, "AlreadyExists"


class Conflict(ApiError):
    code, reason = 409, "Conflict"


class Invalid(ApiError):
    """Validation or admission rejected the object. `field` names the offending path."""

    code, reason = 422, "Invalid"

    def __init__(self, message: str, *, kind: str = "", name: str = "", field: str = "") -> None:
        super().__init__(message, kind=kind, name=name)
        self.field = field


class Forbidden(ApiError):
    code, reason = 403, "Forbidden"


class Gone(ApiError):
    """The requested resourceVersion is older than the watch history ("410 Gone")."""

    code, reason = 410, "Expired"


class ServerError(ApiError):
    """A transient server-side failure (also what fault injection raises)."""

    code, reason = 500, "InternalError"


class ServiceUnavailable(ApiError):
    code, reason = 503, "ServiceUnavailable"


@dataclass(slots=True)
class WatchEvent(Generic[T]):
    type: EventType
    object: T


@dataclass(slots=True)
class ObjectList(Generic[Item]):
    items: list[Item]
    resource_version: str


Selector = str | Mapping[str, str] | None


@runtime_checkable
class Client(Protocol):
    """The cluster API, as controller-runtime's client plus watch and binding."""

    @property
    def clock(self) -> Clock: ...

    async def get(self, kind: type[T], name: str, namespace: str | None = None) -> T:
        """Raises NotFound."""
        ...

    async def list(
        self,
        kind: type[T],
        namespace: str | None = None,
        *,
        label_selector: Selector = None,
        field_selector: Selector = None,
    ) -> ObjectList[T]:
        """Label selectors: "a=b,c!=d,e in (x,y),!f,g" or a dict of equalities.
        Field selectors: "metadata.name=x,spec.nodeName=" or a dict."""
        ...

    async def list_metadata(
        self,
        kind: type[Resource],
        namespace: str | None = None,
        *,
        label_selector: Selector = None,
    ) -> ObjectList[ObjectMeta]:
        """The metadata of each object `list` would return (names, labels, owners), without
        the rest: kube-apiserver's PartialObjectMetadataList, what client-go's metadata
        informers read. A Node's status alone (images, conditions) is most of its size."""
        ...

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
        """Raises AlreadyExists, Invalid (admission). Honours metadata.generateName.

        `returning=False`: the caller does not want the created object (an Event writer),
        so none is copied or decoded for it; the write itself is the same.
        `hand_over=True` (with `returning=False` or `"metadata"`): the caller built `obj` by
        validation for this call alone (changing it since only by assigning valid values)
        and never touches it again, so an in-process server may store it as it is instead
        of a private copy (its metadata gets the server's fields, its status the kind's
        default where a create resets it). A server reached over the wire sends it as usual.
        `returning="metadata"`: only the created object's metadata (its name, uid and
        resourceVersion), as a controller recording what it created needs."""
        ...

    @overload
    async def update(self, obj: T, *, returning: Literal[True] = True) -> T: ...

    @overload
    async def update(self, obj: T, *, returning: Literal[False]) -> None: ...

    async def update(self, obj: T, *, returning: bool = True) -> T | None:
        """Replaces metadata and spec; status changes are ignored for HAS_STATUS kinds.
        Raises Conflict when metadata.resourceVersion is stale, NotFound, Invalid.
        `returning=False` as for `create`: the written object is not copied or decoded."""
        ...

    @overload
    async def update_status(self, obj: T, *, returning: Literal[True] = True) -> T: ...

    @overload
    async def update_status(self, obj: T, *, returning: Literal[False],
                            hand_over: bool = False) -> None: ...

    async def update_status(self, obj: T, *, returning: bool = True,
                            hand_over: bool = False) -> T | None:
        """Replaces status only (the status subresource). Raises Conflict, NotFound.
        `returning=False` and `hand_over=True` as for `create`: the status of `obj` was
        built (or copied) by validation for this write alone, and changed since only by
        assigning valid values."""
        ...

    @overload
    async def patch(self, kind: type[T], name: str, patch: Mapping[str, Any],
                    namespace: str | None = None, *,
                    subresource: Literal["status"] | None = None,
                    returning: Literal[True] = True) -> T: ...

    @overload
    async def patch(self, kind: type[T], name: str, patch: Mapping[str, Any],
                    namespace: str | None = None, *,
                    subresource: Literal["status"] | None = None,
                    returning: Literal[False]) -> None: ...

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
        """JSON merge patch (RFC 7386) on the camelCase form. A `metadata.resourceVersion`
        in the patch acts as a precondition (Conflict when stale). `returning=False` as
        for `create`."""
        ...

    async def delete(
        self,
        kind: type[T],
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: PropagationPolicy = "Background",
        uid: str | None = None,
    ) -> T | None:
        """Objects with finalizers only get a deletionTimestamp. Dependents (by
        ownerReferences) are garbage collected per the propagation policy. `uid` is a
        precondition (Conflict when the live object has another uid). Raises NotFound.
        Returns the object while it is still there (terminating: finalizers to run), as
        the API server answers the DELETE; None once it is gone."""
        ...

    def watch(
        self,
        kind: type[T],
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: Selector = None,
        field_selector: Selector = None,
    ) -> AsyncIterator[WatchEvent[T]]:
        """Every change after `resource_version`, in order. Raises Gone when that version
        is no longer in the history. The stream may end (connection dropped); callers
        re-watch from the last version they saw. With selectors, an object that starts
        matching arrives as ADDED and one that stops matching as DELETED.

        The watch is registered when `watch()` is called, not at the first `__anext__`: a
        write this client makes afterwards is always seen. Errors (Gone, Invalid selectors,
        an unreachable server) are raised by the first `__anext__`."""
        ...

    async def get_scale(self, kind: type[Resource], name: str,
                        namespace: str | None = None) -> Scale:
        """The scale subresource (autoscaling/v1 Scale) of a kind that has one (its CRD's
        `subresources.scale`). Raises NotFound (also for a kind without one)."""
        ...

    async def update_scale(self, kind: type[Resource], scale: Scale) -> Scale:
        """Writes `scale.replicas` through the scale subresource (as `kubectl scale` and
        the HPA controller do); its resourceVersion, when set, is a precondition (Conflict).
        Raises NotFound, Invalid (field spec.replicas) for negative replicas."""
        ...

    async def bind(self, pod_name: str, namespace: str, node_name: str) -> None:
        """The pods/binding subresource: sets spec.nodeName once. Conflict when already
        bound or when the pod still has scheduling gates (as kube-apiserver); NotFound."""
        ...
