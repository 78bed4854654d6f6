"""The backend registry: the enabled backends, by name.

Built from an OperatorConfiguration whose defaulting has already run (defaulting lives in
the configuration, not here). It enables `default-scheduler` always and every listed
profile, validates each profile's `config` against the backend's own config model, and
fails at start-up with a message naming the offending field.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from .base import Backend, BackendSpec, CacheReader, known_backends

if TYPE_CHECKING:
    from phalanx.cluster.client import Client

DEFAULT_SCHEDULER = "default-scheduler"


class BackendConfigError(ValueError):
    """An invalid scheduler configuration; `field` is the path in OperatorConfiguration."""

    permanent_reason = "InvalidConfiguration"  # controllers report it instead of spinning

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.reason = message


class UnknownBackend(KeyError):
    permanent_reason = "UnknownBackend"  # a configuration error, not a transient one

    def __init__(self, name: str, enabled: list[str]) -> None:
        super().__init__(name)
        self.name = name
        self.enabled = enabled

    def __str__(self) -> str:
        return (
            f"scheduler {self.name!r} is not enabled; enabled schedulers: "
            f"{', '.join(self.enabled)} (add a profile to OperatorConfiguration "
            "scheduler.profiles to enable another)"
        )


def _config_error(where: str, err: ValidationError) -> BackendConfigError:
    """The first offending key as the field (`...config.workloadAPIVersion`), others after."""
    errors = err.errors()
    first = errors[0]
    loc = ".".join(str(p) for p in first["loc"])
    message = first["msg"].removeprefix("Value error, ")
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more: " + "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in errors[1:]
        ) + ")"
    return BackendConfigError(f"{where}.config" + (f".{loc}" if loc else ""), message)


class BackendRegistry:
    def __init__(
        self,
        backends: dict[str, Backend],
        default_name: str,
        paths: dict[str, str] | None = None,
    ) -> None:
        if default_name not in backends:
            raise BackendConfigError(
                "scheduler.defaultProfileName",
                f"{default_name!r} is not an enabled profile ({', '.join(backends)})",
            )
        self._backends = backends
        self._default = default_name
        # Where each profile sits in OperatorConfiguration, to name fields in errors.
        self._paths = paths or {}
        # Pods name a scheduler by schedulerName, which may differ from the profile name.
        self._by_scheduler_name = {
            getattr(b, "scheduler_name", n) or n: b for n, b in backends.items()
        }

    @classmethod
    def from_profiles(
        cls, profiles: list[tuple[str, dict[str, Any] | None]], default_name: str
    ) -> BackendRegistry:
        specs = known_backends()
        backends: dict[str, Backend] = {}
        paths: dict[str, str] = {}
        for i, (name, raw) in enumerate(profiles):
            where = f"scheduler.profiles[{i}]"
            paths[name] = where
            spec: BackendSpec | None = specs.get(name)
            if spec is None:
                raise BackendConfigError(
                    f"{where}.name",
                    f"unknown scheduler backend {name!r}; known: {', '.join(sorted(specs))}",
                )
            if name in backends:
                raise BackendConfigError(f"{where}.name", f"duplicate profile {name!r}")
            try:
                config = spec.config_model.model_validate(raw or {})
            except ValidationError as e:
                raise _config_error(where, e) from None
            backends[name] = spec.factory(config)
        if DEFAULT_SCHEDULER not in backends:
            # default-scheduler is always enabled, even when a config lists only others.
            spec = specs[DEFAULT_SCHEDULER]
            backends[DEFAULT_SCHEDULER] = spec.factory(spec.config_model())
        return cls(backends, default_name, paths)

    @classmethod
    def from_config(cls, config: Any) -> BackendRegistry:
        """From an OperatorConfiguration (phalanx.api.config), already defaulted."""
        sched = config.scheduler
        profiles = [(p.name, p.config) for p in sched.profiles]
        return cls.from_profiles(profiles, sched.default_profile_name or DEFAULT_SCHEDULER)

    def get(self, name: str) -> Backend:
        """By profile name or by the schedulerName its pods carry."""
        backend = self._backends.get(name) or self._by_scheduler_name.get(name)
        if backend is None:
            raise UnknownBackend(name, list(self._backends))
        return backend

    def default(self) -> Backend:
        return self._backends[self._default]

    def get_or_default(self, name: str | None) -> Backend:
        """The backend for a pod's schedulerName; empty means the default profile."""
        return self.get(name) if name else self.default()

    def enabled(self) -> list[Backend]:
        return list(self._backends.values())

    def names(self) -> list[str]:
        return list(self._backends)

    def use_cache(self, cache: CacheReader) -> None:
        """Let every backend that reads through a cache (objects.ClientHolder) use `cache`."""
        for backend in self._backends.values():
            if hasattr(backend, "cache"):
                backend.cache = cache  # type: ignore[attr-defined]

    async def init_all(self, client: Client) -> None:
        """Initialise every enabled backend (API discovery, clients). A backend's
        BackendConfigError names a field inside its profile; re-raised with the full path."""
        for name, backend in self._backends.items():
            try:
                await backend.init(client)
            except BackendConfigError as e:
                where = self._paths.get(name, f"scheduler.profiles (implicit {name!r})")
                raise BackendConfigError(f"{where}.{e.field}", e.reason) from None
