"""`Scenario`: what happens to a workload while it runs, at given virtual times.

    apiVersion: sim.phalanx.dev/v1alpha1
    kind: Scenario
    metadata: {name: rush-hour}
    spec:
      steps:
      - at: 2m
        apply:                        # objects that arrive later (e.g. a high-priority job),
                                      # or new versions of existing ones (kubectl apply)
        - {apiVersion: grove.io/v1alpha1, kind: PodCliqueSet, ...}
      - at: 5m
        scale: {kind: PodCliqueSet, name: inference, replicas: 3}
      - at: 10m
        fail: {podGang: train-0, count: 1}      # pods end Failed (exitCode: 1 unless given;
                                              # never 0, as a kubelet would say Succeeded)
      - at: 12m
        nodeDown: {node: node-003}            # NotReady + its pods are lost
      - at: 0s
        cordon: {nodes: [node-001, node-002]} # unschedulable; their pods keep running
      - at: 14m
        uncordon: {selector: pool=gpu}
      - at: 16m
        deletePod: {podClique: train-0-worker, count: 1, ready: true, cordon: true}
      - at: 18m
        label: {node: node-004, labels: {example.com/rack: r9, example.com/old: null}}
      - at: 20m
        finish: {podCliqueSet: train}         # pods end Succeeded (exit code 0)
      - at: 25m
        metric: {hpa: inference-0-frontend, value: 160}  # the HPA's metric (phalanx.sim.hpa)
      - at: 30m
        delete: {kind: PodCliqueSet, name: inference}
      snapshotEvery: 1m                       # object snapshots for `phalanx get --at`

Each step has `at` (a Go duration from the start of the run) and exactly one action. Steps
at the same time run in the order written, except that node steps (cordon, uncordon, label,
nodeDown, nodeUp) at 0s run before the workload's objects are created, so a scenario can
prepare the cluster before anything is scheduled. The saved run keeps a snapshot of every
object just before each step, and every `snapshotEvery`.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Self

from pydantic import Field, field_validator, model_validator

from phalanx.api.base import KubeModel, Resource
from phalanx.api.duration import parse_duration

from .clusterspec import SIM_API_VERSION

# Pod annotations (also read from the pod's PodClique and PodCliqueSet) that script a pod's
# life; one pod has run-for or fail-after, not both (refused when the workload is read).
ANNOTATION_RUN_FOR = "sim.phalanx.dev/run-for"  # Succeeded this long after it started
ANNOTATION_FAIL_AFTER = "sim.phalanx.dev/fail-after"  # Failed this long after it started
ANNOTATION_EXIT_CODE = "sim.phalanx.dev/exit-code"  # of a scripted failure (non-zero)
LIFECYCLE_ANNOTATIONS = (ANNOTATION_RUN_FOR, ANNOTATION_FAIL_AFTER)

ACTIONS = ("apply", "scale", "delete", "fail", "finish", "delete_pod", "node_down", "node_up",
           "cordon", "uncordon", "label", "metric")
# Steps that act on nodes only: at 0s they run before the workload is created.
NODE_ACTIONS = ("node_down", "node_up", "cordon", "uncordon", "label")


class ObjectTarget(KubeModel):
    kind: str = "PodCliqueSet"
    name: str = Field(min_length=1)
    namespace: str | None = None


class ScaleAction(ObjectTarget):
    replicas: int = Field(ge=0)

    @field_validator("kind")
    @classmethod
    def _has_scale(cls, kind: str) -> str:
        """As `kubectl scale`, the step writes through the kind's /scale subresource: a kind
        without one is refused when the scenario is read, not when the step runs."""
        from phalanx.api import registry

        try:
            resolved = registry.resolve(kind)
        except LookupError as e:
            raise ValueError(str(e)) from None
        if not getattr(resolved, "SCALE", None):
            scalable = sorted(k.KIND for k in registry.kinds(served_only=True)
                              if getattr(k, "SCALE", None))
            raise ValueError(f"{resolved.KIND} has no scale subresource; kinds that have one: "
                             f"{', '.join(scalable)}")
        return kind


class PodTarget(KubeModel):
    """Which pods a fail/finish/deletePod step acts on: by `pod` (a hostname such as
    `train-0-worker-1`, as the operator's pods have generated names, or a pod name), gang,
    clique, PodCliqueSet, node or label selector (combined with AND), only Ready (or not Ready)
    ones with `ready`; `count` takes the first N by hostname."""

    pod: str | None = None
    pod_gang: str | None = None
    pod_clique: str | None = None
    pod_clique_set: str | None = None
    node: str | None = None
    selector: str | None = None
    namespace: str | None = None
    ready: bool | None = None
    count: int | None = Field(default=None, ge=1)
    exit_code: int | None = None

    @model_validator(mode="after")
    def _something(self) -> Self:
        if not any((self.pod, self.pod_gang, self.pod_clique, self.pod_clique_set, self.node,
                    self.selector)):
            raise ValueError(
                "name the pods: set one of pod, podGang, podClique, podCliqueSet, node or "
                "selector"
            )
        return self


class FailTarget(PodTarget):
    """`fail`: the pods' containers exit with `exitCode` (default 1), a failure. A kubelet
    takes exit code 0 for success (a pod that ends then is Succeeded), so 0 is refused."""

    @field_validator("exit_code")
    @classmethod
    def _nonzero(cls, v: int | None) -> int | None:
        if v == 0:
            raise ValueError("exit code 0 is a success, not a failure (a pod that ends with "
                             "it is Succeeded): use finish for that, or a non-zero code")
        return v


class FinishTarget(PodTarget):
    """`finish`: the pods' containers exit 0 and the pods end Succeeded, as a kubelet
    reports them only when every container exited 0: `exitCode`, if given, must be 0."""

    @field_validator("exit_code")
    @classmethod
    def _zero(cls, v: int | None) -> int | None:
        if v not in (None, 0):
            raise ValueError(f"a pod whose container exits {v} ends Failed, not Succeeded: "
                             "use fail for that, or leave exitCode out")
        return v


class DeletePodTarget(PodTarget):
    """`kubectl delete pod`: the pods go (their controller makes replacements). With
    `cordon`, each pod's node is cordoned first, so the replacement cannot land there."""

    cordon: bool = False
    exit_code: None = None  # a deleted pod has no exit code

    @field_validator("exit_code", mode="before")
    @classmethod
    def _no_exit_code(cls, v: object) -> None:
        if v is not None:
            raise ValueError("a deleted pod has no exit code (use fail for that)")


class NodeTarget(KubeModel):
    """Nodes by name (`node`, or a list in `nodes`) or by label `selector`."""

    node: str | None = None
    nodes: list[str] | None = None
    selector: str | None = None

    @model_validator(mode="after")
    def _something(self) -> Self:
        if not (self.node or self.nodes or self.selector):
            raise ValueError("name the nodes: set node, nodes or selector")
        return self

    def describe(self) -> str:
        named = [n for n in (self.node, *(self.nodes or ())) if n]
        parts = [f"node{'s' if len(named) > 1 else ''} {', '.join(named)}"] if named else []
        if self.selector:
            parts.append(f"nodes {self.selector}")
        return " and ".join(parts)


class LabelAction(NodeTarget):
    """Set node labels (a null value removes the label), as `kubectl label node --overwrite`."""

    labels: dict[str, str | None] = Field(min_length=1)


class MetricAction(KubeModel):
    """The current value of an HPA's metric (in its target's unit: percent for
    averageUtilization), which the embedded HPA controller acts on."""

    hpa: str = Field(min_length=1)
    value: float = Field(ge=0)
    namespace: str | None = None


class Step(KubeModel):
    at: str | float
    apply: list[dict[str, Any]] | None = None
    scale: ScaleAction | None = None
    delete: ObjectTarget | None = None
    fail: FailTarget | None = None
    finish: FinishTarget | None = None
    delete_pod: DeletePodTarget | None = None
    node_down: NodeTarget | None = None
    node_up: NodeTarget | None = None
    cordon: NodeTarget | None = None
    uncordon: NodeTarget | None = None
    label: LabelAction | None = None
    metric: MetricAction | None = None

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

    @property
    def acts_on_nodes_only(self) -> bool:
        return any(getattr(self, a) is not None for a in NODE_ACTIONS)

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
        for verb, target in (("fail", self.fail), ("finish", self.finish),
                             ("delete", self.delete_pod)):
            if target is not None:
                return f"{verb} {_describe_pods(target)}"
        for verb, node in (("take down", self.node_down), ("bring up", self.node_up),
                           ("cordon", self.cordon), ("uncordon", self.uncordon)):
            if node is not None:
                return f"{verb} {node.describe()}"
        if self.label is not None:
            changes = ", ".join(f"{k}={v}" if v is not None else f"{k}-"
                                for k, v in self.label.labels.items())
            return f"label {self.label.describe()}: {changes}"
        if self.metric is not None:
            return f"set HPA {self.metric.hpa}'s metric to {self.metric.value:g}"
        return self.action


def _describe_pods(t: PodTarget) -> str:
    parts = []
    if t.pod:
        parts.append(f"pod {t.pod}")
    for label, value in (("gang", t.pod_gang), ("clique", t.pod_clique),
                         ("PodCliqueSet", t.pod_clique_set), ("node", t.node),
                         ("selector", t.selector)):
        if value:
            parts.append(f"{label} {value}")
    what = "pods of " + " and ".join(parts) if not t.pod else parts[0]
    if t.ready is not None:
        what = ("ready " if t.ready else "not-ready ") + what
    return f"{t.count} {what}" if t.count else what


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(w.capitalize() for w in rest)


class ScenarioSpec(KubeModel):
    steps: list[Step] = Field(default_factory=list)
    # Also snapshot every object this often (a Go duration) for `phalanx get --at`; besides
    # the snapshot taken just before each step.
    snapshot_every: str | None = None

    @field_validator("snapshot_every")
    @classmethod
    def _interval(cls, v: str | None) -> str | None:
        if v is not None and parse_duration(v) <= 0:
            raise ValueError("must be a positive duration such as 30s or 5m")
        return v

    @property
    def snapshot_seconds(self) -> float | None:
        return parse_duration(self.snapshot_every) if self.snapshot_every else None


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
