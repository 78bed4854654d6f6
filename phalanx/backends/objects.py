"""Helpers every backend uses to write the scheduler objects of a PodGang.

- `owned_meta`: name, namespace, identifying labels and the ownerReference to the PodGang
  (so deleting the PodGang also garbage-collects them);
- `ensure`: create-or-update that keeps what others own (the scheduler's status, fields it
  sets, foreign labels), retries on Conflict, and writes nothing when nothing changed;
- `create_new`: create when the object is most likely absent (`never_synced`): one POST
  where `ensure` would read first and find nothing (AlreadyExists sends the caller to `ensure`);
- `ensure_deleted`: idempotent delete of an object this PodGang owns;
- `dns_label`: a name that fits where Kubernetes wants a DNS label (63 characters);
- `ConfiguredBackend`, `required_pod_labels`, `owning_podcliqueset`: what backends share
  around their config and `prepare_pod`;
- `served`: whether the server serves a kind (a peer's optional CRD, e.g. Volcano's
  HyperNode), from API discovery.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from phalanx.api import labels
from phalanx.api.base import ObjectMeta, Resource
from phalanx.api.podgang import PODGANG_BACKEND_SYNCED
from phalanx.cluster.client import AlreadyExists, ApiError, Conflict, NotFound

from .base import BackendConfig, CacheReader, SyncPending

if TYPE_CHECKING:
    from phalanx.api.grove import PodCliqueSet, PodGang
    from phalanx.api.pod import Pod
    from phalanx.cluster.client import Client

T = TypeVar("T", bound=Resource)
C = TypeVar("C", bound=BackendConfig)

_CONFLICT_RETRIES = 5


class OwnedElsewhere(Exception):
    """The object name is taken by an object another controller owns."""


def dns_label(name: str, limit: int = 63) -> str:
    """`name` if it fits, else a stable shortening: a prefix plus a hash of the whole name."""
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:10]
    return f"{name[: limit - 11].rstrip('-.')}-{digest}"


def owned_meta(podgang: PodGang, name: str) -> ObjectMeta:
    """Metadata for an object that exists because of `podgang` (and dies with it)."""
    meta_labels = {
        labels.LABEL_MANAGED_BY: labels.MANAGED_BY_VALUE,
        labels.LABEL_PODGANG: podgang.name,
    }
    part_of = podgang.metadata.labels.get(labels.LABEL_PART_OF)
    if part_of:
        meta_labels[labels.LABEL_PART_OF] = part_of
    # A scaled PodGang's base: the scheduler places the gangs of one replica together.
    base = podgang.metadata.labels.get(labels.LABEL_BASE_PODGANG)
    if base:
        meta_labels[labels.LABEL_BASE_PODGANG] = base
    return ObjectMeta(
        name=name,
        namespace=podgang.namespace,
        labels=meta_labels,
        owner_references=[podgang.owner_reference(controller=True, block=True)],
    )


def owned_by(obj: Resource, owner: Resource) -> bool:
    return any(ref.uid == owner.metadata.uid for ref in obj.metadata.owner_references)


def _adopt_metadata(existing: Resource, desired: Resource) -> bool:
    """Add our labels and owner reference to `existing`, keeping everyone else's."""
    changed = False
    for key, value in desired.metadata.labels.items():
        if existing.metadata.labels.get(key) != value:
            existing.metadata.labels[key] = value
            changed = True
    for key, value in desired.metadata.annotations.items():
        if existing.metadata.annotations.get(key) != value:
            existing.metadata.annotations[key] = value
            changed = True
    have = {ref.uid for ref in existing.metadata.owner_references}
    for ref in desired.metadata.owner_references:
        if ref.uid not in have:
            existing.metadata.owner_references.append(ref)
            changed = True
    for finalizer in desired.metadata.finalizers:
        if finalizer not in existing.metadata.finalizers:
            existing.metadata.finalizers.append(finalizer)
            changed = True
    return changed


# merge(existing, desired) copies the fields the backend manages into `existing` (a private
# copy) and returns whether anything changed. Returning None means "cannot be changed in
# place" (immutable fields differ): the object is deleted and created again.
Merge = Callable[[T, T], bool | None]


def merge_spec_fields(*names: str) -> Merge[Any]:
    """A merge that owns only these spec fields and keeps every other one (what the
    scheduler or an admin set) as it is."""

    def merge(existing: Any, desired: Any) -> bool:
        changed = False
        for name in names:
            value = getattr(desired.spec, name)
            if getattr(existing.spec, name) != value:
                setattr(existing.spec, name, value)
                changed = True
        return changed

    return merge


