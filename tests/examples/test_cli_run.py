"""The full stack through the CLI: examples are documented, impossible gangs are reported
pending with the reason (a non-zero exit only with --fail-on-pending), and a real run's
report renders in a real browser."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from report.browser import dump_dom, screenshot
from .helpers import EXAMPLES, examples_tmp, run_example


def test_every_example_is_documented() -> None:
    readme = (EXAMPLES / "README.md").read_text()
    for f in sorted(EXAMPLES.glob("*.yaml")):
        assert f"`{f.name}`" in readme, f"{f.name} is not in examples/README.md"


NEVER_FITS = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: huge}
spec:
  replicas: 1
  template:
    topologyConstraint: {topologyName: phalanx-topology, pack: {required: rack}}
    cliques:
    - name: w
      spec:
        roleName: w
        replicas: 9
        podSpec:
          schedulerName: phalanx-scheduler
          containers:
          - name: c
            image: x
            resources: {limits: {nvidia.com/gpu: "8"}}
"""


WHY = ("can never be scheduled on cluster default-64xh100: it needs 9 pods of 8 nvidia.com/gpu "
       "in one rack (required pack constraint); the largest rack (8 nodes) holds at most 8")


def test_a_gang_that_can_never_fit_stays_pending_with_the_reason(tmp_path: Path) -> None:
    """As on a cluster (Grove's TAS13): the gang stays Pending, the run goes on and ends 0,
    and the gang is listed under pending with why; --fail-on-pending makes that exit 4."""
    from phalanx.sim.record import load_record

    (tmp_path / "huge.yaml").write_text(NEVER_FITS)
    r = subprocess.run(
        [sys.executable, "-m", "phalanx.cli.main", "run", "huge.yaml", "--report", "r.html",
         "--save", "run.json"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = " ".join(r.stdout.split())
    assert "Pending gangs" in out and "huge-0 (waiting" in out and WHY in out
    rec = load_record(tmp_path / "run.json")
    assert rec.meta.settled and rec.gang("huge-0").phase == "Pending"
    assert rec.gang("huge-0").explanation.startswith(WHY)
    assert any(e.reason == "FailedScheduling" and e.type == "Warning" for e in rec.events)
    assert (tmp_path / "r.html").exists()

    r = subprocess.run(
        [sys.executable, "-m", "phalanx.cli.main", "run", "huge.yaml", "--no-save",
         "--fail-on-pending"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 4  # ExitCode.PENDING: not 3, which is an admission rejection
    err = " ".join(r.stderr.split())
    assert "error: 1 PodGang(s) still pending at the end of the run (--fail-on-pending): " \
           "huge-0 (" + WHY in err


def test_a_real_runs_report_renders_in_headless_chromium(tmp_path_factory, tmp_path: Path) -> None:
    _, rec, out = run_example("preemption", examples_tmp(tmp_path_factory))
    page = out / "report.html"
    dom = dump_dom(page, tmp_path / "profile")
    # utilisation, lifecycle, placement before the preemption and at the end, wait times
    assert dom.count("<svg") == 5 and dom.count("<path") > 100
    for gang in ("batch-0", "urgent-0"):
        assert gang in dom
    shot = screenshot(page, tmp_path / "report.png", tmp_path / "profile")
    assert shot.stat().st_size > 60_000


NO_SCHEDULER_NAME = """
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: test}
spec:
  resources:
    gpu: {quota: -1, limit: -1, overQuotaWeight: 1}
    cpu: {quota: -1, limit: -1, overQuotaWeight: 1}
    memory: {quota: -1, limit: -1, overQuotaWeight: 1}
---
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: plain}
spec:
  replicas: 1
  template:
    cliques:
    - name: w
      labels: {kai.scheduler/queue: test}
      spec:
        roleName: w
        replicas: 2
        podSpec:
          containers:
          - name: c
            image: x
            resources: {requests: {nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}
"""

KAI_ONLY = """
apiVersion: operator.config.grove.io/v1alpha1
kind: OperatorConfiguration
scheduler:
  defaultProfileName: kai-scheduler
  profiles:
  - name: kai-scheduler
"""


def test_run_config_default_profile_applies_to_pods_naming_no_scheduler(tmp_path: Path) -> None:
    """`phalanx run --config` with `defaultProfileName: kai-scheduler` (the only profile): a
    PodCliqueSet naming no schedulerName is KAI's -- KAI PodGroup written, pods on KAI."""
    from phalanx.sim.record import load_record

    (tmp_path / "w.yaml").write_text(NO_SCHEDULER_NAME)
    (tmp_path / "cfg.yaml").write_text(KAI_ONLY)
    r = subprocess.run(
        [sys.executable, "-m", "phalanx.cli.main", "run", "w.yaml", "--config", "cfg.yaml",
         "--save", "run.json"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    row = next(line for line in r.stdout.splitlines() if line.strip().startswith("plain"))
    assert "kai-scheduler" in row.split()
    rec = load_record(tmp_path / "run.json")
    assert [(g.name, g.scheduler, g.phase) for g in rec.gangs] == [
        ("plain-0", "kai-scheduler", "Running")]
    [group] = rec.objects["PodGroup.scheduling.run.ai"]
    assert group["metadata"]["name"] == "plain-0" and group["spec"]["queue"] == "test"
    assert {p["spec"]["schedulerName"] for p in rec.objects["Pod"]} == {"kai-scheduler"}
    [pcs] = rec.objects["PodCliqueSet"]
    assert "schedulerName" not in pcs["spec"]["template"]["cliques"][0]["spec"]["podSpec"]
