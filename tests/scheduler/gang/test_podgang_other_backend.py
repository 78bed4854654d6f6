"""A PodGang handed to another backend is not a gang of the Phalanx scheduler's own
(reliability engineer: found by the restart test, where every non-phalanx PodGang kept
`GangScheduled=False GangIncomplete "0/N members created"` although all its pods ran)."""

from __future__ import annotations

from phalanx.api import labels
from phalanx.api.podgang import PodGang
from phalanx.scheduler.gang.sources import PodGangSource


def podgang(scheduler: str | None) -> PodGang:
    meta: dict = {"name": "pcs-0", "namespace": "ns"}
    if scheduler is not None:
        meta["labels"] = {labels.LABEL_SCHEDULER_NAME: scheduler}
    return PodGang.model_validate({"metadata": meta, "spec": {"podgroups": [{"name": "pcs-0-w", "minReplicas": 2}]}})


def test_only_phalanx_or_unlabelled_podgangs_are_gangs() -> None:
    src = PodGangSource()
    assert [g.min_member for g in src.gangs(podgang(labels.SCHEDULER_PHALANX))] == [2]
    assert [g.min_member for g in src.gangs(podgang(None))] == [2]
    for other in (labels.SCHEDULER_KAI, labels.SCHEDULER_VOLCANO, "koordinator", labels.SCHEDULER_DEFAULT):
        assert src.gangs(podgang(other)) == []