def replace_spec(existing: Any, desired: Any) -> bool:
    """A merge that owns the whole spec."""
    if existing.spec == desired.spec:
        return False
    existing.spec = desired.spec.model_copy(deep=True)
    return True


def recreate_on_spec_change(existing: Any, desired: Any) -> bool | None:
    """A merge for immutable specs: any difference means delete and create again."""
    return None if existing.spec != desired.spec else False


class ClientHolder:
    """The client `init(client)` gave a backend; `client` fails clearly before init."""

    name: ClassVar[str]
    _client: Client | None = None
    # The operator's informers, for reads of what it caches (the registry's use_cache);
    # None: every read asks the API server.
    cache: CacheReader | None = None

    async def init(self, client: Client) -> None:
        self._client = client

    @property
    def client(self) -> Client:
        if self._client is None:
            raise RuntimeError(f"{self.name} backend used before init(client)")
        return self._client


class ConfiguredBackend(ClientHolder, Generic[C]):
    """A backend built from its profile config (the registry's factory), which also sets
    its mismatch policy."""

    def __init__(self, config: C) -> None:
        self.config = config
        self.mismatch_policy = config.mismatch_policy


def required_pod_labels(pod: Pod, *keys: str) -> tuple[str, ...]:
    """The values of labels the operator sets before `prepare_pod` (ValueError if unset)."""
    values = tuple(pod.metadata.labels.get(k) or "" for k in keys)
    missing = [k for k, v in zip(keys, values, strict=True) if not v]
    if missing:
        what = "label" if len(missing) == 1 else "labels"
        raise ValueError(f"pod {pod.name}: {what} {' and '.join(missing)} must be set before "
                         "prepare_pod")
    return values


async def ensure(client: Client, desired: T, merge: Merge[T], *, listed: T | None = None) -> T:
    """Create `desired`, or bring the live object in line with it through `merge`.

    `listed`: the live object as a list just returned it (a private copy), taken instead of
    the first read; a conflict reads it afresh."""
    kind = type(desired)
    for _ in range(_CONFLICT_RETRIES):
        existing, listed = listed, None
        if existing is None:
            try:
                existing = await client.get(kind, desired.name, desired.namespace)
            except NotFound:
                try:
                    return await client.create(desired)
                except AlreadyExists:
                    continue  # raced with another writer: re-read and merge
        mine, theirs = desired.metadata.controller_ref(), existing.metadata.controller_ref()
        if mine is not None and theirs is not None and mine.uid != theirs.uid:
            raise OwnedElsewhere(
                f"{kind.KIND} {existing.key} already exists and belongs to {theirs.kind} "
                f"{theirs.name}; not taking it over"
            )
        if existing.metadata.deletion_timestamp is not None:
            raise SyncPending(
                f"{kind.KIND} {existing.key} is being deleted; it will be created again "
                "once it is gone"
            )
        spec_changed = merge(existing, desired)
        if spec_changed is None:
            await _delete(client, existing)
            try:
                return await client.create(desired)
            except AlreadyExists:
                raise SyncPending(
                    f"{kind.KIND} {existing.key} must be re-created (immutable fields changed) "
                    "and is still terminating"
                ) from None
        meta_changed = _adopt_metadata(existing, desired)
        if not (spec_changed or meta_changed):
            return existing
        try:
            return await client.update(existing)
        except Conflict:
            continue
    raise SyncPending(f"{kind.KIND} {desired.key}: too many conflicting writers; retrying")


def never_synced(podgang: PodGang) -> bool:
    """No operator has reported a backend verdict for this PodGang yet (its status has no
    BackendSynced condition): its scheduler objects most likely do not exist. Not so after
    an operator restart, where already-synced gangs read before they write."""
    return podgang.condition(PODGANG_BACKEND_SYNCED) is None


async def create_new(client: Client, desired: Resource) -> bool:
    """Create `desired`; False when it exists already (then `ensure` reads and merges)."""
    try:
        await client.create(desired, returning=False)
    except AlreadyExists:
        return False
    return True


async def ensure_new(client: Client, desired: T, merge: Merge[T], *, new: bool) -> None:
    """`ensure`, creating first when the object is most likely new (`never_synced` for a
    PodGang's objects): one round trip instead of a read that answers 404 and the create.
    Met with AlreadyExists, the read-and-merge path as `ensure` (ownership, a terminating
    object, immutable fields: the same outcomes)."""
    if new and await create_new(client, desired):
        return
    await ensure(client, desired, merge)


async def delete_object(client: Client, obj: Resource) -> None:
    """Delete this very object (uid precondition); gone already or replaced is fine."""
    await _delete(client, obj)


