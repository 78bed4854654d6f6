"""Startup order on a real cluster: Grove's grove-initc, as `phalanx startup-wait`.

A pod of a clique that starts after others (cliqueStartupType InOrder, or Explicit with
startsAfter) gets an init container, appended after the user's (Grove's
`podclique/components/pod/initcontainer.go`):

    name: grove-initc
    image: the Phalanx image ($PHALANX_STARTUP_WAITER_IMAGE, as Grove's
           $GROVE_INIT_CONTAINER_IMAGE; default the release image)
    args: [startup-wait, --podcliques=<parent PodClique>:<Ready pods needed>, ...]
    volumeMounts: /var/grove/pod-info (downward API: namespace, podgangname)
                  /var/run/secrets/kubernetes.io/serviceaccount (Secret <pcs>-ic-sat)

The token Secret belongs to the PodCliqueSet's own ServiceAccount (serviceaccount.py,
satokensecret.py), whose Role (role.py) only reads pods, so the waiter needs nothing from
the pod's own ServiceAccount. The container exits 0 once every parent PodClique has its
number of Ready pods; the pod's containers start only then.

This module is the one definition of "parents ready" for both sides: the waiter
(phalanx.services.startupwaiter) and the simulated kubelet (phalanx.sim.kubelet) read a
pod's parents with `dependencies_of` and judge them with `counts_as_ready` / `unmet`, so
a simulated run starts pods when the init container would let them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from phalanx.api import labels as L
from phalanx.api.core import Pod

from . import naming
from .satokensecret import token_secret_name

INIT_CONTAINER_NAME = "grove-initc"
SUBCOMMAND = "startup-wait"
PODCLIQUES_FLAG = "--podcliques"
ENV_IMAGE = "PHALANX_STARTUP_WAITER_IMAGE"
RELEASE_IMAGE = "ghcr.io/phalanx-dev/phalanx:0.1.0"  # phalanx.manifests.install's default
POD_INFO_VOLUME = "pod-info-vol"
POD_INFO_PATH = "/var/grove/pod-info"  # Grove's VolumeMountPathPodInfo
POD_INFO_NAMESPACE_FILE = "namespace"
POD_INFO_PODGANG_FILE = "podgangname"
TOKEN_VOLUME = "sa-token-secret-vol"
TOKEN_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"


def waiter_image() -> str:
    return os.environ.get(ENV_IMAGE) or RELEASE_IMAGE


def waiter_args(deps: Iterable[tuple[str, int]]) -> list[str]:
    return [SUBCOMMAND, *(f"{PODCLIQUES_FLAG}={name}:{need}" for name, need in deps)]


def parse_podcliques(values: Iterable[str]) -> list[tuple[str, int]]:
    """`name:count` pairs (Grove's GetPodCliqueDependencies; a name given twice keeps its
    last count). Raises ValueError naming the bad value."""
    out: dict[str, int] = {}
    for raw in values:
        pair = raw.strip()
        if not pair:
            continue
        parts = pair.split(":")
        if len(parts) != 2:
            raise ValueError(f"--podcliques {raw!r}: expected two values per podclique "
                             f"(<podclique>:<count>), found {len(parts)}")
        name, count = parts[0].strip(), parts[1].strip()
        try:
            need = int(count)
        except ValueError:
            raise ValueError(f"--podcliques {raw!r}: failed to convert replicas to int "
                             f"({count!r})") from None
        if need <= 0:
            raise ValueError(f"--podcliques {raw!r}: replica count must be positive, "
                             f"got {need}")
        if not name:
            raise ValueError(f"--podcliques {raw!r}: podclique name cannot be empty")
        out[name] = need
    return list(out.items())


def init_container(deps: list[tuple[str, int]], image: str | None = None) -> dict:
    return {
        "name": INIT_CONTAINER_NAME,
        "image": image or waiter_image(),
        "args": waiter_args(deps),
        "volumeMounts": [
            {"name": POD_INFO_VOLUME, "readOnly": True, "mountPath": POD_INFO_PATH},
            {"name": TOKEN_VOLUME, "readOnly": True, "mountPath": TOKEN_PATH},
        ],
    }


def volumes(pcs: str) -> list[dict]:
    return [
        {"name": TOKEN_VOLUME,
         "secret": {"secretName": token_secret_name(pcs), "defaultMode": 0o644}},
        {"name": POD_INFO_VOLUME, "downwardAPI": {"items": [
            {"path": POD_INFO_NAMESPACE_FILE,
             "fieldRef": {"fieldPath": "metadata.namespace"}},
            {"path": POD_INFO_PODGANG_FILE,
             "fieldRef": {"fieldPath": f"metadata.labels['{L.LABEL_PODGANG}']"}}]}},
    ]


def inject(spec: dict, pcs: str, deps: list[tuple[str, int]]) -> None:
    """Add the waiter to a pod spec (camelCase dict) when the pod has parents."""
    if not deps:
        return
    spec["volumes"] = [*spec.get("volumes", ()), *volumes(pcs)]
    spec["initContainers"] = [*spec.get("initContainers", ()), init_container(deps)]


def dependencies_of(pod: Pod) -> list[tuple[str, int]]:
    """The parents a pod waits for: its grove-initc's arguments; for a pod without one, the
    PodClique's `phalanx.dev/starts-after` annotation the pod copied (same content)."""
    for c in pod.spec.init_containers or ():
        if c.name == INIT_CONTAINER_NAME:
            prefix = PODCLIQUES_FLAG + "="
            try:
                return parse_podcliques(a[len(prefix):] for a in (c.args or ())
                                        if a.startswith(prefix))
            except ValueError:
                return []  # the operator never writes one; a real waiter would exit 1
    return naming.parse_starts_after(pod.metadata.annotations.get(
        naming.ANNOTATION_STARTS_AFTER))


def counts_as_ready(pod: Pod) -> bool:
    """A parent pod counts once its Ready condition is True (Grove's waiter)."""
    return pod.is_ready


def unmet(deps: Iterable[tuple[str, int]], ready: Callable[[str], int]
          ) -> list[tuple[str, int, int]]:
    """(PodClique, needed, Ready now) for each parent still short of its count."""
    return [(name, need, have) for name, need in deps if (have := ready(name)) < need]
