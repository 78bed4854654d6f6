"""Read-modify-write with conflict retries (client-go's `RetryOnConflict`), on any Client."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from phalanx.api.base import Resource
from phalanx.cluster.client import Client, Conflict

T = TypeVar("T", bound=Resource)

Mutation = Callable[[T], bool | None | Awaitable[bool | None]]


async def update_with_retry(
    client: Client,
    kind: type[T],
    name: str,
    namespace: str | None,
    mutate: Mutation[T],
    *,
    status: bool = False,
    attempts: int = 5,
    backoff: float = 0.01,
) -> T:
    """Apply `mutate` to a fresh read and write it back, re-reading on Conflict.

    `mutate` changes the object in place and returns False to skip the write (nothing to
    do). Raises NotFound if the object is gone, Conflict after `attempts` lost races.
    """
    delay = backoff
    for attempt in range(1, attempts + 1):
        obj = await client.get(kind, name, namespace)
        result = mutate(obj)
        if isinstance(result, Awaitable):
            result = await result
        if result is False:
            return obj
        try:
            if status:
                return await client.update_status(obj)
            return await client.update(obj)
        except Conflict:
            if attempt == attempts:
                raise
        # Someone else wrote in between: a short, growing pause spreads the retries.
        await asyncio.sleep(delay)
        delay = min(delay * 2, 1.0)
    raise AssertionError("unreachable")  # pragma: no cover
