"""Label and field selectors, parsed once and matched fast.

Label selectors come in three shapes, all compiled to one `LabelSelector`:
- the string syntax of kubectl and the API (`app=web,tier!=db,env in (a,b),!legacy,gpu`),
- a dict of equalities (`{"app": "web"}`),
- a metav1.LabelSelector (`{"matchLabels": {...}, "matchExpressions": [...]}`).

Field selectors are `path=value` / `path!=value` terms on dotted camelCase paths
(`metadata.name`, `spec.nodeName`, `status.phase`); an unset field reads as "" as in
Kubernetes, so `spec.nodeName=` selects unbound pods.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_KEY_RE = re.compile(rf"^([a-z0-9]([-a-z0-9.]{{0,251}}[a-z0-9])?/)?{_NAME}$")
_VALUE_RE = re.compile(rf"^({_NAME})?$")

_SET_OPS = {"in": "In", "notin": "NotIn"}


class SelectorError(ValueError):
    """A selector that does not parse; the message quotes the selector and says why."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """One term: `key op values`. Ops: In, NotIn, Exists, DoesNotExist, Gt, Lt."""

    key: str
    op: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.op
        if op == "In":
            return labels.get(self.key) in self.values
        if op == "NotIn":
            return labels.get(self.key) not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        value = labels.get(self.key)
        if value is None:
            return False
        try:
            number = int(value)
        except ValueError:
            return False
        return number > int(self.values[0]) if op == "Gt" else number < int(self.values[0])

    def __str__(self) -> str:
        op, k = self.op, self.key
        if op == "Exists":
            return k
        if op == "DoesNotExist":
            return f"!{k}"
        if op in ("Gt", "Lt"):
            return f"{k}{'>' if op == 'Gt' else '<'}{self.values[0]}"
        if len(self.values) == 1:
            return f"{k}{'=' if op == 'In' else '!='}{self.values[0]}"
        return f"{k} {op.lower()} ({','.join(self.values)})"


class LabelSelector:
    """A compiled label selector. The empty selector matches everything."""

    __slots__ = ("_equal", "_hash", "_rest", "requirements")

    def __init__(self, requirements: tuple[Requirement, ...] = ()) -> None:
        self.requirements = requirements
        # Selectors key the scheduler's per-cycle caches: hashing the requirements each time
        # calls each one's (dataclass) __hash__. Worked out on the first use (most selectors
        # never key anything).
        self._hash: int | None = None
        # Equalities are the common case: check them with one dict lookup each.
        self._equal = tuple(
            (r.key, r.values[0]) for r in requirements if r.op == "In" and len(r.values) == 1
        )
        self._rest = tuple(r for r in requirements if not (r.op == "In" and len(r.values) == 1))

    @property
    def empty(self) -> bool:
        return not self.requirements

    @property
    def equalities(self) -> tuple[tuple[str, str], ...]:
        """(key, value) pairs every matching object must carry (for index lookups)."""
        return self._equal

    def matches(self, labels: Mapping[str, str]) -> bool:
        for key, value in self._equal:
            if labels.get(key) != value:
                return False
        for req in self._rest:
            if not req.matches(labels):
                return False
        return True

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)

    def __repr__(self) -> str:
        return f"LabelSelector({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, LabelSelector)
                                 and self.requirements == other.requirements)

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = self._hash = hash(self.requirements)
        return h


EVERYTHING = LabelSelector()


def parse_label_selector(selector: Any) -> LabelSelector:
    """Compile any accepted selector shape (see module doc). None and "" match everything."""
    if selector is None or isinstance(selector, LabelSelector):
        return selector or EVERYTHING
    if isinstance(selector, str):
        return _parse_label_string(selector)
    if isinstance(selector, BaseModel):
        selector = selector.model_dump(by_alias=True, exclude_none=True)
    if isinstance(selector, Mapping):
        if "matchLabels" in selector or "matchExpressions" in selector:
            return _from_label_selector_object(selector)
        return _from_dict(selector)
    raise SelectorError(
        f"label selector {selector!r}: expected a string, a dict or a LabelSelector")


@lru_cache(maxsize=1024)
def _parse_label_string(text: str) -> LabelSelector:
    reqs = [_parse_term(text, term) for term in _split_terms(text)]
    return LabelSelector(tuple(reqs))


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not inside `( ... )`."""
    terms, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise SelectorError(f"label selector {text!r}: unbalanced ')'")
        elif ch == "," and depth == 0:
            terms.append(text[start:i])
            start = i + 1
    if depth:
        raise SelectorError(f"label selector {text!r}: unclosed '('")
    terms.append(text[start:])
    if len(terms) == 1 and not terms[0].strip():
        return []
    return [t.strip() for t in terms]


