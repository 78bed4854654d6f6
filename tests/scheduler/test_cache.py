"""SchedulerCache: an assumed pod confirmed by the informer, as it is, relabelled, resized."""

from __future__ import annotations

from phalanx.scheduler.cache import SchedulerCache
from phalanx.scheduler.framework import PodInfo

from .helpers import node, pod


def _bound(p, node_name: str, labels: dict[str, str] | None = None):
    """The version of `p` the informer delivers after its bind (what the API server wrote)."""
    meta = p.metadata.model_copy(update={"labels": labels if labels is not None
                                         else dict(p.metadata.labels)})
    return p.model_copy(update={"metadata": meta,
                                "spec": p.spec.model_copy(update={"node_name": node_name})})


def _assumed(cache: SchedulerCache, name: str) -> PodInfo:
    info = PodInfo(pod(name, cpu="2", labels={"app": "a"}))
    assert cache.assume(info, "n")
    return info


def test_a_confirmed_bind_keeps_the_assumed_info_and_the_row():
    cache = SchedulerCache()
    cache.add_node(node("n", labels={"topology.kubernetes.io/zone": "z1"}))
    info = _assumed(cache, "p")
    version = cache.snapshot.row_version[0]
    assert cache.add_or_update_pod(_bound(info.pod, "n")) is info
    assert cache.snapshot.row_version[0] == version  # cached filter results stay valid
    assert not cache.is_assumed(info.key)


def test_a_bind_the_api_server_labelled_is_relabelled_in_place_with_its_requests_kept():
    # kube-apiserver 1.36 (PodTopologyLabels) copies the node's zone and region labels onto
    # the pod it binds: the confirmed pod's labels differ from the assumed one's.
    cache = SchedulerCache()
    cache.add_node(node("n", labels={"topology.kubernetes.io/zone": "z1"}))
    info = _assumed(cache, "p")
    row_version, version = cache.snapshot.row_version[0], cache.snapshot.version
    labelled = _bound(info.pod, "n", {"app": "a", "topology.kubernetes.io/zone": "z1"})
    after = cache.add_or_update_pod(labelled)
    assert after is not None and after is not info
    assert after.labels["topology.kubernetes.io/zone"] == "z1"
    assert after.requests is info.requests  # not added up again
    assert cache.pod_info(info.key) is after and not cache.is_assumed(info.key)
    snap = cache.snapshot
    assert snap.pods[0] == {info.key: after}  # counted once, as the new version
    # Relabelled in place: logged for label counts, node-local results still valid.
    assert snap.row_version[0] == row_version and snap.rows_bumped_since(version) == [0]
    assert snap.requested[0, snap.resource_index["cpu"]] == 2000
    assert snap.requested[0, snap.resource_index["pods"]] == 1


def test_a_changed_request_is_added_up_again():
    cache = SchedulerCache()
    cache.add_node(node("n"))
    info = _assumed(cache, "p")
    bigger = _bound(pod("p", cpu="3", labels={"app": "b"}), "n")
    after = cache.add_or_update_pod(bigger)
    assert after is not None and after.requests is not info.requests
    assert cache.snapshot.requested[0, cache.snapshot.resource_index["cpu"]] == 3000


def test_a_bound_pod_relabelled_later_is_relabelled_in_place():
    cache = SchedulerCache()
    cache.add_node(node("n"))
    running = _bound(pod("p", labels={"app": "a"}), "n")
    first = cache.add_or_update_pod(running)
    row_version = cache.snapshot.row_version[0]
    after = cache.add_or_update_pod(_bound(running, "n", {"app": "b"}))
    assert after is not first and after.labels == {"app": "b"}
    assert after.requests is first.requests
    assert cache.snapshot.pods[0] == {"default/p": after}
    assert cache.snapshot.row_version[0] == row_version
