"""The urgent lane: the few requests that must not wait behind a client's backlog.

A scheduler binding a burst queues thousands of binds and Events in its client (the
connection pool, the rate limiter) faster than the API server answers them. Measured with
`phalanx bench kube` (5,000 nodes, 136 gangs), a gang's GangScheduled condition waited
behind that backlog: its write took up to 4 s, and the drain that writes the conditions
stalled with it. kube-scheduler writes its PodGroup status before its binds end.

Requests made inside `with urgent():` (and in tasks started there, as a context variable
follows them) take the client's urgent lane. On a real API server (kube/transport.py) that
is a connection pool of their own and a token taken at once from the rate limiter: still
counted, so the requests after it wait for it and the client's rate holds. The embedded
cluster has no queue to jump and ignores it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_URGENT: ContextVar[bool] = ContextVar("phalanx_urgent_lane", default=False)


@contextmanager
def urgent() -> Iterator[None]:
    """Requests in the block take the urgent lane."""
    token = _URGENT.set(True)
    try:
        yield
    finally:
        _URGENT.reset(token)


def is_urgent() -> bool:
    return _URGENT.get()
