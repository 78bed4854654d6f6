"""The device CEL environment of resource.k8s.io: compile a DeviceClass's or a request's
selector once, evaluate it on devices (k8s.io/dynamic-resource-allocation/cel).

Expressions run on `cel-expr-python` (the CEL project's Python binding of cel-cpp): the
parser, type checker and interpreter are CEL's own. What Kubernetes adds to the standard
environment is declared here:

- the variable `device`: `driver` (string), `allowMultipleAllocations` (bool),
  `attributes[domain][id]` (int, bool, string or semver) and `capacity[domain][id]`
  (quantity). Attributes and capacities named without a domain are under the driver's name.
  Indexing a domain the device does not have gives an empty map (so `has()` and `in` work
  on any domain), as Kubernetes' map-with-default does;
- kube's quantity library (`quantity()`, `isQuantity()`, `compareTo`, `isGreaterThan`,
  `isLessThan`, `add`, `sub`, `asInteger`, `asApproximateFloat`, `isInteger`, `sign`) and
  semver library (`semver()`, `isSemver()`, `major`, `minor`, `patch`, `compareTo`,
  `isGreaterThan`, `isLessThan`), with exact (rational) arithmetic;
- `cel.bind`, the strings and optional extensions.

Quantities and versions travel through CEL as tagged maps (`{"@q": "<exact value>"}`,
`{"@semver": "1.2.3"}`) in canonical form, so equal values compare equal. A selector must
evaluate to a bool (or dyn, checked when it runs); cost limits are not enforced.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

_D = cel.Type.DYN
_M = cel.Type.Map(cel.Type.STRING, _D)
_QKEY = "@q"
_VKEY = "@semver"

# --- quantities (exact) ---------------------------------------------------------------------

_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
                       r"(?:(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)|[eE]([+-]?[0-9]+))?$")
_SUFFIX = {"Ki": Fraction(2**10), "Mi": Fraction(2**20), "Gi": Fraction(2**30),
           "Ti": Fraction(2**40), "Pi": Fraction(2**50), "Ei": Fraction(2**60),
           "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000),
           "": Fraction(1),
           "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9),
           "T": Fraction(10**12), "P": Fraction(10**15), "E": Fraction(10**18)}


@lru_cache(maxsize=4096)
def exact_quantity(text: str | int | float) -> Fraction:
    """A resource.Quantity's exact value ("1.5Gi" -> 1610612736). ValueError if invalid."""
    if isinstance(text, bool):
        raise ValueError(f"invalid quantity {text!r}")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        return Fraction(str(text))
    m = _QUANTITY.match(text.strip())
    if m is None:
        raise ValueError(f"invalid quantity {text!r}")
    number, suffix, exponent = m.groups()
    value = Fraction(number)
    if exponent is not None:
        return value * Fraction(10) ** int(exponent)
    return value * _SUFFIX[suffix or ""]


def _q(value: Fraction) -> dict[str, str]:
    return {_QKEY: str(value)}


def quantity_value(text: str | int | float) -> dict[str, str]:
    """A capacity value as CEL sees it."""
    return {_QKEY: _canonical_quantity(text)}


@lru_cache(maxsize=4096)
def _canonical_quantity(text: str | int | float) -> str:
    return str(exact_quantity(text))


def _qv(obj: Any) -> Fraction:
    if isinstance(obj, dict) and _QKEY in obj:
        return Fraction(obj[_QKEY])
    raise TypeError(f"not a quantity: {obj!r}")


# --- semantic versions ---------------------------------------------------------------------

_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                     r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
                     r"(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
                     r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$")


