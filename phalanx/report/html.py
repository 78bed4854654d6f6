"""`phalanx run --report out.html`: one self-contained HTML page (inline SVG and CSS only).

Opens offline, mails as one file, and renders the same everywhere: no scripts, no CDN.
"""

from __future__ import annotations

import html
import os
from collections.abc import Iterable, Sequence

from phalanx.sim.record import RunRecord, write_atomic

from . import hpaplot, placement, plots, queueplot
from .format import fmt_duration, plural
from .summary import Summary, headline, summarize

_CSS = """
:root { --ink:#2b2f36; --muted:#6b7280; --line:#e6e8eb; --bg:#f6f7f9; --ok:#3a9d5d;
        --warn:#c77c02; --bad:#d9534f; --accent:#4e79a7; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--ink);
       font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif; }
main { max-width:1180px; margin:0 auto; padding:28px 24px 48px; }
header h1 { font-size:22px; margin:0 0 4px; letter-spacing:-.01em; }
header .sub { color:var(--muted); margin:0 0 18px; }
header code { background:#eceef1; padding:1px 5px; border-radius:4px; font-size:12.5px; }
.kpis { display:grid; grid-template-columns:repeat(auto-fit,minmax(160px,1fr)); gap:12px;
        margin-bottom:18px; }
.kpi { background:#fff; border:1px solid var(--line); border-radius:10px; padding:12px 14px; }
.kpi .v { font-size:20px; font-weight:650; overflow-wrap:anywhere; }
.kpi .l { color:var(--muted); font-size:12px; text-transform:uppercase; letter-spacing:.04em; }
.kpi.bad .v { color:var(--bad); } .kpi.ok .v { color:var(--ok); }
section { background:#fff; border:1px solid var(--line); border-radius:12px;
          padding:16px 18px; margin:14px 0; }
section h2 { font-size:15px; margin:0 0 10px; }
section p.note { color:var(--muted); margin:4px 0 10px; font-size:13px; }
.grid2 { display:grid; grid-template-columns:1fr; gap:14px; }
svg.plot { width:100%; height:auto; display:block; }
table { border-collapse:collapse; width:100%; font-size:13px; }
th { text-align:left; color:var(--muted); font-weight:600; font-size:11.5px;
     text-transform:uppercase; letter-spacing:.04em; border-bottom:1px solid var(--line);
     padding:6px 8px; }
td { border-bottom:1px solid var(--line); padding:6px 8px; vertical-align:top; }
td.num { text-align:right; font-variant-numeric:tabular-nums; }
td code, li code { font-size:12px; }
.pill { display:inline-block; padding:1px 8px; border-radius:999px; font-size:12px;
        font-weight:600; background:#eceef1; }
.pill.Running,.pill.Completed,.pill.Succeeded { background:#e3f3e8; color:#1f6b3a; }
.pill.Pending,.pill.Progressing,.pill.Starting { background:#fdf0d5; color:#8a5a00; }
.pill.Deleted,.pill.Terminating { background:#f3f4f6; color:#6b7280; }
.pill.Failed,.pill.Degraded { background:#fde2e1; color:#a12622; }
.pill.Warning { background:#fde2e1; color:#a12622; }
.pill.Normal { background:#e7eef7; color:#2c5282; }
.explain { background:#fff8eb; border-left:3px solid var(--warn); padding:8px 12px;
           margin:8px 0; border-radius:0 8px 8px 0; white-space:pre-wrap; }
.explain ul { margin:6px 0 0; padding-left:18px; color:var(--muted); font-size:12.5px;
              white-space:normal; }
footer { color:var(--muted); font-size:12px; margin-top:24px; }
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]], numeric: set[int]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>"
            for i, c in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    if not body:
        body.append(f'<tr><td colspan="{len(headers)}" class="note">none</td></tr>')
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _pill(state: str) -> str:
    return f'<span class="pill {_e(state)}">{_e(state)}</span>'


def _kpis(record: RunRecord, summary: Summary) -> str:
    t = summary.totals
    cards = [
        ("gangs scheduled", f"{t.gangs_scheduled}/{t.gangs}",
         "ok" if t.gangs and t.gangs_scheduled == t.gangs else ""),
        ("pending gangs", str(t.gangs_pending), "bad" if t.gangs_pending else "ok"),
        ("wait p50 / p95 / max", (f"{fmt_duration(t.wait_p50)} / {fmt_duration(t.wait_p95)} / "
                                  f"{fmt_duration(t.wait_max)}"), ""),
        ("gang preemptions", str(t.preemptions), ""),
    ]
    if t.gpu_total:
        mean = t.mean_gpu_utilisation
        cards.append(("peak GPUs in use", f"{t.peak_gpu_used:g}/{t.gpu_total}", ""))
        cards.append(("mean GPU use", "-" if mean is None else f"{mean:.0%}", ""))
    return '<div class="kpis">' + "".join(
        f'<div class="kpi {cls}"><div class="v">{_e(v)}</div><div class="l">{_e(label)}</div>'
        "</div>"
        for label, v, cls in cards
    ) + "</div>"


def _pcs_table(summary: Summary) -> str:
    named = summary.display_names()
    rows = [
        (
            f"<code>{_e(named(r.namespace, r.name))}</code>",
            _e(r.scheduler or "-"), _e(r.replicas),
            f"{r.gangs_scheduled}/{r.gangs_total}", f"{r.pods_running}/{r.pods_total}",
            _pill(r.status), _e("; ".join(r.conditions)),
        )
        for r in summary.podcliquesets
    ]
    return _table(["name", "scheduler", "replicas", "gangs scheduled", "pods running",
                   "status", "conditions"], rows, {2, 3, 4})


def _gang_table(summary: Summary) -> str:
    named = summary.display_names()
    rows = [
        (
            f"<code>{_e(named(g.namespace, g.name))}</code>",
            _e(g.podcliqueset), _pill(g.phase),
            f"{g.pods_bound}/{g.pods_total}", f"<code>{_e(g.placement or '-')}</code>",
            _e(g.domain or "-"), _e(fmt_duration(g.wait)),
            _e(f"{g.priority_class} ({g.priority})" if g.priority_class else g.priority),
            _e(g.preemptions or ""), _e(g.updates),
        )
        for g in summary.gangs
    ]
    return _table(["podgang", "podcliqueset", "phase", "pods bound", "placement", "domain",
                   "time to schedule", "priority", "preempted", "rolling update"], rows,
                  {3, 6, 8})


def _pending(summary: Summary) -> str:
    if not summary.pending:
        return '<p class="note">Every gang was scheduled.</p>'
    named = summary.display_names()
    return "".join(
        f"<p><code>{_e(named(p.namespace, p.name))}</code> has waited "
        f"{_e(fmt_duration(p.waiting_for))}:</p>"
        f'<div class="explain">{_e(p.explanation)}'
        + ("<ul>" + "".join(f"<li>{_e(d)}</li>" for d in p.details) + "</ul>"
           if p.details else "") + "</div>"
        for p in summary.pending
    )


def _events(summary: Summary) -> str:
    rows = [
        (_e(fmt_duration(e.t)), _pill(e.type), _e(e.reason), f"<code>{_e(e.object)}</code>",
         _e(e.message), _e(e.count))
        for e in summary.events
    ]
    note = ""
    if summary.events_hidden:
        note = (f'<p class="note">Latest {len(summary.events)} shown; '
                f"{summary.events_hidden} earlier are in the saved run.</p>")
    return note + _table(["t", "type", "reason", "object", "message", "count"], rows, {5})


def _steps(record: RunRecord) -> str:
    if not record.steps:
        return ""
    rows = [
        (_e(fmt_duration(s.t)), _e(s.action), _e(s.description),
         "ok" if s.ok else f'<span class="pill Warning">failed</span> {_e(s.error)}')
        for s in record.steps
    ]
    return ("<section><h2>Scenario steps</h2>"
            + _table(["t", "action", "what", "result"], rows, set()) + "</section>")


def _plot(anchor: str, title: str, note: str, svg: str) -> str:
    return (f'<section id="{anchor}"><h2>{_e(title)}</h2><p class="note">{_e(note)}</p>'
            f"{svg}</section>")


def _queues(record: RunRecord) -> list[str]:
    """Each leaf queue's allocation against its fair share (queueplot.py), when any."""
    series = queueplot.queue_series(record)
    if not series:
        return []
    return [_plot("queues", "Queues: allocation against fair share",
                  "GPUs each leaf queue holds (solid) against the fair share phalanx-scheduler "
                  "computed for it (dashed), over the run.",
                  queueplot.queue_shares_svg(record, series))]


