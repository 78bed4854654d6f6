"""Admission hooks: mutating and validating webhooks for the embedded cluster.

    def default_queue(obj, old):            # mutate: change obj in place or return a new one
        obj.metadata.labels.setdefault("queue", "default")

    def check(obj, old):                    # validate: raise Invalid(field=...) to reject
        if old and obj.spec.scheduler_name != old.spec.scheduler_name:
            raise Invalid("schedulerName is immutable", field="spec.schedulerName")
        return ["spec.x: admitted, but ..."]  # or warnings (kubectl prints "Warning: ...")

    cluster.register_admission(PodCliqueSet, mutate=default_queue, validate=check)

Hooks run on create (`old` is None) and update/patch (`old` is the stored object, read-only),
as the API server runs webhooks: every mutating hook first, then every validating hook.
`operations=("CREATE",)` limits a hook to creates, as a webhook's `rules.operations` does.
Hooks may be sync or async; sync hooks keep the write atomic.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Literal

from phalanx.api.base import Resource

from .client import ApiError, Invalid

AdmissionHook = Callable[[Any, Any], Any]
Operation = Literal["CREATE", "UPDATE"]
OPERATIONS: tuple[Operation, ...] = ("CREATE", "UPDATE")


class AdmissionChain:
    """Hooks per kind, in registration order."""

    def __init__(self) -> None:
        self._mutators: dict[tuple[str, str], list[tuple[AdmissionHook, frozenset[str]]]] = {}
        self._validators: dict[tuple[str, str], list[tuple[AdmissionHook, frozenset[str]]]] = {}

    def register(
        self,
        kind: type[Resource],
        mutate: AdmissionHook | None = None,
        validate: AdmissionHook | None = None,
        *,
        operations: tuple[Operation, ...] = OPERATIONS,
    ) -> None:
        if mutate is None and validate is None:
            raise ValueError("register_admission needs mutate=, validate= or both")
        unknown = [op for op in operations if op not in OPERATIONS]
        if unknown or not operations:
            raise ValueError(f"operations: {unknown or 'none'}; use some of {OPERATIONS}")
        gvk, ops = kind.gvk(), frozenset(operations)
        if mutate is not None:
            self._mutators.setdefault(gvk, []).append((mutate, ops))
        if validate is not None:
            self._validators.setdefault(gvk, []).append((validate, ops))

    def handles(self, kind: type[Resource]) -> bool:
        gvk = kind.gvk()
        return gvk in self._mutators or gvk in self._validators

    def mutates_updates(self, kind: type[Resource]) -> bool:
        """Some mutating hook of `kind` runs on updates (and may change what it is given)."""
        return any("UPDATE" in ops for _, ops in self._mutators.get(kind.gvk(), ()))

    async def mutate(self, obj: Resource, old: Resource | None) -> Resource:
        op = "CREATE" if old is None else "UPDATE"
        for hook, ops in self._mutators.get(obj.gvk(), ()):
            if op not in ops:
                continue
            result = await _call(hook, obj, old)
            if result is not None:
                if not isinstance(result, type(obj)):
                    raise TypeError(f"mutating admission hook {hook!r} returned "
                                    f"{type(result).__name__}, expected {type(obj).__name__}")
                obj = result
        return obj

    async def validate(self, obj: Resource, old: Resource | None) -> list[str]:
        """Run the validating hooks; the warnings they return (a list of strings, as a
        webhook's AdmissionResponse.warnings: admitted, but worth telling the user)."""
        op = "CREATE" if old is None else "UPDATE"
        warnings: list[str] = []
        for hook, ops in self._validators.get(obj.gvk(), ()):
            if op in ops:
                result = await _call(hook, obj, old)
                if isinstance(result, list):
                    warnings.extend(str(w) for w in result)
        return warnings


async def _call(hook: AdmissionHook, obj: Resource, old: Resource | None) -> Any:
    try:
        result = hook(obj, old)
        if inspect.isawaitable(result):
            result = await result
        return result
    except ApiError:
        raise
    except ValueError as err:  # includes pydantic's ValidationError
        raise Invalid(f'admission denied {obj.KIND} "{obj.name}": {err}', kind=obj.KIND,
                      name=obj.name) from err
