"""A local aiohttp server for transport tests: what the client sends, and when."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web


async def serve(handler: Callable[[web.Request], Awaitable[web.Response]]
                ) -> tuple[web.AppRunner, int]:
    """`handler` for every path and method on 127.0.0.1; returns the runner (clean it up)
    and the port."""
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
