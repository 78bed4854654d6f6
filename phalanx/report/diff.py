"""`phalanx diff RUN_A RUN_B`: two saved runs side by side, to compare two configurations.

First the totals (gangs scheduled and pending, time to schedule, preemptions, GPU use,
virtual duration), then every PodGang whose outcome differs: phase, time to schedule,
topology domain and nodes. Gangs only in one run are listed as such.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from phalanx.sim.record import RunRecord

from .format import fmt_duration
from .summary import GangRow, Summary, summarize
from .tables import render_table


@dataclass(slots=True)
class RunDiff:
    totals: list[tuple[str, str, str]]  # (metric, A, B)
    gangs: list[tuple[str, str, str, str]]  # (gang, what, A, B)
    same_gangs: int


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


def _totals(record: RunRecord, s: Summary) -> dict[str, str]:
    t = s.totals
    return {
        "gangs scheduled": f"{t.gangs_scheduled}/{t.gangs}",
        "gangs pending": str(t.gangs_pending),
        "wait p50": fmt_duration(t.wait_p50),
        "wait p95": fmt_duration(t.wait_p95),
        "wait max": fmt_duration(t.wait_max),
        "gang preemptions": str(t.preemptions),
        "peak GPUs in use": f"{t.peak_gpu_used:g}/{t.gpu_total}",
        "mean GPU use": _pct(t.mean_gpu_utilisation),
        "virtual duration": fmt_duration(record.meta.duration),
        "settled": "yes" if record.meta.settled else "no",
    }


def _gang_view(g: GangRow) -> dict[str, str]:
    return {"phase": g.phase, "time to schedule": fmt_duration(g.wait),
            "domain": g.domain or "-", "nodes": g.placement or "-",
            "preemptions": str(g.preemptions)}


def diff_records(a: RunRecord, b: RunRecord) -> RunDiff:
    sa, sb = summarize(a, event_limit=0), summarize(b, event_limit=0)
    ta, tb = _totals(a, sa), _totals(b, sb)
    totals = [(k, ta[k], tb[k]) for k in ta]
    ga = {g.name: _gang_view(g) for g in sa.gangs}
    gb = {g.name: _gang_view(g) for g in sb.gangs}
    rows: list[tuple[str, str, str, str]] = []
    same = 0
    for name in sorted(set(ga) | set(gb)):
        if name not in gb:
            rows.append((name, "only in A", ga[name]["phase"], "-"))
        elif name not in ga:
            rows.append((name, "only in B", "-", gb[name]["phase"]))
        else:
            changed = [(k, ga[name][k], gb[name][k]) for k in ga[name]
                       if ga[name][k] != gb[name][k]]
            rows += [(name, k, x, y) for k, x, y in changed]
            same += not changed
    return RunDiff(totals, rows, same)


def render_diff(d: RunDiff, name_a: str, name_b: str) -> str:
    out = [f"A: {name_a}", f"B: {name_b}", ""]
    totals = [[m, x, y, "" if x == y else "changed"] for m, x, y in d.totals]
    out += [render_table(["METRIC", "A", "B", ""], totals).rstrip("\n"), ""]
    if d.gangs:
        out += [render_table(["PODGANG", "DIFFERS IN", "A", "B"], [list(r) for r in d.gangs])
                .rstrip("\n"), ""]
    out.append(f"{d.same_gangs} PodGang(s) with the same outcome in both runs; "
               f"{len({r[0] for r in d.gangs})} differ.")
    return "\n".join(out) + "\n"


def diff_dict(d: RunDiff) -> dict[str, Any]:
    return {"totals": [{"metric": m, "a": x, "b": y} for m, x, y in d.totals],
            "gangs": [{"podgang": g, "what": w, "a": x, "b": y} for g, w, x, y in d.gangs],
            "sameGangs": d.same_gangs}
