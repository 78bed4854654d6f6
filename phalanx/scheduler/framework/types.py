"""Data the framework hands to plugins: parsed pods, cluster events, filter results, diagnoses."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from enum import IntEnum, IntFlag
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel

from phalanx.scheduler.csitranslation import pod_attachable
from phalanx.scheduler.hostports import pod_host_ports
from phalanx.scheduler.resources import non_zero_requests, pod_requests
from phalanx.scheduler.volumes import pod_claims

from .status import Code

if TYPE_CHECKING:
    from phalanx.api.core import Pod


def _freeze(value: Any) -> Hashable:
    """A hashable, order-stable form of a (pydantic) value, for pod signatures.

    A model becomes its JSON (serialised in pydantic-core: several times cheaper than
    `to_dict()` and a Python walk; every pod on a real server carries two default
    tolerations). Equal JSON means equal values, which is all a signature needs; a dict
    field in another key order only costs a cache miss."""
    if value is None:
        return None
    if isinstance(value, BaseModel):
        return (type(value).__name__, value.model_dump_json())
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


class PodInfo:
    """A pod plus what the scheduler derives from it once (requests, priority, signature).

    `pod` is the informer's shared object: read-only. Build a new PodInfo when the pod changes.
    """

    __slots__ = (
        "pod",
        "key",
        "uid",
        "name",
        "namespace",
        "priority",
        "created",
        "requests",
        "score_requests",
        "_signature",
        "_vector_cache",
        "_terms",
        "_spread",  # PodTopologySpread (lazy)
        "_host_ports",  # NodePorts (lazy)
        "_claims",  # VolumeBinding and friends (lazy)
        "_attachable",  # NodeVolumeLimits (lazy)
    )

    def __init__(self, pod: Pod, like: PodInfo | None = None) -> None:
        """`like`: the info of an earlier version of the pod; its requests are kept when the
        parts they come from are unchanged (`request_inputs_unchanged`), e.g. when a gate is
        lifted."""
        meta = pod.metadata
        self.pod = pod
        self.name: str = meta.name or ""
        self.namespace: str = meta.namespace or ""
        self.key: str = f"{self.namespace}/{self.name}" if self.namespace else self.name
        self.uid: str = meta.uid or self.key
        self.priority: int = int(pod.spec.priority or 0)
        ts = meta.creation_timestamp
        self.created: float = ts.timestamp() if ts is not None else 0.0
        if like is not None and request_inputs_unchanged(like.pod.spec, pod.spec):
            self.requests, self.score_requests = like.requests, like.score_requests
        else:
            # Canonical units (see phalanx.scheduler.resources); `pods` not included.
            self.requests = pod_requests(pod)
            # Requests as scoring sees them (cpu/memory defaults for best-effort pods).
            self.score_requests = non_zero_requests(self.requests, pod)
        self._signature: Hashable | None = None
        # Snapshot-owned cache: (resource-layout version, request vector).
        self._vector_cache: tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._terms: Any = None  # parsed inter-pod (anti-)affinity terms (lazy)
        self._spread: Any = None
        self._host_ports: Any = None
        self._claims: Any = None
        self._attachable: Any = None

    @property
    def labels(self) -> dict[str, str]:
        return self.pod.metadata.labels

    @property
    def pod_terms(self) -> Any:
        """Inter-pod (anti-)affinity terms (phalanx.scheduler.affinity.PodTerms), parsed once."""
        if self._terms is None:
            from phalanx.scheduler.affinity import parse_pod_terms

            self._terms = parse_pod_terms(self.pod)
        return self._terms

    @property
    def host_ports(self) -> Any:
        """((hostIP, protocol, port), ...) the pod takes on its node (hostports.py), once."""
        if self._host_ports is None:
            self._host_ports = pod_host_ports(self.pod)
        return self._host_ports

    @property
    def claims(self) -> Any:
        """The pod's PVC-backed volumes (phalanx.scheduler.volumes.PodClaims), parsed once."""
        if self._claims is None:
            self._claims = pod_claims(self.pod)
        return self._claims

    @property
    def attachable(self) -> Any:
        """Volumes NodeVolumeLimits counts (csitranslation.PodVolume tuple), parsed once."""
        if self._attachable is None:
            self._attachable = pod_attachable(self.pod)
        return self._attachable

    @property
    def spread(self) -> Any:
        """The pod's own topology spread constraints (phalanx.scheduler.spread.PodSpread)."""
        if self._spread is None:
            from phalanx.scheduler.spread import parse_pod_spread

            self._spread = parse_pod_spread(self.pod)
        return self._spread

    @property
    def scheduler_name(self) -> str:
        return self.pod.spec.scheduler_name or "default-scheduler"

    @property
    def signature(self) -> Hashable:
        """Everything node-local filters and scores may read from the pod.

        Pods with equal signatures (typically the members of one gang) get the same
        node-local filter and score results, so the framework computes them once and only
        re-evaluates the nodes whose rows changed since (see NodeLocal in interface.py).
        """
        if self._signature is None:
            spec = self.pod.spec
            node_affinity = spec.affinity.node_affinity if spec.affinity else None
            self._signature = (
                self.scheduler_name,
                # requests, and the cpu/memory scoring counts (they differ per container layout)
                (tuple(sorted(self.requests.items())), self.score_requests.get("cpu"),
                 self.score_requests.get("memory")),
                _freeze(spec.node_selector),
                _freeze(node_affinity),
                _freeze(spec.tolerations),
            )
        return self._signature

    def __repr__(self) -> str:
        return f"PodInfo({self.key})"


