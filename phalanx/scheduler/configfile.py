"""The scheduler's configuration file: kube-scheduler's `KubeSchedulerConfiguration`.

The same document configures the scheduler everywhere it runs:

- `phalanx scheduler --config FILE` (a real API server): the file's profiles are the
  profiles, as kube-scheduler's `--config`;
- `phalanx run` / `phalanx validate` (the embedded cluster): the document in a workload file
  or `--scheduler-config FILE`. Each of its profiles replaces the embedded profile of the same
  `schedulerName` (the embedded scheduler stands in for every peer scheduler, so the others
  stay), and its scheduler-wide settings replace the defaults;
- `phalanx manifests all --scheduler-config FILE`: mounted into the scheduler Deployment.

```yaml
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: phalanx-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: LeastAllocated}}
```

The fields are kube-scheduler's where Phalanx has them (`phalanx.scheduler.framework.config`);
kube's fields Phalanx has no use for (`leaderElection`, `clientConnection`, `extenders`, ...)
are refused by name, as are unknown ones. Phalanx's own extensions: `seed` and
`podMaxInUnschedulablePodsDurationSeconds` (kube-scheduler's flag of that name), and its own
plugins (Coscheduling, TopologyPacking, GangReservation, QueueCapacity, QueueReclaim).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Self

from pydantic import model_validator

from phalanx.api import registry
from phalanx.api.base import Resource
from phalanx.api.errors import ManifestError
from phalanx.api.loader import load_file

from .framework.config import PROFILE_NAMES, SchedulerConfiguration, default_profile


class KubeSchedulerConfiguration(Resource, SchedulerConfiguration):
    """A KubeSchedulerConfiguration document (a file, never an API object)."""

    API_VERSION = "kubescheduler.config.k8s.io/v1"
    KIND = "KubeSchedulerConfiguration"
    PLURAL = ""
    NAMESPACED = False
    SERVED: ClassVar[bool] = False

    @model_validator(mode="after")
    def _no_metadata(self) -> Self:
        # kube-scheduler's type has no ObjectMeta: its strict decoder refuses `metadata`.
        if self.metadata.model_dump(exclude_defaults=True):
            raise ValueError("metadata: unknown field (a KubeSchedulerConfiguration has no "
                             "metadata)")
        return self

    def to_dict(self, *, warnings: bool = True) -> dict[str, Any]:
        """As written: what was set, without the defaults (and no metadata)."""
        data = self.model_dump(by_alias=True, exclude_none=True, exclude_unset=True,
                               mode="json", warnings=warnings)
        data.pop("metadata", None)
        return {"apiVersion": self.api_version, "kind": self.kind, **data}


registry.register(KubeSchedulerConfiguration)


class SchedulerConfigError(ManifestError):
    """A scheduler configuration the scheduler would refuse; names the field."""


def check(config: SchedulerConfiguration, *, source: str | None = None) -> None:
    """Build every profile's plugins (without a cluster) so that bad plugin args, unknown
    plugins or profiles the scheduler would refuse fail now, naming the field."""
    from phalanx.cluster.memory import MemoryCluster

    from .framework.resolve import ProfileError
    from .scheduler import Scheduler

    try:
        Scheduler(MemoryCluster(builtin_admission=False), config, record_events=False)
    except ProfileError as exc:
        raise SchedulerConfigError(str(exc), source=source,
                                   obj=KubeSchedulerConfiguration.KIND) from None


def load(path: str | Path) -> KubeSchedulerConfiguration:
    """The one KubeSchedulerConfiguration in a file, checked (`check`)."""
    docs = load_file(path)
    found = [o for o in docs if isinstance(o, KubeSchedulerConfiguration)]
    if len(found) != 1 or len(docs) != 1:
        kinds = ", ".join(sorted({o.kind for o in docs})) or "nothing"
        raise SchedulerConfigError(
            f"expected one {KubeSchedulerConfiguration.KIND} "
            f"(apiVersion {KubeSchedulerConfiguration.API_VERSION}); the file holds {kinds}",
            source=str(path))
    check(found[0], source=str(path))
    return found[0]


def embedded(config: SchedulerConfiguration | None) -> SchedulerConfiguration:
    """The embedded cluster's configuration: one profile per scheduler it stands in for
    (`PROFILE_NAMES`), each replaced by the user's profile of that name; the user's other
    profiles added; the user's scheduler-wide settings."""
    if config is None:
        return SchedulerConfiguration(profiles=[default_profile(n) for n in PROFILE_NAMES])
    given = {p.scheduler_name for p in config.profiles}
    profiles = [default_profile(n) for n in PROFILE_NAMES if n not in given]
    merged = SchedulerConfiguration.model_validate(
        config.model_dump(by_alias=True, exclude={"api_version", "kind", "metadata"}))
    merged.profiles = [*merged.profiles, *profiles]
    return merged


def served_names(config: SchedulerConfiguration) -> list[str]:
    return [p.scheduler_name for p in config.profiles]


__all__ = ["KubeSchedulerConfiguration", "SchedulerConfigError", "check",
           "embedded", "load", "served_names"]
