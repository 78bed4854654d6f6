"""The scheduling framework's extension points: what a plugin implements and what it may call.

A plugin is a class with a unique `NAME`, constructed as `cls(handle, args)` (see registry.py),
that implements the methods of one or more extension points below. The runtime detects the
points by method name; a profile (config.py) decides which plugins run at each point, in order.

One pod's life, in the order the extension points run:

  queue        PreEnqueue -> (activeQ ordered by QueueSort) -> scheduling cycle
  scheduling   PreFilter -> Filter -> PreScore -> Score (+NormalizeScore, weights) -> Reserve -> Permit
  on failure   BeforePostFilter (all plugins, always) -> PostFilter (until one succeeds)
               -> Unreserve (reverse order) if Reserve ran -> pod back to the queue
  binding      WaitOnPermit -> PreBind -> Bind (until one does not Skip) -> PostBind

The scheduling cycle is synchronous: plugins in it run back-to-back on the event loop with
no await in between, so they see one consistent snapshot (assumed pods included) without
copying it. Only PreBind and Bind are async (they talk to the API).

Vectorised filtering: Filter and Score take an int array `idx` of snapshot rows and answer
for all of them at once, reading the snapshot's NumPy columns. A plugin whose answer for a
node depends only on that node's row and the pod's `PodInfo.signature` fields (requests,
nodeSelector, node affinity, tolerations) sets `NODE_LOCAL = True`; the runtime then reuses its
results across pods with equal signatures (a gang's members) and re-evaluates only the rows
that changed since (`Snapshot.row_version`). Plugins that look at other pods (topology packing,
inter-pod rules) or at CycleState from PreFilter keep `NODE_LOCAL = False`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from .cycle_state import CycleState
from .status import Status
from .types import (
    ClusterEvent,
    ClusterEventWithHint,
    Diagnosis,
    FilterResult,
    FitError,
    PodInfo,
    PostFilterResult,
    PreFilterResult,
    QueuedPodInfo,
)

if TYPE_CHECKING:
    from phalanx.api.base import Resource
    from phalanx.api.core import Pod
    from phalanx.cluster.client import Client
    from phalanx.cluster.clock import Clock
    from phalanx.cluster.informer_factory import InformerFactory
    from phalanx.scheduler.snapshot import Snapshot

# Kube-scheduler's score range: every Score plugin returns (after normalisation) 0..100.
MAX_NODE_SCORE = 100.0
MIN_NODE_SCORE = 0.0


class Plugin:
    """Base class for plugins (optional: any class with NAME and the methods works).

    `handle` gives access to the cluster, the snapshot and the scheduler's services;
    `args` is the plugin's entry from the profile's `pluginConfig` (a dict, or the plugin's
    `Args` pydantic model when it declares one).
    """

    NAME: ClassVar[str] = ""
    # Set True only if Filter/Score results for a node depend on nothing but that node's
    # snapshot row and the pod's signature (see module docstring). Node-local Score plugins
    # are evaluated with the filters, before PreScore, and must not read PreScore state.
    NODE_LOCAL: ClassVar[bool] = False
    # Set True as well when they depend on the node object alone (labels, taints, spec),
    # not on the pods counted on it: such results outlive pod adds and removals, so a gang's
    # next member re-evaluates only the plugins that read the node's usage.
    NODE_ONLY: ClassVar[bool] = False
    # Optional pydantic model validating `pluginConfig[].args`.
    Args: ClassVar[type | None] = None

    def __init__(self, handle: Handle, args: Any = None) -> None:
        self.handle = handle
        self.args = args

    def name(self) -> str:
        return self.NAME


# --- Extension points ----------------------------------------------------------------------


@runtime_checkable
class PreEnqueuePlugin(Protocol):
    """Gate a pod before it enters activeQ (scheduling gates, incomplete gangs).

    Success admits it. Any other status parks it as gated in the unschedulable pool until an
    event it registered for (EnqueueExtensions) or `Handle.activate` re-runs PreEnqueue.
    Must be cheap and must not touch the API: it runs on every queue insertion.
    """

    def pre_enqueue(self, pod: PodInfo) -> Status: ...


@runtime_checkable
class QueueSortPlugin(Protocol):
    """Order of activeQ. Exactly one per profile. Smaller keys pop first."""

    def sort_key(self, qpi: QueuedPodInfo) -> tuple[Any, ...]: ...


@runtime_checkable
class EnqueueExtensions(Protocol):
    """Which cluster events may make a pod this plugin rejected schedulable again."""

    def events_to_register(self) -> Sequence[ClusterEventWithHint]: ...


@runtime_checkable
class PreFilterPlugin(Protocol):
    """Once per cycle, before Filter: compute state, narrow the nodes, or reject the pod.

    Returns (result, status). `result.nodes` restricts Filter to those rows. Skip means this
    plugin's Filter is skipped for the cycle. Unschedulable* fails the cycle for all nodes.
    """

    def pre_filter(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> tuple[PreFilterResult | None, Status]: ...


@runtime_checkable
class FilterPlugin(Protocol):
    """Which of the nodes `idx` (snapshot rows) can run the pod, vectorised.

    Called with the rows still feasible after the previous filters (so the first rejecting
    plugin is the one counted per node). Return a FilterResult aligned to `idx`.
    """

    def filter(self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray) -> FilterResult: ...


@runtime_checkable
class BeforePostFilterPlugin(Protocol):
    """Runs after every failed scheduling cycle, before any PostFilter, for every plugin.

    The place to undo what other pods of the same unit hold (a gang switching its
    representative and rejecting its waiting members, releasing their reservations) so that
    PostFilter (preemption) works from a consistent state. All BeforePostFilter plugins always
    run. Return Skip to say PostFilter must not run for this failure (e.g. preemption already
    ran for this gang); Success otherwise. `fit` is None when the cycle failed outside Filter
    (PreFilter, Reserve, Permit); `status` is the failure.
    """

    def before_post_filter(self, state: CycleState, pod: PodInfo, status: Status, fit: FitError | None) -> Status: ...


@runtime_checkable
class PostFilterPlugin(Protocol):
    """After Filter found no node: try to make room (preemption). Run in order until one
    returns Success (with a nominated node) or UnschedulableAndUnresolvable."""

    def post_filter(self, state: CycleState, pod: PodInfo, fit: FitError) -> tuple[PostFilterResult | None, Status]: ...


@runtime_checkable
class PreScorePlugin(Protocol):
    """Once per cycle with the feasible rows, before Score. Skip skips this plugin's Score."""

    def pre_score(self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray) -> Status: ...