class QueuedPodInfo:
    """A pod's life in the scheduling queue (attempts, timestamps, why it last failed)."""

    __slots__ = (
        "info",
        "timestamp",
        "initial_attempt_timestamp",
        "attempts",
        "unschedulable_plugins",
        "pending_plugins",
        "gated",
        "gating_plugin",
        "backoff_expiry",
        "seq",
    )

    def __init__(self, info: PodInfo, now: float, seq: int = 0) -> None:
        self.info = info
        # When the pod (re)entered the queue; activeQ ordering tie-break is age.
        self.timestamp = now
        self.initial_attempt_timestamp: float | None = None
        self.attempts = 0
        # Plugins that rejected the pod in its last cycle: only cluster events they registered
        # for (and whose queueing hints agree) move it back to activeQ.
        self.unschedulable_plugins: set[str] = set()
        # Plugins that returned Pending-like waits (e.g. a gang waiting for members).
        self.pending_plugins: set[str] = set()
        self.gated = False
        self.gating_plugin = ""
        self.backoff_expiry = 0.0
        self.seq = seq

    @property
    def pod(self) -> Pod:
        return self.info.pod

    @property
    def key(self) -> str:
        return self.info.key

    def __repr__(self) -> str:
        return f"QueuedPodInfo({self.info.key}, attempts={self.attempts})"


class ActionType(IntFlag):
    """What changed in a cluster event (kube-scheduler's framework.ActionType)."""

    ADD = 1
    DELETE = 2
    UPDATE_NODE_ALLOCATABLE = 4
    UPDATE_NODE_LABEL = 8
    UPDATE_NODE_TAINT = 16
    UPDATE_NODE_CONDITION = 32
    UPDATE_NODE_ANNOTATION = 64
    UPDATE_POD_LABEL = 128
    UPDATE_POD_SCALE_DOWN = 256  # a pod's requests shrank
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 512
    UPDATE_POD_TOLERATION = 1024
    UPDATE_OTHER = 2048  # any other update (custom resources use this or UPDATE)
    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        | UPDATE_POD_TOLERATION
        | UPDATE_OTHER
    )
    ALL = ADD | DELETE | UPDATE


# Resource names used in ClusterEvent.resource. Custom kinds use their Kind ("PodGang").
NODE = "Node"
POD = "Pod"  # an unscheduled pod changed (the pod itself or a peer in the queue)
ASSIGNED_POD = "AssignedPod"  # a pod bound to a node was added/changed/deleted
WILDCARD = "*"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """A change in the cluster that may make unschedulable pods schedulable."""

    resource: str
    action: ActionType
    label: str = ""

    def matches(self, other: ClusterEvent) -> bool:
        """Whether this registered event covers the `other` (actual) event."""
        if self.resource != WILDCARD and self.resource != other.resource:
            return False
        return bool(self.action & other.action)

    def __str__(self) -> str:
        return self.label or f"{self.resource}{self.action.name or int(self.action)}"


class QueueingHint(IntEnum):
    QUEUE_SKIP = 0  # the event cannot help this pod: leave it where it is
    QUEUE = 1  # the event may help: move the pod to activeQ/backoffQ


