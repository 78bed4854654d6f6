"""Multi-document YAML <-> typed resources.

Loading never shows a pydantic traceback: every problem is a `ManifestError` naming the
file, the document number, the object (kind/name), the field path in camelCase, its line,
and why (malformed YAML, unknown apiVersion/kind, wrong type, unknown field with a
suggestion, missing required field).

YAML is read as Kubernetes reads it: timestamps stay strings (pydantic parses the fields that
are times), and duplicate keys are errors rather than silently overwritten.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from . import registry
from .base import Resource
from .errors import FieldError, ManifestError, field_errors, format_path, object_label

__all__ = [
    "ManifestError",
    "dump_yaml",
    "load_file",
    "load_path",
    "load_yaml",
    "validation_error",
]

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_BaseDumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Loader(_BaseLoader):  # type: ignore[misc]
    """SafeLoader without timestamp resolution, rejecting duplicate keys."""

    yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if isinstance(key_node, ScalarNode):
                if key_node.value in seen:
                    raise yaml.constructor.ConstructorError(
                        None,
                        None,
                        f"duplicate key {key_node.value!r} (first defined on line "
                        f"{seen[key_node.value]})",
                        key_node.start_mark,
                    )
                seen[key_node.value] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]


def load_file(path: str | Path, *, lenient: bool = False) -> list[Resource]:
    """Every object in a YAML file (`---`-separated documents; `kind: List` expanded)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ManifestError(f"not a text file: byte 0x{e.object[e.start]:02x} at offset "
                            f"{e.start} is not UTF-8; pass a YAML file", source=str(p)) from None
    return load_yaml(text, source=str(p), lenient=lenient)


def load_path(path: str | Path, *, lenient: bool = False) -> list[Resource]:
    """A file, or every *.yaml / *.yml / *.json file of a directory (sorted by name)."""
    p = Path(path)
    if not p.is_dir():
        return load_file(p, lenient=lenient)
    files = sorted(f for f in p.iterdir() if f.suffix in (".yaml", ".yml", ".json") and f.is_file())
    return [obj for f in files for obj in load_file(f, lenient=lenient)]


def load_yaml(text: str, *, source: str | None = None, lenient: bool = False) -> list[Resource]:
    """Every object in YAML text. `lenient` ignores unknown fields (server output)."""
    objs: list[Resource] = []
    for number, data, node in _documents(text, source):
        items: list[tuple[Any, Node | None]] = [(data, node)]
        if _is_list(data):
            seq = _child(node, "items")
            items = [(item, _child(seq, i)) for i, item in enumerate(data.get("items") or [])]
        for data_item, node_item in items:
            objs.append(_to_object(data_item, node_item, source, number, lenient))
    return objs


def validation_error(
    exc: ValidationError,
    cls: type[BaseModel],
    data: Any,
    *,
    source: str | None = None,
    document: int | None = None,
    node: Node | None = None,
) -> ManifestError:
    """A ManifestError for a pydantic ValidationError (with YAML lines when `node` is given)."""
    errors = []
    for loc, message in field_errors(exc, cls):
        line = _line_of(node, loc, message) if node is not None else None
        errors.append(FieldError(format_path(loc), message, line))
    errors.sort(key=lambda e: e.line or 0)
    kind = getattr(cls, "KIND", "") or cls.__name__
    return ManifestError(
        f"invalid {kind}", source=source, document=document, obj=object_label(data), errors=errors
    )


def dump_yaml(objs: Resource | dict[str, Any] | Iterable[Resource | dict[str, Any]]) -> str:
    """kubectl-style YAML: apiVersion, kind, metadata, spec, (other fields), status."""
    if isinstance(objs, Resource | dict):
        objs = [objs]
    docs = []
    for obj in objs:
        data = obj.to_dict() if isinstance(obj, Resource) else obj
        docs.append(yaml.dump(_ordered(data), Dumper=_Dumper, sort_keys=False, allow_unicode=True))
    return "---\n".join(docs)