def _autoscaling(record: RunRecord) -> list[str]:
    """Replicas over time of each HPA's target (hpaplot.py), when any was scaled."""
    series = hpaplot.replica_series(record)
    if not series:
        return []
    metrics = hpaplot.metric_changes(record)
    steps = "; ".join(f"{hpa}: " + ", ".join(f"{v} at {fmt_duration(t)}" for t, v in points)
                      for hpa, points in sorted(metrics.items()))
    return [_plot("autoscaling", "Autoscaling: replicas over time",
                  "Replicas of each HorizontalPodAutoscaler's target over the run"
                  + (f" (metric values set: {steps})." if steps else "."),
                  hpaplot.replicas_svg(record, series))]


def _placements(record: RunRecord) -> list[str]:
    """One placement plot per moment that matters (placement.placement_moments)."""
    out = []
    moments = placement.placement_moments(record)
    for i, (at, why) in enumerate(moments):
        title = "Placement" if len(moments) == 1 else f"Placement at {fmt_duration(at)}"
        out.append(_plot(
            "placement" if i == len(moments) - 1 else f"placement-{i}", title,
            f"Where every pod sat at t={fmt_duration(at)}, {why}: one row per topology "
            "domain, one box per node, one cell per GPU coloured by gang; the strip below a "
            "node's GPUs shows CPU-only pods. Red outlines are nodes that are down.",
            placement.placement_svg(record, at)))
    return out


