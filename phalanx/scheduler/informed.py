"""Wiring shared by the scheduler's informer-fed object caches (volumes, CSI, DRA).

`attach_handlers` registers a cache's setter and dropper per kind, each guarded so a failing
handler is logged instead of breaking the informer; `queue_event` tells the scheduling queue
about a change (ADD / UPDATE / DELETE), which may make waiting pods schedulable.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

log = logging.getLogger(__name__)

Setter = Callable[..., None]  # (obj) on add, (obj, old) on update
Dropper = Callable[[Any], None]


def attach_handlers(informers: Any, table: Iterable[tuple[type, Setter, Dropper]],
                    what: str) -> None:
    """For each (kind, setter, dropper): setter(obj) on add, setter(obj, old) on update,
    dropper(obj) on delete; `what` names the cache in the log of a failed handler."""
    for kind, setter, dropper in table:
        informers.informer(kind).add_handler(
            guard(lambda obj, f=setter: f(obj), what),
            guard(lambda old, obj, f=setter: f(obj, old), what),
            guard(lambda obj, f=dropper: f(obj), what),
        )


def queue_event(sched: Any, kind: str, old: Any, new: Any) -> None:
    """Tell `sched`'s queue (looked up at call time: plugins are built before it) that an
    object of `kind` was added (old None), deleted (new None) or updated."""
    from phalanx.scheduler.framework.types import ActionType, ClusterEvent

    queue = getattr(sched, "queue", None)
    if queue is None or (old is None and new is None):
        return
    if new is None:
        action = ActionType.DELETE
    elif old is None:
        action = ActionType.ADD
    else:
        action = ActionType.UPDATE_OTHER
    queue.on_event(ClusterEvent(kind, action), old, new)


def guard(fn: Callable[..., None], what: str) -> Callable[..., None]:
    def call(*args: Any) -> None:
        try:
            fn(*args)
        except Exception:  # informer handlers must not raise
            log.exception("%s handler failed", what)

    return call
