"""Where the operator's controllers report errors that retrying cannot fix.

A permanent error (an invalid spec, a write the API server rejects as Invalid or Forbidden,
an unknown scheduler backend, a configuration error) is reported once on the object the
controller reconciles, as Kubernetes' own controllers do (a ReplicaSet that cannot create
pods gets the condition ReplicaFailure and a FailedCreate Event):

- the condition `ReconcileFailure` (True, reason = the error's CamelCase reason, message
  naming what to change), present only while the error lasts;
- Grove's `status.lastErrors` (`code` = the reason, `description`, `observedAt`), on the
  kinds that have it (PodCliqueSet, PodClique, PodCliqueScalingGroup);
- one Warning Event with the same reason and message.

The next successful reconcile removes the condition and the last errors. Which errors are
permanent, the retry backoff and the one-line-per-retry logging are the controller
framework's (`phalanx.cluster.controller`).

Reports are bounded (`phalanx.api.errors.bounded_message`): the cause once, the field and
the reason, never a value the API server echoed back (which may hold the whole refused write,
previous report included), at most 1,024 characters. The same error on every retry gives the
same report, so nothing is written again and nothing grows.
"""

from __future__ import annotations

import logging
from typing import Any

from phalanx.api.base import Resource, get_condition, set_condition
from phalanx.api.errors import bounded_message, short_cause
from phalanx.api.grove import LastError
from phalanx.cluster.client import NotFound
from phalanx.cluster.informer import Informer
from phalanx.cluster.objects import split_key
from phalanx.cluster.retry import update_with_retry

from .context import OperatorContext

log = logging.getLogger(__name__)

CONDITION_RECONCILE_FAILURE = "ReconcileFailure"

__all__ = ["CONDITION_RECONCILE_FAILURE", "StatusErrorReporter", "failing", "short_cause"]


class StatusErrorReporter:
    """The `ErrorReporter` of one controller: reports on the object of `kind` a key names."""

    def __init__(self, ctx: OperatorContext, kind: type[Resource], cache: Informer[Any]) -> None:
        self.ctx = ctx
        self.kind = kind
        self.cache = cache

    async def report(self, key: str, reason: str, message: str) -> None:
        obj = self.cache.get(key)
        if obj is None:
            return  # deleted meanwhile: nothing to report on
        now = self.ctx.client.clock.now_dt()
        message = bounded_message(message)

        def mark(fresh: Any) -> bool:
            status = fresh.status
            changed = set_condition(status.conditions, CONDITION_RECONCILE_FAILURE, True,
                                    reason, message, now=now,
                                    observed_generation=fresh.metadata.generation)
            if "last_errors" in type(status).model_fields:
                errors = [LastError(code=reason, description=message, observed_at=now)]
                old = [(e.code, e.description) for e in status.last_errors or ()]
                if old != [(reason, message)]:
                    status.last_errors = errors
                    changed = True
            return changed

        await self._write(key, mark)
        self.ctx.recorder.warning(obj, reason, message)

    async def clear(self, key: str) -> None:
        obj = self.cache.get(key)
        if obj is None:
            return

        def unmark(fresh: Any) -> bool:
            status = fresh.status
            before = len(status.conditions)
            status.conditions = [c for c in status.conditions
                                 if c.type != CONDITION_RECONCILE_FAILURE]
            changed = len(status.conditions) != before
            if getattr(status, "last_errors", None):
                status.last_errors = None
                changed = True
            return changed

        if failing(obj) or getattr(obj.status, "last_errors", None):
            await self._write(key, unmark)

    async def _write(self, key: str, mutate: Any) -> None:
        """Read-modify-write of the status, re-read on Conflict (another status writer)."""
        ns, name = split_key(key)
        try:
            await update_with_retry(self.ctx.client, self.kind, name, ns, mutate, status=True)
        except NotFound:
            return  # deleted meanwhile


def failing(obj: Any) -> bool:
    """Whether the object carries ReconcileFailure=True."""
    cond = get_condition(obj.status.conditions, CONDITION_RECONCILE_FAILURE)
    return cond is not None and cond.status == "True"
