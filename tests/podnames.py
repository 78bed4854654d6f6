"""Finding pods as users know them. Pods have generated names (`<podclique>-<random>`, as Grove
creates them); a pod's stable identity is its hostname `<podclique>-<index>`, so tests look
pods up by hostname instead of by name."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from phalanx.api.core import Pod


def hostname(pod: Pod | Mapping[str, Any]) -> str:
    """`<podclique>-<index>` of a pod (a model or its dict form)."""
    if isinstance(pod, Pod):
        return pod.spec.hostname or pod.name
    return (pod.get("spec") or {}).get("hostname") or pod["metadata"]["name"]


def by_hostname(pods: Iterable[Pod]) -> dict[str, Pod]:
    out: dict[str, Pod] = {}
    for pod in pods:
        if pod.metadata.deletion_timestamp is None or hostname(pod) not in out:
            out[hostname(pod)] = pod
    return out


def hostnames(pods: Iterable[Pod]) -> list[str]:
    """The sorted hostnames of `pods`."""
    return sorted(hostname(p) for p in pods)


def hostnames_of_refs(refs: Iterable[Any], pods: Iterable[Pod]) -> list[str]:
    """The hostnames of the pods that PodGang `podReferences` name, in reference order."""
    names = {p.name: hostname(p) for p in pods}
    return [names.get(r.name, f"<unknown pod {r.name}>") for r in refs]