def render_html(record: RunRecord, summary: Summary | None = None) -> str:
    summary = summary or summarize(record, event_limit=200)
    meta = record.meta
    inputs = ", ".join(f"<code>{_e(os.path.basename(p))}</code>" for p in meta.inputs)
    n_nodes = len(record.nodes)
    cluster = f"{plural(n_nodes, 'node')}, {record.gpu_total} GPUs"
    if meta.cluster:
        cluster = f"<code>{_e(meta.cluster)}</code>: {cluster}"
    how = "settled" if meta.settled else "stopped (not settled)"
    sub = (f"{inputs or 'workload'} on {cluster}; {how} after "
           f"{_e(fmt_duration(meta.duration))} of virtual time")
    if meta.wall_seconds:
        sub += f" (simulated in {meta.wall_seconds:.1f}s)"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>Phalanx run: {_e(', '.join(os.path.basename(p) for p in meta.inputs))}</title>",
        f"<style>{_CSS}</style></head><body><main>",
        f"<header><h1>Phalanx run report</h1><p class=\"sub\">{sub}</p>"
        f"<p class=\"sub\"><strong>{_e(headline(record, summary))}</strong></p></header>",
        _kpis(record, summary),
        _plot("utilisation", "Cluster utilisation over time",
              "Share of the cluster's GPUs and CPU requested by bound pods; dotted lines mark "
              "scenario steps.", plots.utilisation_svg(record)),
        _plot("timeline", "Gang lifecycle",
              "Each PodGang from creation to running: the operator creates its pods (grey), "
              "lifts the scheduling gates once it is initialized, the scheduler queues and "
              "binds it all-or-nothing (amber), the kubelet starts the pods (blue).",
              plots.timeline_svg(record)),
        *_queues(record),
        *_autoscaling(record),
        *_placements(record),
        _plot("wait-times", "Gang wait time",
              "Time from PodGang creation until the whole gang was bound; for a gang still "
              "pending, how long it has waited (since its preemption, if it was preempted).",
              plots.wait_time_svg(record)),
        '<section id="pending"><h2>Pending gangs</h2>' + _pending(summary) + "</section>",
        '<section id="podcliquesets"><h2>PodCliqueSets</h2>' + _pcs_table(summary)
        + "</section>",
        '<section id="podgangs"><h2>PodGangs</h2>' + _gang_table(summary) + "</section>",
        '<section id="events"><h2>Events that matter</h2>' + _events(summary) + "</section>",
        _steps(record),
        f"<footer>Generated by Phalanx {_e(meta.phalanx_version)} from a simulated run on the "
        "embedded cluster (virtual time). Explain any gang or pod with "
        "<code>phalanx describe podgang NAME</code>.</footer>",
        "</main></body></html>",
    ]
    return "\n".join(parts)


def write_html_report(record: RunRecord, path: str | os.PathLike[str]) -> None:
    """Render fully first, then replace the file atomically: never a half-written report."""
    from pathlib import Path

    target = Path(path)
    text = render_html(record)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, text)
