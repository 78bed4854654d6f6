"""The matching-pod counts PodTopologySpread keeps across cycles (spread.MatchCounter): after
any sequence of snapshot changes they equal a count from scratch, including pods that start
terminating (the scheduler cache re-counts those, so their row changes)."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import numpy as np

from phalanx.cluster.selectors import parse_label_selector
from phalanx.scheduler.cache import SchedulerCache
from phalanx.scheduler.framework import PodInfo
from phalanx.scheduler.snapshot import Snapshot
from phalanx.scheduler.spread import MatchCounter, match_per_row

from ..helpers import node, pod

SELECTORS = [
    parse_label_selector({"matchLabels": {"app": "a"}}),
    parse_label_selector({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}),
    parse_label_selector({"matchLabels": {"app": "a", "tier": "x"}}),
]


def _random_pod(rng: random.Random, i: int) -> tuple[str, dict[str, str], str]:
    labels = {"app": rng.choice("ab")}
    if rng.random() < 0.5:
        labels["tier"] = rng.choice("xy")
    return f"p{i}", labels, rng.choice(["default", "other"])


def test_counts_kept_across_changes_equal_counts_from_scratch() -> None:
    """Property test over random pod adds, removals, relabels (moving the pod, or in place)
    and node churn; it failed when the refresh skipped the changed rows (checked by breaking
    MatchCounter on purpose)."""
    for seed in range(20):
        rng = random.Random(seed)
        snap = Snapshot()
        for n in range(6):
            snap.set_node(node(f"n{n}"))
        counter = MatchCounter()
        placed: dict[str, tuple[str, dict[str, str], str]] = {}
        for step in range(120):
            action = rng.random()
            if action < 0.5 or not placed:
                name, labels, ns = _random_pod(rng, step)
                info = PodInfo(pod(name, namespace=ns, labels=labels))
                snap.add_pod(info, f"n{rng.randrange(6)}")
                placed[f"{ns}/{name}"] = (name, labels, ns)
            elif action < 0.75:
                key = rng.choice(sorted(placed))
                del placed[key]
                snap.remove_pod(key)
            elif action < 0.9:
                key = rng.choice(sorted(placed))
                name, labels, ns = placed[key]
                labels = {**labels, "app": rng.choice("ab")}
                placed[key] = (name, labels, ns)
                info = PodInfo(pod(name, namespace=ns, labels=labels))
                if action < 0.82:  # moved (or re-added) with its new labels
                    snap.add_pod(info, f"n{rng.randrange(6)}")
                else:  # relabelled where it is (the API server's zone label on a bind)
                    assert snap.relabel_pod(info)
            else:
                snap.set_node(node(f"n{rng.randrange(6)}", labels={"v": str(step)}))
            for sel in SELECTORS:
                for ns in ("default", "other"):
                    np.testing.assert_array_equal(
                        counter.per_row(snap, sel, ns), match_per_row(snap, sel, ns),
                        err_msg=f"seed {seed} step {step} {sel} {ns}",
                    )


def test_a_pod_that_starts_terminating_stops_counting() -> None:
    cache = SchedulerCache()
    cache.add_node(node("n1"))
    running = pod("web-0", labels={"app": "a"})
    running.spec.node_name = "n1"
    cache.add_or_update_pod(running)
    counter = MatchCounter()
    sel = SELECTORS[0]
    assert counter.per_row(cache.snapshot, sel, "default").tolist() == [1]
    leaving = running.model_copy(deep=True)
    leaving.metadata.deletion_timestamp = datetime(2026, 1, 1, tzinfo=UTC)
    cache.add_or_update_pod(leaving)
    assert counter.per_row(cache.snapshot, sel, "default").tolist() == [0]
    assert cache.snapshot.pod_row("default/web-0") == 0  # still on the node (its room is held)


def test_a_second_look_at_an_unchanged_snapshot_recounts_nothing(monkeypatch) -> None:
    """Each constraint of a pod looks its selector up in the same cycle (kube's default
    hostname and zone constraints share one): the second look returns the first's counts."""
    from phalanx.scheduler import spread

    snap = Snapshot()
    for n in range(3):
        snap.set_node(node(f"n{n}"))
    counter = MatchCounter()
    sel = SELECTORS[0]
    snap.add_pod(PodInfo(pod("a", labels={"app": "a"})), "n1")
    first = counter.per_row(snap, sel, "default").tolist()
    snap.add_pod(PodInfo(pod("b", labels={"app": "a"})), "n2")
    assert counter.per_row(snap, sel, "default").tolist() == [0, 1, 1] and first == [0, 1, 0]

    def no_recount(*_a: object) -> None:
        raise AssertionError("recounted an unchanged snapshot")

    monkeypatch.setattr(spread, "_recount_is_cheaper", no_recount)
    monkeypatch.setattr(spread, "match_per_row", no_recount)
    assert counter.per_row(snap, sel, "default").tolist() == [0, 1, 1]
