"""Trace CSV parsing and the synthetic generator."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.bench.trace import TraceError, TraceJob, load_trace, parse_trace
from phalanx.bench.tracegen import TraceGenConfig, generate, to_csv
from phalanx.bench.workload import GPUS_PER_NODE

SAMPLE = Path(__file__).resolve().parents[2] / "bench" / "traces" / "sample.csv"


def test_rows_in_any_column_order_are_sorted_by_submit_time() -> None:
    jobs = parse_trace("duration,gang_size,submit_time,gpus_per_pod,job_id,extra\n"
                       "60,2,30.5,8,b,x\n10,1,0,0,a,y\n")
    assert [(j.job_id, j.submit_time, j.gang_size, j.gpus_per_pod, j.duration) for j in jobs] == [
        ("a", 0.0, 1, 0, 10.0), ("b", 30.5, 2, 8, 60.0)]


def test_rows_without_an_id_are_numbered() -> None:
    jobs = parse_trace("submit_time,gang_size,gpus_per_pod,duration\n5,1,1,1\n0,2,1,1\n")
    assert [j.job_id for j in jobs] == ["job-00001", "job-00000"]


@pytest.mark.parametrize(("text", "message"), [
    ("a,b\n1,2\n", "line 1: missing column(s) submit_time, gang_size, gpus_per_pod, duration"),
    ("submit_time,gang_size,gpus_per_pod,duration\n", "has no jobs"),
    ("submit_time,gang_size,gpus_per_pod,duration\n0,two,1,5\n", "line 2: gang_size: expected an integer, got 'two'"),
    ("submit_time,gang_size,gpus_per_pod,duration\n0,0,1,5\n", "line 2: gang_size: 0 is out of range"),
    ("submit_time,gang_size,gpus_per_pod,duration\nnan,1,1,5\n", "line 2: submit_time: nan is out of range"),
    ("submit_time,gang_size,gpus_per_pod,duration\n0,1,1,\n", "line 2: duration is empty"),
    ("submit_time,gang_size,gpus_per_pod,duration\n0,1,1,5,9\n", "line 2: more values than columns"),
    ("job_id,submit_time,gang_size,gpus_per_pod,duration\nA,0,1,1,5\na,1,1,1,5\n",
     "line 3: job 'a' has the same name as the job on line 2"),
])
def test_bad_rows_name_the_line_and_the_column(text: str, message: str) -> None:
    with pytest.raises(TraceError) as err:
        parse_trace(text, "t.csv")
    assert message in str(err.value)
    assert str(err.value).startswith("t.csv")


def test_missing_file_is_a_trace_error(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no such file"):
        load_trace(tmp_path / "nope.csv")


def test_job_names_become_valid_podcliqueset_names() -> None:
    job = TraceJob("Job_7/Retry#2", 0, 1, 1, 1)
    assert job.pcs_name() == "job-7-retry-2"
    assert TraceJob("42", 0, 1, 1, 1).pcs_name() == "job-42"


def test_generator_is_seeded_sized_for_the_cluster_and_round_trips() -> None:
    cfg = TraceGenConfig(jobs=300, nodes=4, load=0.8, seed=3)
    jobs = generate(cfg)
    assert jobs == generate(cfg) and jobs != generate(TraceGenConfig(jobs=300, nodes=4, seed=4))
    assert all(j.gpus <= 4 * GPUS_PER_NODE and j.gpus_per_pod <= GPUS_PER_NODE for j in jobs)
    assert [j.submit_time for j in jobs] == sorted(j.submit_time for j in jobs)
    # Offered load: demanded GPU-seconds over the arrival span, per GPU (Poisson noise aside).
    span = jobs[-1].submit_time
    offered = sum(j.gpus * j.duration for j in jobs) / (span * 4 * GPUS_PER_NODE)
    assert 0.5 < offered < 1.3
    assert parse_trace(to_csv(jobs)) == jobs


def test_max_gang_gpus_caps_every_gang_and_leaves_the_default_trace_alone() -> None:
    base = TraceGenConfig(jobs=400, nodes=32, load=1.1, seed=7, queues=3)
    full = generate(base)
    capped = generate(TraceGenConfig(jobs=400, nodes=32, load=1.1, seed=7, queues=3,
                                     max_gang_gpus=64))
    assert max(j.gpus for j in full) > 64  # the cap has something to do
    assert max(j.gpus for j in capped) == 64 and min(j.gpus for j in capped) >= 1
    assert generate(TraceGenConfig(jobs=400, nodes=32, load=1.1, seed=7, queues=3,
                                   max_gang_gpus=10_000)) == full
    with pytest.raises(ValueError, match="max_gang_gpus must be at least 1"):
        generate(TraceGenConfig(max_gang_gpus=0))


def test_shipped_sample_parses() -> None:
    jobs = load_trace(SAMPLE)
    assert len(jobs) == 300
