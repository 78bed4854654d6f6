"""kube-scheduler 1.36's interpodaffinity/plugin_test.go, row by row (ids = kube's names):
the queueing hints for pod and node events, through the plugin's registered events.

Not ported: TestPodAffinitySignature. kube-scheduler signs pods to reuse one pod's results
for equal pods, and InterPodAffinity refuses to sign pods with pod (anti-)affinity. Ours
never shares its results between pods: the plugin is not NODE_LOCAL, so the framework's
signature cache (which leaves inter-pod terms out of the signature) never applies to it.
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.scheduler.framework import PodInfo
from phalanx.scheduler.framework.types import ASSIGNED_POD, NODE, QueueingHint

from .interpodaffinity_kit import TEAM_NAMESPACES, MakePod, make_node, plugin

QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
SCAN = ["securityscan", "value2"]


def _hint(resource: str) -> Any:
    pl = plugin(TEAM_NAMESPACES)
    [reg] = [r for r in pl.events_to_register() if r.event.resource == resource]
    assert reg.hint is not None
    return reg.hint


def _affine() -> MakePod:
    return MakePod().uid("p").name("p").pod_affinity_in("service", "region", SCAN)


def _two_terms() -> MakePod:
    return (MakePod().uid("p").name("p").pod_affinity_exists("aaa", "hostname")
            .pod_affinity_exists("bbb", "hostname"))


def _anti() -> MakePod:
    return MakePod().uid("p").name("p").pod_anti_affinity_in("service", "region", SCAN)


def _other(**labels: str) -> MakePod:
    return MakePod().uid("other").node("fake-node").labels(labels)


POD_CHANGE: list[tuple[str, Any, Any, Any, QueueingHint]] = [
    ("add a pod which matches the pod affinity",
     _affine(), None, _other(service="securityscan"), QUEUE),
    ("add an un-scheduled pod",
     _affine(), None, MakePod().uid("other").label("service", "securityscan"), SKIP),
    ("add a pod which doesn't match the pod affinity",
     _affine(), None, _other(aaa="a"), SKIP),
    ("update a pod from non-match to match pod affinity",
     _affine(), _other(aaa="a"), _other(service="securityscan"), QUEUE),
    ("the updating pod matches target pod's affinity both before and after label changes",
     _affine(), _other(service="value2"), _other(service="securityscan"), SKIP),
    ("update an un-scheduled pod",
     _affine(), MakePod().uid("other").label("aaa", "a"),
     MakePod().uid("other").label("service", "securityscan"), SKIP),
    ("update a pod from match to non-match the pod affinity",
     _affine(), _other(service="securityscan"), _other(aaa="a"), SKIP),
    ("update a pod from match to non-match pod's affinity - multiple terms case",
     _two_terms(), _other(aaa="a"), _other(service="securityscan"), SKIP),
    ("update a pod from non-match to match pod's affinity - multiple terms case",
     _two_terms(), _other(aaa="a"), _other(aaa="", bbb=""), QUEUE),
    ("updated pod is the target pod",
     MakePod().uid("p").name("p").label("foo", "baz"),
     MakePod().uid("p").name("p").label("foo", "bar"),
     MakePod().uid("p").name("p").label("foo", "baz"), QUEUE),
    ("modify pod label to change it from satisfying pod anti-affinity to not satisfying "
     "anti-affinity",
     _anti(), _other(service="securityscan"), _other(service="aaaa"), QUEUE),
    ("modify pod label to change it from not satisfying pod anti-affinity to satisfying "
     "anti-affinity",
     _anti(), _other(service="bbb"), _other(service="securityscan"), SKIP),
    ("delete a pod which doesn't match pod's anti-affinity",
     _anti(), _other(aaa="a"), None, SKIP),
    ("delete a pod which matches pod's anti-affinity",
     _anti(), _other(service="securityscan"), None, QUEUE),
    ("delete a pod with anti-affinity that matches pending pod",
     MakePod().name("p").label("service", "securityscan"),
     MakePod().node("fake-node").pod_anti_affinity_in("service", "region", SCAN), None, QUEUE),
    ("delete a pod with anti-affinity that doesn't match pending pod",
     MakePod().name("p").label("service", "foo"),
     MakePod().node("fake-node").pod_anti_affinity_in("service", "region", SCAN), None, SKIP),
    ("delete a pod which doesn't match pending pod's anti-affinity and has anti-affinity that "
     "doesn't match pending pod",
     MakePod().name("p").pod_anti_affinity_in("service", "region", SCAN).label("service", "foo"),
     MakePod().node("fake-node").pod_anti_affinity_in("service", "region", SCAN)
     .label("service", "foo"),
     None, SKIP),
    ("delete a nominated pod which doesn't match pod's anti-affinity",
     MakePod().name("p").pod_anti_affinity_in("service", "region", SCAN),
     MakePod().name("o").nominated("fake-node").label("aaa", "a"), None, SKIP),
    ("delete a nominated pod which matches pod's anti-affinity",
     MakePod().name("p").pod_anti_affinity_in("service", "region", SCAN),
     MakePod().name("o").nominated("fake-node").label("service", "securityscan"), None, QUEUE),
]


def _obj(b: MakePod | None) -> Any:
    return None if b is None else b.obj()


@pytest.mark.parametrize(("pod", "old", "new", "want"), [r[1:] for r in POD_CHANGE],
                         ids=[r[0] for r in POD_CHANGE])
def test_is_schedulable_after_pod_change(pod: MakePod, old: Any, new: Any, want: Any) -> None:
    hint = _hint(ASSIGNED_POD)
    assert hint(PodInfo(pod.obj()), _obj(old), _obj(new)) == want


def _zone_anti() -> MakePod:
    return MakePod().name("p").pod_anti_affinity("zone", {"matchLabels": {"another": "label"}})


def _n(**labels: str) -> Any:
    return make_node("node-a", labels)


NODE_CHANGE: list[tuple[str, MakePod, Any, Any, QueueingHint]] = [
    ("add a new node with matched pod affinity topologyKey",
     MakePod().name("p").pod_affinity_in("service", "zone", SCAN), None, _n(zone="zone1"), QUEUE),
    ("add a new node without matched topologyKey",
     MakePod().name("p").pod_affinity_in("service", "region", SCAN), None, _n(zone="zone1"),
     SKIP),
    ("update node label but not topologyKey",
     MakePod().name("p").pod_affinity_in("service", "zone", SCAN), _n(aaa="a"), _n(aaa="b"),
     SKIP),
    ("update node label that isn't related to the pod affinity",
     MakePod().name("p").pod_affinity_in("service", "zone", SCAN), _n(zone="zone1"),
     _n(zone="zone1", **{"unrelated-label": "unrelated"}), SKIP),
    ("update node with different affinity topologyKey value",
     MakePod().name("p").pod_affinity_in("service", "zone", SCAN), _n(zone="zone1"),
     _n(zone="zone2"), QUEUE),
    ("update node to have the affinity topology label",
     MakePod().name("p").pod_affinity_in("service", "zone", SCAN), _n(aaa="a"), _n(zone="zone1"),
     QUEUE),
    ("add a new node with matched pod anti-affinity topologyKey",
     _zone_anti(), None, _n(zone="zone1"), QUEUE),
    ("add a new node without matched pod anti-affinity topologyKey",
     _zone_anti(), None, _n(), QUEUE),
    ("update node label that isn't related to the pod anti-affinity",
     _zone_anti(), _n(zone="zone1"), _n(zone="zone1", **{"unrelated-label": "unrelated"}), SKIP),
    ("update node with different anti-affinity topologyKey value",
     _zone_anti(), _n(zone="zone1"), _n(zone="zone2"), QUEUE),
    ("update node to have the anti-affinity topology label",
     _zone_anti(), _n(aaa="a"), _n(zone="zone1"), SKIP),
    ("update node label not to have anti-affinity topology label",
     _zone_anti(), _n(zone="zone1"), _n(aaa="a"), QUEUE),
]


@pytest.mark.parametrize(("pod", "old", "new", "want"), [r[1:] for r in NODE_CHANGE],
                         ids=[r[0] for r in NODE_CHANGE])
def test_is_schedulable_after_node_change(pod: MakePod, old: Any, new: Any, want: Any) -> None:
    hint = _hint(NODE)
    assert hint(PodInfo(pod.obj()), old, new) == want