# --- internals -----------------------------------------------------------------------------


def _documents(text: str, source: str | None) -> Iterable[tuple[int, Any, Node | None]]:
    loader = _Loader(text)
    number = 0
    try:
        while loader.check_node():
            number += 1
            node = loader.get_node()
            data = loader.construct_document(node)
            if data is not None:
                yield number, data, node
    except yaml.MarkedYAMLError as e:
        raise ManifestError(_yaml_problem(e), source=source, document=number or 1) from None
    except yaml.YAMLError as e:
        raise ManifestError(f"malformed YAML: {e}", source=source) from None
    finally:
        loader.dispose()


def _yaml_problem(e: yaml.MarkedYAMLError) -> str:
    mark = e.problem_mark or e.context_mark
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    what = e.problem or "cannot parse"
    context = f" ({e.context})" if e.context else ""
    return f"malformed YAML{where}: {what}{context}"


def _is_list(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and isinstance(data.get("kind"), str)
        and data["kind"].endswith("List")
        and isinstance(data.get("items"), list)
        and (data.get("apiVersion") == "v1" or data["kind"] == "List")
    )


def _to_object(
    data: Any, node: Node | None, source: str | None, number: int, lenient: bool
) -> Resource:
    if not isinstance(data, dict):
        got = "a list" if isinstance(data, list) else f"{type(data).__name__} {data!r}"
        raise ManifestError(
            f"expected a Kubernetes object (a mapping with apiVersion and kind), got {got}",
            source=source,
            document=number,
        )
    try:
        cls = registry.get(str(data.get("apiVersion") or ""), str(data.get("kind") or ""))
    except registry.UnknownKind as e:
        message = e.message
        if not data.get("apiVersion") or not data.get("kind"):
            missing = [k for k in ("apiVersion", "kind") if not data.get(k)]
            message = f"missing {' and '.join(missing)}. Known kinds: " + ", ".join(
                registry.known_kinds()
            )
        raise ManifestError(
            message, source=source, document=number, obj=object_label(data)
        ) from None
    try:
        return cls.model_validate(data, extra="ignore") if lenient else cls.model_validate(data)
    except ValidationError as e:
        raise validation_error(
            e, cls, data, source=source, document=number, node=node
        ) from None


def _child(node: Node | None, key: str | int) -> Node | None:
    if isinstance(node, MappingNode) and isinstance(key, str):
        for k, v in node.value:
            if isinstance(k, ScalarNode) and k.value == key:
                return v
    elif isinstance(node, SequenceNode) and isinstance(key, int) and 0 <= key < len(node.value):
        return node.value[key]  # type: ignore[no-any-return]
    return None


def _line_of(node: Node | None, loc: tuple[str | int, ...], message: str) -> int | None:
    """The 1-based line of the field at `loc` (its key for unknown fields; its parent for
    missing ones), or of the deepest ancestor found."""
    current = node
    found = node
    for i, part in enumerate(loc):
        if isinstance(current, MappingNode) and isinstance(part, str):
            last = i == len(loc) - 1
            if last and message.startswith("unknown field"):
                for k, _ in current.value:
                    if isinstance(k, ScalarNode) and k.value == part:
                        return k.start_mark.line + 1  # type: ignore[no-any-return]
        current = _child(current, part)
        if current is None:
            break
        found = current
    return found.start_mark.line + 1 if found is not None else None


_TOP_ORDER = ("apiVersion", "kind", "metadata", "spec")


def _ordered(data: dict[str, Any]) -> dict[str, Any]:
    out = {k: data[k] for k in _TOP_ORDER if k in data}
    out.update((k, v) for k, v in data.items() if k not in out and k != "status")
    if "status" in data:
        out["status"] = data["status"]
    return out


class _Dumper(_BaseDumper):  # type: ignore[misc]
    """Block style; multi-line strings as `|` blocks; no aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: Any, value: str) -> Any:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)
