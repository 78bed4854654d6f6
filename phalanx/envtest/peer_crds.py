"""The CRDs the peer projects install (Grove, KAI, Volcano, scheduler-plugins, Koordinator).

They live unchanged in `shared/peer-crds/<peer>/` beside the checkout (`../shared/peer-crds`,
or the folder `PHALANX_PEER_CRDS` names; see its README). Tests load one peer's CRDs into a
real API server, so that every object Phalanx writes is checked against the schema the
peer's own scheduler reads:

    docs = peer_crds("volcano")               # the CRD documents, in file name order
    await install_crds(kube, docs)            # phalanx.envtest.crds

`PeerCRDsNotFound` (a message to skip with) when the folder or the peer is absent.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from .binaries import CHECKOUT

PEERS = ("grove", "kai", "volcano", "scheduler-plugins", "koordinator")


class PeerCRDsNotFound(RuntimeError):
    """The peers' CRDs are not on this machine; the message says where they were looked for."""


def peer_crds_dir() -> Path:
    override = os.environ.get("PHALANX_PEER_CRDS")
    return Path(override) if override else CHECKOUT.parent / "shared" / "peer-crds"


def peer_crds(peer: str, *, only: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Every CRD of `peer` (files in name order), or only those whose kinds are in `only`."""
    if peer not in PEERS:
        raise ValueError(f"unknown peer {peer!r}; known: {', '.join(PEERS)}")
    folder = peer_crds_dir() / peer
    files = sorted(folder.glob("*.yaml")) if folder.is_dir() else []
    if not files:
        raise PeerCRDsNotFound(
            f"no CRDs of {peer} in {folder} (the peers' CRDs are copied to ../shared/peer-crds "
            "beside the checkout, or the folder PHALANX_PEER_CRDS names)")
    docs = [doc for f in files for doc in yaml.safe_load_all(f.read_text()) if doc]
    crds = [d for d in docs if d.get("kind") == "CustomResourceDefinition"]
    if only:
        crds = [d for d in crds if d["spec"]["names"]["kind"] in only]
    return crds


def crd_kinds(crds: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(group, kind) of each CRD, for messages and assertions."""
    return [(d["spec"]["group"], d["spec"]["names"]["kind"]) for d in crds]
