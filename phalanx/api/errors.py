"""Readable errors for bad manifests: field path (camelCase), why, and a suggestion.

`ManifestError` is what users see for any bad input (YAML, unknown kinds, wrong types,
unknown or missing fields, bad configuration); `field_errors` turns a pydantic
ValidationError into `FieldError`s so nobody ever sees a pydantic traceback.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Union

from pydantic import BaseModel, ValidationError

from .duration import DURATION_PATTERN
from .quantity import QUANTITY_PATTERN


@dataclass(frozen=True, slots=True)
class FieldError:
    """One problem: `path` is camelCase (`spec.template.cliques[0].spec.replicas`)."""

    path: str
    message: str
    line: int | None = None  # 1-based line in the source YAML, when known

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line else ""
        return f"{where}{self.path}: {self.message}" if self.path else f"{where}{self.message}"


@dataclass(eq=False)
class ManifestError(ValueError):
    """Bad input. The message names the file, the document, the object and each field."""

    message: str
    source: str | None = None
    document: int | None = None  # 1-based
    obj: str | None = None  # "PodCliqueSet/my-pcs"
    errors: list[FieldError] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(str(self))

    def __str__(self) -> str:
        head = []
        if self.source:
            head.append(self.source)
        if self.document is not None:
            head.append(f"document {self.document}")
        prefix = ", ".join(head)
        if self.obj:
            prefix = f"{prefix} ({self.obj})" if prefix else self.obj
        if not self.errors:
            return f"{prefix}: {self.message}" if prefix else self.message
        if len(self.errors) == 1:
            return f"{prefix}: {self.errors[0]}" if prefix else str(self.errors[0])
        lines = [f"{prefix}: {len(self.errors)} problems" if prefix else self.message]
        lines += [f"  {e}" for e in self.errors]
        return "\n".join(lines)


def object_label(data: Any) -> str | None:
    """"Kind/name" from raw data, for messages about objects that did not load."""
    if not isinstance(data, dict):
        return None
    kind = data.get("kind")
    meta = data.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if kind and name:
        return f"{kind}/{name}"
    return str(kind) if kind else None


def suggest(word: str, choices: typing.Iterable[str]) -> str | None:
    """The choice the user most likely meant: same but for case, a prefix, or a near typo."""
    options = list(choices)
    lower = word.lower()
    for pick in (
        [c for c in options if c.lower() == lower],
        [c for c in options if lower and c.lower().startswith(lower)],
        difflib.get_close_matches(word, options, n=1, cutoff=0.6),
    ):
        if len(pick) >= 1:
            return pick[0]
    return None


# --- pydantic -> FieldError ---------------------------------------------------------------------

Loc = tuple[str | int, ...]


def format_path(loc: typing.Sequence[str | int]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not out:
            out = part
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", part):
            out += f".{part}"
        else:  # a map key such as a label or "nvidia.com/gpu"
            out += f"[{part}]"
    return out


def field_errors(exc: ValidationError, model: type[BaseModel]) -> list[tuple[Loc, str]]:
    """(clean loc, message) for each problem, union alternatives merged, typos explained."""
    grouped: dict[Loc, list[dict[str, Any]]] = {}
    for err in exc.errors(include_url=False):
        loc, _ = _clean_loc(model, err["loc"])
        grouped.setdefault(loc, []).append(err)
    extras = {loc: errs for loc, errs in grouped.items() if errs[0]["type"] == "extra_forbidden"}
    out: list[tuple[Loc, str]] = []
    suggested: set[Loc] = set()
    for loc, errs in extras.items():
        allowed = _allowed_fields(model, loc[:-1])
        hint = suggest(str(loc[-1]), allowed) if allowed else None
        if hint:
            suggested.add((*loc[:-1], hint))
    for loc, errs in grouped.items():
        if errs[0]["type"] == "missing" and loc in suggested:
            continue  # reported as "unknown field 'replica'; did you mean 'replicas'?"
        out.append((loc, _message(model, loc, errs)))
    return out


# Human wording for `pattern` constraints, keyed by the pattern (models add theirs).
PATTERN_HINTS: dict[str, str] = {}
_MAX_LISTED = 15


def _message(model: type[BaseModel], loc: Loc, errs: list[dict[str, Any]]) -> str:
    err = errs[0]
    kind, value = err["type"], err.get("input")
    if kind == "extra_forbidden":
        allowed = _allowed_fields(model, loc[:-1])
        hint = suggest(str(loc[-1]), allowed) if allowed else None
        if hint:
            return f"unknown field; did you mean '{hint}'?"
        if allowed:
            shown = ", ".join(allowed[:_MAX_LISTED])
            more = f" (and {len(allowed) - _MAX_LISTED} more)" if len(allowed) > _MAX_LISTED else ""
            return f"unknown field; expected one of: {shown}{more}"
        return "unknown field"
    if kind == "missing":
        return "required field is missing"
    if len(errs) > 1 or any(e["type"] == "string_pattern_mismatch" for e in errs):
        patterns = {e.get("ctx", {}).get("pattern") for e in errs}
        if QUANTITY_PATTERN in patterns or {"int_type", "float_type"} <= {e["type"] for e in errs}:
            if isinstance(value, str):
                return f"invalid quantity {value!r}; expected e.g. 500m, 2, 1.5, 16Gi or 1G"
            return f"expected a quantity (a string like 500m, or a number), got {describe(value)}"
        if DURATION_PATTERN in patterns:
            return f"invalid duration {value!r}; expected a Go duration such as 30s, 5m, 4h, 1h30m"
        if kind == "string_pattern_mismatch":
            pattern = err.get("ctx", {}).get("pattern")
            hint = PATTERN_HINTS.get(pattern, f"must match {pattern}")
            return f"invalid value {value!r}: {hint}"
    return _simple_message(err)


_EXPECTED = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "a boolean (true or false)",
    "bool_parsing": "a boolean (true or false)",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping (an object with fields)",
    "model_attributes_type": "a mapping (an object with fields)",
    "datetime_type": "an RFC 3339 timestamp such as 2026-01-01T00:00:00Z",
    "datetime_parsing": "an RFC 3339 timestamp such as 2026-01-01T00:00:00Z",
    "datetime_from_date_parsing": "an RFC 3339 timestamp such as 2026-01-01T00:00:00Z",
}


def _simple_message(err: dict[str, Any]) -> str:
    kind, value, ctx = err["type"], err.get("input"), err.get("ctx") or {}
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {describe(value)}"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected')}, got {describe(value)}"
    if kind in ("too_short", "too_long"):
        bound = "at least" if kind == "too_short" else "at most"
        limit = ctx.get("min_length" if kind == "too_short" else "max_length")
        what = "characters" if isinstance(value, str) else "items"
        got = len(value) if hasattr(value, "__len__") else "?"
        return f"must have {bound} {limit} {what}, got {got}"
    ops = {
        "greater_than": ">",
        "greater_than_equal": ">=",
        "less_than": "<",
        "less_than_equal": "<=",
    }
    if kind in ops:
        limit = next(iter(ctx.values()), "?")
        return f"must be {ops[kind]} {limit}, got {describe(value)}"
    if kind == "value_error":
        return str(ctx.get("error") or err["msg"]).removeprefix("Value error, ")
    msg = str(err["msg"])
    return msg[:1].lower() + msg[1:]


def describe(value: Any) -> str:
    """A value as YAML users think of it: `string "x"`, `integer 3`, `a list`, `null`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"number {value}"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


