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
    # kube's scores are int64: 100 * 5/15 truncates to 33.
    np.testing.assert_allclose(plugin.normalize_score(state, p, raw), [0, 0, 100, 33])


def test_existing_pods_terms_score_the_incoming_pod() -> None:
    """Existing pods' required affinity counts hardPodAffinityWeight (1); preferred terms
    their weight. ignorePreferredTermsOfExistingPods skips scoring for a pod without preferred
    terms of its own (kube's only use of it)."""
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
    assert ignoring.pre_score(CycleState(), p, s, rows).is_skip


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


def _exists(key: str, topology_key: str) -> dict[str, Any]:
    return {"topologyKey": topology_key,
            "labelSelector": {"matchExpressions": [{"key": key, "operator": "Exists"}]}}


def test_scheduler_needs_one_pod_matching_all_required_affinity_terms() -> None:
    """Issue 20: one pod must match every required affinity term. `foo` runs in zone z1 and
    `bar` in zone z2 of one region; a pod wanting foo in its region and bar in its zone stays
    Pending, both nodes counted under the affinity reason (term by term, n2 would pass)."""
    want = affinity(req=[_exists("foo", "region"), _exists("bar", "zone")])

    async def body(client: MemoryCluster, sched: Scheduler):
        assert await sched.wait_idle(timeout=30)
        await client.create(pod("wants", affinity=want))
        assert await sched.wait_idle(timeout=30)
        return await bound_nodes(client), sched.diagnosis("default/wants")

    nodes = [node(n, labels={"region": "r1", "zone": z, HOST: n}) for n, z in
             (("n1", "z1"), ("n2", "z2"))]
    existing = [pod("foo", labels={"foo": ""}, node_selector={HOST: "n1"}),
                pod("bar", labels={"bar": ""}, node_selector={HOST: "n2"})]
    bound, diag = run_scheduler(body, nodes=nodes, pods=existing)
    assert bound == {"foo": "n1", "bar": "n2", "wants": None}
    assert diag is not None and diag.reason_counts == {REASON_AFFINITY: 2}


def test_scheduler_places_the_first_of_its_kind_when_no_pod_matches_all_terms() -> None:
    """A pod matching only one of the terms does not count: the pod (which matches all of
    them itself) is the first of its kind and goes anywhere with the keys."""
    want = affinity(req=[term(ZONE, {"foo": "bar"}), term(ZONE, {"service": "scan"})])

    async def body(client: MemoryCluster, sched: Scheduler):
        assert await sched.wait_idle(timeout=30)
        await client.create(pod("first", labels={"foo": "bar", "service": "scan"}, affinity=want,
                                node_selector={ZONE: "b"}))
        assert await sched.wait_idle(timeout=30)
        return await bound_nodes(client)

    nodes = [node(n, labels={ZONE: n[0], HOST: n}) for n in ("a1", "b1")]
    only_foo = [pod("p1", labels={"foo": "bar"}, node_selector={HOST: "a1"})]
    assert run_scheduler(body, nodes=nodes, pods=only_foo)["first"] == "b1"


def test_match_label_keys_are_merged_at_creation_and_honoured() -> None:
    """A rolling update: one pod per node among pods of the same revision
    (matchLabelKeys: pod-template-hash). The new revision may join the old one's node; a
    second pod of the same revision may not."""
    per_node = affinity(anti=[term(HOST, {"app": "web"}, matchLabelKeys=["pod-template-hash"])])

    def web(name: str, rev: str) -> Any:
        return pod(name, labels={"app": "web", "pod-template-hash": rev}, affinity=per_node,
                   node_selector={HOST: "n1"})

    async def body(client: MemoryCluster, sched: Scheduler):
        await client.create(web("old", "v1"))
        assert await sched.wait_idle(timeout=30)
        await client.create(web("new", "v2"))
        await client.create(web("new-twin", "v2"))
        assert await sched.wait_idle(timeout=30)
        return await bound_nodes(client)

    bound = run_scheduler(body, nodes=[node("n1", labels={HOST: "n1"})])
    assert bound["old"] == "n1" and {bound["new"], bound["new-twin"]} == {"n1", None}
