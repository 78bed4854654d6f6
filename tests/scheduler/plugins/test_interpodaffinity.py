"""InterPodAffinity: kube-scheduler's required/preferred pod (anti-)affinity, on a Snapshot and
through the scheduler (a gang's members see each other while they are placed)."""

from __future__ import annotations

from typing import Any

import numpy as np

from phalanx.api.base import ObjectMeta
from phalanx.api.core import Affinity, Namespace
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.framework import CycleState, PodInfo
from phalanx.scheduler.plugins.interpodaffinity import (
    REASON_AFFINITY,
    REASON_ANTI,
    REASON_EXISTING_ANTI,
    InterPodAffinity,
)
from phalanx.scheduler.snapshot import Snapshot

from ..gang.builders import bound_by_gang, members, podgang
from ..helpers import bound_nodes, node, pod, run_scheduler

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


class _Handle:
    informers = None


def term(key: str, match: dict[str, str] | None, **kw: Any) -> dict[str, Any]:
    t: dict[str, Any] = {"topologyKey": key, **kw}
    if match is not None:
        t["labelSelector"] = {"matchLabels": match}
    return t


def affinity(
    *,
    req: list | None = None,
    anti: list | None = None,
    pref: list | None = None,
    pref_anti: list | None = None,
) -> Affinity:
    pa: dict[str, Any] = {}
    paa: dict[str, Any] = {}
    if req:
        pa["requiredDuringSchedulingIgnoredDuringExecution"] = req
    if pref:
        pa["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": w, "podAffinityTerm": t} for w, t in pref
        ]
    if anti:
        paa["requiredDuringSchedulingIgnoredDuringExecution"] = anti
    if pref_anti:
        paa["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": w, "podAffinityTerm": t} for w, t in pref_anti
        ]
    return Affinity(pod_affinity=pa or None, pod_anti_affinity=paa or None)


def zoned() -> Snapshot:
    s = Snapshot()
    for name, zone in (("a1", "a"), ("a2", "a"), ("b1", "b"), ("c1", None)):
        s.set_node(node(name, labels={HOST: name, **({ZONE: zone} if zone else {})}))
    return s


def filtered(s: Snapshot, p: Any) -> tuple[list[str], dict[str, int]]:
    plugin = InterPodAffinity(_Handle())
    info = PodInfo(p)
    state = CycleState()
    _, st = plugin.pre_filter(state, info, s)
    rows = s.valid_rows()
    if st.is_skip:
        return [s.names[r] for r in rows], {}
    res = plugin.filter(state, info, s, rows)
    reasons = {r.reason: int(r.mask.sum()) for r in res.rejections}
    return [s.names[r] for r in rows[res.feasible]], reasons


def test_required_anti_affinity_keeps_out_of_the_domains_of_matching_pods() -> None:
    s = zoned()
    s.add_pod(PodInfo(pod("web-0", labels={"app": "web"})), "a1")
    ok, why = filtered(
        s, pod("web-1", labels={"app": "web"}, affinity=affinity(anti=[term(ZONE, {"app": "web"})]))
    )
    # Zone a holds web-0; c1 has no zone label, so it is in no domain and passes.
    assert ok == ["b1", "c1"] and why == {REASON_ANTI: 2}


def test_existing_pods_anti_affinity_is_symmetric() -> None:
    s = zoned()
    s.add_pod(
        PodInfo(
            pod(
                "loner",
                labels={"app": "loner"},
                affinity=affinity(anti=[term(ZONE, {"app": "web"})]),
            )
        ),
        "b1",
    )
    ok, why = filtered(s, pod("web-0", labels={"app": "web"}))
    assert ok == ["a1", "a2", "c1"] and why == {REASON_EXISTING_ANTI: 1}
    # A pod the term does not match is not kept out.
    assert filtered(s, pod("db-0", labels={"app": "db"}))[0] == ["a1", "a2", "b1", "c1"]


def test_required_affinity_needs_a_matching_pod_in_the_domain_unless_it_is_the_first() -> None:
    s = zoned()
    want_db = affinity(req=[term(ZONE, {"app": "db"})])
    # No db pod anywhere and the pod is not a db itself: nowhere (unresolvable).
    ok, why = filtered(s, pod("api", labels={"app": "api"}, affinity=want_db))
    assert ok == [] and why == {REASON_AFFINITY: 4}
    # The first db that wants to be with dbs may go anywhere that has the key.
    ok, _ = filtered(s, pod("db-0", labels={"app": "db"}, affinity=want_db))
    assert ok == ["a1", "a2", "b1"]
    s.add_pod(PodInfo(pod("db-0", labels={"app": "db"})), "a2")
    ok, _ = filtered(s, pod("api", labels={"app": "api"}, affinity=want_db))
    assert ok == ["a1", "a2"]


def test_namespaces_and_namespace_selector() -> None:
    s = zoned()
    s.add_pod(PodInfo(pod("db", namespace="prod", labels={"app": "db"})), "a1")
    # By default a term looks at the declaring pod's namespace only.
    assert filtered(s, pod("x", affinity=affinity(anti=[term(ZONE, {"app": "db"})])))[0] == [
        "a1",
        "a2",
        "b1",
        "c1",
    ]
    assert filtered(
        s, pod("x", affinity=affinity(anti=[term(ZONE, {"app": "db"}, namespaces=["prod"])]))
    )[0] == ["b1", "c1"]
    # namespaceSelector {} means every namespace.
    assert filtered(
        s, pod("x", affinity=affinity(anti=[term(ZONE, {"app": "db"}, namespaceSelector={})]))
    )[0] == ["b1", "c1"]


