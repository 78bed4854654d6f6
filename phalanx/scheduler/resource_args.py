"""pluginConfig args of NodeResourcesFit and NodeResourcesBalancedAllocation, defaulted and
validated as kube-scheduler's `kubescheduler.config.k8s.io/v1` API does (a resource weight
of 0 means 1; an empty resource list means cpu and memory, weight 1), with one Phalanx
default: NodeResourcesFit without a `scoringStrategy` (or a MostAllocated one without
`resources`) packs GPUs, `nvidia.com/gpu` weighing 10 next to cpu and memory.

Errors name the field as kube-scheduler does (`scoringStrategy.resources[1].weight`).
"""

from __future__ import annotations

import json
from enum import StrEnum

from pydantic import Field, model_validator

from phalanx.api.base import KubeModel
from phalanx.scheduler.framework.pluginargs import raise_errors
from phalanx.scheduler.nodeselector import label_key_errors
from phalanx.scheduler.resources import CPU, GPU, MEMORY

MAX_RESOURCE_WEIGHT = 100
MAX_CUSTOM_PRIORITY_SCORE = 10


class ScoringType(StrEnum):
    LEAST_ALLOCATED = "LeastAllocated"
    MOST_ALLOCATED = "MostAllocated"
    REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"


class ResourceSpec(KubeModel):
    name: str
    weight: int = 0  # 0: defaulted to 1


class UtilizationShapePoint(KubeModel):
    utilization: int
    score: int


class RequestedToCapacityRatioParam(KubeModel):
    shape: list[UtilizationShapePoint] = Field(default_factory=list)


KUBE_DEFAULT_RESOURCES: tuple[tuple[str, int], ...] = ((CPU, 1), (MEMORY, 1))
# Resources scored when `resources` is not given, per strategy (see the module docstring).
DEFAULT_RESOURCES: dict[ScoringType, tuple[tuple[str, int], ...]] = {
    ScoringType.MOST_ALLOCATED: ((GPU, 10), (CPU, 1), (MEMORY, 1)),
    ScoringType.LEAST_ALLOCATED: KUBE_DEFAULT_RESOURCES,
    ScoringType.REQUESTED_TO_CAPACITY_RATIO: KUBE_DEFAULT_RESOURCES,
}


def _invalid(path: str, value: object, detail: str) -> str:
    return f"{path}: Invalid value: {json.dumps(value)}: {detail}"


def _defaulted(
    resources: list[ResourceSpec] | None, default: tuple[tuple[str, int], ...]
) -> list[ResourceSpec]:
    if not resources:
        return [ResourceSpec(name=n, weight=w) for n, w in default]
    return [r if r.weight else ResourceSpec(name=r.name, weight=1) for r in resources]


class ScoringStrategy(KubeModel):
    # kube requires a type; without one we keep the Phalanx default (GPU packing).
    type: ScoringType = ScoringType.MOST_ALLOCATED
    # None or empty: DEFAULT_RESOURCES of the type.
    resources: list[ResourceSpec] | None = None
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None

    def weighted(self) -> list[ResourceSpec]:
        """The scored resources, defaulted."""
        return _defaulted(self.resources, DEFAULT_RESOURCES[self.type])

    def shape(self) -> list[tuple[int, int]]:
        rtcr = self.requested_to_capacity_ratio
        return [(p.utilization, p.score) for p in (rtcr.shape if rtcr else ())]

    def errors(self, path: str = "scoringStrategy") -> list[str]:
        errs: list[str] = []
        for i, r in enumerate(self.weighted() if self.resources else ()):
            if not 0 < r.weight <= MAX_RESOURCE_WEIGHT:
                errs.append(
                    _invalid(
                        f"{path}.resources[{i}].weight",
                        r.weight,
                        f"resource weight of {r.name} not in valid range (0, 100]",
                    )
                )
        rtcr_path = f"{path}.requestedToCapacityRatio"
        if self.type == ScoringType.REQUESTED_TO_CAPACITY_RATIO:
            if self.requested_to_capacity_ratio is None:
                errs.append(
                    f"{rtcr_path}: Required value: must be specified when type is "
                    "RequestedToCapacityRatio"
                )
            else:
                errs += shape_errors(self.requested_to_capacity_ratio.shape, f"{rtcr_path}.shape")
        elif self.requested_to_capacity_ratio is not None:
            errs.append(
                f"{rtcr_path}: Forbidden: must be nil when type is not RequestedToCapacityRatio"
            )
        return errs


def shape_errors(shape: list[UtilizationShapePoint], path: str) -> list[str]:
    if not shape:
        return [f"{path}: Required value: at least one point must be specified"]
    errs: list[str] = []
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            errs.append(
                _invalid(
                    f"{path}[{i}].utilization",
                    shape[i].utilization,
                    "values must be sorted in increasing order",
                )
            )
            break
    for i, p in enumerate(shape):
        if not 0 <= p.utilization <= 100:
            errs.append(
                _invalid(f"{path}[{i}].utilization", p.utilization, "not in valid range [0, 100]")
            )
        if not 0 <= p.score <= MAX_CUSTOM_PRIORITY_SCORE:
            errs.append(_invalid(f"{path}[{i}].score", p.score, "not in valid range [0, 10]"))
    return errs


def _raise(errors: list[str]) -> None:
    raise_errors(errors)  # ArgsError: one message per field, printed as kube aggregates them


class NodeResourcesFitArgs(KubeModel):
    """kube-scheduler's NodeResourcesFitArgs."""

    # Extended resources (`example.com/foo`) Filter does not check...
    ignored_resources: list[str] = Field(default_factory=list)
    # ...and the groups (`example.com`) whose extended resources it does not check.
    ignored_resource_groups: list[str] = Field(default_factory=list)
    scoring_strategy: ScoringStrategy = Field(default_factory=ScoringStrategy)

    @model_validator(mode="after")
    def _valid(self) -> NodeResourcesFitArgs:
        errs: list[str] = []
        for i, name in enumerate(self.ignored_resources):
            e = label_key_errors(name)
            if e:
                errs.append(_invalid(f"ignoredResources[{i}]", name, "; ".join(e)))
        for i, group in enumerate(self.ignored_resource_groups):
            if "/" in group:
                errs.append(
                    _invalid(
                        f"ignoredResourceGroups[{i}]",
                        group,
                        "resource group name can't contain '/'",
                    )
                )
            e = label_key_errors(group)
            if e:
                errs.append(_invalid(f"ignoredResourceGroups[{i}]", group, "; ".join(e)))
        errs += self.scoring_strategy.errors()
        _raise(errs)
        return self


class NodeResourcesBalancedAllocationArgs(KubeModel):
    """kube-scheduler's NodeResourcesBalancedAllocationArgs (every weight must be 1)."""

    resources: list[ResourceSpec] | None = None

    def weighted(self) -> list[ResourceSpec]:
        return _defaulted(self.resources, KUBE_DEFAULT_RESOURCES)

    @model_validator(mode="after")
    def _valid(self) -> NodeResourcesBalancedAllocationArgs:
        errs: list[str] = []
        seen: set[str] = set()
        for i, r in enumerate(self.weighted()):
            if r.name in seen:
                errs.append(f'resources[{i}].name: Duplicate value: "{r.name}"')
            seen.add(r.name)
            if r.weight != 1:
                errs.append(_invalid(f"resources[{i}].weight", r.weight, "must be 1"))
        _raise(errs)
        return self
