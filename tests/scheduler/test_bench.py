"""The benchmark runs the real scheduler end to end and reports what it measured."""

from __future__ import annotations

import json

import pytest

from typer.testing import CliRunner

from phalanx.cli.main import app
from phalanx.scheduler.bench import BenchConfig, make_gangs, run_scheduler_bench
from phalanx.scheduler.bench_wall import thread_schedstat


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


def test_window_wall_time_splits_into_on_cpu_runqueue_wait_and_blocked():
    if thread_schedstat() is None:
        pytest.skip("this kernel has no /proc/thread-self/schedstat")
    r = run_scheduler_bench(BenchConfig(nodes=30, pods=120, gang_min=4, gang_max=8, seed=1))
    span = r["split_seconds"]  # first cycle .. idle: the bind window and a little more
    assert span >= r["schedule_seconds"]
    parts = r["on_cpu_seconds"] + r["runqueue_wait_seconds"] + r["blocked_seconds"]
    # Rounded to ms each; the kernel's counters are of the same thread over the same span.
    assert r["on_cpu_seconds"] > 0 and abs(parts - span) <= 0.005 + 0.01 * span
    assert r["pods_per_second_uncontended"] >= r["pods_per_second"]
    # A pause costs at most its wall time in CPU (the rest is waiting for a CPU).
    assert 0 <= r["gc_cpu_seconds_scheduling"] <= r["gc_seconds_scheduling"] + 0.01


def test_cli_pairs_alternate_spread_and_plain_and_write_the_comparison(tmp_path):
    args = ["bench", "scheduler", "--nodes", "20", "--pods", "40", "--gang-min", "4", "--gang-max", "8",
            "--out", str(tmp_path)]
    res = CliRunner().invoke(app, args + ["--spread", "0.5", "--pairs", "2"])
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "scheduler-20n-40p-spread50-spread-vs-plain.json").read_text())
    assert [p["order"] for p in data["pairs"]] == ["spread first", "plain first"]
    assert data["spread"]["runs"] == ["scheduler-20n-40p-spread50-spread-run1.json",
                                      "scheduler-20n-40p-spread50-spread-run2.json"]
    assert data["spread"]["pods_with_spread"][0] > 0 and data["plain"]["pods_with_spread"] == [0]
    for arm in ("spread", "plain"):
        for name in data[arm]["runs"]:
            assert json.loads((tmp_path / name).read_text())["pods_bound"] == 40
    ratios = [p["pods_per_second_ratio"] for p in data["pairs"]]
    assert data["pods_per_second_ratio"]["all"] == ratios
    assert data["pods_per_second_ratio"]["min"] <= data["pods_per_second_ratio"]["median"] <= max(ratios)
    bad = CliRunner().invoke(app, args + ["--pairs", "2"])
    assert bad.exit_code != 0 and "--spread" in str(bad.exception)


def test_cli_runs_with_the_services_gc_by_default_and_restores_it(tmp_path):
    import gc

    from phalanx.services.gctune import SERVICE_THRESHOLDS

    before = gc.get_threshold()
    args = ["bench", "scheduler", "--nodes", "20", "--pods", "40", "--gang-min", "4",
            "--gang-max", "8", "--out", str(tmp_path)]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "scheduler-20n-40p.json").read_text())
    assert data["config"]["gc_freeze"] is True
    assert data["config"]["gc_thresholds"] == list(SERVICE_THRESHOLDS)
    assert data["pods_bound"] == 40
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    res = CliRunner().invoke(app, [*args, "--no-service-gc"])
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "scheduler-20n-40p-defaultgc.json").read_text())
    assert data["config"]["gc_freeze"] is False and data["config"]["gc_thresholds"] is None


def test_the_services_gc_thresholds_hold_while_the_informers_sync(monkeypatch):
    """As `phalanx scheduler` sets them (collect_rarely) before its informers list."""
    import gc

    from phalanx.scheduler import Scheduler
    from phalanx.services.gctune import SERVICE_THRESHOLDS

    seen = []
    start = Scheduler.start

    async def recording_start(self, *args, **kwargs):
        seen.append(gc.get_threshold())
        return await start(self, *args, **kwargs)

    monkeypatch.setattr(Scheduler, "start", recording_start)
    before = gc.get_threshold()
    cfg = BenchConfig(nodes=20, pods=40, gang_min=4, gang_max=8, gc_freeze=True,
                      gc_thresholds=SERVICE_THRESHOLDS)
    assert run_scheduler_bench(cfg)["pods_bound"] == 40
    assert seen == [SERVICE_THRESHOLDS]
    assert gc.get_threshold() == before


def test_cpu_profile_script_samples_the_scheduling_window(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "bench" / "cpu_profile_scheduler.py"
    out = tmp_path / "profile.json"
    subprocess.run([sys.executable, str(script), "--nodes", "40", "--pods", "400", "--interval", "0.001",
                    "--out", str(out)], check=True, capture_output=True, timeout=300)
    data = json.loads(out.read_text())
    assert data["result"]["pods_bound"] == 400 and data["samples"] > 0
    # The collector as `phalanx bench scheduler` runs it by default (the services' settings).
    from phalanx.services.gctune import SERVICE_THRESHOLDS

    config = data["result"]["config"]
    assert config["gc_freeze"] and tuple(config["gc_thresholds"]) == SERVICE_THRESHOLDS
    cumulative = dict(data["cumulative"])
    # Every sample is charged to the function running and to each one on its stack.
    assert cumulative.get("phalanx/scheduler/cycle.py:schedule_one", 0) > 0
    assert sum(count for _, count in data["self"]) <= data["samples"]
