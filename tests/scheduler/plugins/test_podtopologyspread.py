"""PodTopologySpread through the real scheduler loop on MemoryCluster: DoNotSchedule over zones,
gangs whose members are placed one by one with the earlier ones counted, ScheduleAnyway,
minDomains, the system default constraints (Services select the pods), the profile's args, and
the API server's matchLabelKeys merge at creation."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api.base import ObjectMeta
from phalanx.api.core import Pod, Service, ServiceSpec
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler, SchedulerConfiguration
from phalanx.scheduler.framework.config import PluginConfig, SchedulerProfile
from phalanx.scheduler.framework.resolve import ProfileError
from phalanx.scheduler.plugins.podtopologyspread import REASON_LABEL, REASON_SKEW

from ..gang.builders import bound_by_gang, members, podgang
from ..helpers import bound_nodes, node, pod, run_scheduler

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
WEB = {"matchLabels": {"app": "web"}}


def spread(
    max_skew: int = 1, key: str = ZONE, when: str = "DoNotSchedule", **extra: Any
) -> dict[str, Any]:
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when,
            "labelSelector": WEB, **extra}


def web(name: str, *constraints: dict[str, Any], on: str | None = None, **kw: Any) -> Pod:
    p = pod(name, labels={"app": "web", **kw.pop("labels", {})}, **kw)
    p.spec.topology_spread_constraints = list(constraints) or None
    p.spec.node_name = on  # bound already (an existing replica)
    return p


def zones(*spec: str, **kw: Any) -> list[Any]:
    """One node per "name:zone" (zone "" for none), with hostname labels."""
    out = []
    for item in spec:
        name, _, zone = item.partition(":")
        out.append(node(name, labels={HOST: name, **({ZONE: zone} if zone else {})}, **kw))
    return out


async def settle(client: MemoryCluster, sched: Scheduler) -> dict[str, str | None]:
    assert await sched.wait_idle(timeout=120)
    return await bound_nodes(client)


def zone_of(n: str | None) -> str | None:
    return n[0] if n else None


def test_do_not_schedule_spreads_replicas_over_zones() -> None:
    """Six replicas with maxSkew 1 over three zones, scheduled back to back (each cycle counts
    the ones assumed before it), end 2/2/2 although packing prefers the fuller nodes."""

    async def body(client: MemoryCluster, sched: Scheduler):
        return await settle(client, sched)

    nodes = zones("a1:a", "a2:a", "b1:b", "b2:b", "c1:c")
    bound = run_scheduler(body, nodes=nodes, pods=[web(f"w{i}", spread()) for i in range(6)])
    assert sorted(zone_of(n) for n in bound.values()) == ["a", "a", "b", "b", "c", "c"]


def test_a_replica_over_the_skew_is_refused_with_kube_reasons() -> None:
    """Zone a holds two replicas, zone b is full: a third replica may not go to zone a
    (2 + 1 - 0 > 1); a node without the zone label is refused as unresolvable."""

    async def body(client: MemoryCluster, sched: Scheduler):
        await client.create(web("p", spread()))
        return await settle(client, sched), sched.diagnosis("default/p")

    nodes = [*zones("a1:a", "nz:"), *zones("b1:b", cpu="1")]
    existing = [web("e1", on="a1"), web("e2", on="a1"), pod("big", cpu="1")]
    existing[2].spec.node_name = "b1"
    bound, diag = run_scheduler(body, nodes=nodes, pods=existing)
    assert bound["p"] is None
    assert diag is not None
    assert diag.reason_counts == {"Insufficient cpu": 1, REASON_SKEW: 1, REASON_LABEL: 1}
    assert diag.message().startswith(
        f"0/3 nodes are available: 1 Insufficient cpu, 1 {REASON_SKEW}, 1 {REASON_LABEL}."
    )


def test_a_gang_of_six_with_max_skew_one_over_three_zones_ends_two_per_zone() -> None:
    """The members are placed one per cycle; each counts the ones assumed before it."""

    async def body(client: MemoryCluster, sched: Scheduler):
        assert await sched.wait_idle(timeout=120)
        return await bound_nodes(client)

    ms = members("g", "w", 6, gpu=1, labels={"app": "web"})
    for m in ms:
        m.spec.topology_spread_constraints = [spread()]
    nodes = zones("a1:a", "b1:b", "c1:c", gpu=8)
    bound = run_scheduler(body, nodes=nodes, pods=[podgang("g", {"w": 6}), *ms])
    assert sorted(zone_of(n) for n in bound.values()) == ["a", "a", "b", "b", "c", "c"]


def _skewed_gang(mixed: bool) -> tuple[list[Any], list[Any]]:
    """Zone a already holds two web replicas; the gang's 4 web members may start only in zone
    b (room for 3), and reach zone a (room for 1) once zone b holds two of them."""
    nodes = [*zones("a1:a", gpu=1), *zones("b1:b", gpu=3)]
    existing = [web("e1", on="a1"), web("e2", on="a1")]
    groups = {"lead": 1, "w": 3} if mixed else {"w": 4}
    ms = []
    for g, n in groups.items():
        ms += members("g", g, n, gpu=1, cpu="2" if g == "lead" else "1", labels={"app": "web"})
    for m in ms:
        m.spec.topology_spread_constraints = [spread()]
    return nodes, [*existing, podgang("g", groups), *ms]


@pytest.mark.parametrize("mixed", [False, True], ids=["one shape", "two shapes (planned)"])
def test_a_gang_that_fits_only_as_its_members_shift_the_spread_is_bound(mixed: bool) -> None:
    """The whole-gang checks must not count room on the first member's nodes only: zone a is
    closed to the first members but opens once zone b holds two of them."""

    async def body(client: MemoryCluster, sched: Scheduler):
        assert await sched.wait_idle(timeout=120)
        return await bound_by_gang(client)

    nodes, objs = _skewed_gang(mixed)
    bound = run_scheduler(body, nodes=nodes, pods=objs)
    assert sorted(zone_of(n) for n in bound["g"]) == ["a", "b", "b", "b"]


def test_schedule_anyway_prefers_the_zone_with_fewer_replicas() -> None:
    async def body(client: MemoryCluster, sched: Scheduler):
        await client.create(web("p", spread(when="ScheduleAnyway")))
        return await settle(client, sched)

    # Packing (the default NodeResourcesFit strategy) alone would pick a1, the fuller node.
    existing = [web(f"e{i}", on="a1") for i in range(3)]
    bound = run_scheduler(body, nodes=zones("a1:a", "b1:b"), pods=existing)
    assert bound["p"] == "b1"


def test_min_domains_treats_missing_domains_as_empty_until_a_node_brings_one() -> None:
    """minDomains 3 with two zones: the global minimum counts as 0, so each zone takes one
    replica; the third waits until a node of a third zone arrives (a queueing hint)."""

    async def body(client: MemoryCluster, sched: Scheduler):
        for i in range(3):
            await client.create(web(f"w{i}", spread(minDomains=3)))
            await settle(client, sched)
        before = await bound_nodes(client)
        await client.create(zones("c1:c")[0])
        return before, await settle(client, sched)

    before, after = run_scheduler(body, nodes=zones("a1:a", "b1:b"))
    assert sorted(zone_of(n) or "-" for n in before.values()) == ["-", "a", "b"]
    assert before["w2"] is None and after["w2"] == "c1"


def _service(selector: dict[str, str]) -> Service:
    return Service(metadata=ObjectMeta(name="web", namespace="default"),
                   spec=ServiceSpec(selector=selector))


@pytest.mark.parametrize("with_service", [False, True], ids=["no service", "service"])
def test_system_defaults_spread_the_pods_a_service_selects(with_service: bool) -> None:
    """A pod without constraints gets kube's system defaults (hostname maxSkew 3, zone
    maxSkew 5, ScheduleAnyway) with the selector of the Services that select it; with none,
    the defaults do not apply and packing decides."""

    async def body(client: MemoryCluster, sched: Scheduler):
        await client.create(web("p"))
        return await settle(client, sched)

    existing: list[Any] = [web(f"e{i}", on="a1") for i in range(3)]
    if with_service:
        existing.insert(0, _service({"app": "web"}))
    bound = run_scheduler(body, nodes=zones("a1:a", "b1:b"), pods=existing)
    assert bound["p"] == ("b1" if with_service else "a1")


def _profile(args: dict[str, Any]) -> SchedulerConfiguration:
    return SchedulerConfiguration(profiles=[SchedulerProfile(
        scheduler_name="phalanx-scheduler",
        plugin_config=[PluginConfig(name="PodTopologySpread", args=args)])])


def test_list_default_constraints_apply_to_pods_a_service_selects() -> None:
    """defaultingType List with a DoNotSchedule hostname default: the replicas a Service
    selects go to a2 (a1 holds two already), although packing prefers a1; other pods, which
    no Service selects, get no default constraint and pack onto a1."""
    args = {"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule"}]}

    async def body(client: MemoryCluster, sched: Scheduler):
        for i in range(2):
            await client.create(web(f"w{i}"))
            await client.create(pod(f"other{i}"))
            await settle(client, sched)
        return await bound_nodes(client)

    existing = [_service({"app": "web"}), web("e1", on="a1"), web("e2", on="a1")]
    bound = run_scheduler(body, nodes=zones("a1:a", "a2:a"), pods=existing,
                          scheduler_factory=lambda c: Scheduler(c, _profile(args)))
    assert (bound["w0"], bound["w1"]) == ("a2", "a2")
    assert (bound["other0"], bound["other1"]) == ("a1", "a1")


@pytest.mark.parametrize(
    "args, field",
    [
        ({"defaultConstraints": [{"maxSkew": 1, "topologyKey": HOST,
                                  "whenUnsatisfiable": "ScheduleAnyway"}]}, "defaultingType"),
        ({"defaultingType": "List", "defaultConstraints": [
            {"maxSkew": 0, "topologyKey": HOST, "whenUnsatisfiable": "ScheduleAnyway"}]},
         "defaultConstraints[0].maxSkew"),
        ({"defaultingType": "List", "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "Sometimes"}]},
         "defaultConstraints[0].whenUnsatisfiable"),
        ({"defaultingType": "List", "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {}}]}, "defaultConstraints[0].labelSelector"),
        ({"defaultingType": "List", "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule"},
            {"maxSkew": 2, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule"}]},
         "defaultConstraints[1]"),
        ({"defaultingType": "Sometimes"}, "defaultingType"),
        # v1.TopologySpreadConstraint is decoded strictly: a misspelt field is refused.
        ({"defaultingType": "List", "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule",
             "minDomian": 3}]},
         "profiles[0].pluginConfig[0].args.defaultConstraints[0].minDomian: unknown field"),
    ],
)
def test_profile_args_are_validated_as_kube_does(args: dict[str, Any], field: str) -> None:
    with pytest.raises(ProfileError, match=field.replace("[", r"\[").replace("]", r"\]")):
        run_scheduler(lambda c, s: _noop(),
                      scheduler_factory=lambda c: Scheduler(c, _profile(args)))


async def _noop() -> None:
    return None


def test_match_label_keys_are_merged_into_the_selector_at_creation_only() -> None:
    async def body(client: MemoryCluster, sched: Scheduler):
        p = web("p", spread(matchLabelKeys=["version", "absent"]), labels={"version": "v1"})
        created = await client.create(p)
        created.metadata.labels["version"] = "v2"  # a later label change merges nothing
        updated = await client.update(created)
        return created, updated

    created, updated = run_scheduler(body, nodes=zones("a1:a"))
    want = {"matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "version", "operator": "In", "values": ["v1"]}]}
    assert created.spec.topology_spread_constraints[0]["labelSelector"] == want
    assert updated.spec.topology_spread_constraints[0]["labelSelector"] == want
    assert updated.spec.topology_spread_constraints[0]["matchLabelKeys"] == ["version", "absent"]


def test_a_replica_leaving_requeues_only_the_pods_its_labels_held_back() -> None:
    """minDomains 2 with one zone: its global minimum is 0, so zone a may hold one replica.
    Deleting a pod the selector does not match leaves the pending replica where it is (the
    queueing hint skips it); deleting the replica that held zone a lets it in."""

    async def body(client: MemoryCluster, sched: Scheduler):
        await client.create(web("p", spread(minDomains=2)))
        before = await settle(client, sched)
        tries = sched.diagnosis("default/p").attempts
        await client.delete(Pod, "other", "default")
        unrelated = await settle(client, sched), sched.diagnosis("default/p").attempts
        await client.delete(Pod, "e1", "default")
        return before, tries, unrelated, await settle(client, sched)

    other = pod("other", labels={"app": "db"})
    other.spec.node_name = "a1"
    before, tries, (still, tries_after), after = run_scheduler(
        body, nodes=zones("a1:a"), pods=[web("e1", on="a1"), other])
    assert before["p"] is None and still["p"] is None and tries_after == tries
    assert after["p"] == "a1"


def test_merge_constraint_keeps_nil_selectors_and_skips_absent_keys() -> None:
    from phalanx.cluster.pod_spread_keys import merge_constraint

    labels = {"version": "v1"}
    nil = {"topologyKey": ZONE, "matchLabelKeys": ["version"]}
    assert merge_constraint(nil, labels) == nil  # a nil selector matches nothing either way
    given = {"labelSelector": {"matchLabels": {"app": "web"}}, "matchLabelKeys": ["absent"]}
    assert merge_constraint(given, labels) == given
    merged = merge_constraint({**given, "matchLabelKeys": ["version"]}, labels)
    assert merged["labelSelector"]["matchExpressions"] == [
        {"key": "version", "operator": "In", "values": ["v1"]}]
    assert "matchExpressions" not in given["labelSelector"]  # the input is not changed


def test_a_selector_that_does_not_parse_is_an_error_naming_the_field() -> None:
    """The API server refuses such pods; one that slips by fails PreFilter with an error (as
    kube's does), never a crash or a silent pass."""
    from phalanx.scheduler.framework import CycleState, PodInfo
    from phalanx.scheduler.plugins.podtopologyspread import PodTopologySpread
    from phalanx.scheduler.snapshot import Snapshot

    bad = {"matchExpressions": [{"key": "app", "operator": "Near"}]}
    p = PodInfo(web("p", {**spread(), "labelSelector": bad}))
    plugin = PodTopologySpread(type("H", (), {"informers": None})(), {})
    _, status = plugin.pre_filter(CycleState(), p, Snapshot())
    assert status.is_error
    assert "spec.topologySpreadConstraints[0].labelSelector" in status.message


def test_default_profile_runs_it_before_inter_pod_affinity_with_weight_two() -> None:
    """kube-scheduler 1.36's default plugins: PodTopologySpread (score weight 2) right before
    InterPodAffinity, so a node both reject is counted under the spread's reason."""

    async def body(client: MemoryCluster, sched: Scheduler):
        fw = sched.frameworks["phalanx-scheduler"]
        weights = dict(zip([p.NAME for p in fw.score_plugins], fw.score_weights, strict=True))
        return fw.extension_points(), weights

    points, weights = run_scheduler(body)
    for point in ("preFilter", "filter", "preScore", "score"):
        assert "PodTopologySpread" in points[point]
    assert points["filter"].index("PodTopologySpread") + 1 == points["filter"].index(
        "InterPodAffinity")
    assert weights["PodTopologySpread"] == 2.0