def parse_semver(text: str, normalize: bool = False) -> tuple[int, int, int, str]:
    """(major, minor, patch, pre-release). ValueError if `text` is no semantic version.
    `normalize` accepts "v1", "1.2" and leading zeros, as kube's semver(s, true)."""
    if normalize:
        t = text[1:] if text.startswith("v") else text
        core, sep, rest = re.split(r"([-+])", t, maxsplit=1) + ["", ""] if re.search(
            r"[-+]", t) else [t, "", ""]
        parts = core.split(".")
        while len(parts) < 3:
            parts.append("0")
        parts = [str(int(p)) if p.isdigit() else p for p in parts]
        text = ".".join(parts) + (sep + rest if sep else "")
    m = _SEMVER.match(text)
    if m is None:
        raise ValueError(f"invalid semantic version {text!r}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4) or ""


def semver_value(text: str) -> dict[str, str]:
    return {_VKEY: _canonical_semver(text)}


@lru_cache(maxsize=4096)
def _canonical_semver(text: str) -> str:
    major, minor, patch, pre = parse_semver(text)
    return f"{major}.{minor}.{patch}" + (f"-{pre}" if pre else "")


def _sv(obj: Any) -> tuple[int, int, int, str]:
    if isinstance(obj, dict) and _VKEY in obj:
        return parse_semver(obj[_VKEY])
    raise TypeError(f"not a semantic version: {obj!r}")


def _semver_key(v: tuple[int, int, int, str]) -> tuple[Any, ...]:
    """Semver precedence: a pre-release sorts before its release; identifiers compare
    numerically when numeric."""
    major, minor, patch, pre = v
    if not pre:
        return (major, minor, patch, 1, ())
    ids = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split("."))
    return (major, minor, patch, 0, ids)


def _compare(a: Any, b: Any) -> int:
    if isinstance(a, dict) and _QKEY in a:
        x, y = _qv(a), _qv(b)
    else:
        x, y = _semver_key(_sv(a)), _semver_key(_sv(b))  # type: ignore[assignment]
    return (x > y) - (x < y)


def _quantity(s: str) -> dict[str, str]:
    return _q(exact_quantity(s))


def _is_quantity(s: str) -> bool:
    try:
        exact_quantity(s)
    except ValueError:
        return False
    return True


def _is_semver(s: str, normalize: bool = False) -> bool:
    try:
        parse_semver(s, normalize)
    except ValueError:
        return False
    return True


def _semver(s: str, normalize: bool = False) -> dict[str, str]:
    major, minor, patch, pre = parse_semver(s, normalize)
    return {_VKEY: f"{major}.{minor}.{patch}" + (f"-{pre}" if pre else "")}


def _as_integer(a: Any) -> int:
    v = _qv(a)
    if v.denominator != 1:
        raise ValueError("cannot convert value to integer")
    if not -(2**63) <= v.numerator < 2**63:
        raise ValueError("cannot convert value to integer")
    return int(v)


def _overload(name: str, oid: str, ret: Any, params: list[Any], impl: Any,
              member: bool = True) -> cel.FunctionDecl:
    return cel.FunctionDecl(name, [cel.Overload(oid, return_type=ret, parameters=params,
                                                is_member=member, impl=impl)])


def _functions() -> list[cel.FunctionDecl]:
    B, I, S, F = cel.Type.BOOL, cel.Type.INT, cel.Type.STRING, cel.Type.DOUBLE
    return [
        _overload("quantity", "quantity_string", _M, [S], _quantity, member=False),
        _overload("isQuantity", "is_quantity_string", B, [S], _is_quantity, member=False),
        cel.FunctionDecl("semver", [
            cel.Overload("semver_string", return_type=_M, parameters=[S], impl=_semver),
            cel.Overload("semver_string_bool", return_type=_M, parameters=[S, B],
                         impl=_semver)]),
        cel.FunctionDecl("isSemver", [
            cel.Overload("is_semver_string", return_type=B, parameters=[S], impl=_is_semver),
            cel.Overload("is_semver_string_bool", return_type=B, parameters=[S, B],
                         impl=_is_semver)]),
        _overload("compareTo", "dra_compare_to", I, [_M, _M], _compare),
        _overload("isGreaterThan", "dra_is_greater_than", B, [_M, _M],
                  lambda a, b: _compare(a, b) > 0),
        _overload("isLessThan", "dra_is_less_than", B, [_M, _M],
                  lambda a, b: _compare(a, b) < 0),
        _overload("major", "semver_major", I, [_M], lambda a: _sv(a)[0]),
        _overload("minor", "semver_minor", I, [_M], lambda a: _sv(a)[1]),
        _overload("patch", "semver_patch", I, [_M], lambda a: _sv(a)[2]),
        _overload("sign", "quantity_sign", I, [_M], lambda a: (_qv(a) > 0) - (_qv(a) < 0)),
        _overload("isInteger", "quantity_is_integer", B, [_M],
                  lambda a: _qv(a).denominator == 1),
        _overload("asInteger", "quantity_as_integer", I, [_M], _as_integer),
        _overload("asApproximateFloat", "quantity_as_float", F, [_M], lambda a: float(_qv(a))),
        cel.FunctionDecl("add", [
            cel.Overload("quantity_add", return_type=_M, parameters=[_M, _M], is_member=True,
                         impl=lambda a, b: _q(_qv(a) + _qv(b))),
            cel.Overload("quantity_add_int", return_type=_M, parameters=[_M, I],
                         is_member=True, impl=lambda a, b: _q(_qv(a) + b))]),
        cel.FunctionDecl("sub", [
            cel.Overload("quantity_sub", return_type=_M, parameters=[_M, _M], is_member=True,
                         impl=lambda a, b: _q(_qv(a) - _qv(b))),
            cel.Overload("quantity_sub_int", return_type=_M, parameters=[_M, I],
                         is_member=True, impl=lambda a, b: _q(_qv(a) - b))]),
    ]


