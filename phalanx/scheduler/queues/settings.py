"""The queue plugins' arguments (`pluginConfig` of QueueCapacity / QueueReclaim).

```yaml
pluginConfig:
- name: QueueCapacity
  args:
    defaultQueue: research        # pods of this profile without a queue label
    kValue: 1.0                   # weight of past usage in fair share (time-based)
    usage: {windowSize: 168h, halfLifePeriod: 10m} # time-based fair share (off without it)
    nonPreemptiblePriorityThreshold: 100
    reclaimerSaturationMultiplier: 1.0
    defaultReclaimMinRuntime: 0s
    reclaimResolveMethod: lca     # or queue
    statusIntervalSeconds: 10
```

`defaultQueue` is per profile (and refused on a profile standing in for a scheduler that does
not read KAI queues: volcano, koord-scheduler, default-scheduler, scheduler-plugins). The rest
is scheduler-wide (queues and fair share are one for the whole cluster, as in one KAI scheduler
shard): whichever profile's QueueCapacity or QueueReclaim sets an argument sets it for all;
two that set it to different values are refused, naming both (`merge`). Durations are Go
durations (KAI's metav1.Duration): 168h, not 1w. Names are KAI's where KAI has them
(proportion's kValue and saturation multiplier, minruntime's defaultReclaimMinRuntime /
reclaimResolveMethod, the usage DB's windowSize (default 168h, as KAI's) / halfLifePeriod;
KAI's threshold of 100 makes a job preemptible).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from phalanx.api.duration import parse_duration


class UsageParams(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    window_size: str = "168h"  # KAI's default: a week
    window_type: Literal["sliding"] = "sliding"
    half_life_period: str | None = None

    @field_validator("window_size", "half_life_period")
    @classmethod
    def _duration(cls, v: str | None) -> str | None:
        if v is not None and parse_duration(v) <= 0:
            raise ValueError(f"{v!r} must be a positive duration")
        return v


class QueueArgs(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    default_queue: str | None = Field(default=None, min_length=1)
    k_value: float = Field(default=1.0, ge=0)
    usage: UsageParams | None = None
    non_preemptible_priority_threshold: int = 100
    reclaimer_saturation_multiplier: float = Field(default=1.0, ge=1.0)
    default_reclaim_min_runtime: str = "0s"
    default_preempt_min_runtime: str = "0s"
    reclaim_resolve_method: Literal["lca", "queue"] = "lca"
    status_interval_seconds: float = Field(default=10.0, gt=0)
    # Seconds to wait for reclaimed pods to terminate before the same gang reclaims again.
    victim_grace_seconds: float = Field(default=60.0, gt=0)

    @field_validator("default_reclaim_min_runtime", "default_preempt_min_runtime")
    @classmethod
    def _runtime(cls, v: str) -> str:
        if parse_duration(v) < 0:
            raise ValueError(f"{v!r} must not be negative")
        return v


def parse_args(args: object) -> QueueArgs:
    if isinstance(args, QueueArgs):
        return args
    return QueueArgs.model_validate(args or {})


def merge(current: QueueArgs, set_by: dict[str, str], args: QueueArgs, where: str) -> QueueArgs:
    """`current` with the scheduler-wide arguments `args` sets (`where`: "profile 'a'
    QueueCapacity"); `set_by` records who set each. ValueError naming both when one was set
    to another value before."""
    update = {}
    for name in sorted(args.model_fields_set - {"default_queue"}):
        value = getattr(args, name)
        alias = QueueArgs.model_fields[name].alias or name
        if name in set_by and getattr(current, name) != value:
            raise ValueError(
                f"{alias}: {_show(value)} differs from {_show(getattr(current, name))} set by "
                f"{set_by[name]}; it is scheduler-wide: set it once, or the same everywhere")
        set_by.setdefault(name, where)
        update[name] = value
    return current.model_copy(update=update) if update else current


def _show(value: object) -> str:
    if isinstance(value, BaseModel):
        return str(value.model_dump(by_alias=True, exclude_none=True))
    return repr(value)
