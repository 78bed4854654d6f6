"""The end-to-end bench, trace replay and CLI commands at toy sizes (what they report, not
how fast: no timing assertions)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from phalanx.bench.e2e import E2EConfig, run_e2e_bench
from phalanx.bench.replay import ReplayConfig, replay_trace
from phalanx.bench.trace import TraceJob
from phalanx.cli.main import app


def test_e2e_bench_runs_every_pod_and_counts_writes() -> None:
    r = run_e2e_bench(E2EConfig(nodes=8, pods=40, pods_per_pcs=4, schedulers="all"))
    assert r["completed"] and r["final_state"] == {"pods": 40, "bound": 40, "running": 40}
    assert r["podcliquesets"] == 10
    # Every pod: created, gate lifted, bound, started; plus PodGangs, statuses, Events.
    by_kind = r["api_writes_by_kind"]
    assert by_kind["create Pod"] == 40 and by_kind["bind Pod"] == 40
    assert r["api_writes_per_pod"] >= 4
    assert 0 < r["all_pods_bound_seconds"] <= r["all_pods_running_seconds"]
    # The count runs until the API is quiet: the status writes after the last start count.
    assert r["api_writes_per_pod"] > r["api_writes_per_pod_to_running"]


def test_e2e_bench_podgang_status_is_written_once_per_change_it_shows() -> None:
    """Gate-free, pods created at once: per PodGang one operator status write for
    Initialized + BackendSynced, one for Scheduled/Ready, one by the scheduler
    (GangScheduled); no Initialized=False in between (podgang.py)."""
    r = run_e2e_bench(E2EConfig(nodes=8, pods=40, pods_per_pcs=4, pod_scheduling_gate=False))
    assert r["completed"]
    by_kind = r["api_writes_by_kind"]
    assert by_kind["update_status PodGang"] + by_kind["patch_status PodGang"] == (
        3 * r["podcliquesets"])
    # Who wrote them: each component's own connection counts its writes. The scheduler
    # patches its condition onto the PodGang its informer holds (no read first).
    operator, scheduler = (r["api_writes_by_writer"][w] for w in ("operator", "scheduler"))
    assert operator["update_status PodGang"] == 2 * r["podcliquesets"]
    assert scheduler["patch_status PodGang"] == r["podcliquesets"]
    assert scheduler["bind Pod"] == operator["create Pod"] == 40
    assert "patch Pod" not in operator  # gate-free: no gate to lift
    mine = sum(n for call, n in operator.items() if not call.endswith(" Event"))
    assert r["operator_writes_per_pod"] == round(mine / 40, 2)


def test_e2e_bench_counts_each_writer_from_the_window_start() -> None:
    """The operator writes the topology's HyperNodes while it starts, before the first
    PodCliqueSet: no pod's writes, so neither in the store's counts nor in the writers'."""
    r = run_e2e_bench(E2EConfig(nodes=8, pods=16, pods_per_pcs=4, pod_scheduling_gate=False))
    assert r["completed"]
    operator = r["api_writes_by_writer"]["operator"]
    assert not [call for call in operator if "HyperNode" in call or "Topology" in call]
    by_kind = r["api_writes_by_kind"]
    for call, n in operator.items():
        assert n <= by_kind[call], call
    assert operator["create Pod"] == by_kind["create Pod"] == 16


def test_replay_runs_each_job_for_its_duration_and_measures_utilisation() -> None:
    # 2 nodes = 16 GPUs. Two 16-GPU jobs must run one after the other; a 24-GPU job never fits.
    jobs = [TraceJob("a", 0.0, 2, 8, 100.0), TraceJob("b", 10.0, 2, 8, 100.0),
            TraceJob("huge", 0.0, 3, 8, 10.0)]
    r = replay_trace(jobs, ReplayConfig(nodes=2, start_delay=0.0))
    assert r["skipped_never_fit"] == ["huge"]
    assert r["jobs_finished"] == 2
    q = r["queueing_delay_seconds"]
    assert q["p50"] < 1.0 and 85.0 < q["max"] < 95.0  # b waits for a (submitted 10s later)
    assert 195.0 < r["makespan_seconds"] < 205.0
    assert 0.95 < r["gpu_utilisation"] <= 1.0  # the cluster is full all along
    assert r["utilisation_timeline"][1][1] == 1.0


