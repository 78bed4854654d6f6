"""The cyclic garbage collector for a long-running service, tuned once it has warmed up.

A scheduler on a real cluster holds every Node and Pod of its informers as pydantic models
(about a hundred Python objects each) while it churns through short-lived JSON and copies.
With CPython's default thresholds (700, 10, 10) the full collections walk that whole heap
again and again: measured with `phalanx bench kube` (5,000 nodes, 5,000 pods) they took
17-22% of `phalanx scheduler`'s CPU time, in pauses of up to half a second; for `phalanx
operator` under Grove's ScaleTest_1000 (1,000 pods) 3.9 of its 18.1 s, pauses of up to
0.4 s. Both services call this once their caches have synced. Freezing what
exists after the informers' first sync (those objects are never scanned again; they are
still freed by reference counting as the informers replace them) and collecting the young
generation less often removes most of it. Cycles created later are still collected.

Before that, `collect_rarely` applies the same thresholds from the start: the first sync
builds tens of thousands of objects that are all kept, and with the default thresholds full
collections walked that growing heap again and again (0.9 s of the scheduler's first 2.3 s
at 5,000 nodes and 5,000 pods, before its first bind).

The embedded cluster is the same kind of process: every object a pydantic model, replaced on
each write, millions of them long-lived in a large run. `tuned_gc` gives one run inside a
process that goes on afterwards (`phalanx run`, the benchmarks, tests calling them) the same
settings, and hands the process back as it found it.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator
from contextlib import contextmanager

log = logging.getLogger(__name__)

# gen0 every 50,000 allocations (not 700); a full collection after 100 gen1 ones (not 10).
SERVICE_THRESHOLDS = (50_000, 20, 100)


def collect_rarely(thresholds: tuple[int, int, int] = SERVICE_THRESHOLDS) -> None:
    """Collect as rarely as after warm-up, from now on (a service's start)."""
    gc.set_threshold(*thresholds)


def freeze_after_warmup(thresholds: tuple[int, int, int] = SERVICE_THRESHOLDS) -> int:
    """Collect the youngest generation, freeze every object left, set `thresholds`;
    returns the frozen count.

    Not a full collection: measured in the scheduler at 5,000 nodes and 5,000 pods, just
    before its first bind, collecting the two young generations found 47 unreachable
    objects among 402,000 (0.12 s) and a full collection then none more (0.22 s). What
    little garbage the older generations hold is frozen with the rest, for good."""
    gc.collect(0)
    gc.freeze()
    collect_rarely(thresholds)
    frozen = gc.get_freeze_count()
    log.info("garbage collector: %d start-up objects frozen, thresholds %s", frozen, thresholds)
    return frozen


def skip_collection_at_exit() -> None:
    """The process is exiting: freeze every object, so that the interpreter's last collection
    does not walk the whole heap to free its cycles one by one (the system takes the memory
    back at once). Measured: 3.3 s between the end of `phalanx bench e2e --pods 10000` and
    the process's exit, 2.6 s after `phalanx run` of 8,000 pods; 0.1 s frozen. atexit
    handlers and weakref finalizers (temporary files, logging) still run; objects left in
    reference cycles are not finalized, as in a process that is killed."""
    gc.freeze()


@contextmanager
def tuned_gc(thresholds: tuple[int, int, int] = SERVICE_THRESHOLDS, *,
             enabled: bool = True) -> Iterator[None]:
    """`freeze_after_warmup` for the block (what exists on entry is frozen); on exit every
    frozen object rejoins the collector and the previous thresholds come back.
    `enabled=False`: CPython's settings, untouched (to measure what the tuning buys)."""
    if not enabled:
        yield
        return
    previous = gc.get_threshold()
    freeze_after_warmup(thresholds)
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*previous)