_ENV_LOCK = threading.Lock()
_ENV: Any = None


def _env() -> Any:
    global _ENV
    with _ENV_LOCK:
        if _ENV is None:
            _ENV = cel.NewEnv(
                variables={"device": _M},
                extensions=[ext_bindings.ExtBindings(), ext_strings.ExtStrings(),
                            ext_optional.ExtOptional()],
                functions=_functions())
        return _ENV


# --- compile and evaluate ------------------------------------------------------------------

# `attributes["domain"]` / `capacity['domain']` with a literal domain: such domains exist
# (empty) on every device, as kube's map with a default value.
_DOMAIN_INDEX = re.compile(r"""\b(attributes|capacity)\s*\[\s*"""
                           r"""(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')\s*\]""")


class CELError(Exception):
    """A selector that does not compile, or fails on a device (`runtime` True)."""

    def __init__(self, message: str, *, runtime: bool = False) -> None:
        super().__init__(message)
        self.runtime = runtime


@dataclass(slots=True)
class Compiled:
    """A compiled selector; `error` is set instead when it does not compile."""

    expression: str
    program: Any = None
    error: str = ""
    # Domains indexed by literal, per map ("attributes"/"capacity").
    domains: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Every identifier and string literal of the expression: the attribute and capacity
    # names it can read, unless it walks a map (None: it may read any of them).
    names: frozenset[str] | None = None

    def matches(self, device: dict[str, Any]) -> bool:
        """Evaluate on a device (`device_input`'s form). Raises CELError."""
        if self.error:
            raise CELError(self.error)
        attrs, caps = device["attributes"], device["capacity"]
        add_a = [d for d in self.domains.get("attributes", ()) if d not in attrs]
        add_c = [d for d in self.domains.get("capacity", ()) if d not in caps]
        if add_a or add_c:
            device = dict(device)
            device["attributes"] = {**attrs, **{d: {} for d in add_a}}
            device["capacity"] = {**caps, **{d: {} for d in add_c}}
        result = self.program.eval(data={"device": device})
        kind = result.type()
        if kind == cel.Type.BOOL:
            return bool(result.value())
        if kind == cel.Type.ERROR:
            raise CELError(_error_text(result.value()), runtime=True)
        raise CELError(f"CEL result of type {kind.name().lower()} could not be converted to "
                       "bool", runtime=True)


def _error_text(value: Any) -> str:
    text = str(value)
    for prefix in ("UNKNOWN: ", "NOT_FOUND: ", "INVALID_ARGUMENT: "):
        text = text.removeprefix(prefix)
    return text


_CACHE: dict[str, Compiled] = {}
_CACHE_MAX = 10_000


