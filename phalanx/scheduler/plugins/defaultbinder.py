"""DefaultBinder: the pods/binding subresource."""

from __future__ import annotations

from phalanx.cluster.client import ApiError, Conflict, NotFound
from phalanx.scheduler.framework.config import DEFAULT_BINDER
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import Plugin
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.status import Status
from phalanx.scheduler.framework.types import PodInfo


@register_plugin
class DefaultBinder(Plugin):
    NAME = DEFAULT_BINDER

    async def bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        try:
            await self.handle.client.bind(pod.name, pod.namespace, node)
        except (NotFound, Conflict) as exc:
            # Deleted or bound by someone else meanwhile: not retryable for this pod object.
            return Status.unresolvable(f"binding rejected: {exc.message}")
        except ApiError as exc:
            return Status.error(f"binding failed: {exc.message}")
        return Status()
