"""Host ports: what a pod asks a node for, and which are in use per snapshot row.

A host port is `(hostIP, protocol, port)`, with kube-scheduler's defaults (hostIP "" means
every address, "0.0.0.0"; protocol "" means TCP). Two ports conflict when protocol and port
are equal and either binds every address or both bind the same address (HostPortInfo in
k8s.io/kube-scheduler/framework).

The index keeps, per `(protocol, port)`, the rows using it and the addresses there, counted
per pod, so a Filter for a pod with host ports touches only the rows that use one of its
ports, never every node.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from phalanx.api.core import Pod

ALL_ADDRESSES = "0.0.0.0"
HostPort = tuple[str, str, int]  # (hostIP, protocol, port)
NO_PORTS: tuple[HostPort, ...] = ()


def pod_host_ports(pod: Pod) -> tuple[HostPort, ...]:
    """util.GetHostPorts: ports with hostPort > 0 of the app containers and of the init
    containers that run for the pod's whole life (restartPolicy Always, sidecars).

    With hostNetwork, a port without hostPort counts as hostPort = containerPort: the API
    server defaults it so, and a pod from a store that did not must not escape the check."""
    spec = pod.spec
    host_network = bool(spec.host_network)
    out: list[HostPort] = []
    for containers, sidecars_only in ((spec.init_containers, True), (spec.containers, False)):
        for c in containers or ():
            if sidecars_only and c.restart_policy != "Always":
                continue
            for p in c.ports or ():
                port = p.host_port or (p.container_port if host_network else 0)
                if port and port > 0:
                    out.append((p.host_ip or ALL_ADDRESSES, p.protocol or "TCP", int(port)))
    return tuple(out) if out else NO_PORTS


def ports_conflict(want: HostPort, used: HostPort) -> bool:
    """HostPortInfo.CheckConflict for one pair."""
    ip, proto, port = want
    uip, uproto, uport = used
    if proto != uproto or port != uport:
        return False
    return ip == ALL_ADDRESSES or uip == ALL_ADDRESSES or ip == uip


def fits(want: tuple[HostPort, ...], used: tuple[HostPort, ...]) -> bool:
    """No wanted port conflicts with a used one (nodeports.Fits)."""
    return not any(ports_conflict(w, u) for w in want for u in used)


class HostPortIndex:
    """(protocol, port) -> row -> hostIP -> number of counted pods using it."""

    __slots__ = ("_by_port",)

    def __init__(self) -> None:
        self._by_port: dict[tuple[str, int], dict[int, dict[str, int]]] = {}

    def __len__(self) -> int:
        return len(self._by_port)

    def add(self, row: int, ports: tuple[HostPort, ...]) -> None:
        for ip, proto, port in ports:
            ips = self._by_port.setdefault((proto, port), {}).setdefault(row, {})
            ips[ip] = ips.get(ip, 0) + 1

    def remove(self, row: int, ports: tuple[HostPort, ...]) -> None:
        for ip, proto, port in ports:
            rows = self._by_port.get((proto, port))
            ips = rows.get(row) if rows is not None else None
            if ips is None or ip not in ips:
                continue
            ips[ip] -= 1
            if ips[ip] <= 0:
                del ips[ip]
                if not ips:
                    del rows[row]  # type: ignore[union-attr]
                    if not rows:
                        del self._by_port[(proto, port)]

    def used_on(self, row: int) -> tuple[HostPort, ...]:
        """The host ports in use on a row (for explanations and tests)."""
        return tuple(sorted((ip, proto, port) for (proto, port), rows in self._by_port.items()
                            if row in rows for ip in rows[row]))

    def conflicting_rows(self, want: tuple[HostPort, ...]) -> list[int]:
        """Rows where at least one wanted port is taken."""
        out: set[int] = set()
        for ip, proto, port in want:
            rows = self._by_port.get((proto, port))
            if not rows:
                continue
            if ip == ALL_ADDRESSES:
                out.update(rows)
                continue
            for row, ips in rows.items():
                if ip in ips or ALL_ADDRESSES in ips:
                    out.add(row)
        return sorted(out)

    def conflict_mask(self, want: tuple[HostPort, ...], idx: np.ndarray) -> np.ndarray:
        """bool per entry of `idx`: True where the row has a conflicting port."""
        rows = self.conflicting_rows(want)
        if not rows:
            return np.zeros(idx.size, dtype=bool)
        return np.isin(idx, np.asarray(rows, dtype=np.int64))