def test_cli_trace_gen_then_trace(tmp_path: Path) -> None:
    runner = CliRunner()
    trace = tmp_path / "t.csv"
    r = runner.invoke(app, ["bench", "trace-gen", str(trace), "--jobs", "12", "--nodes", "2"])
    assert r.exit_code == 0, r.output
    assert "12 jobs" in r.output and trace.exists()
    out = tmp_path / "results"
    r = runner.invoke(app, ["bench", "trace", str(trace), "--nodes", "2", "--out", str(out)])
    assert r.exit_code == 0, r.output
    result = json.loads((out / "trace-t-2n.json").read_text())
    assert result["jobs_finished"] == 12 and "GPU utilisation" in r.output


def test_cli_rejects_bad_input_with_a_message(tmp_path: Path) -> None:
    from phalanx.cli.errors import UserError

    runner = CliRunner()
    bad = tmp_path / "bad.csv"
    bad.write_text("submit_time,gang_size\n0,1\n")
    r = runner.invoke(app, ["bench", "trace", str(bad), "--out", str(tmp_path / "o")])
    assert isinstance(r.exception, UserError) and "missing column(s) gpus_per_pod, duration" in str(r.exception)
    r = runner.invoke(app, ["bench", "e2e", "--schedulers", "slurm", "--out", str(tmp_path / "o")])
    assert isinstance(r.exception, UserError) and "slurm" in str(r.exception)
    assert not (tmp_path / "o").exists()


def test_replay_measures_stranded_gpus_and_waits_per_gang_size() -> None:
    """Two 4-GPU pods on 2 x 8-GPU nodes: bin-packing puts them on one node (no free GPU on a
    partly used node); spreading puts one on each, stranding every free GPU."""
    jobs = [TraceJob("a", 0.0, 1, 4, 100.0), TraceJob("b", 0.0, 1, 4, 100.0)]
    packed = replay_trace(jobs, ReplayConfig(nodes=2, start_delay=0.0))
    spread = replay_trace(jobs, ReplayConfig(nodes=2, start_delay=0.0, scoring="LeastAllocated"))
    assert packed["stranded_free_gpu_share"] < 0.05
    assert spread["stranded_free_gpu_share"] > 0.95
    assert packed["largest_gang_class"] == "1" and packed["queueing_delay_by_gang_size"]["1"]["jobs"] == 2
    assert packed["largest_gang_class_wait_p99_seconds"] < 1.0


def test_replay_measures_the_wait_from_room_freed_to_the_blocked_gang_bound() -> None:
    """2 x 8 GPUs. `a` holds 6 on each node for 100 s; `b` (three 2-GPU pods) arrives at 10 s:
    each of its pods would fit the 2 GPUs left on either node, the gang does not. When `a`
    ends its room frees and `b` must be bound within a scheduling cycle, not at the periodic
    flush of unschedulable pods (300 s after b's first try: 210 s after the room freed)."""
    jobs = [TraceJob("a", 0.0, 2, 6, 100.0), TraceJob("b", 10.0, 3, 2, 50.0)]
    r = replay_trace(jobs, ReplayConfig(nodes=2, start_delay=0.0))
    assert r["jobs_finished"] == 2
    assert r["jobs_blocked_for_room"] == 1  # b; a had its room at submission
    assert r["room_freed_to_bound_seconds"]["max"] < 2.0
    quantiles = ("p50", "p90", "p99", "max")
    assert r["room_freed_to_bound_by_gang_size"] == {
        "2-4": {"jobs": 1, **{k: r["room_freed_to_bound_seconds"][k] for k in quantiles}}}
    assert r["scheduling_cycles"]["attempts"] >= 5  # a's 2 pods, b's 3, b's failed tries
    assert 85.0 < r["queueing_delay_seconds"]["max"] < 95.0  # b: submitted at 10, room at 100


def test_e2e_bench_freezes_the_warmed_up_stack_only_when_tuning_gc(monkeypatch) -> None:
    """As the services after their caches sync: once the stack has settled, before the clock
    starts, what it built is frozen (with --tune-gc only; CPython's settings untouched)."""
    from phalanx.bench import e2e

    frozen: list[int] = []
    monkeypatch.setattr(e2e, "freeze_after_warmup", lambda: frozen.append(1))
    for tune in (True, False):
        frozen.clear()
        r = run_e2e_bench(E2EConfig(nodes=4, pods=8, pods_per_pcs=4, tune_gc=tune))
        assert r["completed"] and frozen == ([1] if tune else [])
