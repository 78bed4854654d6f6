"""The API server's proxy from the environment (cluster/kube/proxy.py), as Go's net/http
finds it for client-go and kubectl.

Ported from golang.org/x/net/http/httpproxy's proxy_test.go, one test per Go test:
TestProxyForURL (its table, row by row), TestFromEnvironment,
TestFromEnvironmentWithRequestMethod, TestFromEnvironmentLowerCase, TestUseProxy (its
table), TestInvalidNoProxy, TestAllNoProxy. Where we differ: a SOCKS5 proxy, which Go
returns, is refused here (aiohttp cannot use one), and the CGI refusal is our ProxyError
with Go's message. BenchmarkProxyForURL is a benchmark, not ported."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web

from phalanx.cluster.kube import connection_for
from phalanx.cluster.kube.proxy import (
    ProxyEnvironment,
    ProxyError,
    proxy_for,
    redacted,
    use_proxy,
)
from phalanx.cluster.kube.transport import Transport

from .local_server import serve

E = ProxyEnvironment

# (environment, request URL or "" for http://example.com, the proxy or None, error)
PROXY_FOR_URL = [
    (E(http_proxy="127.0.0.1:8080"), "", "http://127.0.0.1:8080", None),
    (E(http_proxy="cache.corp.example.com:1234"), "", "http://cache.corp.example.com:1234",
     None),
    (E(http_proxy="cache.corp.example.com"), "", "http://cache.corp.example.com", None),
    (E(http_proxy="https://cache.corp.example.com"), "", "https://cache.corp.example.com",
     None),
    (E(http_proxy="http://127.0.0.1:8080"), "", "http://127.0.0.1:8080", None),
    (E(http_proxy="https://127.0.0.1:8080"), "", "https://127.0.0.1:8080", None),
    (E(http_proxy="socks5://127.0.0.1"), "", None, "SOCKS proxies are not supported"),
    # Don't use secure for http.
    (E(http_proxy="http.proxy.tld", https_proxy="secure.proxy.tld"), "http://insecure.tld/",
     "http://http.proxy.tld", None),
    # Use secure for https.
    (E(http_proxy="http.proxy.tld", https_proxy="secure.proxy.tld"), "https://secure.tld/",
     "http://secure.proxy.tld", None),
    (E(http_proxy="http.proxy.tld", https_proxy="https://secure.proxy.tld"),
     "https://secure.tld/", "https://secure.proxy.tld", None),
    # Issue 16405: no HTTP_PROXY in a CGI environment, where it can be attacker-controlled.
    (E(http_proxy="http://10.1.2.3:8080", cgi=True), "", None,
     "refusing to use HTTP_PROXY value in CGI environment"),
    # HTTPS proxy is still used in a CGI environment (Go's historical behaviour).
    (E(https_proxy="https://secure.proxy.tld", cgi=True), "https://secure.tld/",
     "https://secure.proxy.tld", None),
    (E(), "", None, None),
    (E(no_proxy="example.com", http_proxy="proxy"), "http://example.com/", None, None),
    (E(no_proxy=".example.com", http_proxy="proxy"), "http://example.com/", "http://proxy",
     None),
    (E(no_proxy="ample.com", http_proxy="proxy"), "http://example.com/", "http://proxy", None),
    (E(no_proxy="example.com", http_proxy="proxy"), "http://foo.example.com/", None, None),
    (E(no_proxy=".foo.com", http_proxy="proxy"), "http://example.com/", "http://proxy", None),
]


@pytest.mark.parametrize(("env", "req", "want", "error"), PROXY_FOR_URL)
def test_proxy_for_url(env: ProxyEnvironment, req: str, want: str | None,
                       error: str | None) -> None:
    url = req or "http://example.com"
    if error is not None:
        with pytest.raises(ProxyError, match=error):
            proxy_for(url, env)
    else:
        assert proxy_for(url, env) == want


def test_from_environment() -> None:
    env = {"HTTP_PROXY": "httpproxy", "HTTPS_PROXY": "httpsproxy", "NO_PROXY": "noproxy",
           "REQUEST_METHOD": ""}
    assert E.from_environ(env) == E("httpproxy", "httpsproxy", "noproxy", cgi=False)


def test_from_environment_with_request_method() -> None:
    env = {"HTTP_PROXY": "httpproxy", "HTTPS_PROXY": "httpsproxy", "NO_PROXY": "noproxy",
           "REQUEST_METHOD": "PUT"}
    assert E.from_environ(env) == E("httpproxy", "httpsproxy", "noproxy", cgi=True)


def test_from_environment_lower_case() -> None:
    env = {"http_proxy": "httpproxy", "https_proxy": "httpsproxy", "no_proxy": "noproxy",
           "REQUEST_METHOD": ""}
    assert E.from_environ(env) == E("httpproxy", "httpsproxy", "noproxy", cgi=False)
    # Upper case first, as Go's getEnvAny.
    assert E.from_environ({"HTTPS_PROXY": "upper", "https_proxy": "lower"}).https_proxy == "upper"


NO_PROXY = ("foobar.com, .barbaz.net, *.wildcard.io, 192.168.1.1, 192.168.1.2:81, "
            "192.168.1.3:80, 10.0.0.0/30, 2001:db8::52:0:1, [2001:db8::52:0:2]:443, "
            "[2001:db8::52:0:3]:80, 2002:db8:a::45/64")

USE_PROXY = [
    # Never proxy localhost:
    ("localhost", False), ("127.0.0.1", False), ("127.0.0.2", False), ("[::1]", False),
    ("[::2]", True),  # not a loopback address
    ("192.168.1.1", False),  # matches exact IPv4
    ("192.168.1.2", True),  # ports do not match
    ("192.168.1.3", False),  # matches exact IPv4:port
    ("192.168.1.4", True),  # no match
    ("10.0.0.2", False),  # matches IPv4/CIDR
    ("[2001:db8::52:0:1]", False),  # matches exact IPv6
    ("[2001:db8::52:0:2]", True),  # no match
    ("[2001:db8::52:0:3]", False),  # matches exact [IPv6]:port
    ("[2002:db8:a::123]", False),  # matches IPv6/CIDR
    ("[fe80::424b:c8be:1643:a1b6]", True),  # no match
    ("barbaz.net", True),  # does not match as .barbaz.net
    ("www.barbaz.net", False),  # does match as .barbaz.net
    ("foobar.com", False),  # does match as foobar.com
    ("www.foobar.com", False),  # match because NO_PROXY includes "foobar.com"
    ("foofoobar.com", True),  # not match as a part of foobar.com
    ("baz.com", True),  # not match as a part of barbaz.com
    ("localhost.net", True),  # not match as suffix of address
    ("local.localhost", True),  # not match as prefix as address
    ("barbarbaz.net", True),  # not match, wrong domain
    ("wildcard.io", True),  # does not match as *.wildcard.io
    ("nested.wildcard.io", False),  # match as *.wildcard.io
    ("awildcard.io", True),  # not a match because of '*'
]


@pytest.mark.parametrize(("host", "match"), USE_PROXY)
def test_use_proxy(host: str, match: bool) -> None:
    assert use_proxy(host, "80", NO_PROXY) is match


def test_invalid_no_proxy() -> None:
    assert use_proxy("example.com", "80", ":1") is True  # ignored, no error


@pytest.mark.parametrize(("host", "match"), USE_PROXY)
def test_all_no_proxy(host: str, match: bool) -> None:
    assert use_proxy(host, "80", "*") is False


def test_a_service_network_in_no_proxy_reaches_the_api_server_directly() -> None:
    """In a pod: KUBERNETES_SERVICE_HOST in the service CIDR that NO_PROXY lists."""
    env = E(https_proxy="http://proxy.corp:3128", no_proxy="10.96.0.0/12,.svc,.cluster.local")
    assert proxy_for("https://10.96.0.1:443", env) is None
    assert proxy_for("https://kubernetes.default.svc", env) is None
    assert proxy_for("https://api.example.com:6443", env) == "http://proxy.corp:3128"


async def _through(proxy_env: dict[str, str], monkeypatch: pytest.MonkeyPatch,
                   kubeconfig_proxy: str | None = None) -> list[str]:
    """Requests a Transport to http://api.example.invalid makes, as the local 'proxy' sees
    them (aiohttp sends a proxied plain-http request in absolute form)."""
    seen: list[str] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(request.raw_path)  # absolute form: the request was for another host
        return web.json_response({"kind": "Status"})

    runner, port = await serve(handler)
    for key in ("HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy", "REQUEST_METHOD"):
        monkeypatch.delenv(key, raising=False)
    for key, value in proxy_env.items():
        monkeypatch.setenv(key, value.format(port=port))
    conn = connection_for("http://api.example.invalid:8080")
    if kubeconfig_proxy is not None:
        conn.configuration.proxy = kubeconfig_proxy.format(port=port)
    transport = Transport(conn, qps=0, burst=1)
    try:
        await asyncio.wait_for(transport.request("GET", "/version"), 10)
    finally:
        await transport.close()
        await runner.cleanup()
    return seen


def test_requests_go_through_the_environments_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = asyncio.run(_through({"HTTP_PROXY": "127.0.0.1:{port}"}, monkeypatch))
    assert seen == ["http://api.example.invalid:8080/version"]


def test_the_kubeconfigs_proxy_url_wins_over_the_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen = asyncio.run(_through({"HTTP_PROXY": "http://127.0.0.1:1"}, monkeypatch,
                                kubeconfig_proxy="http://127.0.0.1:{port}"))
    assert seen == ["http://api.example.invalid:8080/version"]


def test_a_socks_proxy_is_refused_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "socks5://127.0.0.1:1080")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with pytest.raises(ProxyError, match="HTTPS_PROXY=socks5://127.0.0.1:1080"):
        Transport(connection_for("https://api.example.invalid:6443"), qps=0, burst=1)


def test_the_log_line_hides_a_proxy_password() -> None:
    assert redacted("http://user:secret@proxy.corp:3128") == "http://user:***@proxy.corp:3128"
    assert redacted("http://proxy.corp:3128") == "http://proxy.corp:3128"


