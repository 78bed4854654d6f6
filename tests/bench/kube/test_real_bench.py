"""`phalanx bench kube` on a real kube-apiserver, small: 20 nodes, 40 plain pods, 40 gang pods.

The command starts its own control plane (it must start and stop kube-scheduler), so this
test does not use the shared one; it is in the real tier (marker, timeout) all the same. Its
timeout is what the command itself may take: each of its 4 phases is bounded (binding by
`--phase-timeout`, the quiet period after it by QUIET_MAX), and so is the control plane's
start; a fixed 120 s was what a quiet machine needs (98 s at load 6.5).
"""

import json

import pytest
from typer.testing import CliRunner

from phalanx.bench.kube.phase import QUIET_MAX
from phalanx.cli.main import app
from phalanx.envtest import ControlPlaneOptions

PHASES = 4  # kube-scheduler and phalanx-scheduler, plain pods and gangs
PHASE_TIMEOUT = 40.0  # seconds to bind one workload
# Per phase: creating 40-60 objects and starting/stopping a scheduler, 30 s at most.
TIMEOUT = ControlPlaneOptions().start_timeout + PHASES * (PHASE_TIMEOUT + QUIET_MAX + 30)


@pytest.mark.real_cluster
@pytest.mark.timeout(TIMEOUT)
def test_bench_kube_binds_everything_with_both_schedulers_and_stops_all(tmp_path):
    from phalanx.envtest import BinariesNotFound, find_binaries, live_processes

    try:
        if find_binaries().kube_scheduler is None:
            pytest.skip("no kube-scheduler binary")
    except BinariesNotFound as err:
        pytest.skip(str(err))
    before = {p.pid for p in live_processes()}
    out = CliRunner().invoke(app, [
        "bench", "kube", "--nodes", "20", "--plain-pods", "40", "--gang-pods", "40",
        "--gang-min", "8", "--gang-max", "16", "--background", "1s", "--pairs", "1",
        "--phase-timeout", f"{PHASE_TIMEOUT:g}s",
        "--out", str(tmp_path)])
    assert out.exit_code == 0, out.output
    (path,) = tmp_path.glob("kube-20n-40p-40g-*.json")
    result = json.loads(path.read_text())
    runs = {(r["scheduler"], r["workload"]): r for r in result["runs"]}
    assert set(runs) == {(s, w) for s in ("kube-scheduler", "phalanx-scheduler")
                         for w in ("plain", "gangs")}
    for (scheduler, workload), r in runs.items():
        assert r["pods_bound"] == r["pods"] == 40, (scheduler, workload)
        assert r["max_pods_per_node"] <= 8  # 8 GPUs a node, 1 GPU a pod
        # Each bind is one POST pods/binding seen by the API server's own counters.
        assert r["api_requests_by_call"].get("POST pods/binding", 0) >= 40
        assert r["cpu_seconds"] > 0 and r["pods_per_second"] > 0
        # The audit log tells this scheduler's own writes: a bind and an Event per pod.
        own = r["own_writes"]["writes_by_call"]
        assert own.get("create pods/binding") == 40, (scheduler, workload, own)
        assert own.get("create events.k8s.io/events", 0) >= 40, (scheduler, workload, own)
        assert r["done_seconds"] >= r["all_bound_seconds"] > 0
        assert r["done_seconds"] == max(r["all_bound_seconds"],
                                        r["own_writes"]["last_write_seconds"])
        assert sum(int(k) * v for k, v in r["nodes_by_pods_per_node"].items()) == 40
        # What the machine did meanwhile: the API server served every bind, so it used CPU.
        assert r["control_plane_cpu_seconds"]["kube-apiserver"] > 0, (scheduler, workload)
        assert r["apiserver_cpu_ms_per_pod"] > 0
        assert 0 < r["machine_busy_fraction"] <= 1.05  # /proc/stat ticks: a little jitter
        assert r["machine_busy_cpu_seconds"] >= r["control_plane_cpu_seconds"]["kube-apiserver"]
        if workload == "gangs":
            assert r["gangs_bound"] == r["gangs"] == 3
            assert 0 < r["gang_time_to_bound_seconds"]["p50"] <= r["all_bound_seconds"]
            if scheduler == "phalanx-scheduler":  # GangScheduled on each PodGang
                assert r["gangs_with_status_written"] == 3
    assert runs["kube-scheduler", "plain"]["configz_client_connection"]["qps"] == 5000
    assert set(result["ratio_phalanx_over_kube"]) == {"plain", "gangs"}
    assert result["ratio_phalanx_over_kube"]["plain"]["pods_per_second_to_done"]["median"] > 0
    assert result["versions"]["kube-apiserver"].startswith("v1.")
    assert "ratio phalanx/kube" in out.output
    assert {p.pid for p in live_processes()} <= before  # everything it started is stopped
