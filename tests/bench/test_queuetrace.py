"""The multi-tenant trace bench (phalanx/bench/queuetrace.py): the trace's `queue` column, the
Queue file's errors, the fair-share reference and the per-queue metrics on a hand-made
history, and one small side-by-side run."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.bench.queuetrace import (
    QueueFileError,
    Sample,
    fair_shares,
    load_queue_file,
    queue_metrics,
    run_one,
)
from phalanx.bench.replay import ReplayConfig
from phalanx.bench.trace import TraceError, parse_trace
from phalanx.bench.tracegen import TraceGenConfig, generate, queue_documents, to_csv, write_queues
from phalanx.api.queue import Queue


def test_the_queue_column_round_trips_and_bad_names_are_refused() -> None:
    jobs = generate(TraceGenConfig(jobs=30, nodes=4, seed=3, queues=3))
    assert {j.queue for j in jobs} == {"team-a", "team-b", "team-c"}
    assert parse_trace(to_csv(jobs)) == jobs
    with pytest.raises(TraceError, match=r"line 2: queue: 'Team A' is not a valid Queue name"):
        parse_trace("submit_time,gang_size,gpus_per_pod,duration,queue\n0,1,1,10,Team A\n")


def test_queue_file_errors_name_the_file_the_queue_and_the_field(tmp_path: Path) -> None:
    cfg = TraceGenConfig(jobs=20, nodes=4, seed=1, queues=2)
    jobs = generate(cfg)
    good = tmp_path / "q.yaml"
    write_queues(queue_documents(cfg), good)
    assert [d["metadata"]["name"] for d in load_queue_file(good, jobs)] == ["team-a", "team-b"]
    bad = tmp_path / "bad.yaml"
    bad.write_text(good.read_text().replace("quota: 21", "quota: -5", 1))
    with pytest.raises(QueueFileError, match=r"Queue team-a: .*spec.resources.gpu.quota"):
        load_queue_file(bad, jobs)
    short = tmp_path / "short.yaml"
    short.write_text(good.read_text().split("---")[0])
    with pytest.raises(QueueFileError, match="names queue\\(s\\) team-b, which the file"):
        load_queue_file(short, jobs)


def test_fair_share_divides_by_quota_then_weight() -> None:
    cfg = TraceGenConfig(jobs=1, nodes=4, queues=2)  # 32 GPUs: quotas 21 and 10
    objects = {d["metadata"]["name"]: Queue.model_validate(d) for d in queue_documents(cfg)}
    assert fair_shares(objects, {"team-a": 40.0, "team-b": 0.0}, 32) == {
        "team-a": 32.0, "team-b": 0.0}
    # The 1 GPU left over is split by weight (0.5 each), rounded down to whole GPUs, and the
    # remainder goes to one queue (equal remainders: by name), as KAI divides it.
    assert fair_shares(objects, {"team-a": 40.0, "team-b": 40.0}, 32) == {
        "team-a": 22.0, "team-b": 10.0}


def test_metrics_count_only_waiting_time_and_fitting_jobs() -> None:
    """Queue a: 0-100 s holds 2 of a fair share of 8, waiting, a 4-GPU job waits (fits);
    100-200 s holds 8 (not under); 200-300 s holds 0, asks nothing (not waiting)."""
    samples = [Sample(0.0, (2.0,), (6.0,), (8.0,), (4.0,)),
               Sample(100.0, (8.0,), (8.0,), (8.0,), (0.0,)),
               Sample(200.0, (0.0,), (0.0,), (0.0,), (0.0,))]
    m = queue_metrics(samples, ["a"], 16.0, 300.0)["a"]
    assert m["waiting_hours"] == round(100 / 3600, 2)
    assert m["time_over_10pct_under"] == 1.0
    assert m["time_over_10pct_under_job_fits"] == 1.0
    assert m["largest_shortfall"] == round(6 / 16, 4)
    assert m["mean_share"] == round((2 * 100 + 8 * 100) / (16 * 300), 4)
    too_big = [Sample(0.0, (2.0,), (20.0,), (8.0,), (18.0,))]
    m = queue_metrics(too_big, ["a"], 16.0, 100.0)["a"]
    assert (m["time_over_10pct_under"], m["time_over_10pct_under_job_fits"]) == (1.0, 0.0)


def test_a_small_trace_runs_with_and_without_queues() -> None:
    cfg = TraceGenConfig(jobs=12, nodes=4, load=1.0, seed=2, queues=2)
    jobs, docs = generate(cfg), queue_documents(cfg)
    with_q = run_one(jobs, ReplayConfig(nodes=4), docs, True)
    without = run_one(jobs, ReplayConfig(nodes=4), docs, False)
    for r in (with_q, without):
        assert r["jobs_finished"] == len(jobs)
        assert set(r["queues"]) == {"team-a", "team-b"}
    assert without["reclaim_evicted_pods"] == 0
