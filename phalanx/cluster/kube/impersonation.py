"""Impersonation from a kubeconfig user: `as`, `as-uid`, `as-groups`, `as-user-extra`.

kubectl and client-go send these on every request as `Impersonate-User`, `Impersonate-Uid`,
`Impersonate-Group` (once per group) and `Impersonate-Extra-<key>` (once per value), and the
API server then authorizes each request as that identity, once it has checked that the real
user may impersonate it. kubernetes_asyncio, which loads the rest of the kubeconfig, does not
read these fields: without this module a context saying `as: X` would act, silently, as the
real user.

As client-go's kubeconfig validation does, a uid, groups or extra without `as` are refused.
An extra key is %-escaped in its header name the way client-go escapes it (every byte that is
not an HTTP token character, and `%` itself), so that the server reads the key back intact.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# RFC 7230 token characters, less `%` (escaped so that the server's unescaping is exact).
_TOKEN = frozenset(string.ascii_letters + string.digits + "!#$&'*+-.^_`|~")

FIELDS = ("as", "as-uid", "as-groups", "as-user-extra")


@dataclass(frozen=True, slots=True)
class Impersonation:
    user: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def headers(self) -> list[tuple[str, str]]:
        """The request headers, in client-go's order (a header repeats per group and value)."""
        out = [("Impersonate-User", self.user)]
        if self.uid:
            out.append(("Impersonate-Uid", self.uid))
        out += [("Impersonate-Group", g) for g in self.groups]
        for key, values in self.extra.items():
            name = "Impersonate-Extra-" + header_key_escape(key)
            out += [(name, v) for v in values]
        return out


def header_key_escape(key: str) -> str:
    """`key` as a header-name suffix: each byte outside the token characters, and `%`, as
    %XX (upper-case hex), as client-go's headerKeyEscape writes it."""
    return "".join(chr(b) if chr(b) in _TOKEN else f"%{b:02X}" for b in key.encode())


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where} must be a list of strings")
    return tuple(value)


def impersonation_from(user: Mapping[str, Any] | None, name: str) -> Impersonation | None:
    """The impersonation a kubeconfig user entry (`users[].user`) asks for, or None.

    Raises ValueError naming the field for a wrong type, or for a uid, groups or extra
    without `as` (the message kubectl gives)."""
    if not user or not any(f in user for f in FIELDS):
        return None
    where = f"user {name!r}" if name else "user"
    as_user = user.get("as") or ""
    uid = user.get("as-uid") or ""
    for key, value in (("as", as_user), ("as-uid", uid)):
        if not isinstance(value, str):
            raise ValueError(f"{where}: {key} must be a string")
    groups = _strings(user.get("as-groups"), f"{where}: as-groups")
    raw_extra = user.get("as-user-extra") or {}
    if not isinstance(raw_extra, Mapping):
        raise ValueError(f"{where}: as-user-extra must be a map of lists of strings")
    extra = {str(k): _strings(v, f"{where}: as-user-extra[{k}]") for k, v in raw_extra.items()}
    extra = {k: v for k, v in extra.items() if v}
    if not as_user:
        if uid or groups or extra:
            raise ValueError(f"{where}: requesting uid, groups or user-extra without "
                             "impersonating a user (set as)")
        return None
    return Impersonation(as_user, uid, groups, extra)
