"""Volcano's HyperNodes for a Grove ClusterTopology.

Volcano packs a PodGroup into one HyperNode of at most `networkTopology.highestTierAllowed`;
the volcano backend names tiers as `topology.TopologyLevels.volcano_tier` counts them (tier 1
= the narrowest level above a node). Without HyperNodes that tier names nothing, so the
backend writes the tree of each ClusterTopology it packs into:

    tier 1 (rack):  <topology>-rack-<value>   members: [{type: Node, labelMatch: {rack: value}}]
    tier 2 (block): <topology>-block-<value>  members: [{type: HyperNode,
                                                          exactMatch: <rack HyperNode>}, ...]
    ...             one HyperNode per value of each level above the host, `tierName` the domain

A domain is a value of its level's node label, as Grove's pack constraints mean it (pods on
nodes with the same value). A domain's children are the values of the next narrower level
found on its nodes; a child found under two parents (inconsistent labels) stays under the
first one in name order. Nodes missing a level's label are in no HyperNode of that level or
above. Names are DNS subdomains: lower case, other characters as `-`, plus a hash of the
original when anything was changed (so `Rack_1` and `rack-1` stay apart).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from phalanx.api import labels
from phalanx.api.base import ObjectMeta
from phalanx.api.volcano_topology import (
    ExactMatch,
    HyperNode,
    HyperNodeMember,
    HyperNodeSpec,
    MemberSelector,
)
from phalanx.api.scheduling import LabelSelector

from .objects import dns_label

if TYPE_CHECKING:
    from .topology import Level, TopologyLevels

_NOT_DNS = re.compile(r"[^a-z0-9-]+")


def hypernode_name(topology: str, domain: str, value: str) -> str:
    """A DNS-safe, stable name for one domain of one level."""
    raw = f"{topology}-{domain}-{value}"
    clean = _NOT_DNS.sub("-", raw.lower()).strip("-") or "hypernode"
    if clean != raw:
        clean = f"{clean}-{hashlib.sha256(raw.encode()).hexdigest()[:6]}"
    return dns_label(clean)


def _above_host(levels: TopologyLevels) -> list[Level]:
    """The levels a HyperNode can stand for, broadest first (a HyperNode holds nodes, so
    the host level has none)."""
    return [lv for lv in levels.levels if levels.volcano_tier(lv.key) is not None]


def hypernode_tree(levels: TopologyLevels,
                   node_labels: Iterable[dict[str, str]]) -> list[HyperNode]:
    """Every HyperNode of the topology for these nodes' labels, tier 1 first, then by name
    (pure: tested on its own)."""
    above = _above_host(levels)
    if not above:
        return []
    values: list[set[str]] = [set() for _ in above]
    parent_of: list[dict[str, str]] = [{} for _ in above]  # child value -> parent value
    for lbl in node_labels:
        path = [lbl.get(lv.key) or "" for lv in above]
        for i, value in enumerate(path):
            if not value or not all(path[: i + 1]):
                break  # a node without this level's label (or a broader one's)
            values[i].add(value)
            if i > 0:
                known = parent_of[i].get(value)
                if known is None or path[i - 1] < known:
                    parent_of[i][value] = path[i - 1]
    owner = _owner(levels)
    out: list[HyperNode] = []
    for i in range(len(above) - 1, -1, -1):  # narrowest (tier 1) first
        level = above[i]
        tier = len(above) - i
        for value in sorted(values[i]):
            if i == len(above) - 1:
                members = [HyperNodeMember(type="Node", selector=MemberSelector(
                    label_match=LabelSelector(match_labels={level.key: value})))]
            else:
                child = above[i + 1]
                kids = sorted(v for v, p in parent_of[i + 1].items() if p == value)
                members = [HyperNodeMember(type="HyperNode", selector=MemberSelector(
                    exact_match=ExactMatch(name=hypernode_name(levels.name, child.domain, k))))
                    for k in kids]
            meta = ObjectMeta(name=hypernode_name(levels.name, level.domain, value),
                              labels={labels.LABEL_MANAGED_BY: labels.MANAGED_BY_VALUE})
            if owner is not None:
                meta.owner_references = [owner]
            out.append(HyperNode(metadata=meta, spec=HyperNodeSpec(
                tier=tier, tier_name=level.domain, members=members or None)))
    return out


def _owner(levels: TopologyLevels) -> Any:
    source = levels.source
    if source is None or not source.metadata.uid:
        return None
    return source.owner_reference(controller=True, block=False)
