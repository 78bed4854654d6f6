"""Admission of KAI Queues: what the CRD's schema cannot say, refused with the field named.

KAI's CRD types every number but bounds none, and KAI's webhook only asks for
`spec.resources`. Phalanx also refuses what would make a queue tree meaningless, each with
the field and the numbers:

- `spec.resources` is required (KAI's own webhook rule);
- a quota, over-quota weight or limit below -1, or any negative value but -1 (KAI's
  "unlimited") -- an over-quota weight is never negative;
- a limit below the quota: an unset limit is 0 to KAI, so a quota with no limit could
  never be used (set `limit: -1` for none); an unlimited quota needs an unlimited limit;
- a parent that does not exist, or a parent chain that comes back to the queue (a cycle);
- a child's quota above its parent's (an unlimited parent quota holds any child's), and,
  on an update of the parent, a quota lowered below one of its children's;
- a duration (`preemptMinRuntime`, `reclaimMinRuntime`) that is not one.

Deleting a queue that has children is allowed (KAI ignores orphans); the scheduler
reports the orphans. `install_queue_admission(cluster)` runs these on the embedded cluster.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from phalanx.api.duration import parse_duration
from phalanx.api.queue import RESOURCES, UNITS, Queue

from .client import Invalid, NotFound

if TYPE_CHECKING:
    from .memory import MemoryCluster

Errors = list[tuple[str, str]]
# name -> the Queue stored under it (None when there is none).
Lookup = Callable[[str], Awaitable[Queue | None]]
# Every stored queue (for the children of a parent being updated).
ListAll = Callable[[], Awaitable[list[Queue]]]

_FIELDS = (("quota", "quota"), ("overQuotaWeight", "over_quota_weight"), ("limit", "limit"))


def fmt_amount(value: float) -> str:
    """-1 as "unlimited", whole numbers without a fraction."""
    if value == -1:
        return "-1 (unlimited)"
    return f"{value:g}"


def spec_errors(q: Queue) -> Errors:
    """Rules within one Queue object."""
    errs: Errors = []
    spec = q.spec
    if spec.resources is None:
        return [("spec.resources", "Required value: resources must be specified (quota, "
                                   "overQuotaWeight and limit of gpu, cpu and memory)")]
    for res in RESOURCES:
        r = spec.resources.of(res)
        base = f"spec.resources.{res}"
        bad = False
        for name, attr in _FIELDS:
            raw = getattr(r, attr)
            if raw is None or raw >= 0 or (raw == -1 and name != "overQuotaWeight"):
                continue
            bad = True
            allowed = "0 or more" if name == "overQuotaWeight" else "0 or more, or -1 for unlimited"
            errs.append((f"{base}.{name}", f"Invalid value: {raw:g}: must be {allowed}"))
        quota, limit = r.value("quota"), r.value("limit")
        if not bad and limit != -1 and (quota == -1 or limit < quota):
            unset = " (unset: KAI reads a missing limit as 0)" if r.limit is None else ""
            errs.append((f"{base}.limit",
                         f"Invalid value: {limit:g}{unset}: the limit must not be below the "
                         f"quota {fmt_amount(quota)} {UNITS[res]}; use -1 for no limit"))
    for field in ("preempt_min_runtime", "reclaim_min_runtime"):
        value = getattr(spec, field)
        if value is None:
            continue
        camel = "preemptMinRuntime" if field.startswith("preempt") else "reclaimMinRuntime"
        try:
            if parse_duration(value) < 0:
                raise ValueError("negative")
        except ValueError:
            errs.append((f"spec.{camel}", f"Invalid value: {value!r}: must be a duration such "
                                          "as 90s or 10m"))
    return errs


def _over(child: float, parent: float) -> bool:
    if parent == -1:
        return False
    return child == -1 or child > parent


async def tree_errors(q: Queue, old: Queue | None, lookup: Lookup, list_all: ListAll) -> Errors:
    """Rules against the other queues: the parent exists, no cycle, quotas nest."""
    errs: Errors = []
    name = q.metadata.name or ""
    parent_name = q.parent
    if parent_name:
        if parent_name == name:
            return [("spec.parentQueue", f"Invalid value: {parent_name!r}: a queue cannot be "
                                         "its own parent")]
        parent = await lookup(parent_name)
        if parent is None:
            return [("spec.parentQueue", f"Not found: queue {parent_name!r} does not exist "
                                         "(create the parent queue first)")]
        chain = [name, parent_name]
        seen = {name}
        current: Queue | None = parent
        while current is not None and current.parent:
            if current.parent in seen or current.parent == name:
                chain.append(current.parent)
                return [("spec.parentQueue",
                         f"Invalid value: {parent_name!r}: makes a cycle "
                         f"({' -> '.join(chain)})")]
            seen.add(current.metadata.name or "")
            chain.append(current.parent)
            current = await lookup(current.parent)
        for res in RESOURCES:
            mine, theirs = q.quota(res).value("quota"), parent.quota(res).value("quota")
            if q.spec.resources is not None and _over(mine, theirs):
                errs.append((f"spec.resources.{res}.quota",
                             f"Invalid value: {fmt_amount(mine)}: above the quota of parent "
                             f"queue {parent_name!r} ({fmt_amount(theirs)} {UNITS[res]})"))
    if old is not None and q.spec.resources is not None:
        children = [c for c in await list_all() if c.parent == name]
        for res in RESOURCES:
            mine = q.quota(res).value("quota")
            for child in sorted(children, key=lambda c: c.metadata.name or ""):
                theirs = child.quota(res).value("quota")
                if _over(theirs, mine):
                    errs.append((f"spec.resources.{res}.quota",
                                 f"Invalid value: {fmt_amount(mine)}: below the quota of child "
                                 f"queue {child.metadata.name!r} ({fmt_amount(theirs)} "
                                 f"{UNITS[res]})"))
                    break
    return errs


def raise_errors(q: Queue, errs: Errors) -> None:
    if errs:
        detail = "; ".join(f"{field}: {why}" for field, why in errs)
        raise Invalid(f'Queue "{q.metadata.name}" is invalid: {detail}', kind=Queue.KIND,
                      name=q.metadata.name, field=errs[0][0])


def reader_lookups(client: Any) -> tuple[Lookup, ListAll]:
    """Queue look-ups through any `Client`."""

    async def lookup(name: str) -> Queue | None:
        try:
            return await client.get(Queue, name)
        except NotFound:
            return None

    async def list_all() -> list[Queue]:
        return list((await client.list(Queue)).items)

    return lookup, list_all


def install_queue_admission(cluster: MemoryCluster) -> None:
    """Validate every Queue create and update on the embedded cluster."""
    lookup, list_all = reader_lookups(cluster)

    async def validate(q: Queue, old: Queue | None) -> None:
        errs = spec_errors(q)
        if not errs:
            errs = await tree_errors(q, old, lookup, list_all)
        raise_errors(q, errs)

    cluster.register_admission(Queue, validate=validate)