# --- walking a model along a loc ------------------------------------------------------------


def _unwrap(tp: Any) -> Any:
    """Strip Annotated and Optional; leave real unions (several non-None members)."""
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (Union, types.UnionType):
            members = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(members) != 1:
                return tp
            tp = members[0]
        else:
            return tp


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _field_by_key(model: type[BaseModel], key: str) -> Any:
    for name, info in model.model_fields.items():
        if key in (info.alias, name):
            return info.annotation
    return None


def _clean_loc(model: type[BaseModel], loc: Loc) -> tuple[Loc, Any]:
    """Drop pydantic's union-member tags and `[key]` markers; return the type reached."""
    out: list[str | int] = []
    tp: Any = model
    skip_tag = False
    for part in loc:
        if skip_tag:
            skip_tag = False
            tp = Any
            continue
        if part == "[key]":
            continue
        tp = _unwrap(tp)
        out.append(part)
        if _is_model(tp) and isinstance(part, str):
            tp = _field_by_key(tp, part)
        elif typing.get_origin(tp) in (list, tuple) and isinstance(part, int):
            tp = typing.get_args(tp)[0]
        elif typing.get_origin(tp) is dict:
            tp = typing.get_args(tp)[1]
        else:
            tp = Any
        if tp is not None and typing.get_origin(_unwrap(tp)) in (Union, types.UnionType):
            skip_tag = True  # the next loc element names the union member
    return tuple(out), tp


