"""An embedded HorizontalPodAutoscaler controller, so a Scenario can rehearse autoscaling.

A metric has no source in a simulation, so a Scenario step sets it:
`metric: {hpa: NAME, value: 80}` writes the annotation `sim.phalanx.dev/metric-value` on
the HPA, and this controller acts on it as kube-controller-manager's HPA controller does
(pkg/controller/podautoscaler, its defaults):

- the HPA has one metric; its target is the number the value is compared with
  (averageUtilization, averageValue or value);
- the load behind a value stays what it was when the step set it: for a per-pod target
  (averageUtilization, averageValue) the value seen at N replicas becomes value x N / M at M
  replicas, as utilisation spreads over more pods; a `value` target (a total) does not
  spread, and keeps scaling while it stays above target, as the real controller would;
- desired = ceil(current x value / target), unless value / target is within 10% of 1
  (the tolerance), then current;
- stabilisation: a scale-down takes the highest recommendation of the last 300 s, a
  scale-up the lowest of the last 0 s (`behavior.*.stabilizationWindowSeconds` override);
- the default scale-up policy: at most max(double, +4 pods) per 15 s period (scale-down:
  100% per period, so no limit);
- clamped to [minReplicas (default 1), maxReplicas].

The target is read and written through its `/scale` subresource (`Client.get_scale` /
`update_scale`, as the real controller does; any kind whose CRD declares one: PodClique,
PodCliqueScalingGroup, PodCliqueSet), so a target without one, or a missing target, is a
FailedGetScale Warning as in kube. The scale's selector (`status.selector`, from the CRD's
labelSelectorPath) says which pods the metric is about, so, as kube's
validateAndParseSelector: an empty one is a SelectorRequired Warning, one that does not
parse an InvalidSelector Warning, and one selecting pods another HPA's selector also
selects an AmbiguousSelector Warning; each sets the ScalingActive condition False (True,
ValidMetricFound, once a recommendation is computed) and is retried every 15 s, the
controller's resync. The HPA's status gets currentReplicas, desiredReplicas, lastScaleTime
and that condition. A recommendation held back by a window
or a policy is retried when it may go through. An HPA with `behavior.*.policies` or
`selectPolicy` is not acted on (a Warning Event says so): only the defaults are modelled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from phalanx.api import registry
from phalanx.api.autoscaling import HorizontalPodAutoscaler
from phalanx.api.core import Pod
from phalanx.api.quantity import parse_quantity
from phalanx.cluster.client import Client, NotFound
from phalanx.cluster.controller import Controller, Manager, Result
from phalanx.cluster.events import EventRecorder
from phalanx.cluster.selectors import LabelSelector, SelectorError, parse_label_selector

ANNOTATION_METRIC = "sim.phalanx.dev/metric-value"
TOLERANCE = 0.1
SCALE_DOWN_WINDOW = 300.0
SCALE_UP_WINDOW = 0.0
PERIOD = 15.0  # the default policies' period
RESYNC = 15.0  # kube-controller-manager's --horizontal-pod-autoscaler-sync-period


class UnsupportedHPA(ValueError):
    """An HPA this controller cannot follow faithfully (the message says why)."""


def metric_target(hpa: HorizontalPodAutoscaler) -> tuple[float, bool]:
    """(target, per_pod): per_pod for averageUtilization / averageValue."""
    metrics = hpa.spec.metrics or []
    if len(metrics) != 1:
        raise UnsupportedHPA(f"spec.metrics has {len(metrics)} metrics; the simulation's "
                             "metric step sets one value, so exactly one is supported")
    m = metrics[0]
    kind = m.get("type", "")
    source = m.get({"Resource": "resource", "ContainerResource": "containerResource",
                    "Pods": "pods", "Object": "object", "External": "external"}.get(kind, ""))
    target = (source or {}).get("target") or {}
    for key in ("averageUtilization", "averageValue", "value"):
        if target.get(key) is not None:
            value = parse_quantity(target[key])
            if value <= 0:
                raise UnsupportedHPA(f"spec.metrics[0] target {key} must be positive")
            return value, key != "value"
    raise UnsupportedHPA("spec.metrics[0] has no target averageUtilization, averageValue "
                         "or value")


def windows(hpa: HorizontalPodAutoscaler) -> tuple[float, float]:
    """(scale-up, scale-down) stabilisation windows in seconds."""
    behavior = hpa.spec.behavior or {}
    out = []
    for key, default in (("scaleUp", SCALE_UP_WINDOW), ("scaleDown", SCALE_DOWN_WINDOW)):
        rules = behavior.get(key) or {}
        if rules.get("policies") is not None or rules.get("selectPolicy") is not None:
            raise UnsupportedHPA(f"spec.behavior.{key} policies are not simulated (only "
                                 "the default policies are)")
        window = rules.get("stabilizationWindowSeconds")
        out.append(float(window) if window is not None else default)
    return out[0], out[1]


def raw_recommendation(current: int, value: float, target: float) -> int:
    ratio = value / target
    if abs(ratio - 1.0) <= TOLERANCE:
        return current
    return math.ceil(current * ratio)


@dataclass
class Stabilizer:
    """Recommendations over time, each holding from when it was made until the next: the
    same as the real controller's (one per 15 s sync), without sampling."""

    history: list[tuple[float, int]] = field(default_factory=list)

    def stabilize(self, now: float, current: int, recommended: int, up_window: float,
                  down_window: float) -> tuple[int, float | None]:
        """(replicas, seconds until a held-back recommendation may apply, or None)."""
        self.history.append((now, recommended))
        horizon = now - max(up_window, down_window)
        ends = [t for t, _ in self.history[1:]] + [now]
        self.history = [h for h, end in zip(self.history, ends) if end >= horizon] or \
            [(now, recommended)]
        ends = [t for t, _ in self.history[1:]] + [now]
        # In a window: recommended after its start (the real controller's After(cutoff)).
        up = min([r for (_, r), end in zip(self.history, ends) if end > now - up_window]
                 + [recommended])
        down = max([r for (_, r), end in zip(self.history, ends) if end > now - down_window]
                   + [recommended])
        result = min(max(current, up), down)
        retry = None
        if result != recommended:
            # A window holds it back: it may go through once the blocking entries age out.
            window = down_window if result > recommended else up_window
            blocking = [end for (_, r), end in zip(self.history, ends)
                        if end > now - window
                        and (r > recommended if result > recommended else r < recommended)]
            if blocking:
                retry = max(min(blocking) + window - now, 0.0) or None
        return result, retry