_SET_TERM = re.compile(r"^(\S+)\s+(in|notin)\s*\((.*)\)$")
_OP_TERM = re.compile(r"^([^=!<>\s]+)\s*(==|=|!=|>|<)\s*(\S*)$")


def _parse_term(text: str, term: str) -> Requirement:
    def bad(why: str) -> SelectorError:
        return SelectorError(f"label selector {text!r}: term {term!r}: {why}")

    if not term:
        raise bad("empty term (stray comma?)")
    if m := _SET_TERM.match(term):
        key, op, raw = m.group(1), m.group(2), m.group(3)
        values = tuple(sorted({v.strip() for v in raw.split(",")}))
        if values == ("",) and raw.strip() == "":
            raise bad(f"'{op}' needs at least one value")
        for v in values:
            _check_value(v, bad)
        _check_key(key, bad)
        return Requirement(key, _SET_OPS[op], values)
    if m := _OP_TERM.match(term):
        key, op, value = m.groups()
        _check_key(key, bad)
        if op in (">", "<"):
            if not re.fullmatch(r"-?\d+", value):
                raise bad(f"'{op}' needs an integer, got {value!r}")
            return Requirement(key, "Gt" if op == ">" else "Lt", (value,))
        _check_value(value, bad)
        return Requirement(key, "NotIn" if op == "!=" else "In", (value,))
    if term.startswith("!"):
        key = term[1:].strip()
        _check_key(key, bad)
        return Requirement(key, "DoesNotExist")
    if " " in term:
        raise bad("expected 'key', '!key', 'key=value', 'key!=value', 'key in (...)'")
    _check_key(term, bad)
    return Requirement(term, "Exists")


def _check_key(key: str, bad: Callable[[str], SelectorError]) -> None:
    if not _KEY_RE.match(key):
        raise bad(f"invalid label key {key!r}")


def _check_value(value: str, bad: Callable[[str], SelectorError]) -> None:
    if not _VALUE_RE.match(value):
        raise bad(f"invalid label value {value!r}")


def _from_dict(labels: Mapping[str, Any]) -> LabelSelector:
    text = repr(dict(labels))
    reqs = []
    for key, value in labels.items():
        bad = lambda why, k=key: SelectorError(f"label selector {text}: {k!r}: {why}")
        if not isinstance(value, str):
            raise bad(f"value must be a string, got {value!r}")
        _check_key(key, bad)
        _check_value(value, bad)
        reqs.append(Requirement(key, "In", (value,)))
    return LabelSelector(tuple(reqs))


def _from_label_selector_object(sel: Mapping[str, Any]) -> LabelSelector:
    reqs = list(_from_dict(sel.get("matchLabels") or {}).requirements)
    for i, expr in enumerate(sel.get("matchExpressions") or []):
        where = f"label selector matchExpressions[{i}]"
        key, op = expr.get("key", ""), expr.get("operator", "")
        values = tuple(sorted(set(expr.get("values") or ())))
        bad = lambda why, w=where: SelectorError(f"{w}: {why}")
        _check_key(key, bad)
        if op in ("In", "NotIn"):
            if not values:
                raise bad(f"operator {op} needs values")
            for v in values:
                _check_value(v, bad)
        elif op in ("Exists", "DoesNotExist"):
            if values:
                raise bad(f"operator {op} takes no values")
        else:
            raise bad(f"unknown operator {op!r} (In, NotIn, Exists, DoesNotExist)")
        reqs.append(Requirement(key, op, values))
    return LabelSelector(tuple(reqs))