@runtime_checkable
class ScorePlugin(Protocol):
    """Scores for the feasible rows `idx`, as a float array aligned to `idx`.

    Return values in [0, MAX_NODE_SCORE], or implement `normalize_score` to map raw values
    into that range. The profile's weight multiplies the result.
    """

    def score(self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray) -> np.ndarray: ...


@runtime_checkable
class ScoreExtensions(Protocol):
    def normalize_score(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray: ...


@runtime_checkable
class ReservePlugin(Protocol):
    """The pod is assumed on `node` (the snapshot already counts it). Reserve may fail the
    cycle; Unreserve must undo Reserve and is idempotent (runs in reverse plugin order when
    the cycle or binding fails, for every Reserve plugin, even ones that did not run)."""

    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status: ...

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None: ...


@runtime_checkable
class PermitPlugin(Protocol):
    """Allow, reject or delay binding. Returns (status, timeout seconds).

    Wait parks the pod in the waiting-pods map (Handle.get_waiting_pod); the binding cycle
    blocks until every waiting plugin calls `WaitingPod.allow(NAME)`, or any plugin calls
    `reject`, or the timeout passes (rejected with "rejected due to timeout after Ns").
    """

    def permit(self, state: CycleState, pod: PodInfo, node: str) -> tuple[Status, float]: ...


@runtime_checkable
class PreBindPlugin(Protocol):
    """Before Bind, in the binding cycle (async: may call the API)."""

    async def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status: ...


@runtime_checkable
class BindPlugin(Protocol):
    """Bind the pod. Skip passes to the next Bind plugin."""

    async def bind(self, state: CycleState, pod: PodInfo, node: str) -> Status: ...


@runtime_checkable
class PostBindPlugin(Protocol):
    """Informational, after a successful bind."""

    def post_bind(self, state: CycleState, pod: PodInfo, node: str) -> None: ...


# --- What plugins may call -----------------------------------------------------------------


class WaitingPod(Protocol):
    """A pod parked at Permit (see waiting.py)."""

    @property
    def info(self) -> PodInfo: ...

    @property
    def node(self) -> str: ...

    def pending_plugins(self) -> list[str]: ...

    def allow(self, plugin: str) -> None:
        """`plugin` agrees; the pod binds once every waiting plugin has allowed."""

    def reject(self, plugin: str, message: str) -> None:
        """Fail the pod's binding cycle: Unreserve runs, the pod returns to the queue."""


class Handle(Protocol):
    """The scheduler's services as plugins see them (kube-scheduler's framework.Handle)."""

    @property
    def client(self) -> Client: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def profile_name(self) -> str:
        """The schedulerName this plugin instance serves."""

    @property
    def informers(self) -> InformerFactory:
        """The scheduler's shared informers (register extra kinds in the plugin constructor,
        before the scheduler starts: they are synced before the first cycle)."""

    def shared(self, name: str, factory: Callable[[], Any]) -> Any:
        """A scheduler-wide object, built by `factory` on first use (e.g. one gang cache for
        the plugin instances of every profile)."""

    def snapshot(self) -> Snapshot:
        """Nodes, their resources and the pods on them, assumed pods included."""

    def get_waiting_pod(self, uid: str) -> WaitingPod | None: ...

    def waiting_pods(self) -> Iterable[WaitingPod]:
        """Every pod waiting at Permit, across profiles."""

    def reject_waiting_pod(self, uid: str, plugin: str, message: str) -> bool:
        """Reject a waiting pod; False when it is not waiting."""

    def activate(self, pods: Iterable[PodInfo | Pod | str]) -> None:
        """Move these pods (objects or keys) from backoff/unschedulable/gated to activeQ,
        re-running PreEnqueue for gated ones. Unknown keys are ignored."""

    def on_cluster_event(self, event: ClusterEvent, old: Any = None, new: Any = None) -> None:
        """Tell the queue a custom resource changed (e.g. a PodGang), so pods whose rejecting
        plugins registered for `event` are moved back (subject to their queueing hints)."""

    def fit_vector(self, pod: PodInfo) -> tuple[np.ndarray, np.ndarray]:
        """The (snapshot columns, amounts) `pod` needs room for in this profile: what its
        NodeResourcesFit filter checks (ignored resources left out; nothing when the profile
        has no such filter). Room checks beside Filter (a gang's, preemption's) use it."""

    def run_filter_plugins(self, state: CycleState, pod: PodInfo, idx: np.ndarray) -> FilterResult:
        """Run this profile's Filter plugins on rows `idx` against the current snapshot (for
        preemption's what-if checks, after temporarily removing victims from the snapshot)."""

    def record_event(self, obj: Resource, event_type: str, reason: str, message: str) -> None:
        """Emit a Kubernetes Event about `obj` (rate-limited and aggregated by the recorder)."""

    def set_unschedulable(self, pod: Pod, message: str) -> None:
        """Write the pod's PodScheduled=False (reason Unschedulable) in the background, as a
        failed scheduling attempt does (a gang's members, tried together with it)."""

    def evict(self, victim: PodInfo | Pod, *, preemptor: PodInfo | None, message: str) -> None:
        """Delete a pod (preemption) in the background and record a "Preempted" Event."""

    def nominate(self, pod: PodInfo, node: str | None, group: str | None = None) -> None:
        """Set (or clear with None) the pod's nominated node: the resources of its victims are
        kept for it, lower-priority pods do not take them while the victims terminate. Pods
        nominated with one `group` (a gang's members) keep or lose that room together."""

    def nominated_reserved(self, priority: int, exclude: set[str]) -> np.ndarray | None:
        """Per snapshot row and resource, the room held for nominated pods of priority >=
        `priority` (bar the keys in `exclude`); None when none is held."""

    def diagnosis(self, pod_key: str) -> Diagnosis | None:
        """The last failure diagnosis of a pod, or None."""

    def pod_info(self, pod_key: str) -> PodInfo | None:
        """The scheduler's parsed view of a known pod (queued, assumed or bound), or None."""


__all__ = [
    "BeforePostFilterPlugin",
    "BindPlugin",
    "CycleState",
    "EnqueueExtensions",
    "FilterPlugin",
    "Handle",
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "PermitPlugin",
    "Plugin",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PreBindPlugin",
    "PreEnqueuePlugin",
    "PreFilterPlugin",
    "PreScorePlugin",
    "QueueSortPlugin",
    "ReservePlugin",
    "ScoreExtensions",
    "ScorePlugin",
    "WaitingPod",
]
