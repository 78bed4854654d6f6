"""Snapshot columns, row reuse, and the per-signature filter cache staying exact."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.api.core import Toleration
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.framework import CycleState, PodInfo
from phalanx.scheduler.snapshot import Snapshot

from .helpers import node, pod


def test_rows_columns_and_versions():
    s = Snapshot(capacity=2)
    for i in range(5):  # grows past the initial capacity
        s.set_node(node(f"n{i}", cpu=4, gpu=i, labels={"zone": "a" if i % 2 else "b"}))
    assert len(s) == 5 and list(s.valid_rows()) == [0, 1, 2, 3, 4]
    gpu = s.resource_index["nvidia.com/gpu"]
    assert list(s.allocatable[:5, gpu]) == [0, 1, 2, 3, 4]
    assert list(s.allocatable[:5, s.resource_index["cpu"]]) == [4000.0] * 5
    zone = s.label_column("zone")[:5]
    assert list(zone == s.label_value_id("zone", "a")) == [False, True, False, True, False]
    v = s.row_version.copy()
    s.add_pod(PodInfo(pod("p", cpu="500m", gpu=1)), "n2")
    assert (s.row_version[:5] != v[:5]).tolist() == [False, False, True, False, False]
    assert s.requested[2, gpu] == 1 and s.requested[2, s.resource_index["pods"]] == 1
    removed = s.remove_node("n1")
    assert removed == [] and list(s.valid_rows()) == [0, 2, 3, 4]
    row = s.set_node(node("new", labels={"zone": "c"}))
    assert row == 1  # the freed row is reused
    assert s.label_column("zone")[1] == s.label_value_id("zone", "c")
    assert s.pod_row("default/p") == 2
    s.remove_pod("default/p")
    assert s.requested[2].sum() == 0


def test_new_resource_column_keeps_existing_pods_consistent():
    s = Snapshot()
    s.set_node(node("n"))
    s.add_pod(PodInfo(pod("a", cpu="1")), "n")
    s.add_pod(PodInfo(pod("b", extra={"example.com/fpga": "2"})), "n")  # adds a column
    s.set_node(node("n", extra={"example.com/fpga": "4"}))
    fpga = s.resource_index["example.com/fpga"]
    assert s.requested[0, fpga] == 2 and s.allocatable[0, fpga] == 4
    s.remove_pod("default/a")
    s.remove_pod("default/b")
    assert np.allclose(s.requested[0], 0)


def test_taint_sets_are_interned():
    s = Snapshot()
    s.set_node(node("a", taints=[("k", "v", "NoSchedule")]))
    s.set_node(node("b", taints=[("k", "v", "NoSchedule")]))
    s.set_node(node("c"))
    assert s.taint_set_ids[0] == s.taint_set_ids[1] != s.taint_set_ids[2] == 0
    assert len(s.taint_sets) == 2


# --- the filter cache against a fresh evaluation, under random changes ---------------------

ZONES = ["a", "b", "c"]
ops = st.lists(
    st.one_of(
        st.tuples(st.just("node"), st.integers(0, 11), st.integers(1, 8), st.sampled_from(ZONES), st.booleans()),
        st.tuples(st.just("pod"), st.integers(0, 11), st.integers(0, 3), st.integers(0, 40)),
        st.tuples(st.just("unpod"), st.integers(0, 40)),
        st.tuples(st.just("unnode"), st.integers(0, 11)),
        st.tuples(st.just("check"), st.integers(0, 3)),
    ),
    max_size=60,
)

TEMPLATES = [
    pod("t0", cpu="2", memory=None),
    pod("t1", cpu="1", gpu=1, node_selector={"zone": "a"}),
    pod("t2", cpu="3", tolerations=[Toleration(key="dedicated", operator="Exists")]),
    pod("t3", cpu="500m", gpu=2),
]


@settings(max_examples=60, deadline=None)
@given(ops)
def test_cached_filtering_equals_uncached(operations):
    sched = Scheduler(MemoryCluster())
    fw = sched.frameworks["phalanx-scheduler"]
    cache = sched.cache
    snap = cache.snapshot
    for op in operations:
        kind = op[0]
        if kind == "node":
            _, i, cpu, zone, tainted = op
            cache.add_node(
                node(f"n{i}", cpu=cpu, gpu=cpu % 3, labels={"zone": zone}, taints=[("dedicated", "x", "NoSchedule")] if tainted else None)
            )
        elif kind == "unnode":
            if f"n{op[1]}" in snap.index:
                cache.remove_node(node(f"n{op[1]}"))
        elif kind == "pod":
            _, i, t, k = op
            p = TEMPLATES[t].model_copy(deep=True)
            p.metadata.name = f"p{k}"
            if f"n{i}" in snap.index:
                cache.forget(f"default/p{k}")
                cache.assume(PodInfo(p), f"n{i}")
        elif kind == "unpod":
            cache.forget(f"default/p{op[1]}")
        else:
            info = PodInfo(TEMPLATES[op[1]])
            state = CycleState()
            cached = fw.feasible_rows(state, info, snap, None)
            fresh = snap.valid_rows()
            fresh = fresh[fw.run_filter_plugins(state, info, snap, fresh).feasible]
            assert cached.tolist() == fresh.tolist()
            if fresh.size:
                cached_scores = fw.run_score(state, info, snap, fresh)
                uncached = fw.run_score(CycleState(), info, snap, fresh)
                np.testing.assert_allclose(cached_scores, uncached)
            fit = fw.diagnose(state, info, snap, None, "")
            assert (np.flatnonzero(fit.node_codes[: snap.n] == 0)).tolist() == fresh.tolist()


def test_node_only_plugins_are_not_rerun_where_only_pods_changed():
    """A peer assumed on a node re-runs the usage plugins there, not the NODE_ONLY ones; a
    change to the node object re-runs both."""
    sched = Scheduler(MemoryCluster())
    fw = sched.frameworks["phalanx-scheduler"]
    cache, snap = sched.cache, sched.cache.snapshot
    for i in range(4):
        cache.add_node(node(f"n{i}", cpu=8, gpu=2))
    seen: dict[str, list[int]] = {}
    for p in fw.node_local_filters:
        original = p.filter

        def counting(state, pod, snap, idx, original=original, name=p.NAME):
            seen.setdefault(name, []).extend(idx.tolist())
            return original(state, pod, snap, idx)

        p.filter = counting
    template = TEMPLATES[3]
    assert fw.feasible_rows(CycleState(), PodInfo(template), snap, None).tolist() == [0, 1, 2, 3]
    node_only = {p.NAME for p in fw.node_only_filters}
    usage = {p.NAME for p in fw.usage_filters}
    assert node_only and usage
    seen.clear()
    peer = template.model_copy(deep=True)
    peer.metadata.name = "peer"
    cache.assume(PodInfo(peer), "n1")
    assert fw.feasible_rows(CycleState(), PodInfo(template), snap, None).tolist() == [0, 2, 3]
    assert {name: rows for name, rows in seen.items() if name in node_only} == {}
    assert all(seen[name] == [1] for name in usage)
    seen.clear()
    cache.add_node(node("n2", cpu=8, gpu=2, taints=[("dedicated", "x", "NoSchedule")]))
    assert fw.feasible_rows(CycleState(), PodInfo(template), snap, None).tolist() == [0, 3]
    assert seen["TaintToleration"] == [2]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 2)), min_size=20, max_size=120))
def test_dirty_rows_from_the_bump_log_equal_a_full_version_compare(changes):
    """The signature cache reads changed rows off the snapshot's bump log; the log restarts
    when long (every 4x capacity bumps, often here with capacity 2), and then the entry
    compares every row's version instead. Both must name exactly the rows changed."""
    from phalanx.scheduler.framework.signature_cache import SignatureEntry

    s = Snapshot(capacity=2)
    entry = SignatureEntry(0)
    seen = s.row_version.copy()
    for i, (n, every) in enumerate(changes):
        s.set_node(node(f"n{n}", cpu=1 + i % 4))
        if every == 0:  # read now and then: several bumps (repeats too) between reads
            grown = np.zeros(s.row_version.shape[0], dtype=np.int64)
            grown[: seen.shape[0]] = seen[: grown.shape[0]]
            expected = np.flatnonzero(s.row_version[: s.n] != grown[: s.n]).tolist()
            assert entry.dirty_rows(s).tolist() == expected
            seen = s.row_version.copy()