_VALID_LABELS: dict[tuple[str, str], None] = {}  # pairs already checked (labels repeat a lot)


def check_labels(labels: Mapping[str, str]) -> str | None:
    """Why a labels map is invalid (keys and values as the API server checks), or None."""
    for key, value in labels.items():
        if (key, value) in _VALID_LABELS:
            continue
        if not _KEY_RE.match(key):
            return f"invalid label key {key!r}"
        if not isinstance(value, str) or not _VALUE_RE.match(value):
            return f"invalid value {value!r} for label {key!r} (at most 63 characters: " \
                   "alphanumerics, '-', '_', '.'; starting and ending alphanumeric)"
        if len(_VALID_LABELS) >= 65_536:
            _VALID_LABELS.clear()
        _VALID_LABELS[(key, value)] = None
    return None


# ------------------------------------------------------- label syntax, in the API's words
# The API server's wording for invalid label keys and values (what `kubectl` shows), for
# validation that must report every problem rather than accept or refuse.

_LABEL_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_NAME_RE = re.compile(rf"^{_LABEL_NAME_FMT}$")
_DNS_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS_SUBDOMAIN_FMT = rf"{_DNS_LABEL_FMT}(\.{_DNS_LABEL_FMT})*"
_DNS_SUBDOMAIN_RE = re.compile(rf"^{DNS_SUBDOMAIN_FMT}$")
_VALUE_ANY_LENGTH_RE = re.compile(rf"^({_LABEL_NAME_FMT})?$")
_NAME_PART_WHY = ("must consist of alphanumeric characters, '-', '_' or '.', and must start "
                  "and end with an alphanumeric character")
_VALUE_WHY = ("a valid label must be an empty string or consist of alphanumeric characters, "
              "'-', '_' or '.', and must start and end with an alphanumeric character")
_SUBDOMAIN_WHY = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                  "characters, '-' or '.', and must start and end with an alphanumeric "
                  "character")


def regex_error(why: str, fmt: str, *examples: str) -> str:
    """`why` plus the examples and the pattern, as the API server words a syntax error."""
    shown = "".join(f"{' or ' if i else ''}'{e}', " for i, e in enumerate(examples))
    return f"{why} (e.g. {shown}regex used for validation is '{fmt}')" if examples \
        else f"{why} (regex used for validation is '{fmt}')"


def too_long(limit: int, unit: str = "bytes") -> str:
    """Label syntax counts bytes; object names (DNS labels, subdomains) count characters."""
    return f"must be no more than {limit} {unit}"


@lru_cache(maxsize=4096)
def dns_subdomain_errors(name: str, unit: str = "bytes") -> tuple[str, ...]:
    """Why `name` is not a DNS-1123 subdomain (at most 253 long), or ()."""
    errs = [too_long(253, unit)] if len(name) > 253 else []
    if not _DNS_SUBDOMAIN_RE.match(name):
        errs.append(regex_error(_SUBDOMAIN_WHY, DNS_SUBDOMAIN_FMT, "example.com"))
    return tuple(errs)