async def _delete(client: Client, obj: Resource) -> Resource | None:
    """The object if it is still there after the delete (terminating), else None."""
    try:
        return await client.delete(type(obj), obj.name, obj.namespace, uid=obj.metadata.uid)
    except (NotFound, Conflict):
        return None  # gone already, or replaced by someone else: not ours to delete


async def ensure_deleted(
    client: Client, kind: type[Resource], name: str, podgang: PodGang
) -> Resource | None:
    """Delete `name` if this PodGang owns it. Returns the object if it still exists
    (e.g. held by a finalizer), None once it is gone. NotFound is success."""
    try:
        obj = await client.get(kind, name, podgang.namespace)
    except NotFound:
        return None
    if not owned_by(obj, podgang):
        return None  # someone else's object with the same name: leave it alone
    if obj.metadata.deletion_timestamp is None:
        return await _delete(client, obj)  # the server's answer says whether it is gone
    return obj  # already terminating: its finalizers decide


async def owned_objects(client: Client, kind: type[T], podgang: PodGang) -> list[T]:
    """Every `kind` object this PodGang owns (found by its grove.io/podgang label), so
    objects of groups the PodGang no longer has are found too."""
    found = await client.list(
        kind, podgang.namespace, label_selector={labels.LABEL_PODGANG: podgang.name}
    )
    return [obj for obj in found.items if owned_by(obj, podgang)]


class GroupObjects:
    """Per-group objects of PodGangs (one PodGroup per PodGang group): finds the ones whose
    group went away without listing on every sync.

    Remembers, per PodGang uid, the group names of its last completed sync. Lists the owned
    objects only when that is unknown and the PodGang spec has changed since creation
    (generation > 1: after an operator restart); at generation 1 nothing can be stale.
    """

    def __init__(self, kind: type[Resource]) -> None:
        self.kind = kind
        self._groups: dict[str, frozenset[str]] = {}

    async def stale(self, client: Client, podgang: PodGang, current: set[str]) -> list[str]:
        previous = self._groups.get(podgang.metadata.uid or "")
        if previous is not None:
            return sorted(previous - current)
        if (podgang.metadata.generation or 1) <= 1:
            return []
        return sorted(o.name for o in await owned_objects(client, self.kind, podgang) if o.name not in current)

    def synced(self, podgang: PodGang, current: set[str]) -> None:
        """Call once every stale object is gone, so a failed clean-up is retried."""
        self._groups[podgang.metadata.uid or ""] = frozenset(current)

    async def all(self, client: Client, podgang: PodGang) -> list[str]:
        """Every owned object (for deletion): the names of the last completed sync when this
        process made one (exact: stale objects are released before `synced`), else listed.
        Call `forget` once they are gone."""
        known = self._groups.get(podgang.metadata.uid or "")
        if known is not None:
            return sorted(known)
        return sorted(o.name for o in await owned_objects(client, self.kind, podgang))

    def forget(self, podgang: PodGang) -> None:
        self._groups.pop(podgang.metadata.uid or "", None)


def member_templates(pcs: PodCliqueSet, podcliques: list[str]) -> list[str]:
    """The clique template names behind PodClique names (`<pcs>-<i>-[<group>-<j>-]<clique>`):
    the longest template name each ends with."""
    names = sorted((c.name for c in pcs.spec.template.cliques), key=len, reverse=True)
    out: list[str] = []
    for podclique in podcliques:
        found = next((n for n in names if podclique.endswith("-" + n)), None)
        if found is not None and found not in out:
            out.append(found)
    return out


async def owning_podcliqueset(client: Client, podgang: PodGang,
                              cache: CacheReader | None = None) -> PodCliqueSet | None:
    """The PodCliqueSet a PodGang belongs to (its owner, else its part-of label), from
    `cache` when it holds it, else from the API server."""
    from phalanx.api.grove import PodCliqueSet

    name = next(
        (r.name for r in podgang.metadata.owner_references if r.kind == PodCliqueSet.KIND),
        podgang.metadata.labels.get(labels.LABEL_PART_OF),
    )
    if not name:
        return None
    if cache is not None and (found := cache.cached(PodCliqueSet, name, podgang.namespace)):
        return found
    try:
        return await client.get(PodCliqueSet, name, podgang.namespace)
    except NotFound:
        return None


async def served(client: Client, kind: type[Resource]) -> bool:
    """Whether the server serves `kind` (its CRD is installed), from API discovery; True
    when the client cannot tell (the embedded cluster serves every kind) or discovery fails
    (the write then says what is wrong)."""
    serves = getattr(client, "serves", None)
    if serves is None:
        return True
    try:
        return bool(await serves(kind))
    except ApiError:
        return True
