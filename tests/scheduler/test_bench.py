"""The benchmark runs the real scheduler end to end and reports what it measured."""

from __future__ import annotations

import json

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
