"""A profile's `pluginConfig` args, validated as kube-scheduler's validatePluginConfig does.

The args of every plugin Phalanx knows are decoded and validated, whether the profile enables
the plugin or not (kube validates the args of every known plugin). Args of a name no plugin
registers are skipped, as kube skips args it has no type for; the names kube removed, and a
plugin configured twice, are refused by SchedulerConfiguration itself (config.py).

Every error names its field from the configuration's root, as kube's field paths do:
`profiles[0].pluginConfig[1].args.hardPodAffinityWeight: ...`. Validators that check
several fields at once raise `ArgsError` with one message per field (relative to the args).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from phalanx.api.base import KubeModel
from phalanx.api.errors import field_errors, format_path

from .config import SchedulerConfiguration, SchedulerProfile
from .registry import get_plugin
from .resolve import ProfileError


class ArgsError(ValueError):
    """Problems in one args object, each "<field path>: <what>" relative to the object;
    printed as one error, or as apimachinery prints an aggregate."""

    def __init__(self, errors: Sequence[str]) -> None:
        self.errors = list(errors)
        super().__init__(aggregate(self.errors))


class NoArgs(KubeModel):
    """The args of a Phalanx plugin that takes none: any key is refused, by name."""


def aggregate(errors: Sequence[str]) -> str:
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


def raise_errors(errors: Sequence[str]) -> None:
    if errors:
        raise ArgsError(errors)


def args_messages(exc: ValidationError, model: type[BaseModel], prefix: str) -> list[str]:
    """One "<prefix>.<field>: <what>" per problem of a ValidationError of `model`."""
    nested: dict[tuple[Any, ...], ArgsError] = {}
    for err in exc.errors(include_url=False):
        cause = (err.get("ctx") or {}).get("error")
        if isinstance(cause, ArgsError):
            nested[tuple(err["loc"])] = cause
    out: list[str] = []
    for loc, message in field_errors(exc, model):
        where = f"{prefix}.{format_path(loc)}" if loc else prefix
        cause = nested.get(tuple(loc))
        if cause is not None:
            out += [f"{where}.{e}" for e in cause.errors]
        else:
            out.append(f"{where}: {message}")
    return out


def profile_args(index: int, profile: SchedulerProfile) -> tuple[dict[str, Any], list[str]]:
    """(plugin name -> its args, validated by its `Args` model when it has one; the errors)."""
    out: dict[str, Any] = {}
    errors: list[str] = []
    for j, pc in enumerate(profile.plugin_config):
        cls = get_plugin(pc.name)
        if cls is None:
            continue
        model = getattr(cls, "Args", None)
        if model is None:
            out[pc.name] = pc.args
            continue
        prefix = f"profiles[{index}].pluginConfig[{j}].args"
        try:
            out[pc.name] = model.model_validate(pc.args)
        except ValidationError as exc:
            errors += args_messages(exc, model, prefix)
        except ArgsError as exc:
            errors += [f"{prefix}.{e}" for e in exc.errors]
        except ValueError as exc:
            errors.append(f"{prefix}: {exc}")
    return out, errors


def configuration_args(config: SchedulerConfiguration) -> list[dict[str, Any]]:
    """`profile_args` of every profile; ProfileError with every problem of every profile."""
    found: list[dict[str, Any]] = []
    errors: list[str] = []
    for i, profile in enumerate(config.profiles):
        args, errs = profile_args(i, profile)
        found.append(args)
        errors += errs
    if errors:
        raise ProfileError(aggregate(errors))
    return found
