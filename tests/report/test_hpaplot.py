"""The report's autoscaling section: replicas over time of each HPA's target, from the run's
object history, with the metric values the Scenario set (issue 24)."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.cluster.clock import run_virtual
from phalanx.report import hpaplot
from phalanx.report.html import render_html
from phalanx.sim.record import RunRecord
from phalanx.sim.runner import RunOptions, Simulation
from phalanx.sim.workload import load_cluster_spec, load_config, load_workload
from tests.sim.test_hpa import WORKLOAD


@pytest.fixture(scope="module")
def record(tmp_path_factory: pytest.TempPathFactory) -> RunRecord:
    f: Path = tmp_path_factory.mktemp("hpa") / "w.yaml"
    f.write_text(WORKLOAD)
    wl = load_workload([f])
    spec, _ = load_cluster_spec(None, wl)
    cfg, _ = load_config(None, wl)
    return run_virtual(Simulation(wl, spec, cfg, RunOptions(until=600.0)).run())


def test_replica_series_follows_the_target(record: RunRecord) -> None:
    series = hpaplot.replica_series(record)
    assert list(series) == ["PodClique inf-0-fe"]
    points = series["PodClique inf-0-fe"]
    assert [r for _, r in points] == [2, 4, 2]
    assert [round(t) for t, _ in points[1:]] == [60, 480]
    assert hpaplot.metric_changes(record) == {"inf-0-fe": [(60.0, "160"), (180.0, "20")]}


def test_html_report_has_the_autoscaling_section(record: RunRecord) -> None:
    html = render_html(record)
    assert "Autoscaling: replicas over time" in html
    assert "inf-0-fe: 160 at 1m, 20 at 3m" in html
