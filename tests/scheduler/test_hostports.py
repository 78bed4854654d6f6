"""The snapshot's per-row host port index and claim use counts (NodePorts and
VolumeRestrictions read them): added and removed with bound and assumed pods alike."""

from __future__ import annotations

import numpy as np

from phalanx.api.core import ContainerPort
from phalanx.scheduler.framework import PodInfo
from phalanx.scheduler.hostports import pod_host_ports
from phalanx.scheduler.snapshot import Snapshot

from .helpers import node, pod


def with_ports(name: str, *ports: tuple[str | None, int]) -> PodInfo:
    p = pod(name)
    p.spec.containers[0].ports = [ContainerPort(container_port=80, host_ip=ip, host_port=n)
                                  for ip, n in ports]
    return PodInfo(p)


def test_ports_are_counted_per_pod_and_freed_with_the_last_user() -> None:
    s = Snapshot()
    for n in ("a", "b"):
        s.set_node(node(n))
    a, b = s.row("a"), s.row("b")
    want = PodInfo(with_ports("want", ("10.0.0.1", 80)).pod).host_ports
    rows = s.valid_rows()
    s.add_pod(with_ports("p1", (None, 80)), "a")  # every address
    s.add_pod(with_ports("p2", (None, 80)), "a")  # a second user of the same port
    s.add_pod(with_ports("p3", ("10.0.0.2", 80)), "b")  # another address: no conflict
    assert s.host_ports.conflict_mask(want, rows).tolist() == [True, False]
    s.remove_pod("default/p1")
    assert s.host_ports.used_on(a) == (("0.0.0.0", "TCP", 80),)  # p2 still holds it
    s.remove_pod("default/p2")
    assert s.host_ports.used_on(a) == ()
    assert not s.host_ports.conflict_mask(want, rows).any()
    s.remove_node("b")
    assert s.host_ports.used_on(b) == () and len(s.host_ports) == 0


def test_claims_in_use_are_counted_across_nodes() -> None:
    s = Snapshot()
    s.set_node(node("a"))
    p = pod("user")
    p.spec.volumes = [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}},
                      {"name": "e", "ephemeral": {}}]
    info = PodInfo(p)
    s.add_pod(info, "a")
    assert s.pvc_users == {"default/data": 1}  # ephemeral volumes are not counted (as kube)
    s.remove_pod(info.key)
    assert s.pvc_users == {}


def test_host_network_counts_container_ports_as_host_ports() -> None:
    """The API server defaults hostPort to containerPort for hostNetwork pods."""
    p = pod("net")
    p.spec.host_network = True
    p.spec.containers[0].ports = [ContainerPort(container_port=9090, protocol="UDP")]
    assert pod_host_ports(p) == (("0.0.0.0", "UDP", 9090),)
    assert np.asarray(pod_host_ports(pod("plain"))).size == 0
