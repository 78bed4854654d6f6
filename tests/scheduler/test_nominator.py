"""nominator.py: groups of nominations (a gang's members) and their lifetimes."""

from __future__ import annotations

from phalanx.api.core import Pod
from phalanx.scheduler.framework.types import PodInfo
from phalanx.scheduler.nominator import Nominator


def _pod(name: str) -> PodInfo:
    return PodInfo(Pod.model_validate({"metadata": {"name": name, "namespace": "default"},
                                       "spec": {"containers": [{"name": "c", "image": "i"}]}}))


def test_a_group_lists_its_members_still_nominated() -> None:
    n = Nominator()
    a, b, c = _pod("a"), _pod("b"), _pod("c")
    n.add(a, "node-0", "gang")
    n.add(b, "node-1", "gang")
    n.add(c, "node-2")
    assert n.group_of(a.key) == "gang" and n.group_of(c.key) is None
    assert [(p.key, node) for p, node in n.group_nominations("gang")] == [
        (a.key, "node-0"), (b.key, "node-1")]
    n.remove(a.key)  # used up (assumed): still a member, no longer nominated
    assert n.group_of(a.key) == "gang"
    assert [p.key for p, _ in n.group_nominations("gang")] == [b.key]


def test_renominating_without_a_group_keeps_the_membership() -> None:
    n = Nominator()
    a = _pod("a")
    n.add(a, "node-0", "gang")
    n.add(a, "node-0")  # the PostFilter result repeats the plugin's nomination
    assert n.group_of(a.key) == "gang"
    assert n.nominated_node(a.key) == "node-0"


def test_forget_and_drop_group_leave_nothing_behind() -> None:
    n = Nominator()
    a, b = _pod("a"), _pod("b")
    n.add(a, "node-0", "gang")
    n.add(b, "node-1", "gang")
    n.forget(a.key)  # deleted
    assert n.group_of(a.key) is None and n.nominated_node(a.key) is None
    n.remove(b.key)
    n.drop_group("gang")
    assert n.group_of(b.key) is None and n.group_nominations("gang") == []
    assert len(n) == 0
