"""Writing a gang's verdict onto its object, as that object's schema allows.

The gang objects are the peers' kinds, whose CRDs decide what may be written
(phalanx.api.scheduling):

- where the status lives: through the status subresource where the served resource has one
  (KAI, scheduler-plugins' x-k8s.io PodGroup, PodGang, Workload API), else with the object
  itself, as Volcano's and Koordinator's own controllers write their PodGroups. A client that
  reads discovery (KubeCluster.update_status) routes by what the server serves; otherwise the
  model's `HAS_STATUS` says (the embedded cluster serves every kind as modelled);
- whether there is a condition list at all: the coscheduling PodGroups (sigs.k8s.io, x-k8s.io)
  have none, so their gangs' verdicts go to the member pods only (Events, PodScheduled), as
  Koordinator reports them;
- whether a condition carries observedGeneration (KAI's and Volcano's do not).

What cannot be written is said once per kind (at warning level), never retried in a loop and
never counted as written.

A write starts from the object as the scheduler's informer holds it, where the caller has
it: one merge patch of the condition list with that copy's resourceVersion as a
precondition, and no read. A stale copy gets a 409 Conflict and the write goes the long
way: read the object, set the condition, write (up to five tries on conflicts).

These reads and writes take the client's urgent lane (phalanx/cluster/lanes.py): a gang's
condition is not queued behind the binds and Events of a burst.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from phalanx.cluster.lanes import urgent

if TYPE_CHECKING:
    from phalanx.api.base import Resource

log = logging.getLogger("phalanx.scheduler.gang_status")


def _condition_class(kind: type[Resource]) -> type | None:
    status = kind.model_fields.get("status")
    status_cls = getattr(status, "annotation", None) if status is not None else None
    fields = getattr(status_cls, "model_fields", {})
    conditions = fields.get("conditions")
    if conditions is None:
        return None
    for arg in getattr(conditions.annotation, "__args__", ()):
        if isinstance(arg, type):
            return arg
    return None


def has_conditions(kind: type[Resource]) -> bool:
    """Whether the kind's schema has `status.conditions`."""
    return _condition_class(kind) is not None


def keeps_generation(kind: type[Resource]) -> bool:
    """Whether the kind's conditions carry observedGeneration (written, not excluded)."""
    cls = _condition_class(kind)
    field = getattr(cls, "model_fields", {}).get("observed_generation") if cls else None
    return field is not None and not field.exclude


def _through_status(client: Any, kind: type[Resource]) -> bool:
    return kind.HAS_STATUS or hasattr(client, "status_subresource")


async def write_status(client: Any, obj: Resource) -> Resource:
    """The object's status, through the status subresource where there is one, else with
    the object (see the module docs)."""
    if _through_status(client, type(obj)):
        return await client.update_status(obj)  # type: ignore[no-any-return]
    return await client.update(obj)  # type: ignore[no-any-return]


async def patch_conditions(client: Any, obj: Resource) -> None:
    """A merge patch of `obj`'s condition list (and the phase its schema requires), on
    `obj`'s resourceVersion: Conflict if the object changed since. The list is replaced
    whole, as a merge patch replaces lists."""
    status = obj.status  # type: ignore[attr-defined]
    patch: dict[str, Any] = {"conditions": [c.to_dict(warnings=False)
                                            for c in status.conditions]}
    if getattr(status, "INITIAL_PHASE", None) is not None:
        patch["phase"] = status.phase
    body = {"metadata": {"resourceVersion": obj.metadata.resource_version}, "status": patch}
    kind = type(obj)
    sub = "status" if _through_status(client, kind) else None
    await client.patch(kind, obj.name, body, obj.metadata.namespace, subresource=sub,
                       returning=False)


class OnceLog:
    """Says each distinct message once (per process), at warning level."""

    def __init__(self) -> None:
        self._said: set[str] = set()

    def warn(self, message: str) -> bool:
        if message in self._said:
            return False
        self._said.add(message)
        log.warning("%s", message)
        return True


class ConditionWriter:
    """Writes one condition on gang objects; counts what was written and what refused."""

    def __init__(self) -> None:
        self.writes = 0
        self.refusals = 0
        self.once = OnceLog()

    async def write(self, client: Any, ref: Any, type_: str, status: bool | str, reason: str,
                    message: str, cached: Resource | None = None) -> bool:
        """Set the condition on the object `ref` names. False when the API failed
        transiently and it should be tried again; a refusal (4xx) is said once per kind and
        field and not retried (the same write would fail again). `cached`: the object as an
        informer holds it (shared, not changed here), to write without reading first."""
        with urgent():
            return await self._write(client, ref, type_, status, reason, message, cached)

    async def _write(self, client: Any, ref: Any, type_: str, status: bool | str, reason: str,
                     message: str, cached: Resource | None) -> bool:
        from phalanx.api import registry
        from phalanx.api.base import set_status_condition
        from phalanx.cluster.client import ApiError, Conflict, NotFound

        try:
            kind = registry.get(ref.api_version, ref.kind)
        except LookupError:
            self.once.warn(f"no model for {ref.api_version} {ref.kind}: gang conditions are "
                           "not written on it")
            return True
        if not has_conditions(kind):
            self.once.warn(f"{ref.api_version} {ref.kind} has no status.conditions in its "
                           "schema: verdicts of its gangs go to their pods only")
            return True
        for attempt in range(5):
            try:
                if attempt == 0 and type(cached) is kind and cached.metadata.resource_version:
                    obj = cached.copy_deep()
                    fresh = False
                else:
                    obj = await client.get(kind, ref.name, ref.namespace)
                    fresh = True
            except NotFound:
                return True
            except ApiError as exc:
                log.info("reading %s for its gang condition failed: %s", ref, exc)
                return False
            generation = obj.metadata.generation if keeps_generation(kind) else None
            if not set_status_condition(obj, type_, status, reason, message,
                                        client.clock.now_dt(), generation):
                if fresh:
                    return True
                continue  # the cached copy already says so: the server's may not
            initial = getattr(obj.status, "INITIAL_PHASE", None)
            if initial is not None and obj.status.phase is None:  # required by the schema
                obj.status.phase = initial
            try:
                if fresh:
                    await write_status(client, obj)
                else:
                    await patch_conditions(client, obj)
            except Conflict:
                continue
            except NotFound:
                return True  # the object is gone
            except ApiError as exc:
                if 400 <= exc.code < 500:
                    self.refusals += 1
                    field = getattr(exc, "field", "") or "?"
                    self.once.warn(f"{ref.api_version} {ref.kind}: the API server refused the "
                                   f"gang condition (field {field}, {exc.reason}); first on "
                                   f"{ref}: {str(exc)[:300]}")
                    return True
                log.info("condition on %s not written: %s", ref, exc)
                return False
            self.writes += 1
            return True
        return False