# hint(pod: PodInfo, old, new) -> QueueingHint. old is None on ADD; new is None on DELETE.
QueueingHintFn = Callable[[PodInfo, Any, Any], QueueingHint]


# targets(old, new) -> keys of the pods the event can concern, or None for "any pod".
EventTargetsFn = Callable[[Any, Any], "Iterable[str] | None"]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    """A registration: `event` may help pods this plugin rejected or gated.

    `hint` decides per pod (None: always QUEUE). `targets`, when set, names the only pods the
    event can concern (e.g. the members of the gang a created pod belongs to), so the queue
    looks at those instead of every pod the plugin rejected: use it for high-volume events
    such as pod ADD, where a scan per event would cost O(pending pods).

    `gated`: whether the event may also admit pods this plugin holds at PreEnqueue. False
    for events that can only help pods it rejected in a cycle (freed room cannot ungate a
    gang member queued behind its representative), so the queue never scans the gated ones.
    """

    event: ClusterEvent
    hint: QueueingHintFn | None = None
    targets: EventTargetsFn | None = None
    gated: bool = True


# Events every plugin-less failure (Error, unknown) reacts to.
EVENT_ANY = ClusterEvent(WILDCARD, ActionType.ALL, "WildCardEvent")
EVENT_NODE_ADD = ClusterEvent(NODE, ActionType.ADD, "NodeAdd")
EVENT_ASSIGNED_POD_DELETE = ClusterEvent(ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete")
EVENT_UNSCHEDULABLE_TIMEOUT = ClusterEvent(WILDCARD, ActionType.ALL, "UnschedulableTimeout")
EVENT_FORCE_ACTIVATE = ClusterEvent(WILDCARD, ActionType.ALL, "ForceActivate")


@dataclass(slots=True)
class Rejection:
    """Nodes one filter rejected for one reason. `mask` is aligned to the filtered indices."""

    reason: str  # human text, counted per node in FailedScheduling ("Insufficient cpu")
    mask: np.ndarray  # bool, True = rejected for this reason
    unresolvable: bool = False  # True: preemption cannot help on these nodes


_ALL_TRUE = np.ones(0, dtype=bool)  # FilterResult.all_pass's masks are views of it


@dataclass(slots=True)
class FilterResult:
    """A vectorised Filter verdict over node indices `idx` (see FilterPlugin.filter).

    `feasible[i]` says whether node `idx[i]` passes. Rejected nodes are explained by
    `rejections` (a node may carry several reasons, as NodeResourcesFit's "Insufficient cpu"
    and "Insufficient memory"); rejected nodes no rejection covers get `default_reason`.
    """

    feasible: np.ndarray
    rejections: list[Rejection] = field(default_factory=list)
    default_reason: str = ""
    unresolvable: bool = False  # code of nodes explained only by default_reason
    # Set by `all_pass`: the cycle keeps its rows as they are instead of copying them
    # through an all-True mask (Coscheduling passes every node for most gang members).
    all_passed: bool = False

    @classmethod
    def all_pass(cls, n: int) -> FilterResult:
        """Every node passes. Its mask is a read-only view of one shared all-True array
        (a filter of every node's pod at 5,000 nodes allocated and filled one per call)."""
        global _ALL_TRUE
        if _ALL_TRUE.size < n:
            _ALL_TRUE = np.ones(max(n, 2 * _ALL_TRUE.size), dtype=bool)
            _ALL_TRUE.setflags(write=False)
        return cls(_ALL_TRUE[:n], all_passed=True)

    def kept(self, rows: np.ndarray) -> np.ndarray:
        """The `rows` (the node indices filtered) that pass: `rows` itself when all do."""
        return rows if self.all_passed else rows[self.feasible]

    @classmethod
    def from_mask(cls, feasible: np.ndarray, reason: str, *, unresolvable: bool = False) -> FilterResult:
        return cls(feasible, [], reason, unresolvable)

    @classmethod
    def reject_all(cls, n: int, reason: str, *, unresolvable: bool = False) -> FilterResult:
        return cls(np.zeros(n, dtype=bool), [], reason, unresolvable)


@dataclass(slots=True)
class PreFilterResult:
    """Restricts the nodes Filter considers (e.g. a required node name or topology domain).

    `nodes`: snapshot node indices (int array) or None for all nodes.
    """

    nodes: np.ndarray | None = None
    reason: str = ""  # why the others are excluded (counted in the diagnosis)


@dataclass(slots=True)
class PostFilterResult:
    nominated_node: str | None = None


@dataclass(slots=True)
class Diagnosis:
    """Why a pod's last scheduling attempt failed, in numbers users can act on.

    Kept per pod by the scheduler (`Scheduler.diagnosis(pod_key)`) and rendered into the
    FailedScheduling Event: "0/512 nodes are available: 480 Insufficient nvidia.com/gpu,
    32 node(s) had untolerated taint {gpu: true}."
    """

    total_nodes: int = 0
    # reason text -> number of nodes it rejected (a node may count under several reasons)
    reason_counts: dict[str, int] = field(default_factory=dict)
    # plugin -> number of nodes that plugin rejected (first rejecting plugin per node)
    plugin_counts: dict[str, int] = field(default_factory=dict)
    unschedulable_plugins: set[str] = field(default_factory=set)
    # a whole-pod failure outside Filter (PreFilter, Reserve, Permit...): status text
    pre_filter_message: str = ""
    post_filter_message: str = ""
    code: Code = Code.UNSCHEDULABLE
    attempts: int = 0
    timestamp: float = 0.0
    # Where the attempt failed: "PreFilter"/"Filter" (no node fits: counted per node), or
    # "Reserve", "Permit", "PreBind", "Bind" (a node was chosen, then the pod was rejected).
    stage: str = "Filter"

    def message(self) -> str:
        """The kube-scheduler style one-liner for Events and `phalanx explain`."""
        if self.stage not in ("PreFilter", "Filter"):
            msg = f"{self.stage}: {self.pre_filter_message or 'rejected'}"
            return f"{msg} {self.post_filter_message}" if self.post_filter_message else msg
        head = f"0/{self.total_nodes} nodes are available"
        parts = [
            f"{n} {reason}" for reason, n in sorted(self.reason_counts.items(), key=lambda kv: (-kv[1], kv[0]))
        ]
        if self.pre_filter_message:
            parts.insert(0, self.pre_filter_message)
        msg = f"{head}: {', '.join(parts)}." if parts else f"{head}."
        if self.post_filter_message:
            msg += f" {self.post_filter_message}"
        return msg

    def to_dict(self) -> dict[str, Any]:
        return {
            "totalNodes": self.total_nodes,
            "reasons": dict(sorted(self.reason_counts.items(), key=lambda kv: (-kv[1], kv[0]))),
            "plugins": dict(sorted(self.plugin_counts.items())),
            "unschedulablePlugins": sorted(self.unschedulable_plugins),
            "preFilter": self.pre_filter_message,
            "postFilter": self.post_filter_message,
            "code": self.code.name,
            "attempts": self.attempts,
            "timestamp": self.timestamp,
            "stage": self.stage,
            "message": self.message(),
        }


@dataclass(slots=True)
class FitError:
    """A failed Filter phase, handed to BeforePostFilter and PostFilter plugins.

    `node_codes[i]` is the Code for snapshot node i (SUCCESS = feasible, UNSCHEDULABLE =
    preemption might help, UNSCHEDULABLE_AND_UNRESOLVABLE = it cannot); transient, never stored.
    """

    pod: PodInfo
    diagnosis: Diagnosis
    node_codes: np.ndarray | None = None

    def message(self) -> str:
        return self.diagnosis.message()


def request_inputs_unchanged(a: Any, b: Any) -> bool:
    """The two specs' request inputs are the same objects, or equal ones: what a pod's
    requests are computed from (PodSpec.total_requests) is then unchanged.

    The same objects: the embedded API server shares what a write leaves alone. Equal ones:
    a version decoded from the wire, or listed (a private copy), shares nothing with the
    one before it; comparing the inputs costs a fraction of adding the requests up again."""
    if a is b or (a.containers is b.containers and a.init_containers is b.init_containers
                  and a.overhead is b.overhead and a.resources is b.resources):
        return True
    ca, cb = a.containers, b.containers
    ia, ib = a.init_containers or (), b.init_containers or ()
    return (
        len(ca) == len(cb)
        and len(ia) == len(ib)
        and a.resources == b.resources
        and a.overhead == b.overhead
        and all(x.resources == y.resources for x, y in zip(ca, cb, strict=True))
        # An init container's restartPolicy makes it a sidecar, counted differently.
        and all(x.resources == y.resources and x.restart_policy == y.restart_policy
                for x, y in zip(ia, ib, strict=True))
    )
