"""The benchmark runs the real scheduler end to end and reports what it measured."""

from __future__ import annotations

import json

import pytest

from typer.testing import CliRunner

from phalanx.cli.main import app
from phalanx.scheduler.bench import BenchConfig, make_gangs, run_scheduler_bench


def test_workload_has_the_requested_gang_sizes():
    gangs = make_gangs(1000, 8, 64, seed=1)
    sizes = [len(m) for _, m in gangs]
    assert sum(sizes) == 1000
    assert all(8 <= s <= 64 for s in sizes[:-1])
    for gang, members in gangs:
        assert gang.spec.pod_groups[0].min_replicas == len(members)


def test_small_bench_binds_every_gang_completely():
    r = run_scheduler_bench(BenchConfig(nodes=60, pods=300, gang_min=8, gang_max=16, seed=3))
    assert r["pods_bound"] == 300 and r["gangs_scheduled"] == r["gangs"]
    assert r["scheduled"] == 300 and r["bind_failures"] == 0
    assert r["pods_per_second"] > 0
    tts = r["gang_time_to_schedule_seconds"]
    assert 0 < tts["p50"] <= tts["p99"] <= tts["max"]
    assert "Coscheduling" in r["plugins"]["permit"]


def test_cli_writes_json(tmp_path):
    res = CliRunner().invoke(
        app, ["bench", "scheduler", "--nodes", "20", "--pods", "40", "--gang-min", "4", "--gang-max", "8", "--out", str(tmp_path)]
    )
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "scheduler-20n-40p.json").read_text())
    assert data["pods_bound"] == 40 and "pods/s" in res.output
    bad = CliRunner().invoke(app, ["bench", "scheduler", "--scaling", "10,x", "--out", str(tmp_path)])
    assert bad.exit_code != 0


def test_spread_fraction_marks_about_that_share_of_gangs_and_keeps_the_workload():
    plain = make_gangs(3000, 8, 64, seed=2)
    spread = make_gangs(3000, 8, 64, seed=2, spread_fraction=1 / 3)
    # Same gangs (sizes, requests) with and without spread: only the constraints differ.
    assert [len(m) for _, m in plain] == [len(m) for _, m in spread]
    assert [m[0].spec.containers[0].resources for _, m in plain] == \
        [m[0].spec.containers[0].resources for _, m in spread]
    assert all(m[0].spec.topology_spread_constraints is None for _, m in plain)
    with_spread = [(g, m) for g, m in spread if m[0].spec.topology_spread_constraints]
    assert 0.2 < len(with_spread) / len(spread) < 0.47
    hostname = 0
    for gang, members in with_spread:
        zone, *rest = members[0].spec.topology_spread_constraints
        assert zone == {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {"matchLabels": {"grove.io/podgang": gang.name}}}
        if rest:
            assert rest[0]["topologyKey"] == "kubernetes.io/hostname"
            assert rest[0]["whenUnsatisfiable"] == "ScheduleAnyway"
            hostname += 1
    assert 0 < hostname < len(with_spread)


def test_spread_fraction_out_of_range_is_refused():
    with pytest.raises(ValueError, match="spread_fraction"):
        make_gangs(10, 2, 4, seed=0, spread_fraction=1.5)


def test_spread_bench_binds_every_gang_within_max_skew():
    # 3 zones of 20 nodes; every gang spread over zones with maxSkew 1.
    r = run_scheduler_bench(BenchConfig(nodes=60, pods=300, gang_min=8, gang_max=16, seed=3,
                                        spread_fraction=1.0, nodes_per_zone=20))
    assert r["pods_with_spread"] == 300
    assert r["pods_bound"] == 300 and r["gangs_scheduled"] == r["gangs"]
    assert r["spread_max_zone_skew"] <= 1
    assert "PodTopologySpread" in r["plugins"]["filter"]


def test_cli_spread_option_names_the_file(tmp_path):
    res = CliRunner().invoke(app, ["bench", "scheduler", "--nodes", "20", "--pods", "40", "--gang-min", "4",
                                   "--gang-max", "8", "--spread", "0.5", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "scheduler-20n-40p-spread50.json").read_text())
    assert data["config"]["spread_fraction"] == 0.5 and "with spread" in res.output
    bad = CliRunner().invoke(app, ["bench", "scheduler", "--spread", "2", "--out", str(tmp_path)])
    assert bad.exit_code != 0
