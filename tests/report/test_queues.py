"""Queues in a saved run (issue 26 item 3): a gang waiting on its queue's limit says so in an
Event and in its PodGang's condition; `phalanx get queues` and `phalanx describe queue X` show
each queue's allocated, deserved and fair share as phalanx-scheduler computed them.

The run (data/queues-two-teams.yaml): 16 GPUs; queue org (quota 16) with team-a (quota and
limit 4) and team-b (quota 12). team-a submits two 4-GPU gangs, team-b one of 2 x 2 GPUs: the
second team-a gang waits on team-a's limit."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from phalanx.cluster.clock import run_virtual
from phalanx.report.describe import describe
from phalanx.report.get import find, render
from phalanx.report.html import render_html
from phalanx.report.queueplot import queue_series
from phalanx.sim.record import RunRecord
from phalanx.sim.runner import RunOptions, Simulation
from phalanx.sim.workload import load_cluster_spec, load_config, load_workload

WORKLOAD = Path(__file__).parent / "data" / "queues-two-teams.yaml"
WAITING = "queue team-a: 4 of its 4-GPU limit in use, the gang needs 4 more"


@cache
def _record() -> RunRecord:
    wl = load_workload([WORKLOAD])
    spec, _ = load_cluster_spec(None, wl)
    cfg, _ = load_config(None, wl)
    return run_virtual(Simulation(wl, spec, cfg, RunOptions(until=60.0)).run())


def _rows(output: str = "table") -> dict[str, list[str]]:
    rec = _record()
    lines = render(rec, find(rec, "queues", []), output).splitlines()
    rows = [line.split() for line in lines]
    return {"HEAD": rows[0], **{r[0]: r[1:] for r in rows[1:]}}


def test_the_waiting_gang_says_which_queue_limit_holds_it() -> None:
    rec = _record()
    gangs = {g["metadata"]["name"]: g for g in rec.objects["PodGang"]}
    waiting = [n for n, g in gangs.items()
               if any(c["type"] == "GangScheduled" and c["status"] == "False"
                      for c in g.get("status", {}).get("conditions") or ())]
    assert len(waiting) == 1 and waiting[0].startswith("train-a-")
    [cond] = [c for c in gangs[waiting[0]]["status"]["conditions"] if c["type"] == "GangScheduled"]
    assert cond["reason"] == "Unschedulable" and WAITING in cond["message"]
    reasons = {e.reason for e in rec.events if WAITING in e.message}
    assert {"FailedScheduling", "GangUnschedulable"} <= reasons


def test_get_queues_shows_allocated_deserved_fair_share_and_limit() -> None:
    rows = _rows()
    assert rows["HEAD"] == ["NAME", "PARENT", "PRIORITY", "GPU-ALLOCATED", "GPU-DESERVED",
                            "GPU-FAIR-SHARE", "GPU-LIMIT", "AGE"]
    # [parent, allocated, deserved, fair share, limit, age]; org has no parent column value.
    assert rows["team-a"][:5] == ["org", "4", "4", "4", "4"]
    # team-b asks for 4 GPUs: its fair share is what it asks, within its quota of 12.
    assert rows["team-b"][:5] == ["org", "4", "12", "4", "unlimited"]
    assert rows["org"][:4] == ["8", "16", "12", "unlimited"]


def test_get_queues_wide_adds_cpu_and_memory() -> None:
    assert _rows("wide")["HEAD"][7:11] == ["CPU-ALLOCATED", "CPU-FAIR-SHARE",
                                           "MEMORY-ALLOCATED", "MEMORY-FAIR-SHARE"]


def test_describe_queue_has_its_shares_per_resource() -> None:
    text = describe(_record(), "queue", "team-a")
    lines = text.splitlines()
    at = lines.index("Shares:")
    assert lines[at + 1].split() == ["RESOURCE", "ALLOCATED", "REQUESTED", "DESERVED", "FAIR",
                                     "SHARE", "LIMIT", "OVER-QUOTA", "WEIGHT"]
    assert lines[at + 2].split() == ["nvidia.com/gpu", "4", "8", "4", "4", "4", "1"]
    assert describe(_record(), "queue", "org").count("Child queues:  team-a, team-b") == 1


def test_queue_series_follow_what_the_scheduler_wrote_for_each_leaf_queue() -> None:
    series = queue_series(_record())
    assert sorted(series) == ["team-a", "team-b"]  # org is a parent: no workloads of its own
    # Both leaves end holding 4 GPUs, each its fair share.
    assert series["team-a"][-1][1:] == (4.0, 4.0)
    assert series["team-b"][-1][1:] == (4.0, 4.0)


def test_the_html_report_plots_queues_against_their_fair_share() -> None:
    html = render_html(_record())
    start = html.index('<section id="queues">')
    section = html[start:html.index("</section>", start)]
    assert "allocation against fair share" in section and "<svg" in section
