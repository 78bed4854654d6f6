"""Numbers of one run (phase.summarize), the ratio (runner.ratios) and the table (report)."""

import io
from types import SimpleNamespace

import pytest

from phalanx.bench.kube import report
from phalanx.bench.kube.apimetrics import RequestKey
from phalanx.bench.kube.config import KubeBenchConfig
from phalanx.bench.kube.phase import Window, summarize
from phalanx.bench.kube.runner import ratio_summary, ratios
from phalanx.bench.kube.writes import Write
from phalanx.bench.kube.workload import gangs

CFG = KubeBenchConfig(nodes=4, gang_pods=16, gang_min=8, gang_max=8)


def _run(scheduler, bind_times, t0=100.0, writes_end=None, status=(), cpu_around=()):
    built = gangs(CFG, scheduler, "ns", "run")
    pods = [p for g in built for p in g.pods]
    observer = SimpleNamespace(
        bound={p.name: t for p, t in zip(pods, bind_times, strict=True)},
        node_of={p.name: f"node-{i % 4}" for i, p in enumerate(pods)})
    w = Window(t0=t0, first_bind=min(bind_times), last_bind=max(bind_times), quiet=t0 + 20,
               cpu_at_last_bind=1.5, cpu_at_quiet=1.6, requests={
                   RequestKey("POST", "", "pods", "binding", "201"): 16,
                   RequestKey("POST", "events.k8s.io", "events", "", "201"): 16,
                   RequestKey("POST", "", "pods", "binding", "409"): 2})
    w.t0_wall = 1_000.0
    w.cpu_around = list(cpu_around)
    if writes_end is not None:  # one Event write ending `writes_end` s after t0
        at = w.t0_wall + writes_end
        w.writes = [Write("create", "create events", 201, at - 0.01, at)]
    w.writes = [*w.writes, *status]
    return summarize(CFG, scheduler, "gangs", pods, built, observer, w, background_rps=0.5)


def test_a_run_in_numbers():
    # Gang 0 bound from t0+1 to t0+2, gang 1 from t0+3 to t0+5.
    times = [101 + i / 7 for i in range(8)] + [103 + 2 * i / 7 for i in range(8)]
    r = _run("kube-scheduler", times)
    assert r["pods"] == r["pods_bound"] == 16 and r["gangs"] == r["gangs_bound"] == 2
    assert r["first_bind_seconds"] == 1.0 and r["all_bound_seconds"] == 5.0
    assert r["pods_per_second"] == 3.75  # 15 intervals in 4 s
    assert r["pods_per_second_from_start"] == 3.2
    assert r["cpu_ms_per_pod"] == 100.0
    assert r["api_requests"] == 34 and r["api_requests_per_pod"] == 2.125
    assert r["api_errors"] == {"409 POST pods/binding": 2}
    assert r["nodes_used"] == 4 and r["max_pods_per_node"] == 4
    # Time-to-bound of each gang from t0 (its pods all existed before): 2 s and 5 s.
    assert r["gang_time_to_bound_seconds"] == {"p50": 2.0, "p90": 5.0, "p99": 5.0, "max": 5.0}
    assert r["background_requests_estimate"] == 10.0


def test_ratio_is_phalanx_over_kube_and_the_table_shows_it():
    kube = _run("kube-scheduler", [101 + i / 15 * 4 for i in range(16)])
    ours = _run("phalanx-scheduler", [101 + i / 15 * 2 for i in range(16)])
    result = {"config": {"nodes": 4}, "runs": [kube, ours]}
    result["ratio_phalanx_over_kube"] = r = ratios(result["runs"])
    assert r["gangs"]["pods_per_second"] == 2.0
    assert r["gangs"]["cpu_ms_per_pod"] == 1.0
    assert r["gangs"]["gang_p99"] == 0.6  # 3 s / 5 s
    table = report.markdown_table(result)
    lines = table.splitlines()
    assert lines[0].startswith("| workload | scheduler | pair | pods | pods/s to done | "
                               "pods/s (binds)")
    assert len(lines) == 2 + 3
    # Both finish their (no) writes at their last bind: to-done and binds-only agree here.
    assert lines[-1].startswith("| gangs | ratio phalanx/kube |  |  | 1.67x | 2.00x |")


def test_no_ratio_without_both_schedulers():
    assert ratios([_run("kube-scheduler", [101 + i for i in range(16)])]) == {}


def test_the_headline_waits_for_the_writes_that_trail_the_binds():
    times = [101 + i / 15 * 4 for i in range(16)]  # all bound 5 s after t0
    r = _run("phalanx-scheduler", times, writes_end=8.0)
    assert r["all_bound_seconds"] == 5.0 and r["done_seconds"] == 8.0
    assert r["pods_per_second_to_done"] == 2.0  # 16 pods in 8 s
    assert r["own_writes"]["writes_trail_last_bind_seconds"] == 3.0
    assert r["own_writes"]["writes_after_last_bind"] == 1
    early = _run("phalanx-scheduler", times, writes_end=4.0)  # writes done before the binds
    assert early["done_seconds"] == 5.0