def compile_selector(expression: str) -> Compiled:
    """Compile once; later calls with the same text return the cached result."""
    found = _CACHE.get(expression)
    if found is not None:
        return found
    compiled = _compile(expression)
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.clear()
    _CACHE[expression] = compiled
    return compiled


def _compile(expression: str) -> Compiled:
    try:
        program = _env().compile(expression)
    except Exception as e:  # cel-cpp reports parse and check errors as RuntimeError
        text = str(e).removeprefix("INVALID_ARGUMENT: ").removesuffix(" [INVALID_ARGUMENT]")
        return Compiled(expression, error=f"compilation failed: {text.strip()}")
    out = program.return_type()
    if out not in (cel.Type.BOOL, cel.Type.DYN):
        return Compiled(expression, error=f"must evaluate to bool or the unknown type, not "
                                          f"{out.name().lower()}")
    domains: dict[str, list[str]] = {}
    for m in _DOMAIN_INDEX.finditer(expression):
        domains.setdefault(m.group(1), []).append(m.group(2) or m.group(3) or "")
    names = None if _WALKS.search(expression) else frozenset(
        m.group(1) or m.group(2) or m.group(3) or "" for m in _TOKENS.finditer(expression))
    return Compiled(expression, program, domains={k: tuple(dict.fromkeys(v))
                                                  for k, v in domains.items()}, names=names)


# Ways an expression can read map entries it does not name (macros, size, `in`, binding a
# map to a variable, dynamic keys): then any attribute may matter.
_WALKS = re.compile(r"\.(exists|all|exists_one|map|filter|size)\s*\(|\bsize\s*\(|\bin\b|"
                    r"cel\.bind|\[\s*[^\]\"'\s]")
_TOKENS = re.compile(r"""([A-Za-z_][A-Za-z0-9_]*)|"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'""")


def relevant_key(compiled: Compiled, driver: str, attributes: dict[str, Any],
                 capacity: dict[str, Any], allow_multiple: bool = False) -> Any:
    """What of a device the expression can read, as a hashable key (None: all of it): two
    devices with equal keys get the same verdict."""
    names = compiled.names
    if names is None:
        return None
    attrs = tuple(sorted((k, a.int_value, a.bool_value, a.string, a.version,
                          tuple(a.ints or ()), tuple(a.bools or ()), tuple(a.strings or ()),
                          tuple(a.versions or ()))
                         for k, a in attributes.items() if k.rpartition("/")[2] in names))
    caps = tuple(sorted((k, str(getattr(c, "value", c))) for k, c in capacity.items()
                        if k.rpartition("/")[2] in names))
    return (compiled.expression, driver, allow_multiple, attrs, caps)


def device_input(driver: str, attributes: dict[str, Any], capacity: dict[str, Any],
                 allow_multiple: bool = False) -> dict[str, Any]:
    """The `device` variable for a device: `attributes` maps qualified names to
    DeviceAttribute models, `capacity` to DeviceCapacity models (or raw values)."""
    attrs: dict[str, dict[str, Any]] = {}
    for name, attr in attributes.items():
        domain, ident = split_qualified(name, driver)
        attrs.setdefault(domain, {})[ident] = attribute_value(attr)
    caps: dict[str, dict[str, Any]] = {}
    for name, cap in capacity.items():
        domain, ident = split_qualified(name, driver)
        raw = getattr(cap, "value", cap)
        caps.setdefault(domain, {})[ident] = quantity_value(raw)
    return {"driver": driver, "allowMultipleAllocations": allow_multiple,
            "attributes": attrs, "capacity": caps}


def split_qualified(name: str, driver: str) -> tuple[str, str]:
    domain, slash, ident = name.rpartition("/")
    return (domain, ident) if slash else (driver, name)


def attribute_value(attr: Any) -> Any:
    if attr.version is not None:
        return semver_value(attr.version)
    for v in (attr.int_value, attr.bool_value, attr.string):
        if v is not None:
            return v
    for vs in (attr.ints, attr.bools, attr.strings):
        if vs is not None:
            return list(vs)
    if attr.versions is not None:
        return [semver_value(v) for v in attr.versions]
    raise CELError("unsupported attribute value", runtime=True)
