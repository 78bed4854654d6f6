"""Leader election on a coordination.k8s.io Lease, as client-go's leaderelection does.

Only the holder of the Lease acts; standbys keep trying. A Lease counts as expired when its
record has not changed for `lease_duration` seconds *as observed locally* (the holder's
renewTime is not compared to our clock, so clock skew between nodes cannot cause two
leaders). A leader that cannot renew within `renew_deadline` (< lease_duration) stops leading
before anyone else may take over, which is what keeps two replicas from ever both acting.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from phalanx.api.config_rules import LEASE_JITTER_FACTOR
from phalanx.api.core import Lease, LeaseSpec
from phalanx.api.base import ObjectMeta
from phalanx.cluster.client import AlreadyExists, ApiError, Client, Conflict, NotFound

log = logging.getLogger("phalanx.leader")


def default_identity() -> str:
    """hostname (the pod name in a Deployment) plus a random suffix, as client-go does."""
    host = os.environ.get("POD_NAME") or socket.gethostname()
    return f"{host}_{uuid.uuid4().hex[:8]}"


@dataclass(slots=True)
class LeaseTiming:
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        # client-go's NewLeaderElector: the renew deadline must outlast a jittered retry.
        if not (self.lease_duration > self.renew_deadline >
                self.retry_period * LEASE_JITTER_FACTOR > 0):
            raise ValueError(
                "leader election needs leaseDuration > renewDeadline > retryPeriod x "
                f"{LEASE_JITTER_FACTOR:g} (client-go's JitterFactor) > 0 (got "
                f"{self.lease_duration:g}s, {self.renew_deadline:g}s, {self.retry_period:g}s)"
            )


class LeaderElector:
    """Acquire a Lease, run `lead()` while holding it, release it on a clean exit."""

    def __init__(
        self,
        client: Client,
        *,
        name: str,
        namespace: str,
        identity: str | None = None,
        timing: LeaseTiming | None = None,
    ) -> None:
        self.client = client
        self.name = name
        self.namespace = namespace
        self.identity = identity or default_identity()
        self.timing = timing or LeaseTiming()
        self.is_leader = False
        self.transitions_seen = 0
        # What we last saw of the Lease, and when (local monotonic time).
        self._observed: tuple[str | None, str | None] | None = None
        self._observed_at = 0.0
        self.on_change: Callable[[bool], None] | None = None
        # Why the last attempt to read or write the Lease failed, until one succeeds (the
        # readiness probe's "leader-election" check).
        self.last_error: str | None = None

    def _now(self) -> float:
        return self.client.clock.monotonic()

    def _set_leader(self, value: bool, how: str = "") -> None:
        """`how` says why leadership ended ("lost": renewal failed; "released": a clean
        stop), so a SIGTERM is not logged as a lost lease."""
        if value != self.is_leader:
            self.is_leader = value
            log.info("%s %s lease %s/%s", self.identity,
                     "acquired" if value else (how or "lost"), self.namespace, self.name)
            if self.on_change is not None:
                self.on_change(value)

    async def try_acquire_or_renew(self) -> bool:
        """One attempt; True when we hold the Lease afterwards."""
        try:
            held = await self._attempt()
        except ApiError as err:
            self.last_error = f"{type(err).__name__}: {err}"
            raise
        self.last_error = None
        return held

    async def _attempt(self) -> bool:
        clock = self.client.clock
        now_dt = clock.now_dt()
        duration = int(round(self.timing.lease_duration))
        try:
            lease = await self.client.get(Lease, self.name, self.namespace)
        except NotFound:
            fresh = Lease(
                metadata=ObjectMeta(name=self.name, namespace=self.namespace),
                spec=LeaseSpec(holder_identity=self.identity, lease_duration_seconds=duration,
                               acquire_time=now_dt, renew_time=now_dt, lease_transitions=0),
            )
            try:
                await self.client.create(fresh)
            except AlreadyExists:
                return False  # someone else created it first
            self._observe(self.identity, now_dt.isoformat())
            return True
        spec = lease.spec
        record = (spec.holder_identity, spec.renew_time.isoformat() if spec.renew_time else None)
        if record != self._observed:
            self._observe(*record)
        held_by_other = bool(spec.holder_identity) and spec.holder_identity != self.identity
        lease_seconds = spec.lease_duration_seconds or duration
        if held_by_other and self._now() < self._observed_at + lease_seconds:
            return False  # a live leader
        if spec.holder_identity != self.identity:
            spec.acquire_time = now_dt
            spec.lease_transitions = (spec.lease_transitions or 0) + 1
        spec.holder_identity = self.identity
        spec.lease_duration_seconds = duration
        spec.renew_time = now_dt
        try:
            await self.client.update(lease, returning=False)  # resourceVersion-checked: one winner
        except Conflict:
            return False
        self._observe(self.identity, now_dt.isoformat())
        return True

    def _observe(self, holder: str | None, renew: str | None) -> None:
        self._observed = (holder, renew)
        self._observed_at = self._now()

    async def _acquire(self) -> None:
        while True:
            try:
                if await self.try_acquire_or_renew():
                    return
            except ApiError as err:
                log.warning("leader election: %s", err)
            await asyncio.sleep(self.timing.retry_period)

    async def _renew_until_lost(self) -> None:
        """Returns when a renewal could not be done within renew_deadline."""
        t = self.timing
        while True:
            await asyncio.sleep(t.retry_period)
            deadline = self._now() + t.renew_deadline
            while True:
                try:
                    if await asyncio.wait_for(
                        self.try_acquire_or_renew(), max(deadline - self._now(), 0.001)
                    ):
                        break
                    return  # someone else holds it now
                except (ApiError, asyncio.TimeoutError) as err:
                    log.warning("leader election: renewal failed: %s", err or type(err).__name__)
                if self._now() >= deadline:
                    return
                await asyncio.sleep(min(t.retry_period, max(deadline - self._now(), 0)))

    async def release(self) -> None:
        """Hand the Lease over at once (empty holder), so a standby need not wait it out."""
        try:
            lease = await self.client.get(Lease, self.name, self.namespace)
            if lease.spec.holder_identity != self.identity:
                return
            lease.spec.holder_identity = None
            lease.spec.lease_duration_seconds = 1
            lease.spec.renew_time = self.client.clock.now_dt()
            await self.client.update(lease, returning=False)
        except ApiError as err:
            log.warning("leader election: release failed: %s", err)

    async def run(self, lead: Callable[[], Awaitable[None]]) -> bool:
        """Acquire, run `lead()` while renewing. Returns True when `lead()` finished (the
        Lease is released), False when leadership was lost (`lead()` was cancelled).
        Cancelling `run` cancels `lead()` and releases the Lease."""
        await self._acquire()
        self._set_leader(True)
        work = asyncio.ensure_future(lead())
        renew = asyncio.ensure_future(self._renew_until_lost())
        try:
            done, _ = await asyncio.wait({work, renew}, return_when=asyncio.FIRST_COMPLETED)
            if work in done:
                work.result()  # re-raise a failure of the leader's work
                return True
            log.error("%s lost lease %s/%s: stopping", self.identity, self.namespace, self.name)
            return False
        finally:
            lost = renew.done()
            for task in (work, renew):
                task.cancel()
            for task in (work, renew):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            try:
                if not lost:
                    await asyncio.shield(self.release())
            finally:
                self._set_leader(False, "lost" if lost else "released")
