"""Each Queue's status, as KAI's queue controller keeps it, plus its fair share.

`status.allocated`, `allocatedNonPreemptible` and `requested` (Kubernetes quantities of cpu,
memory and nvidia.com/gpu, the queue's subtree included) and `status.childQueues`, as KAI
writes them. KAI publishes fair share only as a metric; Phalanx writes it, with the
deserved quota in the same units, as the annotation `phalanx.dev/fair-share` (KAI's schema
has no status field for it, and a real server would drop an unknown one), so `phalanx get
queues`, `describe queue` and the HTML report read it from the run's history.

Writes are batched: a change schedules one write pass `statusIntervalSeconds` later, which
writes only the queues whose numbers changed (two patches at most: status, annotation). No
timer runs while nothing changes.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from phalanx.api.quantity import format_quantity
from phalanx.api.queue import Queue
from phalanx.cluster.client import ApiError, NotFound

from .runtime import QueueRuntime
from .share import CPU, GPU, MEMORY, UNLIMITED, QueueShare

log = logging.getLogger(__name__)

ANNOTATION_FAIR_SHARE = "phalanx.dev/fair-share"
_WRITER_KEY = "_status_writer"


def resource_list(vec: list[float], *, zeros: bool = False) -> dict[str, str]:
    """(cpu millicores, memory bytes, gpus) as a ResourceList (zeros left out unless
    `zeros`: a merge patch must overwrite a value that dropped to 0; -1 is "unlimited")."""
    out: dict[str, str] = {}
    for r, name in ((CPU, "cpu"), (MEMORY, "memory"), (GPU, "nvidia.com/gpu")):
        v = vec[r]
        if v == UNLIMITED:
            out[name] = "unlimited"
        elif not v and zeros:
            out[name] = "0"
        elif v:
            out[name] = format_quantity(v / 1000.0 if r == CPU else v, name if r != GPU else "")
    return out


def status_of(q: QueueShare) -> dict[str, Any]:
    out: dict[str, Any] = {
        "allocated": resource_list(q.allocated(), zeros=True),
        "allocatedNonPreemptible": resource_list(q.allocated_non_preemptible(), zeros=True),
        "requested": resource_list(q.request(), zeros=True),
    }
    if q.children:
        out["childQueues"] = sorted(q.children)
    return out


def fair_share_of(q: QueueShare) -> str:
    return json.dumps({"fairShare": resource_list(q.fair_share()),
                       "deserved": resource_list(q.deserved())}, sort_keys=True)


def parse_fair_share(obj: dict[str, Any]) -> dict[str, dict[str, str]]:
    """The annotation of a Queue dict, parsed ({} when absent or unreadable)."""
    raw = (obj.get("metadata") or {}).get("annotations", {}).get(ANNOTATION_FAIR_SHARE)
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class QueueStatusWriter:
    def __init__(self, runtime: QueueRuntime, client: Any) -> None:
        self.runtime = runtime
        self.client = client
        self._timer: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[None] | None = None
        self._written: dict[str, tuple[dict[str, Any], str]] = {}
        self._again = False  # a change arrived while a pass was writing
        self.writes = 0
        runtime.listeners.append(self._changed)
        runtime.due.append(self.next_due)

    @classmethod
    def for_runtime(cls, runtime: QueueRuntime, client: Any) -> QueueStatusWriter:
        writer = getattr(runtime, _WRITER_KEY, None)
        if writer is None:
            writer = cls(runtime, client)
            setattr(runtime, _WRITER_KEY, writer)
        return writer  # type: ignore[no-any-return]

    def _changed(self, _what: str) -> None:
        if self._timer is not None or not self.runtime.active:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        interval = self.runtime.settings.status_interval_seconds
        self._timer = loop.call_later(interval, self._fire)

    def next_due(self) -> float | None:
        """Loop time of the pending write pass (now while one is writing); None when no
        write is pending. Whoever waits for the scheduler to settle must wait for this too,
        or it reads a status one change behind."""
        if self._task is not None and not self._task.done():
            return self._task.get_loop().time()
        return self._timer.when() if self._timer is not None else None

    def _fire(self) -> None:
        self._timer = None
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._flush_and_follow(),
                                                                name="queue-status")
        else:  # a pass is writing: what changed since it read the shares needs another
            self._again = True

    async def _flush_and_follow(self) -> None:
        self._again = False
        if not await self.flush() or self._again:
            self._changed("retry")  # a failed write or a change during the pass: once more

    async def flush(self) -> bool:
        """Write every queue whose numbers changed since the last write; False when a
        write failed (the caller tries again after the interval)."""
        shares = self.runtime.shares()
        ok = True
        for name, q in shares.items():
            status, fair = status_of(q), fair_share_of(q)
            if self._written.get(name) == (status, fair):
                continue
            try:
                await self.client.patch(Queue, name, {"status": status}, subresource="status",
                                        returning=False)
                await self.client.patch(
                    Queue, name, {"metadata": {"annotations": {ANNOTATION_FAIR_SHARE: fair}}},
                    returning=False)
            except NotFound:
                continue
            except ApiError as exc:
                log.debug("status of queue %s not written: %s", name, exc)
                ok = False
                continue
            self._written[name] = (status, fair)
            self.writes += 1
        return ok

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