@lru_cache(maxsize=4096)
def label_key_errors(key: str) -> tuple[str, ...]:
    """Why `key` is not a valid label key (a qualified name: `[prefix/]name`), or ()."""
    if _KEY_RE.match(key) and not (
            "/" in key and dns_subdomain_errors(key.partition("/")[0])):
        return ()
    parts = key.split("/")
    if len(parts) > 2:
        return ("a valid label key " + regex_error(_NAME_PART_WHY, _LABEL_NAME_FMT, "MyName",
                                                   "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",)
    errs: list[str] = []
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs += ["prefix part " + why for why in dns_subdomain_errors(prefix)]
    name = parts[-1]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part " + too_long(63))
    if not _LABEL_NAME_RE.match(name):
        errs.append("name part " + regex_error(_NAME_PART_WHY, _LABEL_NAME_FMT, "MyName",
                                               "my.name", "123-abc"))
    return tuple(errs)


@lru_cache(maxsize=4096)
def label_value_errors(value: str) -> tuple[str, ...]:
    """Why `value` is not a valid label value (at most 63 characters), or ()."""
    if _VALUE_RE.match(value):
        return ()
    errs = [too_long(63)] if len(value) > 63 else []
    if not _VALUE_ANY_LENGTH_RE.match(value):
        errs.append(regex_error(_VALUE_WHY, f"({_LABEL_NAME_FMT})?", "MyValue", "my_value",
                                "12345"))
    return tuple(errs)


# ---------------------------------------------------------------- field selectors


class FieldSelector:
    """A compiled field selector: all terms must hold."""

    __slots__ = ("terms", "text")

    def __init__(self, terms: tuple[tuple[tuple[str, ...], bool, str], ...], text: str) -> None:
        self.terms = terms  # (camelCase path, equal?, value)
        self.text = text

    @property
    def empty(self) -> bool:
        return not self.terms

    def matches(self, obj: BaseModel) -> bool:
        for path, equal, value in self.terms:
            if (field_value(obj, path) == value) != equal:
                return False
        return True

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"FieldSelector({self.text!r})"


NO_FIELDS = FieldSelector((), "")


def parse_field_selector(selector: Any) -> FieldSelector:
    """`"spec.nodeName=,status.phase!=Failed"` or `{"spec.nodeName": ""}`."""
    if selector is None or isinstance(selector, FieldSelector):
        return selector or NO_FIELDS
    if isinstance(selector, Mapping):
        for k, v in selector.items():
            if not isinstance(v, str):
                raise SelectorError(
                    f"field selector {dict(selector)!r}: {k!r} must map to a string")
        selector = ",".join(f"{k}={v}" for k, v in selector.items())
    if not isinstance(selector, str):
        raise SelectorError(f"field selector {selector!r}: expected a string or a dict")
    return _parse_field_string(selector)


_FIELD_TERM = re.compile(r"^\s*([A-Za-z][A-Za-z0-9.]*)\s*(==|=|!=)\s*(.*?)\s*$")


@lru_cache(maxsize=1024)
def _parse_field_string(text: str) -> FieldSelector:
    terms = []
    for term in text.split(",") if text.strip() else []:
        m = _FIELD_TERM.match(term)
        if not m:
            raise SelectorError(
                f"field selector {text!r}: term {term.strip()!r}: expected 'path=value' or "
                "'path!=value' with a dotted camelCase path such as spec.nodeName"
            )
        path, op, value = m.groups()
        terms.append((tuple(path.split(".")), op != "!=", value))
    return FieldSelector(tuple(terms), text)


def field_value(obj: Any, path: tuple[str, ...]) -> str:
    """The value at a camelCase path as the API server renders it for field selectors."""
    for segment in path:
        if obj is None:
            return ""
        if isinstance(obj, BaseModel):
            name = _attr_name(type(obj), segment)
            if name is None:
                raise SelectorError(
                    f"field selector path {'.'.join(path)!r}: {type(obj).__name__} has no "
                    f"field {segment!r}"
                )
            obj = getattr(obj, name)
        elif isinstance(obj, Mapping):
            obj = obj.get(segment)
        else:
            return ""
    if obj is None:
        return ""
    if isinstance(obj, bool):
        return "true" if obj else "false"
    return str(getattr(obj, "value", obj))  # enums render as their value


@lru_cache(maxsize=4096)
def _attr_name(cls: type[BaseModel], segment: str) -> str | None:
    for name, info in cls.model_fields.items():
        if info.alias == segment or name == segment:
            return name
    return None