def test_namespace_selector_matches_namespace_labels_from_the_cluster() -> None:
    sel = {"matchLabels": {"tier": "data"}}

    async def body(client: MemoryCluster, sched: Scheduler):
        await client.create(
            pod("db", namespace="prod", labels={"app": "db"}, node_selector={HOST: "a1"})
        )
        assert await sched.wait_idle(timeout=30)
        await client.create(
            pod(
                "x",
                affinity=affinity(anti=[term(ZONE, {"app": "db"}, namespaceSelector=sel)]),
                node_selector={ZONE: "a"},
            )
        )
        assert await sched.wait_idle(timeout=30)
        return await bound_nodes(client)

    nodes = [node(n, labels={HOST: n, ZONE: n[0]}) for n in ("a1", "a2", "b1")]
    labelled = [Namespace(metadata=ObjectMeta(name="prod", labels={"tier": "data"}))]
    plain = [Namespace(metadata=ObjectMeta(name="prod"))]
    # prod carries tier=data: the db there keeps x out of zone a (its only allowed zone).
    assert run_scheduler(body, nodes=nodes, pods=labelled)["x"] is None
    assert run_scheduler(body, nodes=nodes, pods=plain)["x"] in ("a1", "a2")


def test_preferred_terms_score_and_normalise_like_kube() -> None:
    s = zoned()
    s.add_pod(PodInfo(pod("cache", labels={"app": "cache"})), "b1")
    s.add_pod(PodInfo(pod("noisy", labels={"app": "noisy"})), "a1")
    p = PodInfo(
        pod(
            "web",
            affinity=affinity(
                pref=[(10, term(ZONE, {"app": "cache"}))],
                pref_anti=[(5, term(ZONE, {"app": "noisy"}))],
            ),
        )
    )
    plugin = InterPodAffinity(_Handle())
    state = CycleState()
    rows = s.valid_rows()
    assert not plugin.pre_score(state, p, s, rows).is_skip
    raw = plugin.score(state, p, s, rows)
    np.testing.assert_allclose(raw, [-5, -5, 10, 0])  # a1, a2: zone a; b1: zone b; c1: no zone
    np.testing.assert_allclose(plugin.normalize_score(state, p, raw), [0, 0, 100, 100 * 5 / 15])


def test_existing_pods_terms_score_the_incoming_pod() -> None:
    """Existing pods' required affinity counts hardPodAffinityWeight (1); preferred terms
    their weight."""
    s = zoned()
    s.add_pod(PodInfo(pod("a", affinity=affinity(req=[term(ZONE, {"app": "web"})]))), "a1")
    s.add_pod(
        PodInfo(pod("b", affinity=affinity(pref_anti=[(3, term(ZONE, {"app": "web"}))]))), "b1"
    )
    p = PodInfo(pod("web", labels={"app": "web"}))
    plugin = InterPodAffinity(_Handle())
    state = CycleState()
    rows = s.valid_rows()
    plugin.pre_score(state, p, s, rows)
    np.testing.assert_allclose(plugin.score(state, p, s, rows), [1, 1, -3, 0])
    ignoring = InterPodAffinity(_Handle(), {"ignorePreferredTermsOfExistingPods": True})
    state = CycleState()
    ignoring.pre_score(state, p, s, rows)
    np.testing.assert_allclose(ignoring.score(state, p, s, rows), [1, 1, 0, 0])


def test_nothing_to_do_without_terms_skips() -> None:
    s = zoned()
    s.add_pod(PodInfo(pod("plain")), "a1")
    plugin = InterPodAffinity(_Handle())
    state = CycleState()
    p = PodInfo(pod("p"))
    assert plugin.pre_filter(state, p, s)[1].is_skip
    assert plugin.pre_score(state, p, s, s.valid_rows()).is_skip


def test_a_gangs_members_keep_apart_from_each_other_while_being_placed() -> None:
    """One member per node (anti-affinity to its own gang, per hostname): 4 members on 4
    nodes all bind, on distinct nodes; on 3 nodes none does (all or nothing)."""
    anti = affinity(anti=[term(HOST, {"gang": "g"})])

    async def body(client: MemoryCluster, sched: Scheduler):
        assert await sched.wait_idle(timeout=120)
        return await bound_by_gang(client), sched.diagnoses()

    def objs() -> list[Any]:
        return [
            podgang("g", {"w": 4}),
            *members("g", "w", 4, gpu=1, cpu="100m", labels={"gang": "g"}, affinity=anti),
        ]

    four = [node(f"n{i}", gpu=8, labels={HOST: f"n{i}"}) for i in range(4)]
    bound, _ = run_scheduler(body, nodes=four, pods=objs())
    assert all(bound["g"]) and len(set(bound["g"])) == 4
    bound, diags = run_scheduler(body, nodes=four[:3], pods=objs())
    assert bound["g"] == [None] * 4
    # The gang's pre-check counts one member per node, so it fails at once (no retry storm).
    assert any(
        "needs 4 pods like this one, these nodes fit 3" in d.message() for d in diags.values()
    )