def test_the_run_cpu_is_the_scheduler_plus_the_control_plane():
    # CPU seconds at t0 and at quiet; the scheduler's own is cpu_at_quiet (1.6 s).
    around = [{"machine": 50.0, "bench": 1.0, "kube-apiserver": 10.0, "etcd": 2.0},
              {"machine": 58.0, "bench": 1.2, "kube-apiserver": 13.2, "etcd": 2.8}]
    r = _run("kube-scheduler", [101 + i / 15 * 4 for i in range(16)], cpu_around=around)
    assert r["apiserver_cpu_ms_per_pod"] == 200.0  # 3.2 s over 16 pods
    assert r["run_cpu_ms_per_pod"] == 350.0  # (1.6 + 3.2 + 0.8) s over 16 pods
    assert r["control_plane_cpu_seconds"] == {"kube-apiserver": 3.2, "etcd": 0.8}
    ours = _run("phalanx-scheduler", [101 + i / 15 * 2 for i in range(16)], cpu_around=around)
    assert ratios([r, ours])["gangs"]["run_cpu_ms_per_pod"] == 1.0
    assert "run CPU ms/pod" in report.headers()
    assert "run_cpu_ms_per_pod" not in _run("kube-scheduler", [101 + i for i in range(16)])


@pytest.mark.parametrize("width", [100, 240])
def test_the_terminal_gets_two_tables_whose_labels_are_never_cut(width):
    from rich.console import Console

    kube = _run("kube-scheduler", [101 + i / 15 * 4 for i in range(16)])
    ours = _run("phalanx-scheduler", [101 + i / 15 * 2 for i in range(16)])
    result = {"config": {"nodes": 4}, "runs": [kube, ours]}
    result["ratio_phalanx_over_kube"] = ratio_summary([ratios(result["runs"])])
    console = Console(width=width, record=True, file=io.StringIO())
    for table in report.rich_tables(result):
        console.print(table)
    text = console.export_text()
    assert text.count("4 nodes, one kube-apiserver") == 2  # times, costs
    assert "ratio phalanx/kube" in text and "phalanx-scheduler" in text
    assert max(len(line) for line in text.splitlines()) <= width


def test_placement_spread_counts_nodes_by_their_pods():
    r = _run("kube-scheduler", [101 + i for i in range(16)])
    assert r["nodes_by_pods_per_node"] == {"4": 4}  # 16 pods round-robin on 4 nodes


def test_ratios_per_pair_summarized_as_median_and_range():
    pairs = []
    for speed in (2, 3, 6):  # phalanx binds 2x, 3x, 6x as fast in three pairs
        kube = _run("kube-scheduler", [101 + i / 15 * 6 for i in range(16)])
        ours = _run("phalanx-scheduler", [101 + i / 15 * 6 / speed for i in range(16)])
        pairs.append(ratios([ours, kube]))
    s = ratio_summary(pairs)
    assert s["gangs"]["pods_per_second"] == {"pairs": [2.0, 3.0, 6.0], "median": 3.0,
                                             "min": 2.0, "max": 6.0}
    result = {"config": {"nodes": 4}, "runs": [],
              "ratio_phalanx_over_kube_by_pair": [{}, {}, {}], "ratio_phalanx_over_kube": s}
    (row,) = report.rows(result)
    assert row[:3] == ["gangs", "ratio phalanx/kube", "median"]
    assert row[5] == "3.00x (2.00-6.00)"


def test_gang_status_lag_is_its_last_status_write_after_its_last_bind():
    # Gang 0 bound by t0+2, gang 1 by t0+5 (both kinds of gang object: PodGang, PodGroup).
    times = [101 + i / 7 for i in range(8)] + [103 + 2 * i / 7 for i in range(8)]
    for scheduler, call in (("phalanx-scheduler", "patch scheduler.grove.io/podgangs/status"),
                            ("kube-scheduler", "patch scheduling.k8s.io/podgroups/status")):
        built = gangs(CFG, scheduler, "ns", "run")
        names = [o.name for o in built[0].objects][-1], [o.name for o in built[1].objects][-1]
        r = _run(scheduler, times)
        assert r["gangs_with_status_written"] == 0  # no status writes: no lag measured
        t0_wall = 1_000.0
        status = [Write("patch", call, 200, t0_wall + 2.1, t0_wall + 2.25, names[0]),
                  Write("patch", call, 200, t0_wall + 4.0, t0_wall + 4.5, names[1]),  # early
                  Write("patch", call, 200, t0_wall + 5.5, t0_wall + 6.0, names[1]),
                  Write("patch", call, 409, t0_wall + 9.0, t0_wall + 9.5, names[1]),  # refused
                  Write("create", "create events", 201, t0_wall + 9, t0_wall + 9.9, names[0])]
        r = _run(scheduler, times, status=status)
        assert r["gangs_with_status_written"] == 2
        assert r["gang_status_after_last_bind_seconds"]["max"] == 1.0  # gang 1: 6.0 - 5.0
        assert r["gang_status_after_last_bind_seconds"]["p50"] == 0.25  # gang 0: 2.25 - 2.0
