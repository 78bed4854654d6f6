"""HTTP to the API server: one pooled aiohttp session, auth, rate limiting, retries.

Requests in the urgent lane (phalanx/cluster/lanes.py) have a small pool of their own and
take their rate-limit token at once, so a backlog of binds and Events does not hold them.

Retries cover only what is safe to repeat: requests the server refused before acting on
them (429 Too Many Requests, 503 with Retry-After, a refused connection) and reads.
Everything else surfaces as a `cluster.client` error for the caller to handle.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
from pydantic_core import from_json, to_json

from phalanx.cluster.lanes import is_urgent

from .config import ConnectionConfig
from .errors import connection_error, error_from_status
from .proxy import ProxyEnvironment, proxy_for

USER_AGENT = "phalanx/0.1"
Query = Sequence[tuple[str, str]]

_RETRIABLE_CODES = (429, 503)
_MAX_ATTEMPTS = 4
URGENT_CONNECTIONS = 16  # the urgent lane's pool (as many as gang condition writes at once)


class TokenBucket:
    """Client-side rate limit (client-go's QPS/burst), so a busy controller cannot flood
    the API server. Waits are on the event loop's clock.

    Each caller reserves its token at once, as Go's `rate.Limiter.Wait` does: the bucket may
    go negative, and a caller that took a token not yet refilled sleeps until it is. Callers
    are served in the order they asked, with no lock (the event loop runs one at a time);
    a cancelled wait gives its token back."""

    def __init__(self, qps: float, burst: int) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self._tokens = float(self.burst)
        self._last: float | None = None

    async def acquire(self, *, urgent: bool = False) -> None:
        """Take a token, waiting for it unless `urgent`: an urgent caller takes it at once
        (the bucket goes further below zero), and the callers after it wait for it."""
        if self.qps <= 0:
            return
        now = asyncio.get_running_loop().time()
        if self._last is not None:
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1
        if self._tokens < 0 and not urgent:
            try:
                await asyncio.sleep(-self._tokens / self.qps)
            except asyncio.CancelledError:
                self._tokens += 1
                raise


def _ssl_context(conn: ConnectionConfig) -> ssl.SSLContext | bool:
    cfg = conn.configuration
    if not str(cfg.host).startswith("https"):
        return False
    ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
    if cfg.cert_file:
        ctx.load_cert_chain(cfg.cert_file, keyfile=cfg.key_file)
    if not cfg.verify_ssl:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


class Transport:
    def __init__(
        self,
        conn: ConnectionConfig,
        *,
        qps: float = 50.0,
        burst: int = 100,
        user_agent: str = USER_AGENT,
        request_timeout: float = 30.0,
        connections: int = 100,
        urgent_connections: int = URGENT_CONNECTIONS,
    ) -> None:
        self.conn = conn
        self.server = conn.server.rstrip("/")
        self.limiter = TokenBucket(qps, burst)
        self.request_timeout = request_timeout
        self._user_agent = user_agent
        self._fixed = self._fixed_headers()
        self._timeout = aiohttp.ClientTimeout(total=request_timeout)
        # The kubeconfig's proxy-url, else the environment's, as client-go (proxy.py).
        self.proxy: str | None = (conn.configuration.proxy
                                  or proxy_for(self.server, ProxyEnvironment.from_environ()))
        self._ssl = _ssl_context(conn)
        self._session = self._new_session(connections)
        self._urgent_connections = urgent_connections
        self._urgent_session: aiohttp.ClientSession | None = None  # made on first use
        self.requests_total = 0

    def _new_session(self, connections: int) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(limit=connections, ssl=self._ssl)
        # Large watch events (1.5 MiB objects) must fit aiohttp's line buffer.
        return aiohttp.ClientSession(connector=connector, read_bufsize=2**21)

    def _session_now(self) -> aiohttp.ClientSession:
        """The session for a request made now: the urgent lane's inside `lanes.urgent()`."""
        if not is_urgent():
            return self._session
        if self._urgent_session is None:
            self._urgent_session = self._new_session(self._urgent_connections)
        return self._urgent_session

    async def close(self) -> None:
        await self._session.close()
        if self._urgent_session is not None:
            await self._urgent_session.close()

    def _fixed_headers(self) -> list[tuple[str, str]]:
        """The headers every request carries (a list: impersonation repeats some)."""
        conn = self.conn
        headers = [("Accept", "application/json"), ("User-Agent", self._user_agent)]
        if not conn.compression:  # aiohttp would otherwise ask for gzip or deflate
            headers.append(("Accept-Encoding", "identity"))
        if conn.impersonation is not None:
            headers += conn.impersonation.headers()
        return headers

    async def _headers(self, content_type: str | None,
                       accept: str | None = None) -> list[tuple[str, str]]:
        headers = list(self._fixed)
        if accept is not None:
            headers = [("Accept", accept) if k == "Accept" else (k, v) for k, v in headers]
        if content_type:
            headers.append(("Content-Type", content_type))
        cfg = self.conn.configuration
        # get_api_key_with_prefix runs the refresh hook (rotating in-cluster token).
        token = await cfg.get_api_key_with_prefix("BearerToken")
        if token:
            headers.append(("Authorization", token))
        elif cfg.username and cfg.password:
            headers.append(
                ("Authorization", aiohttp.BasicAuth(cfg.username, cfg.password).encode()))
        return headers

    def _request_kwargs(self) -> dict[str, Any]:
        cfg = self.conn.configuration
        kwargs: dict[str, Any] = {}
        if self.proxy:
            kwargs["proxy"] = self.proxy
        if cfg.tls_server_name:
            kwargs["server_hostname"] = cfg.tls_server_name
        return kwargs

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Query = (),
        body: Mapping[str, Any] | None = None,
        content_type: str = "application/json",
        kind: str = "",
        name: str = "",
    ) -> dict[str, Any]:
        """One API call; returns the decoded JSON body or raises an ApiError."""
        raw = await self.request_bytes(method, path, query=query, body=body,
                                       content_type=content_type, kind=kind, name=name)
        return from_json(raw) if raw else {}  # type: ignore[no-any-return]

    async def request_bytes(
        self,
        method: str,
        path: str,
        *,
        query: Query = (),
        body: Mapping[str, Any] | None = None,
        content_type: str = "application/json",
        kind: str = "",
        name: str = "",
        accept: str | None = None,
    ) -> bytes:
        """As `request`, returning the raw body (for callers that parse it themselves).
        `accept` replaces the Accept header (e.g. to ask for metadata only)."""
        data = to_json(body) if body is not None else None
        url = self.server + path
        delay = 0.2
        urgent = is_urgent()
        for attempt in range(1, _MAX_ATTEMPTS + 1):
            await self.limiter.acquire(urgent=urgent)
            self.requests_total += 1
            try:
                async with self._session_now().request(
                    method,
                    url,
                    params=list(query),
                    data=data,
                    headers=await self._headers(content_type if data is not None else None,
                                                accept),
                    timeout=self._timeout,
                    **self._request_kwargs(),
                ) as resp:
                    raw = await resp.read()
                    if 200 <= resp.status < 300:
                        return raw
                    if resp.status in _RETRIABLE_CODES and attempt < _MAX_ATTEMPTS:
                        delay = _retry_after(resp.headers.get("Retry-After"), delay)
                    else:
                        raise error_from_status(resp.status, raw, kind=kind, name=name)
            except aiohttp.ClientConnectorError as e:
                # Refused before sending: safe to retry whatever the method.
                if attempt == _MAX_ATTEMPTS:
                    raise connection_error(e, self.server) from None
            except (aiohttp.ClientError, asyncio.TimeoutError) as e:
                # The request may have reached the server: only reads are repeated.
                if method != "GET" or attempt == _MAX_ATTEMPTS:
                    raise connection_error(e, self.server) from None
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)
        raise AssertionError("unreachable")  # pragma: no cover

    @asynccontextmanager
    async def stream_lines(
        self, path: str, *, query: Query, read_timeout: float, raw: bool = False
    ) -> AsyncIterator[AsyncIterator[Any]]:
        """A streaming GET (watch): yields an iterator of JSON lines, parsed (dicts) or, with
        `raw`, as the bytes of each line for the caller to parse.

        HTTP errors at the start raise ApiError; a connection failure before the stream
        starts raises ServiceUnavailable; one during the stream just ends the iterator.
        """
        await self.limiter.acquire()
        self.requests_total += 1
        try:
            resp = await self._session.get(
                self.server + path,
                params=list(query),
                headers=await self._headers(None),
                timeout=aiohttp.ClientTimeout(total=None, sock_read=read_timeout),
                **self._request_kwargs(),
            )
        except (aiohttp.ClientError, asyncio.TimeoutError) as e:
            raise connection_error(e, self.server) from None
        try:
            if resp.status != 200:
                raise error_from_status(resp.status, await resp.read())
            yield _raw_lines(resp) if raw else _json_lines(resp)
        finally:
            resp.release()


async def _json_lines(resp: aiohttp.ClientResponse) -> AsyncIterator[dict[str, Any]]:
    try:
        async for line in _raw_lines(resp):
            yield json.loads(line)
    except ValueError:
        return  # truncated: the caller resumes from its last version


async def _raw_lines(resp: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    try:
        async for line in resp.content:
            line = line.strip()
            if line:
                yield line
    except (aiohttp.ClientError, asyncio.TimeoutError):
        return  # dropped: the caller resumes from its last version


def _retry_after(header: str | None, default: float) -> float:
    try:
        return min(max(float(header), 0.05), 10.0) if header else default
    except ValueError:
        return default
