"""The proxy to reach the API server through, from the environment, as kubectl finds it.

client-go takes a kubeconfig cluster's `proxy-url` first, and otherwise Go's
`http.ProxyFromEnvironment` (golang.org/x/net/http/httpproxy):
- HTTPS_PROXY for an https server, HTTP_PROXY for an http one (each also in lower case,
  the upper case first); a value without a scheme means http://;
- never for `localhost` or a loopback address;
- not for a server NO_PROXY (or no_proxy) excludes. Its comma-separated entries are `*`
  (nothing is proxied), an IP address or CIDR (`10.96.0.0/12`, as in-cluster settings list
  the service network), a domain (`foo.com` matches it and its subdomains, `.foo.com` and
  `*.foo.com` only the subdomains), an IP or domain with a port (then only that port);
- HTTP_PROXY is refused in a CGI environment (REQUEST_METHOD set), where a client could have
  set it.

aiohttp reads the same variables only with `trust_env`, by other rules (no CIDR, no loopback
exception); so the transport is given the proxy this module finds. SOCKS5 proxies, which
client-go supports, need a package aiohttp does not ship: one is refused, not ignored.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from .config import KubeConfigError

_DEFAULT_PORTS = {"http": "80", "https": "443", "socks5": "1080"}


class ProxyError(KubeConfigError):
    """A proxy setting that cannot be honoured (said with the variable that holds it)."""


@dataclass(frozen=True, slots=True)
class ProxyEnvironment:
    http_proxy: str = ""
    https_proxy: str = ""
    no_proxy: str = ""
    cgi: bool = False

    @classmethod
    def from_environ(cls, env: Mapping[str, str] | None = None) -> ProxyEnvironment:
        env = os.environ if env is None else env

        def first(*names: str) -> str:
            return next((env[n] for n in names if env.get(n)), "")

        return cls(http_proxy=first("HTTP_PROXY", "http_proxy"),
                   https_proxy=first("HTTPS_PROXY", "https_proxy"),
                   no_proxy=first("NO_PROXY", "no_proxy"),
                   cgi=bool(env.get("REQUEST_METHOD")))


def _parse_proxy(value: str) -> str | None:
    """The proxy URL a variable's value means (host[:port] alone: http://)."""
    if not value:
        return None
    parts = urlsplit(value)
    if not parts.scheme or not parts.netloc:
        return "http://" + value
    return value


def proxy_for(url: str, env: ProxyEnvironment) -> str | None:
    """The proxy URL for requests to `url`, or None to connect directly."""
    parts = urlsplit(url)
    if parts.scheme == "https":
        proxy, variable = _parse_proxy(env.https_proxy), "HTTPS_PROXY"
    elif parts.scheme == "http":
        proxy, variable = _parse_proxy(env.http_proxy), "HTTP_PROXY"
        if proxy is not None and env.cgi:
            raise ProxyError("refusing to use HTTP_PROXY value in CGI environment "
                             "(REQUEST_METHOD is set)")
    else:
        return None
    if proxy is None:
        return None
    host = parts.hostname or ""
    port = str(parts.port) if parts.port else _DEFAULT_PORTS.get(parts.scheme, "")
    if not use_proxy(host, port, env.no_proxy):
        return None
    if urlsplit(proxy).scheme.startswith("socks"):
        raise ProxyError(f"{variable}={proxy}: SOCKS proxies are not supported; "
                         "use an HTTP proxy")
    return proxy


def redacted(url: str) -> str:
    """A proxy URL as logs may show it: without the password it may carry."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return parts._replace(netloc=netloc).geturl()


def use_proxy(host: str, port: str, no_proxy: str) -> bool:
    """Whether `host`:`port` goes through the proxy under `no_proxy` (Go's useProxy)."""
    host = host.strip().lower().strip("[]")
    if host == "localhost":
        return False
    try:
        ip: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(host)
    except ValueError:
        ip = None
    if ip is not None and ip.is_loopback:
        return False
    for entry in no_proxy.split(","):
        entry = entry.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return False
        if _excludes(entry, host, port, ip):
            return False
    return True


def _excludes(entry: str, host: str, port: str,
              ip: ipaddress.IPv4Address | ipaddress.IPv6Address | None) -> bool:
    if "/" in entry:  # IPv4/CIDR, IPv6/CIDR
        try:
            network = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            return False
        return ip is not None and ip.version == network.version and ip in network
    entry_host, entry_port = _split_host_port(entry)
    if not entry_host:
        return False  # no host part: malformed, ignored
    try:
        entry_ip = ipaddress.ip_address(entry_host)
    except ValueError:
        entry_ip = None
    if entry_ip is not None:
        return ip is not None and ip == entry_ip and entry_port in ("", port)
    if ip is not None:
        return False  # a domain never matches an address
    if entry_host.startswith("*."):
        entry_host = entry_host[1:]
    match_host = not entry_host.startswith(".")
    if match_host:
        entry_host = "." + entry_host
    if host.endswith(entry_host) or (match_host and host == entry_host[1:]):
        return entry_port in ("", port)
    return False


def _split_host_port(entry: str) -> tuple[str, str]:
    """`host:port`, `[v6]:port`, or a bare host or address (no port)."""
    if entry.startswith("["):
        end = entry.find("]")
        if end < 0:
            return entry, ""
        rest = entry[end + 1:]
        return entry[1:end], rest[1:] if rest.startswith(":") else ""
    if entry.count(":") == 1:
        host, _, port = entry.partition(":")
        return host, port
    return entry, ""  # a bare IPv6 address, or a host