def _allowed_fields(model: type[BaseModel], parent: Loc) -> list[str]:
    """camelCase field names of the object at `parent` (empty if it is not a model)."""
    _, tp = _clean_loc(model, parent) if parent else ((), model)
    tp = _unwrap(tp)
    if not _is_model(tp):
        return []
    return [info.alias or name for name, info in tp.model_fields.items()]


# --- bounded error reports ------------------------------------------------------------------

# The longest cause a condition message, lastErrors entry, Event or log line carries: well
# under the 32,768 bytes of a condition message and the 1 KiB Kubernetes keeps of an Event.
MAX_CAUSE_CHARS = 1024
_VALUE_LABELS = ("Invalid value: ", "Unsupported value: ", "Duplicate value: ")
_OPEN = {"{": "}", "[": "]", "(": ")"}
_NOT_SHOWN = "(value not shown)"


def _skip_value(text: str, i: int) -> int:
    """The index just past the value that starts at text[i]: a quoted string (with
    escapes), a bracketed structure (Go's `map[...]{...}` too), or a bare word."""
    if text.startswith("map[", i):
        i = _skip_value(text, i + 3)
    if i >= len(text):
        return i
    if text[i] == '"':
        j = i + 1
        while j < len(text) and text[j] != '"':
            j += 2 if text[j] == "\\" else 1
        return min(j + 1, len(text))
    if text[i] in _OPEN:
        depth, j, quoted = 0, i, False
        while j < len(text):
            ch = text[j]
            if quoted:
                if ch == "\\":
                    j += 1
                elif ch == '"':
                    quoted = False
            elif ch == '"':
                quoted = True
            elif ch in _OPEN:
                depth += 1
            elif ch in _OPEN.values():
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        return j
    end = text.find(": ", i)
    return len(text) if end < 0 else end


def strip_values(text: str) -> str:
    """`text` without the values the API server echoes in field errors (`Invalid value:
    "<the whole object or patch>": why` -> `Invalid value: (value not shown): why`): such a
    value may hold the
    previous error report, and echoing it back is how reports grow without bound."""
    out: list[str] = []
    i = 0
    while i < len(text):
        hits = [(text.find(label, i), label) for label in _VALUE_LABELS]
        hits = [(at, label) for at, label in hits if at >= 0]
        if not hits:
            out.append(text[i:])
            break
        at, label = min(hits)
        # Parenthesised, so that stripping an already stripped text changes nothing.
        out.append(text[i:at] + label + _NOT_SHOWN)
        i = _skip_value(text, at + len(label))
    return "".join(out)


def _dedupe_causes(text: str) -> str:
    """An aggregate `[a, b, a, a]` of field errors with each cause once (and a count)."""
    if not (text.count("[") and text.rstrip().endswith("]")):
        return text
    head, _, rest = text.partition("[")
    items = [p.strip() for p in rest.rstrip()[:-1].split(", ")]
    counts: dict[str, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    if len(counts) == len(items):
        return text
    parts = [f"{c} (x{n})" if n > 1 else c for c, n in counts.items()]
    return f"{head}[{', '.join(parts)}]"


def bounded_message(text: str, limit: int = MAX_CAUSE_CHARS) -> str:
    """An error message fit for a status condition, lastErrors, an Event or a log line: the
    cause once (field and reason, echoed values stripped, repeated causes folded), on one
    line, at most `limit` characters."""
    text = " ".join(_dedupe_causes(strip_values(text)).split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 40].rstrip()
    return f"{cut} ... ({len(text) - len(cut)} more characters)"


def short_cause(err: BaseException, limit: int = MAX_CAUSE_CHARS) -> str:
    """`bounded_message` of an exception (an API error's message, else its text)."""
    text = str(getattr(err, "message", None) or err) or type(err).__name__
    return bounded_message(text, limit)