def test_dirty_rows_across_bump_log_restarts_read_every_bump():
    from phalanx.scheduler.framework.signature_cache import SignatureEntry

    s = Snapshot(capacity=2)
    entry = SignatureEntry(0)
    s.set_node(node("a", cpu=1))
    s.set_node(node("b", cpu=1))
    entry.dirty_rows(s)
    for i in range(100):  # the log (4 x capacity 2) restarts every 8 bumps
        row = s.set_node(node("ab"[i % 2], cpu=2 + i))
        assert entry.dirty_rows(s).tolist() == [row]
        assert entry.dirty_rows(s).tolist() == []


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "remove", "drop-node"]), st.integers(0, 7),
                          st.integers(0, 2), st.sampled_from([-10, 0, 0, 100, 1000])),
                max_size=40))
def test_lowest_priority_is_that_of_the_pods_counted_on_nodes(operations):
    """Preemption skips its walk over every node's pods when no pod has a lower priority:
    the snapshot's answer must follow every add, removal and node removal."""
    snap = Snapshot()
    for i in range(3):
        snap.set_node(node(f"n{i}"))
    for op, k, n, priority in operations:
        if op == "add":
            p = pod(f"p{k}")
            p.spec.priority = priority
            snap.add_pod(PodInfo(p), f"n{n}")
        elif op == "remove":
            snap.remove_pod(f"default/p{k}")
        else:
            snap.remove_node(f"n{n}")
            snap.set_node(node(f"n{n}"))
        counted = [info.priority for pods in snap.pods for info in pods.values()]
        assert snap.lowest_priority() == (min(counted) if counted else None)


