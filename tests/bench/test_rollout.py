"""`phalanx bench rollout` (issue 23) on a small PodCliqueSet: the roll finishes, every pod
is replaced exactly once, and the writes are counted from the image change on."""

from __future__ import annotations

import pytest

from phalanx.bench.rollout import PODS_PER_REPLICA, RolloutConfig, run_rollout_bench, summarize


def test_a_small_rollout_replaces_every_pod_once_and_counts_its_writes() -> None:
    r = run_rollout_bench(RolloutConfig(replicas=2))
    pods = 2 * PODS_PER_REPLICA
    assert (r["pods"], r["pods_replaced"], r["pods_after"]) == (pods, pods, pods)
    # One new pod per pod replaced, none twice.
    assert r["api_writes_by_kind"]["create Pod"] == pods
    assert r["api_writes"] == sum(r["api_writes_by_kind"].values())
    assert r["api_writes_per_pod"] == round(r["api_writes"] / pods, 2)
    s = summarize([r, {**r, "wall_seconds": r["wall_seconds"] + 2}])
    assert s["wall_seconds"]["max"] - s["wall_seconds"]["min"] == pytest.approx(2)
    assert len(s["runs"]) == 2
