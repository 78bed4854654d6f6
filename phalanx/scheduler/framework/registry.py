"""Plugins by name. A plugin module registers its class at import with `@register_plugin`.

Every module in `phalanx.scheduler.plugins` is imported on the first lookup, so adding a
plugin touches one module (plus the profile that enables it).
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any, TypeVar

# extension point (profile key) -> the method that implements it
EXTENSION_POINTS: dict[str, str] = {
    "preEnqueue": "pre_enqueue",
    "queueSort": "sort_key",
    "preFilter": "pre_filter",
    "filter": "filter",
    "beforePostFilter": "before_post_filter",
    "postFilter": "post_filter",
    "preScore": "pre_score",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
    "preBind": "pre_bind",
    "bind": "bind",
    "postBind": "post_bind",
}

P = TypeVar("P", bound=type)

_registry: dict[str, type] = {}
_loaded = False


def register_plugin(cls: P) -> P:
    """Class decorator: make `cls` available to profiles under `cls.NAME`."""
    name = getattr(cls, "NAME", "")
    if not name:
        raise ValueError(f"plugin class {cls.__qualname__} has no NAME")
    existing = _registry.get(name)
    if existing is not None and existing is not cls and existing.__qualname__ != cls.__qualname__:
        raise ValueError(f"plugin name {name!r} already registered by {existing.__module__}.{existing.__qualname__}")
    _registry[name] = cls
    return cls


def _load_builtin_plugins() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    import phalanx.scheduler.plugins as pkg

    for mod in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if not mod.name.startswith("_"):
            importlib.import_module(f"{pkg.__name__}.{mod.name}")


def get_plugin(name: str) -> type | None:
    """The plugin class registered under `name`, or None."""
    if name not in _registry:
        _load_builtin_plugins()
    return _registry.get(name)


def registered_plugins() -> dict[str, type]:
    _load_builtin_plugins()
    return dict(sorted(_registry.items()))


def extension_points_of(cls_or_obj: Any) -> list[str]:
    """The extension points a plugin implements, in framework order."""
    return [point for point, method in EXTENSION_POINTS.items() if callable(getattr(cls_or_obj, method, None))]
