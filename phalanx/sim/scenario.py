"""`Scenario`: what happens to a workload while it runs, at given virtual times.

    apiVersion: sim.phalanx.dev/v1alpha1
    kind: Scenario
    metadata: {name: rush-hour}
    spec:
      steps:
      - at: 2m
        apply:                        # objects that arrive later (e.g. a high-priority job)
        - {apiVersion: grove.io/v1alpha1, kind: PodCliqueSet, ...}
      - at: 5m
        scale: {kind: PodCliqueSet, name: inference, replicas: 3}
      - at: 10m
        fail: {podGang: train-0, count: 1}      # pods end Failed (exit code 1)
      - at: 12m
        nodeDown: {node: node-003}            # NotReady + its pods are lost
      - at: 20m
        finish: {podCliqueSet: train}         # pods end Succeeded
      - at: 30m
        delete: {kind: PodCliqueSet, name: inference}

Each step has `at` (a Go duration from the start of the run) and exactly one action. Steps
at the same time run in the order written.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Self

from pydantic import Field, field_validator, model_validator

from phalanx.api.base import KubeModel, Resource
from phalanx.api.duration import parse_duration

from .clusterspec import SIM_API_VERSION

# Pod annotations (also read from the pod's PodClique and PodCliqueSet) that script a pod's life.
ANNOTATION_RUN_FOR = "sim.phalanx.dev/run-for"  # Succeeded this long after it started
ANNOTATION_FAIL_AFTER = "sim.phalanx.dev/fail-after"  # Failed this long after it started
ANNOTATION_EXIT_CODE = "sim.phalanx.dev/exit-code"  # exit code of a scripted failure
LIFECYCLE_ANNOTATIONS = (ANNOTATION_RUN_FOR, ANNOTATION_FAIL_AFTER)

ACTIONS = ("apply", "scale", "delete", "fail", "finish", "node_down", "node_up")


class ObjectTarget(KubeModel):
    kind: str = "PodCliqueSet"
    name: str = Field(min_length=1)
    namespace: str | None = None


class ScaleAction(ObjectTarget):
    replicas: int = Field(ge=0)


class PodTarget(KubeModel):
    """Which pods a fail/finish step ends: by name, gang, clique, PodCliqueSet or selector
    (combined with AND); `count` takes the first N by name."""

    pod: str | None = None
    pod_gang: str | None = None
    pod_clique: str | None = None
    pod_clique_set: str | None = None
    selector: str | None = None
    namespace: str | None = None
    count: int | None = Field(default=None, ge=1)
    exit_code: int | None = None

    @model_validator(mode="after")
    def _something(self) -> Self:
        if not any((self.pod, self.pod_gang, self.pod_clique, self.pod_clique_set,
                    self.selector)):
            raise ValueError(
                "name the pods: set one of pod, podGang, podClique, podCliqueSet or selector"
            )
        return self


class NodeTarget(KubeModel):
    node: str | None = None
    selector: str | None = None

    @model_validator(mode="after")
    def _something(self) -> Self:
        if not (self.node or self.selector):
            raise ValueError("name the nodes: set node or selector")
        return self


class Step(KubeModel):
    at: str | float
    apply: list[dict[str, Any]] | None = None
    scale: ScaleAction | None = None
    delete: ObjectTarget | None = None
    fail: PodTarget | None = None
    finish: PodTarget | None = None
    node_down: NodeTarget | None = None
    node_up: NodeTarget | None = None

    @field_validator("at")
    @classmethod
    def _duration(cls, v: str | float) -> str | float:
        seconds = v if isinstance(v, int | float) else parse_duration(str(v))
        if seconds < 0:
            raise ValueError("must not be negative")
        return v

    @field_validator("apply", mode="before")
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        return [v] if isinstance(v, dict) else v

    @model_validator(mode="after")
    def _one_action(self) -> Self:
        chosen = [a for a in ACTIONS if getattr(self, a) is not None]
        if len(chosen) != 1:
            spelled = ", ".join(_camel(a) for a in ACTIONS)
            raise ValueError(
                f"a step needs exactly one action ({spelled}); got "
                f"{', '.join(_camel(a) for a in chosen) or 'none'}"
            )
        return self

    @property
    def seconds(self) -> float:
        return float(self.at) if isinstance(self.at, int | float) else parse_duration(self.at)

    @property
    def action(self) -> str:
        return next(_camel(a) for a in ACTIONS if getattr(self, a) is not None)

    def describe(self) -> str:
        """What the step does, in words, for the run log and the report."""
        if self.apply is not None:
            objs = [f"{o.get('kind', '?')} {o.get('metadata', {}).get('name', '?')}"
                    for o in self.apply]
            return "create " + ", ".join(objs)
        if self.scale is not None:
            return f"scale {self.scale.kind} {self.scale.name} to {self.scale.replicas}"
        if self.delete is not None:
            return f"delete {self.delete.kind} {self.delete.name}"
        for verb, target in (("fail", self.fail), ("finish", self.finish)):
            if target is not None:
                return f"{verb} {_describe_pods(target)}"
        for verb, node in (("take down", self.node_down), ("bring up", self.node_up)):
            if node is not None:
                return f"{verb} node {node.node}" if node.node else f"{verb} nodes {node.selector}"
        return self.action


def _describe_pods(t: PodTarget) -> str:
    parts = []
    if t.pod:
        parts.append(f"pod {t.pod}")
    for label, value in (("gang", t.pod_gang), ("clique", t.pod_clique),
                         ("PodCliqueSet", t.pod_clique_set), ("selector", t.selector)):
        if value:
            parts.append(f"{label} {value}")
    what = "pods of " + " and ".join(parts) if not t.pod else parts[0]
    return f"{t.count} {what}" if t.count else what


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(w.capitalize() for w in rest)


class ScenarioSpec(KubeModel):
    steps: list[Step] = Field(default_factory=list)


class Scenario(Resource):
    API_VERSION: ClassVar[str] = SIM_API_VERSION
    KIND: ClassVar[str] = "Scenario"
    PLURAL: ClassVar[str] = "scenarios"
    NAMESPACED: ClassVar[bool] = False

    spec: ScenarioSpec = Field(default_factory=ScenarioSpec)

    def ordered_steps(self) -> list[Step]:
        """By time; steps at the same time keep the order they were written in."""
        return sorted(self.spec.steps, key=lambda s: s.seconds)  # sort is stable


PodEnd = Literal["Succeeded", "Failed"]
