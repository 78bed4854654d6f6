"""Offline checks of manifests against Kubernetes' OpenAPI shapes.

`kubectl apply --dry-run=client` needs a live API server for discovery. Without one, this
walks each document against the OpenAPI models that kubernetes_asyncio generates from the
Kubernetes API (field names, nesting, primitive types, required fields), which catches the
mistakes that matter: misspelled or misplaced fields, a list where an object belongs, a
missing `containers`. Kinds it has no model for (custom resources) are skipped.
"""

from __future__ import annotations

import inspect
import re
from functools import cache
from typing import Any

from kubernetes_asyncio.client import models

_LIST = re.compile(r"^list\[(.+)\]$")
_DICT = re.compile(r"^dict\(str, (.+)\)$")
_PRIMITIVES: dict[str, tuple[type, ...]] = {
    "str": (str,), "int": (int,), "float": (int, float), "bool": (bool,),
    "datetime": (str,), "date": (str,), "object": (object,),
}


def model_name(api_version: str, kind: str) -> str:
    """`apps/v1` + `Deployment` -> `V1Deployment` (the generated model's name)."""
    version = api_version.rpartition("/")[2]
    return version[:1].upper() + version[1:] + kind


@cache
def _required(model: str) -> frozenset[str]:
    cls = getattr(models, model)
    required = set()
    for attr in cls.openapi_types:
        prop = getattr(cls, attr, None)
        setter = getattr(prop, "fset", None)
        if setter is not None and "must not be `None`" in inspect.getsource(setter):
            required.add(cls.attribute_map[attr])
    return frozenset(required)


def _check(value: Any, type_name: str, path: str, errors: list[str]) -> None:
    if value is None:
        return
    if type_name in _PRIMITIVES:
        ok = isinstance(value, _PRIMITIVES[type_name])
        if type_name in ("int", "float") and isinstance(value, bool):
            ok = False
        if not ok:
            errors.append(f"{path}: expected {type_name}, got {type(value).__name__}")
        return
    if m := _LIST.match(type_name):
        if not isinstance(value, list):
            errors.append(f"{path}: expected a list, got {type(value).__name__}")
            return
        for i, item in enumerate(value):
            _check(item, m.group(1), f"{path}[{i}]", errors)
        return
    if m := _DICT.match(type_name):
        if not isinstance(value, dict):
            errors.append(f"{path}: expected a map, got {type(value).__name__}")
            return
        for key, item in value.items():
            _check(item, m.group(1), f"{path}.{key}", errors)
        return
    cls = getattr(models, type_name, None)
    if cls is None:
        return  # a type we cannot check
    if not isinstance(value, dict):
        errors.append(f"{path}: expected an object ({type_name}), got {type(value).__name__}")
        return
    fields = {json_name: cls.openapi_types[attr] for attr, json_name in cls.attribute_map.items()}
    for key, item in value.items():
        if key not in fields:
            errors.append(f"{path}.{key}: unknown field in {type_name}")
        else:
            _check(item, fields[key], f"{path}.{key}", errors)
    for key in sorted(_required(type_name) - set(value)):
        errors.append(f"{path}.{key}: required field missing in {type_name}")


def check_document(doc: dict[str, Any]) -> list[str]:
    """Field-path errors of one manifest; [] when it fits its kind's OpenAPI shape."""
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return ["apiVersion and kind are required"]
    name = model_name(api_version, kind)
    if getattr(models, name, None) is None:
        return []
    errors: list[str] = []
    _check(doc, name, kind, errors)
    return errors


def has_model(api_version: str, kind: str) -> bool:
    return getattr(models, model_name(api_version, kind), None) is not None
