"""The report's plots, rendered by matplotlib to inline SVG (no JavaScript, no CDN).

Uses matplotlib's object API (`Figure`, never pyplot) so nothing global changes and it works
headless. Text stays text in the SVG (`svg.fonttype: none`): smaller files, crisp at any zoom,
searchable. Each figure gets its own hash salt so clip-path ids never collide in one page.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from contextlib import contextmanager

import matplotlib as mpl
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MaxNLocator, MultipleLocator, PercentFormatter

from phalanx.sim.record import GangRecord, RunRecord

from .format import fmt_duration
from .summary import gang_is_pending, gang_wait, pending_since

# Lifecycle colours: grey while the operator builds the gang, amber while it queues, blue
# while pods start, green while it runs, red after a preemption sent it back to the queue.
STATE_COLOURS = {
    "Created": "#c9ced6",
    "Initialized": "#9aa5b4",
    "Queued": "#f2b134",
    "Scheduled": "#6fa8dc",
    "Running": "#3a9d5d",
    "Degraded": "#e8a39f",
    "Preempted": "#d9534f",
}
STATE_LABELS = {
    "Created": "creating pods",
    "Initialized": "initialized, gated",
    "Queued": "queued for scheduling",
    "Scheduled": "scheduled, starting",
    "Running": "running",
    "Degraded": "below minAvailable",
    "Preempted": "preempted, re-queued",
}
INK = "#2b2f36"
MUTED = "#6b7280"
GRID = "#e6e8eb"
FREE_SLOT = "#eef0f3"
UPDATE_COLOUR = "#7a3fb0"  # a replica's rolling update, over its gang's bar
MAX_TIMELINE_GANGS = 60

# A qualitative palette readable on white; gangs cycle through it in a stable order. No red:
# red means preempted or pending, everywhere in the report.
GANG_PALETTE = (
    "#4e79a7", "#f28e2b", "#59a14f", "#6b6ecf", "#76b7b2", "#edc948", "#b07aa1",
    "#a0cbe8", "#9c755f", "#bab0ac", "#1f77b4", "#8c564b", "#17becf", "#bcbd22",
    "#7f7f7f", "#aec7e8", "#ffbb78", "#98df8a", "#c5b0d5", "#c49c94",
)
PENDING_RED = "#d9534f"

_RC = {
    "svg.fonttype": "none",
    "font.family": ["DejaVu Sans", "sans-serif"],
    "font.size": 9,
    "text.color": INK,
    "axes.labelcolor": INK,
    "axes.edgecolor": "#b8bec6",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
    "xtick.color": MUTED,
    "ytick.color": MUTED,
    "grid.color": GRID,
    "grid.linewidth": 0.8,
    "legend.frameon": False,
    "legend.fontsize": 8,
}


def gang_colours(record: RunRecord) -> dict[str, str]:
    """A stable colour per gang (by creation order), shared by every plot of the report."""
    order = sorted(record.gangs, key=lambda g: (g.created or 0.0, g.name))
    return {g.name: GANG_PALETTE[i % len(GANG_PALETTE)] for i, g in enumerate(order)}


@contextmanager
def _style(salt: str) -> Iterator[None]:
    with mpl.rc_context({**_RC, "svg.hashsalt": f"phalanx-{salt}"}):
        yield


def _svg(fig: Figure, label: str) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None},
                bbox_inches="tight", pad_inches=0.08)
    text = buf.getvalue()
    text = re.sub(r"<\?xml[^>]*\?>\s*", "", text)
    text = re.sub(r"<!DOCTYPE[^>]*>\s*", "", text)
    text = re.sub(r"<!--.*?-->\s*", "", text, flags=re.S)
    # Responsive: drop the fixed size (keep viewBox), cap at the natural width.
    m = re.search(r'<svg[^>]*?width="([\d.]+)pt"[^>]*?height="([\d.]+)pt"', text)
    natural = float(m.group(1)) * 4 / 3 if m else 900.0
    text = re.sub(r'(<svg[^>]*?)\swidth="[\d.]+pt"\s+height="[\d.]+pt"',
                  rf'\1 class="plot" role="img" aria-label="{label}" '
                  rf'style="max-width:{natural:.0f}px"', text, count=1)
    return text.strip()


# Tick spacings people read at a glance: 1s ... 30s, 1m ... 30m, 1h ... 1d.
_NICE_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600,
               43200, 86400)


def _time_ticks(ax_axis, span: float, max_ticks: int = 9) -> None:  # type: ignore[no-untyped-def]
    step = next((s for s in _NICE_STEPS if span / s <= max_ticks), _NICE_STEPS[-1])
    if span < 2:
        ax_axis.set_major_locator(MaxNLocator(nbins=5))
    else:
        ax_axis.set_major_locator(MultipleLocator(step))
    ax_axis.set_major_formatter(FuncFormatter(lambda v, _: fmt_duration(v) if v else "0"))


def _time_axis(ax, end: float) -> None:  # type: ignore[no-untyped-def]
    ax.set_xlim(0, max(end, 1.0))
    _time_ticks(ax.xaxis, max(end, 1.0))


def utilisation_svg(record: RunRecord) -> str:
    """GPU (and CPU) in use over time, with pods running/pending below and scenario steps."""
    end = max(record.meta.duration, max((s.t for s in record.samples), default=0.0))
    ts = [s.t for s in record.samples] + [end]
    gpu_total, cpu_total = record.gpu_total, record.cpu_total
    with _style("util"):
        rows = _step_rows(record, end)
        strip_h = 0.22 * (max(rows.values(), default=-1) + 1)
        fig = Figure(figsize=(11.5, 4.2 + strip_h))
        if rows:
            strip, top, bottom = fig.subplots(3, 1, sharex=True, gridspec_kw={
                "height_ratios": [strip_h * 3 / 4.2 * 1.4, 3, 1.4], "hspace": 0.12})
        else:
            strip = None
            top, bottom = fig.subplots(2, 1, sharex=True,
                                       gridspec_kw={"height_ratios": [3, 1.4]})
        if record.samples:
            if gpu_total:
                gpu = [s.gpu_used / gpu_total for s in record.samples]
                gpu.append(gpu[-1])
                top.fill_between(ts, gpu, step="post", color="#3a9d5d", alpha=0.18, lw=0)
                top.step(ts, gpu, where="post", color="#3a9d5d", lw=1.8,
                         label=f"GPUs in use (of {gpu_total})")
            if cpu_total:
                cpu = [s.cpu_used / cpu_total for s in record.samples]
                cpu.append(cpu[-1])
                top.step(ts, cpu, where="post", color="#4e79a7", lw=1.2, ls="--",
                         label=f"CPU requested (of {cpu_total:g} cores)")
            running = [s.pods_running for s in record.samples] + [record.samples[-1].pods_running]
            pending = [s.pods_pending for s in record.samples] + [record.samples[-1].pods_pending]
            bottom.step(ts, running, where="post", color="#3a9d5d", lw=1.4, label="pods running")
            bottom.step(ts, pending, where="post", color="#f2b134", lw=1.4, label="pods pending")
        top.set_ylim(0, 1.05)
        top.yaxis.set_major_formatter(PercentFormatter(1.0))
        top.set_ylabel("utilisation")
        top.grid(axis="y")
        bottom.set_ylabel("pods")
        bottom.yaxis.set_major_locator(MaxNLocator(nbins=3, integer=True))
        bottom.set_ylim(bottom=0)
        bottom.grid(axis="y")
        bottom.set_xlabel("virtual time since start")
        _time_axis(bottom, end)
        for step in record.steps:
            for ax in (top, bottom):
                ax.axvline(step.t, color="#b07aa1", lw=0.9, ls=":", zorder=0)
        if strip is not None:
            _draw_steps(strip, record, rows)
        if record.samples:  # one legend under the plots: none sits on a line
            handles = [*top.get_legend_handles_labels()[0],
                       *bottom.get_legend_handles_labels()[0]]
            bottom.legend(handles=handles, loc="upper center", ncols=len(handles),
                          bbox_to_anchor=(0.5, -0.62))
        return _svg(fig, "cluster utilisation over time")


def _step_label(step) -> str:  # type: ignore[no-untyped-def]
    text = f"{fmt_duration(step.t)} {step.description or step.action}"
    if not step.ok:
        text += " (failed)"
    return text if len(text) <= 48 else text[:47] + "\u2026"


def _step_rows(record: RunRecord, end: float) -> dict[int, int]:
    """A row per step label so that labels never overlap: a label takes the first row whose
    last label ended (about 7 px per character on the 11.5-inch axis) before it starts."""
    span = max(end, 1.0)
    per_char = span / 150  # ~150 characters across the axis at font size 8
    rows: dict[int, int] = {}
    ends: list[float] = []
    for i, step in enumerate(record.steps):
        start = step.t
        row = next((r for r, stop in enumerate(ends) if stop <= start), len(ends))
        stop = start + per_char * (len(_step_label(step)) + 2)
        if row == len(ends):
            ends.append(stop)
        else:
            ends[row] = stop
        rows[i] = row
    return rows


def _draw_steps(ax, record: RunRecord,  # type: ignore[no-untyped-def]
                rows: dict[int, int]) -> None:
    """Scenario steps as horizontal labels in a strip above the plots, each at its time."""
    ax.set_axis_off()
    depth = max(rows.values()) + 1
    ax.set_ylim(depth, 0)
    for i, step in enumerate(record.steps):
        colour = "#b07aa1" if step.ok else PENDING_RED
        ax.plot([step.t, step.t], [rows[i] + 0.15, depth], color=colour, lw=0.9, ls=":")
        ax.text(step.t, rows[i] + 0.5, " " + _step_label(step), fontsize=8.5, color=colour,
                va="center", ha="left", clip_on=False)


def wait_time_svg(record: RunRecord) -> str:
    """Time to schedule per gang (few gangs) or as a histogram (many); pending gangs marked."""
    end = record.meta.duration
    gangs = [g for g in record.gangs if g.created is not None]
    # A gang waiting now (say, preempted) has no time to schedule, whatever it took before.
    waits = {g.name: gang_wait(g) for g in gangs}
    with _style("wait"):
        if len(gangs) <= 40:
            ordered = sorted(gangs, key=lambda g: (waits[g.name] is None, waits[g.name] or 0.0,
                                                   g.name))
            height = max(1.6, 0.26 * len(ordered) + 0.9)
            fig = Figure(figsize=(11.5, height))
            ax = fig.subplots()
            colours = gang_colours(record)
            for i, g in enumerate(ordered):
                w = waits[g.name]
                if w is None:
                    span = max(0.0, end - pending_since(g))
                    ax.barh(i, span, color="none", edgecolor=PENDING_RED, hatch="////",
                            lw=0.8, height=0.62)
                    why = " since its preemption" if g.preempted else ""
                    ax.text(span, i, f"  still pending: {fmt_duration(span)}{why}",
                            va="center", fontsize=7.5, color=PENDING_RED)
                else:
                    ax.barh(i, w, color=colours[g.name], height=0.62)
                    ax.text(w, i, f"  {fmt_duration(w)}", va="center", fontsize=7.5,
                            color=MUTED)
            ax.set_yticks(range(len(ordered)), [g.name for g in ordered], fontsize=7.5)
            ax.invert_yaxis()
            ax.grid(axis="x")
            longest = max([w for w in waits.values() if w is not None] +
                          [end - pending_since(g) for g in ordered if waits[g.name] is None] +
                          [1.0])
            ax.set_xlim(0, longest * 1.25)
            _time_ticks(ax.xaxis, longest * 1.25)
            ax.set_xlabel("time from PodGang creation to the whole gang bound")
        else:
            fig = Figure(figsize=(11.5, 3.2))
            ax = fig.subplots()
            done = [w for w in waits.values() if w is not None]
            if done:
                ax.hist(done, bins=min(40, max(8, len(done) // 4)), color="#4e79a7",
                        edgecolor="white", lw=0.5)
            ax.grid(axis="y")
            _time_ticks(ax.xaxis, max(done, default=1.0))
            ax.set_xlabel("time from PodGang creation to the whole gang bound")
            ax.set_ylabel("gangs")
            n_pending = sum(1 for w in waits.values() if w is None)
            if n_pending:
                ax.text(0.99, 0.95, f"{n_pending} gangs still pending (not shown)",
                        transform=ax.transAxes, ha="right", va="top", color="#d9534f")
        return _svg(fig, "gang wait-time distribution")


def timeline_gangs(record: RunRecord) -> tuple[list[GangRecord], str]:
    """The gangs to draw (all, in creation order, when they fit) and a note on the rest.
    Too many: the pending ones (longest waiting first), then the slowest to schedule."""
    end = record.meta.duration
    gangs = sorted((g for g in record.gangs if g.created is not None),
                   key=lambda g: (g.created or 0.0, g.name))
    if len(gangs) <= MAX_TIMELINE_GANGS:
        return gangs, ""
    pending = sorted((g for g in gangs if gang_is_pending(g)),
                     key=lambda g: (pending_since(g) - end, g.name))
    others = sorted((g for g in gangs if not gang_is_pending(g)),
                    key=lambda g: (-(gang_wait(g) or 0.0), g.name))
    shown = (pending + others)[:MAX_TIMELINE_GANGS]
    n_pending = min(len(pending), MAX_TIMELINE_GANGS)
    parts = [f"{len(shown)} of {len(gangs)} gangs shown"]
    if n_pending:
        parts.append(f"the {n_pending} pending" if n_pending == len(pending)
                     else f"{n_pending} of {len(pending)} pending (longest waiting)")
    if len(shown) > n_pending:
        parts.append(f"then the {len(shown) - n_pending} slowest to schedule")
    hidden = len(gangs) - len(shown)
    return shown, f"{parts[0]}: {', '.join(parts[1:])}; {hidden} more in the PodGangs table"


def timeline_svg(record: RunRecord) -> str:
    """Each gang's lifecycle as a bar: creating, gated, queued, starting, running."""
    end = record.meta.duration
    gangs, note = timeline_gangs(record)
    with _style("timeline"):
        fig = Figure(figsize=(11.5, max(1.8, 0.27 * len(gangs) + 1.2)))
        ax = fig.subplots()
        seen: set[str] = set()
        for i, g in enumerate(gangs):
            _draw_gang(ax, i, g, end, seen)
        ax.set_yticks(range(len(gangs)), [g.name for g in gangs], fontsize=7.5)
        ax.invert_yaxis()
        ax.grid(axis="x")
        _time_axis(ax, end)
        ax.set_xlabel("virtual time since start")
        if note:
            ax.set_title(note, fontsize=8.5, fontweight="normal", color=MUTED, loc="right",
                         pad=22)
        handles = [Patch(color=STATE_COLOURS[s], label=STATE_LABELS[s])
                   for s in STATE_COLOURS if s in seen]
        if any(g.preempted for g in gangs):
            handles.append(ax.scatter([], [], marker="x", color=INK, label="preempted"))
        if any(g.updates for g in gangs):
            handles.append(ax.plot([], [], color=UPDATE_COLOUR, lw=2.4,
                                   label="rolling update")[0])
        if handles:
            ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0, 1.0),
                      ncols=len(handles), handlelength=1.2)
        return _svg(fig, "timeline of each gang's lifecycle")


def _draw_gang(ax, row: int, g: GangRecord, end: float,  # type: ignore[no-untyped-def]
               seen: set[str]) -> None:
    for state, start, stop in g.segments(end):
        colour = STATE_COLOURS.get(state, "#999")
        ax.barh(row, stop - start, left=start, height=0.6, color=colour, lw=0)
        seen.add(state)
    for t in g.preempted:
        ax.scatter([t], [row], marker="x", color=INK, s=30, zorder=3, lw=1.6)
    for u in g.updates:  # the replica's rolling update: a bar over the top edge
        ax.plot([u.start, u.end if u.end is not None else end], [row - 0.36, row - 0.36],
                color=UPDATE_COLOUR, lw=2.4, solid_capstyle="butt", zorder=3)
    if g.deleted is not None:
        ax.plot([g.deleted, g.deleted], [row - 0.32, row + 0.32], color=INK, lw=1.2)
