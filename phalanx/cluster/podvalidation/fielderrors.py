"""Field errors as the API server words them, and the name syntax checks pods use.

An error is a (field path, message) pair; the message starts with the kind of error as
kube-apiserver renders it ("Invalid value: \"x\": why", "Required value", "Forbidden: why",
"Unsupported value: \"x\": supported values: ...", "Duplicate value: \"x\"",
"Not found: \"x\""), so that users read the same words as from a real cluster.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from phalanx.cluster.selectors import (
    DNS_SUBDOMAIN_FMT,
    label_key_errors,
    label_value_errors,
    regex_error,
    too_long,
)
from phalanx.cluster.selectors import dns_subdomain_errors as _subdomain_errors

FieldError = tuple[str, str]
FieldErrors = list[FieldError]


def render(value: Any) -> str:
    """A bad value as the API server prints it: strings quoted, numbers bare, else JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _with(head: str, detail: str) -> str:
    return f"{head}: {detail}" if detail else head


def invalid(path: str, value: Any, detail: str = "") -> FieldError:
    return path, _with(f"Invalid value: {render(value)}", detail)


def required(path: str, detail: str = "") -> FieldError:
    return path, _with("Required value", detail)


def forbidden(path: str, detail: str) -> FieldError:
    return path, _with("Forbidden", detail)


def duplicate(path: str, value: Any) -> FieldError:
    return path, f"Duplicate value: {render(value)}"


def not_found(path: str, value: Any, detail: str = "") -> FieldError:
    return path, _with(f"Not found: {render(value)}", detail)


def not_supported(path: str, value: Any, supported: Iterable[str]) -> FieldError:
    allowed = ", ".join(json.dumps(s) for s in supported)
    return path, _with(f"Unsupported value: {render(value)}",
                       f"supported values: {allowed}" if allowed else "")


def each_invalid(path: str, value: Any, whys: Iterable[str]) -> FieldErrors:
    """One Invalid error per reason (the API server reports each separately)."""
    return [invalid(path, value, why) for why in whys]


# ------------------------------------------------------------------------- name syntax

_DNS_LABEL_WHY = ("a lowercase RFC 1123 label must consist of lower case alphanumeric "
                  "characters or '-', and must start and end with an alphanumeric character")
_DNS_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_LABEL_RE = re.compile(f"^{_DNS_LABEL_FMT}$")
_DNS_SUBDOMAIN_RE = re.compile(f"^{DNS_SUBDOMAIN_FMT}$")


@lru_cache(maxsize=4096)
def dns_label_errors(name: str) -> tuple[str, ...]:
    """Why `name` is not a DNS-1123 label (at most 63 characters), or ()."""
    errs = [too_long(63, "characters")] if len(name) > 63 else []
    if not _DNS_LABEL_RE.match(name):
        # A valid subdomain that is no label can only have dots in it.
        errs.append("must not contain dots" if _DNS_SUBDOMAIN_RE.match(name) else
                    regex_error(_DNS_LABEL_WHY, _DNS_LABEL_FMT, "my-name", "123-abc"))
    return tuple(errs)


def dns_subdomain_errors(name: str) -> tuple[str, ...]:
    """Why `name` is not a valid object name (node, claim; a DNS-1123 subdomain), or ()."""
    return _subdomain_errors(name, "characters")


def qualified_name_errors(name: str) -> tuple[str, ...]:
    """A qualified name (`[prefix/]name`): label keys, scheduling gates, topology keys."""
    return label_key_errors(name)


__all__ = [
    "FieldError", "FieldErrors", "dns_label_errors", "dns_subdomain_errors", "duplicate",
    "each_invalid", "forbidden", "invalid", "label_key_errors", "label_value_errors",
    "not_found", "not_supported", "qualified_name_errors", "render", "required",
]