def scale_up_limit(current: int) -> int:
    """The default scale-up policies (100% and 4 pods per period, the larger)."""
    return max(current * 2, current + 4)


class SelectorProblem(ValueError):
    """The scale's selector cannot be used: (event reason, condition reason, message)."""

    def __init__(self, event_reason: str, condition_reason: str, message: str,
                 condition_message: str | None = None) -> None:
        super().__init__(message)
        self.event_reason, self.condition_reason = event_reason, condition_reason
        self.condition_message = condition_message or message


def scaling_active(status: dict[str, Any], active: bool, reason: str, message: str,
                   now: str) -> None:
    """Set the ScalingActive condition in an HPA status dict, as kube's setCondition:
    lastTransitionTime moves only when the status does."""
    value = "True" if active else "False"
    conditions = [dict(c) for c in status.get("conditions") or []]
    old = next((c for c in conditions if c.get("type") == "ScalingActive"), None)
    new = {"type": "ScalingActive", "status": value, "reason": reason, "message": message,
           "lastTransitionTime": old["lastTransitionTime"]
           if old and old.get("status") == value and old.get("lastTransitionTime") else now}
    status["conditions"] = [new if c is old else c for c in conditions] if old else \
        [*conditions, new]


class SimHPAController:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.manager = Manager(client)
        self.hpas = self.manager.informer(HorizontalPodAutoscaler)
        self.controller = self.manager.add(Controller("sim-hpa", self.reconcile, workers=1))
        self.controller.watch(self.hpas, predicate=lambda o, n: (
            o.metadata.annotations.get(ANNOTATION_METRIC)
            != n.metadata.annotations.get(ANNOTATION_METRIC) or o.spec != n.spec))
        self.recorder = EventRecorder(client, "horizontal-pod-autoscaler")
        self._stabilizers: dict[str, Stabilizer] = {}
        # HPA key -> (metric annotation, target replicas when it was set)
        self._load: dict[str, tuple[str, int]] = {}
        self.scalings = 0  # target replica changes written (tests, reports)
        self._due: set[str] = set()  # HPAs with a held-back recommendation still to apply
        # HPA key -> its target's selector when it last validated (kube's hpaSelectors)
        self._selectors: dict[str, LabelSelector] = {}

    async def start(self) -> None:
        await self.manager.start()

    async def stop(self) -> None:
        await self.manager.stop()
        await self.recorder.flush()

    async def wait_idle(self, timeout: float | None = None) -> None:
        await self.manager.wait_idle(timeout=timeout)

    async def reconcile(self, key: str) -> Result | None:
        self._due.discard(key)  # set again below when something is still held back
        hpa = self.hpas.get(key)
        if hpa is None:
            self._stabilizers.pop(key, None)
            self._load.pop(key, None)
            self._selectors.pop(key, None)
            return None
        raw = hpa.metadata.annotations.get(ANNOTATION_METRIC)
        if raw is None:
            return None
        ref = hpa.spec.scale_target_ref
        try:
            target, per_pod = metric_target(hpa)
            up_window, down_window = windows(hpa)
            value = parse_quantity(raw)
        except (UnsupportedHPA, ValueError) as e:
            self.recorder.warning(hpa, "FailedComputeMetricsReplicas", str(e))
            return None
        ns = hpa.metadata.namespace
        try:
            kind = registry.get(ref.api_version, ref.kind) if ref.api_version else \
                registry.by_kind(ref.kind)
            scale = await self.client.get_scale(kind, ref.name, ns)
        except (LookupError, NotFound) as e:
            self.recorder.warning(hpa, "FailedGetScale",
                                  f"{ref.kind} {ref.name}: {getattr(e, 'message', e)}")
            return None
        current = scale.replicas
        if current == 0:
            return None  # scaled to zero: autoscaling is off (ScalingDisabled), as in kube
        low = hpa.spec.min_replicas if hpa.spec.min_replicas is not None else 1
        if low <= current <= hpa.spec.max_replicas:  # kube reads metrics only then
            try:
                await self._validate_selector(key, ns, scale.selector)
            except SelectorProblem as e:
                return await self._selector_failed(hpa, current, e)
        seen = self._load.get(key)
        if seen is None or seen[0] != raw:
            seen = self._load[key] = (raw, current)
        if per_pod and current > 0:
            value = value * seen[1] / current  # the same load over `current` pods
        now = self.client.clock.now()
        recommended = raw_recommendation(current, value, target)
        stabilized, retry = self._stabilizers.setdefault(key, Stabilizer()).stabilize(
            now, current, recommended, up_window, down_window)
        desired = stabilized
        if desired > current and desired > scale_up_limit(current):
            desired = scale_up_limit(current)
            retry = PERIOD if retry is None else min(retry, PERIOD)
        desired = min(max(desired, low), hpa.spec.max_replicas)
        if desired != current:
            scale.replicas = desired  # its resourceVersion: a Conflict retries the sync
            await self.client.update_scale(kind, scale)
            self.scalings += 1
            self.recorder.normal(hpa, "SuccessfulRescale",
                                 f"New size: {desired}; reason: metric {value:g} "
                                 f"{'above' if desired > current else 'below'} target "
                                 f"{target:g}")
        status: dict[str, Any] = dict(hpa.status)
        status.update(currentReplicas=current, desiredReplicas=desired)
        if desired != current:
            status["lastScaleTime"] = self.client.clock.now_dt().isoformat()
        scaling_active(status, True, "ValidMetricFound", "the HPA was able to successfully "
                       f"calculate a replica count from {_metric_name(hpa)}",
                       self.client.clock.now_dt().isoformat())
        if not await self._write_status(hpa, status):
            return None
        if retry:
            self._due.add(key)
            return Result(requeue_after=retry)
        return None

    async def _write_status(self, hpa: HorizontalPodAutoscaler, status: dict[str, Any]) -> bool:
        """Write `status` if it changed; False when the HPA is gone."""
        if status != hpa.status:
            updated = hpa.copy_deep()
            updated.status = status
            try:
                await self.client.update_status(updated, returning=False)
            except NotFound:
                return False
        return True

    async def _validate_selector(self, key: str, ns: str, selector: str) -> None:
        """kube's validateAndParseSelector: non-empty, parses, and selects no pod another
        HPA's selector selects."""
        if not selector:
            raise SelectorProblem("SelectorRequired", "InvalidSelector", "selector is required",
                                  "the HPA target's scale is missing a selector")
        try:
            parsed = parse_label_selector(selector)
        except SelectorError as e:
            raise SelectorProblem(
                "InvalidSelector", "InvalidSelector", "couldn't convert selector into a "
                f"corresponding internal selector object: {e}") from None
        self._selectors[key] = parsed
        others = [k for k in self._selectors if k != key and k.split("/", 1)[0] == ns]
        if not others:
            return
        pods = (await self.client.list(Pod, ns, label_selector=parsed)).items
        selecting = sorted({key} | {k for k in others for p in pods
                                     if self._selectors[k].matches(p.metadata.labels)})
        if len(selecting) > 1:
            message = (f"pods by selector {selector} are controlled by multiple HPAs: "
                       f"[{' '.join(selecting)}]")
            raise SelectorProblem("AmbiguousSelector", "AmbiguousSelector", message)

    async def _selector_failed(self, hpa: HorizontalPodAutoscaler, current: int,
                               problem: SelectorProblem) -> Result | None:
        """As kube: the Warning, FailedComputeMetricsReplicas, ScalingActive False, the
        current replicas in status, and another try at the next resync."""
        self.recorder.warning(hpa, problem.event_reason, str(problem))
        self.recorder.warning(hpa, "FailedComputeMetricsReplicas", str(problem))
        status: dict[str, Any] = dict(hpa.status)
        status["currentReplicas"] = current
        scaling_active(status, False, problem.condition_reason, problem.condition_message,
                       self.client.clock.now_dt().isoformat())
        if not await self._write_status(hpa, status):
            return None
        return Result(requeue_after=RESYNC)

    @property
    def pending(self) -> int:
        """HPAs that will still change their target's replicas without a new event."""
        return len(self._due)


def _metric_name(hpa: HorizontalPodAutoscaler) -> str:
    """kube's metric name in the ValidMetricFound message."""
    m = (hpa.spec.metrics or [{}])[0]
    kind = m.get("type", "")
    if kind in ("Resource", "ContainerResource"):
        source = m.get("resource" if kind == "Resource" else "containerResource") or {}
        name = source.get("name", "")
        target = source.get("target") or {}
        container = "container " if kind == "ContainerResource" else ""
        if target.get("averageUtilization") is not None:
            return f"{name} {container}resource utilization (percentage of request)"
        return f"{name} {container}resource"
    source = m.get({"Pods": "pods", "Object": "object", "External": "external"}.get(kind, ""))
    name = ((source or {}).get("metric") or {}).get("name", "")
    return f"{kind.lower()} metric {name}".strip()
