"""A PodCliqueSet's availableReplicas and updatedReplicas, kept per replica between looks.

The status controller counts them about once a second while a PodCliqueSet's children
change. Working every replica out again each time cost, at Grove's 2,500-replica scale test
on a real server, about a tenth of the operator's CPU. A replica's results depend only on
the PodCliqueSet's spec and current generation hash and on its own standalone PodCliques
and scaling groups; informer objects are replaced on every change, never edited, so a
replica whose objects are the very ones of the last look keeps its results.

- available: every standalone PodClique has at least minAvailable Ready pods and every
  scaling group at least minAvailable available replicas;
- updated: `ReplicaView.done` (rollingupdate.py), with PodCliques and scaling groups being
  deleted left out.
"""

from __future__ import annotations

from typing import Any

from phalanx.api import labels as L
from phalanx.api.grove import PodClique, PodCliqueScalingGroup, PodCliqueSet
from phalanx.cluster.informer import Informer
from phalanx.cluster.objects import object_key

from . import naming
from .plan import min_available
from .rollingupdate import ReplicaLayout, ReplicaView

# (the replica's PodCliques and scaling groups, available, updated)
_Row = tuple[tuple[Any, ...], bool, bool]


class ReplicaCounts:
    def __init__(self, cliques: Informer[PodClique],
                 groups: Informer[PodCliqueScalingGroup]) -> None:
        self.cliques, self.groups = cliques, groups
        # PodCliqueSet key -> ((uid, generation, current generation hash), rows by replica)
        self._rows: dict[str, tuple[tuple[Any, ...], dict[int, _Row]]] = {}
        self.worked_out = 0  # replicas worked out again (tests)

    def forget(self, pcs_key: str) -> None:
        self._rows.pop(pcs_key, None)

    def counts(self, pcs: PodCliqueSet) -> tuple[int, int]:
        """(availableReplicas, updatedReplicas) from the informers' current objects."""
        inputs = (pcs.metadata.uid, pcs.metadata.generation, pcs.status.current_generation_hash)
        kept = self._rows.get(pcs.key)
        if kept is None or kept[0] != inputs:  # the spec or the target hash moved: all anew
            kept = self._rows[pcs.key] = (inputs, {})
        rows = kept[1]
        layout = ReplicaLayout(pcs)
        configs = pcs.spec.template.pod_clique_scaling_groups or ()
        available = updated = 0
        for i in range(pcs.spec.replicas):
            objs = (*(self._child(self.cliques, pcs, naming.podclique_name(pcs.name, i, t))
                      for t in layout.cliques),
                    *(self._child(self.groups, pcs, naming.scaling_group_name(pcs.name, i, g))
                      for g in layout.groups))
            row = rows.get(i)
            if row is None or len(row[0]) != len(objs) or \
                    any(a is not b for a, b in zip(row[0], objs, strict=True)):
                row = rows[i] = (objs, *self._work_out(pcs, i, layout, configs, objs))
                self.worked_out += 1
            available += row[1]
            updated += row[2]
        for i in [i for i in rows if i >= pcs.spec.replicas]:  # scaled in
            del rows[i]
        return available, updated

    @staticmethod
    def _child(informer: Informer[Any], pcs: PodCliqueSet, name: str) -> Any:
        obj = informer.get(object_key(pcs.namespace, name))
        return obj if obj is not None and \
            obj.metadata.labels.get(L.LABEL_PART_OF) == pcs.name else None

    @staticmethod
    def _work_out(pcs: PodCliqueSet, i: int, layout: ReplicaLayout, configs: Any,
                  objs: tuple[Any, ...]) -> tuple[bool, bool]:
        n = len(layout.cliques)
        cliques, groups = objs[:n], objs[n:]
        available = all(c is not None and c.status.ready_replicas >= (c.spec.min_available or 0)
                        for c in cliques) and \
            all(g is not None and g.status.available_replicas >= min_available(cfg)
                for g, cfg in zip(groups, configs, strict=True))
        live_cliques = {c.name: c for c in cliques
                        if c is not None and c.metadata.deletion_timestamp is None}
        live_groups = {g.name: g for g in groups
                       if g is not None and g.metadata.deletion_timestamp is None}
        done = ReplicaView(pcs, i, live_cliques, live_groups, layout).done
        return available, done
