"""Impersonation and compression from a kubeconfig (cluster/kube/impersonation.py, config.py):
what is read, what is refused, and what the transport sends.

Peer: client-go. `TestHeaderEscapeRoundTrip` (transport/round_trippers_test.go) is ported as
a property: an escaped extra key, unescaped as the API server does (url.PathUnescape),
gives the key back. Its table of impersonation headers is not ported row by row; the
real-server test (test_impersonation_real.py) compares with kubectl instead."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
import yaml
from aiohttp import web
from hypothesis import given
from hypothesis import strategies as st

from phalanx.cluster.kube import KubeConfigError, connection_for, load_connection
from phalanx.cluster.kube.impersonation import (
    Impersonation,
    header_key_escape,
    impersonation_from,
)
from phalanx.cluster.kube.transport import Transport

from .local_server import serve


@pytest.mark.parametrize(("key", "escaped"), [
    ("scopes", "scopes"),
    ("example.com/scopes", "example.com%2Fscopes"),
    ("a%b", "a%25b"),
    ("a b", "a%20b"),
    ("ünï", "%C3%BCn%C3%AF"),
    ("x_y-z.~", "x_y-z.~"),
])
def test_extra_keys_are_escaped_as_client_go_escapes_them(key, escaped):
    assert header_key_escape(key) == escaped


@given(st.text(min_size=1))
def test_header_escape_round_trip(key):
    escaped = header_key_escape(key)
    assert escaped.isascii() and all(c not in escaped for c in " /:\t\r\n")
    assert unquote(escaped, errors="strict") == key


def test_headers_in_client_go_order():
    imp = Impersonation("alice", "u-1", ("g1", "g2"),
                        {"example.com/scopes": ("read", "write"), "team": ("a",)})
    assert imp.headers() == [
        ("Impersonate-User", "alice"), ("Impersonate-Uid", "u-1"),
        ("Impersonate-Group", "g1"), ("Impersonate-Group", "g2"),
        ("Impersonate-Extra-example.com%2Fscopes", "read"),
        ("Impersonate-Extra-example.com%2Fscopes", "write"),
        ("Impersonate-Extra-team", "a")]


def test_no_impersonation_without_its_fields():
    assert impersonation_from(None, "u") is None
    assert impersonation_from({"token": "t"}, "u") is None
    assert impersonation_from({"as": "", "as-groups": []}, "u") is None


@pytest.mark.parametrize(("user", "message"), [
    ({"as-groups": ["g"]}, "user 'me': requesting uid, groups or user-extra without"),
    ({"as-uid": "1"}, "requesting uid, groups or user-extra without impersonating a user"),
    ({"as-user-extra": {"k": ["v"]}}, "without impersonating a user"),
    ({"as": "x", "as-groups": "g"}, "user 'me': as-groups must be a list of strings"),
    ({"as": 5}, "user 'me': as must be a string"),
    ({"as": "x", "as-user-extra": ["k"]}, "as-user-extra must be a map of lists"),
    ({"as": "x", "as-user-extra": {"k": "v"}}, "as-user-extra[k] must be a list of strings"),
])
def test_what_kubectl_refuses_is_refused_with_the_field_named(user, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        impersonation_from(user, "me")


def _kubeconfig(path: Path, user: dict[str, Any], cluster: dict[str, Any] | None = None) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:6443",
                                               "insecure-skip-tls-verify": True,
                                               **(cluster or {})}}],
        "users": [{"name": "me", "user": {"token": "secret", **user}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "me"}}]}))
    return path


def test_a_kubeconfig_user_impersonates_and_a_cluster_disables_compression(tmp_path):
    path = _kubeconfig(tmp_path / "kc", {"as": "alice", "as-groups": ["g"],
                                         "as-user-extra": {"k": ["v"]}},
                       {"disable-compression": True})
    conn = asyncio.run(load_connection(path))
    assert conn.impersonation == Impersonation("alice", "", ("g",), {"k": ("v",)})
    assert conn.compression is False
    plain = asyncio.run(load_connection(_kubeconfig(tmp_path / "plain", {})))
    assert plain.impersonation is None and plain.compression is True


@pytest.mark.parametrize(("user", "cluster", "message"), [
    ({"as-groups": ["g"]}, {}, "user 'me': requesting uid"),
    ({}, {"disable-compression": "yes"}, "disable-compression must be true or false"),
])
def test_a_bad_kubeconfig_field_is_one_line_naming_it(tmp_path, user, cluster, message):
    path = _kubeconfig(tmp_path / "kc", user, cluster)
    with pytest.raises(KubeConfigError, match=f"kubeconfig {path}: .*{message}"):
        asyncio.run(load_connection(path))


async def _sent_headers(**conn_kwargs: Any) -> Any:
    seen = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(request.headers)
        return web.json_response({"kind": "Status"})

    runner, port = await serve(handler)
    transport = Transport(connection_for(f"http://127.0.0.1:{port}", token="t", **conn_kwargs),
                          qps=0, burst=1)
    try:
        await transport.request("GET", "/api/v1/pods")
        await transport.request("POST", "/api/v1/namespaces/d/pods", body={"a": 1})
    finally:
        await transport.close()
        await runner.cleanup()
    return seen


def test_every_request_carries_the_impersonation_and_asks_for_no_compression():
    imp = Impersonation("alice", "u-1", ("g1", "g2"), {"example.com/scopes": ("read",)})
    for headers in asyncio.run(_sent_headers(impersonation=imp, compression=False)):
        assert headers.getall("Impersonate-User") == ["alice"]
        assert headers.getall("Impersonate-Uid") == ["u-1"]
        assert headers.getall("Impersonate-Group") == ["g1", "g2"]
        assert headers.getall("Impersonate-Extra-example.com%2Fscopes") == ["read"]
        assert headers["Accept-Encoding"] == "identity"
        assert headers["Authorization"] == "Bearer t"


def test_by_default_no_impersonation_and_compressed_answers_accepted():
    for headers in asyncio.run(_sent_headers()):
        assert not [k for k in headers if k.lower().startswith("impersonate-")]
        assert "gzip" in headers["Accept-Encoding"]
