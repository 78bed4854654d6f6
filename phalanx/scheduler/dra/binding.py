"""The API writes of the DynamicResources plugin: publishing an allocation and the pod's
reservation at PreBind, withdrawing the reservation at Unreserve, deallocating an idle
claim at PostFilter.

PreBind (kube's bindClaim): the claim gets the delete-protection finalizer (a plain update),
then `status.allocation` (if this pod allocated it) and the pod in `status.reservedFor` (a
status update), retried on conflict with a fresh read. A claim that meanwhile got the very
allocation this pod brings (another member of its gang sharing the claim published it
first) only gets the reservation: upstream fails the second member there (kubernetes
#140053).
"""

from __future__ import annotations

import logging
from typing import Any

from phalanx.api.resource import (
    FINALIZER,
    AllocationResult,
    ResourceClaim,
    is_reserved_for,
    pod_reference,
)
from phalanx.cluster.client import ApiError, Conflict, NotFound

log = logging.getLogger(__name__)

RETRIES = 5


class BindError(Exception):
    pass


def _same_devices(a: AllocationResult, b: AllocationResult) -> bool:
    def ids(x: AllocationResult) -> list[tuple[str, str, str, str]]:
        return sorted((r.request, r.driver, r.pool, r.device) for r in x.devices.results)

    return ids(a) == ids(b)


async def bind_claim(client: Any, claim: ResourceClaim, allocation: AllocationResult | None,
                     pod: Any) -> ResourceClaim:
    """Write `allocation` (if any) and the pod's reservation. Returns the written claim."""
    uid = pod.metadata.uid or ""
    current = claim
    fresh = False
    for _ in range(RETRIES):
        if fresh:
            try:
                current = await client.get(ResourceClaim, claim.name, claim.namespace)
            except NotFound:
                raise BindError(f"claim {claim.key} got deleted in the meantime") from None
        fresh = True
        work = current.copy_deep()
        if work.metadata.deletion_timestamp is not None:
            raise BindError(f"claim {claim.key} got deleted in the meantime")
        try:
            if allocation is not None:
                have = work.status.allocation
                if have is not None and not _same_devices(have, allocation):
                    raise BindError(f"claim {claim.key} got allocated elsewhere in the "
                                    "meantime")
                if FINALIZER not in work.metadata.finalizers:
                    work.metadata.finalizers.append(FINALIZER)
                    work = await client.update(work)
                if have is None:
                    work.status.allocation = allocation.model_copy(deep=True)
            elif work.status.allocation is None:
                raise BindError(f"claim {claim.key} got deallocated in the meantime")
            if not is_reserved_for(work, uid):
                work.status.reserved_for = [*(work.status.reserved_for or []),
                                            pod_reference(pod)]
            return await client.update_status(work)  # type: ignore[no-any-return]
        except Conflict:
            continue
        except BindError:
            raise
        except ApiError as e:
            what = "add allocation and reservation to" if allocation is not None else \
                "add reservation to"
            raise BindError(f"{what} claim {claim.key}: {e}") from e
    raise BindError(f"claim {claim.key}: too many conflicts writing its status")


async def unreserve_claim(client: Any, claim: ResourceClaim, pod: Any) -> None:
    """Remove the pod from the claim's reservedFor (best effort: the next attempt or the
    resourceclaim controller cleans up otherwise)."""
    uid = pod.metadata.uid or ""
    for _ in range(RETRIES):
        try:
            current = await client.get(ResourceClaim, claim.name, claim.namespace)
        except NotFound:
            return
        if not is_reserved_for(current, uid):
            return
        work = current.copy_deep()
        work.status.reserved_for = [r for r in work.status.reserved_for or () if r.uid != uid]
        try:
            await client.update_status(work, returning=False)
            return
        except Conflict:
            continue
        except ApiError as e:
            log.info("unreserve of claim %s for %s failed: %s", claim.key, pod.key, e)
            return


async def deallocate_claim(client: Any, claim: ResourceClaim) -> bool:
    """PostFilter: clear an idle claim's allocation so that other devices can be tried."""
    work = claim.copy_deep()
    work.status.reserved_for = None
    work.status.allocation = None
    work.status.devices = None
    try:
        await client.update_status(work, returning=False)
    except ApiError as e:
        log.info("deallocation of claim %s failed: %s", claim.key, e)
        return False
    return True