def test_a_relabelled_pod_leaves_node_local_results_valid_and_is_logged_for_counts():
    """relabel_pod: the row is logged (spread and inter-pod affinity recount it) but keeps
    its row_version, so the signature cache does not re-evaluate it; a resource change on
    the same row still does."""
    from phalanx.scheduler.framework.signature_cache import SignatureEntry

    s = Snapshot()
    s.set_node(node("a"))
    s.set_node(node("b"))
    s.add_pod(PodInfo(pod("p", labels={"app": "x"})), "b")
    index = s.label_index()  # kept up to date from now on
    entry = SignatureEntry(0)
    entry.dirty_rows(s)
    before, version = s.row_version.copy(), s.version
    relabelled = PodInfo(pod("p", labels={"app": "x", "topology.kubernetes.io/zone": "z"}))
    assert s.relabel_pod(relabelled)
    assert s.rows_bumped_since(version) == [1] and s.version == version + 1
    assert (s.row_version == before).all()
    assert entry.dirty_rows(s).tolist() == []
    assert s.pods[1] == {"default/p": relabelled}
    assert index.by_label[("default", "topology.kubernetes.io/zone", "z")] \
        == {"default/p": (1, relabelled)}
    s.relabel_pod(PodInfo(pod("p", labels={"app": "y"})))
    assert ("default", "app", "x") not in index.by_label
    assert ("default", "topology.kubernetes.io/zone", "z") not in index.by_label
    s.add_pod(PodInfo(pod("q")), "b")
    assert entry.dirty_rows(s).tolist() == [1]
    assert not s.relabel_pod(PodInfo(pod("never-counted")))


def test_the_label_index_kept_across_relabels_equals_one_built_from_scratch():
    import random

    from phalanx.scheduler.affinity import PodLabelIndex

    for seed in range(10):
        rng = random.Random(seed)
        s = Snapshot()
        for n in range(4):
            s.set_node(node(f"n{n}"))
        index = s.label_index()
        names: list[str] = []
        for step in range(80):
            labels = {k: rng.choice("xy") for k in ("app", "tier", "zone") if rng.random() < 0.6}
            if not names or rng.random() < 0.3:
                names.append(f"p{step}")
                s.add_pod(PodInfo(pod(names[-1], labels=labels)), f"n{rng.randrange(4)}")
            elif rng.random() < 0.8:
                assert s.relabel_pod(PodInfo(pod(rng.choice(names), labels=labels)))
            else:
                s.remove_pod(f"default/{names.pop(rng.randrange(len(names)))}")
            fresh = PodLabelIndex()
            for row in range(s.n):
                for info in s.pods[row].values():
                    fresh.add(info, row)
            assert index.by_label == fresh.by_label, (seed, step)
            kept = {ns: pods for ns, pods in index.by_namespace.items() if pods}
            assert kept == fresh.by_namespace, (seed, step)
