"""API server failures (metav1.Status) as the `cluster.client` errors every layer handles."""

from __future__ import annotations

import json
import re
from typing import Any

from phalanx.cluster.client import (
    AlreadyExists,
    ApiError,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    ServerError,
    ServiceUnavailable,
)


_UNKNOWN_FIELD = re.compile(r'unknown field \\?"([^"\\]+)\\?"')


def _status_dict(body: bytes | str | dict[str, Any] | None) -> dict[str, Any]:
    if isinstance(body, dict):
        return body
    if not body:
        return {}
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        text = body.decode(errors="replace") if isinstance(body, bytes) else body
        return {"message": text.strip()[:500]}
    return data if isinstance(data, dict) else {}


def error_from_status(
    code: int, body: bytes | str | dict[str, Any] | None, *, kind: str = "", name: str = ""
) -> ApiError:
    """The ApiError for an HTTP status code and its (usually metav1.Status) body."""
    status = _status_dict(body)
    message = str(status.get("message") or f"HTTP {code}")
    reason = str(status.get("reason") or "")
    details = status.get("details") or {}
    name = name or str(details.get("name") or "")
    kind = kind or str(details.get("kind") or "")
    if code == 404:
        if not details.get("name") and "could not find the requested resource" in message:
            # The type itself is missing, not an object of it.
            message = (
                f"{kind or 'this kind'} is not served by the API server ({message}); "
                "are the CRDs installed? (phalanx manifests crds | kubectl apply -f -)"
            )
        return NotFound(message, kind=kind, name=name)
    if code == 409:
        cls = AlreadyExists if reason == "AlreadyExists" else Conflict
        return cls(message, kind=kind, name=name)
    if code in (400, 422):
        causes = details.get("causes") or []
        field = next((str(c["field"]) for c in causes if c.get("field")), "")
        unknown = _UNKNOWN_FIELD.search(message)
        if unknown and (not field or field == "patch"):
            # Strict field validation names the field only in the message.
            field = unknown.group(1).lstrip(".")
        return Invalid(message, kind=kind, name=name, field=field)
    if code == 410:
        return Gone(message, kind=kind, name=name)
    if code in (401, 403):
        if code == 401:
            message = f"unauthorized: {message} (check the kubeconfig credentials)"
        return Forbidden(message, kind=kind, name=name)
    if code in (429, 503):
        return ServiceUnavailable(message, kind=kind, name=name)
    return ServerError(message, kind=kind, name=name)


def connection_error(exc: BaseException, server: str) -> ServiceUnavailable:
    """A transport failure (refused, reset, timed out) as a retriable API error."""
    what = type(exc).__name__
    detail = str(exc) or what
    return ServiceUnavailable(f"cannot reach the API server at {server}: {detail}")
