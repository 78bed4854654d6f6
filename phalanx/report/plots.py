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
from matplotlib.collections import PatchCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import FuncFormatter, MaxNLocator, MultipleLocator, PercentFormatter

from phalanx.sim.record import GangRecord, RunRecord

from .format import fmt_duration

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
MAX_TIMELINE_GANGS = 60
NODES_PER_PLACEMENT_ROW = 16

# A qualitative palette readable on white; gangs cycle through it in a stable order.
GANG_PALETTE = (
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
    "#ff9da7", "#9c755f", "#bab0ac", "#1f77b4", "#8c564b", "#17becf", "#bcbd22",
    "#7f7f7f", "#aec7e8", "#ffbb78", "#98df8a", "#c5b0d5", "#c49c94",
)

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
        fig = Figure(figsize=(11.5, 4.2))
        top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1.4]})
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
            top.annotate(step.action, (step.t, 1.05), xytext=(2, -2), textcoords="offset points",
                         fontsize=7, color="#b07aa1", va="top", rotation=90)
        if record.samples:
            top.legend(loc="upper right", ncols=2, bbox_to_anchor=(1, 1.16))
            bottom.legend(loc="upper right", ncols=2, bbox_to_anchor=(1, 1.32))
        return _svg(fig, "cluster utilisation over time")


def wait_time_svg(record: RunRecord) -> str:
    """Time to schedule per gang (few gangs) or as a histogram (many); pending gangs marked."""
    end = record.meta.duration
    gangs = [g for g in record.gangs if g.created is not None]
    waits = {g.name: g.wait_seconds for g in gangs}
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
                    span = max(0.0, end - (g.created or 0.0))
                    ax.barh(i, span, color="none", edgecolor="#d9534f", hatch="////", lw=0.8,
                            height=0.62)
                    ax.text(span, i, "  still pending", va="center", fontsize=7.5,
                            color="#d9534f")
                else:
                    ax.barh(i, w, color=colours[g.name], height=0.62)
                    ax.text(w, i, f"  {fmt_duration(w)}", va="center", fontsize=7.5,
                            color=MUTED)
            ax.set_yticks(range(len(ordered)), [g.name for g in ordered], fontsize=7.5)
            ax.invert_yaxis()
            ax.grid(axis="x")
            longest = max([w for w in waits.values() if w is not None] +
                          [end - (g.created or 0.0) for g in ordered if waits[g.name] is None] +
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


def _group_level(record: RunRecord) -> tuple[str, str]:
    """The topology level to draw as rows: the one just above host (usually rack)."""
    levels = [t for t in record.topology if t.domain not in ("host", "hostname", "node")]
    if levels:
        return levels[-1].domain, levels[-1].key
    return "cluster", ""


def placement_time(record: RunRecord) -> tuple[float, str]:
    """When to draw the placement: the end of the run if anything still runs, else the
    moment of peak GPU use (so a run whose jobs all finished still shows where they ran)."""
    end = record.meta.duration
    if any(p.node and p.deleted is None and p.phase not in ("Succeeded", "Failed")
           for p in record.pods) or not record.samples:
        return end, "the end of the run"
    peak = max(record.samples, key=lambda s: (s.gpu_used, s.cpu_used))
    return peak.t, "peak use (nothing was running at the end)"


def placement_svg(record: RunRecord) -> str:
    """Where each gang's pods sit at the end of the run: one row per rack, one box per node,
    one cell per GPU coloured by the gang holding it; a strip below for CPU-only pods."""
    colours = gang_colours(record)
    level, key = _group_level(record)
    groups: dict[str, list[str]] = {}
    for n in sorted(record.nodes, key=lambda n: (n.labels.get(key, ""), n.name)):
        groups.setdefault(n.labels.get(key, "") or "(unlabelled)" if key else "cluster",
                          []).append(n.name)
    nodes = {n.name: n for n in record.nodes}
    at, _ = placement_time(record)
    on_node: dict[str, list[tuple[str, int, float]]] = {}
    for p in record.pods:
        if p.node and p.bound is not None and p.bound <= at and all(
                end is None or end > at for end in (p.finished, p.deleted)):
            on_node.setdefault(p.node, []).append((p.gang, p.gpu, p.cpu))
    # Lay rows out: long racks wrap onto several lines.
    lines: list[tuple[str, list[str]]] = []
    for gname, members in groups.items():
        for i in range(0, len(members), NODES_PER_PLACEMENT_ROW):
            lines.append((gname if i == 0 else "", members[i:i + NODES_PER_PLACEMENT_ROW]))
    per_line = max((len(m) for _, m in lines), default=1)
    with _style("placement"):
        width = min(12.0, max(6.0, 1.3 + 0.85 * per_line))
        fig = Figure(figsize=(width, 0.7 + 0.8 * max(1, len(lines))))
        ax = fig.subplots()
        ax.set_axis_off()
        used: dict[str, int] = {}
        frames: list[Rectangle] = []
        frame_edges: list[str] = []
        frame_widths: list[float] = []
        cells: list[Rectangle] = []
        cell_colours: list[str] = []
        for row, (label, members) in enumerate(lines):
            y = -row * 1.25
            if label:
                text = label if not key or label.startswith(level) else f"{level} {label}"
                ax.text(-0.25, y + 0.5, text, ha="right", va="center", fontsize=8, color=INK,
                        fontweight="bold")
            for col, name in enumerate(members):
                x = col * 1.15
                info = nodes[name]
                frames.append(Rectangle((x, y), 1, 1))
                frame_edges.append("#9aa5b4" if info.ready else "#d9534f")
                frame_widths.append(0.8 if info.ready else 1.6)
                for rect, colour in _node_cells(x, y, info.gpu, info.cpu,
                                                on_node.get(name, []), colours, used):
                    cells.append(rect)
                    cell_colours.append(colour)
                short = name.rsplit("-", 1)[-1] if "-" in name else name
                ax.text(x + 0.5, y - 0.08, short, ha="center", va="top", fontsize=6,
                        color=MUTED)
        # Two collections instead of thousands of patches: fast to draw, compact SVG.
        ax.add_collection(PatchCollection(frames, facecolors="white", edgecolors=frame_edges,
                                          linewidths=frame_widths))
        ax.add_collection(PatchCollection(cells, facecolors=cell_colours, linewidths=0))
        ax.set_xlim(-0.3, per_line * 1.15)
        ax.set_ylim(-(len(lines) - 1) * 1.25 - 0.35, 1.1)
        ax.set_aspect("equal")
        order = list(colours)  # creation order, as everywhere else in the report
        shown = sorted(used, key=lambda g: order.index(g) if g in order else len(order))[:16]
        handles = [Patch(color=colours.get(g, "#999"), label=g) for g in shown]
        if len(used) > len(shown):
            handles.append(Patch(color="white", label=f"+{len(used) - len(shown)} more gangs"))
        if handles:
            ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(0, -0.02),
                      ncols=min(6, len(handles)), handlelength=1.0, columnspacing=1.2)
        return _svg(fig, "placement of gangs on nodes")


def _node_cells(x: float, y: float, gpus: int, cpus: float,
                pods: list[tuple[str, int, float]], colours: dict[str, str],
                used: dict[str, int]) -> list[tuple[Rectangle, str]]:
    """A node's GPU cells (coloured by owning gang, else free) and its CPU-only pod strip."""
    out: list[tuple[Rectangle, str]] = []
    owners: list[str] = []
    for gang, gpu, _ in sorted(pods):
        owners += [gang] * gpu
        used[gang] = used.get(gang, 0) + max(gpu, 1)
    strip = 0.16  # bottom strip for CPU-only pods
    if gpus:
        cols = max(1, -(-gpus // 2))
        w, h = 0.9 / cols, (0.84 - strip) / 2
        for i in range(gpus):
            r, c = divmod(i, cols)
            colour = colours.get(owners[i], "#999") if i < len(owners) else FREE_SLOT
            out.append((Rectangle((x + 0.05 + c * w + 0.01, y + strip + 0.04 + (1 - r) * h),
                                  w - 0.02, h - 0.03), colour))
    cpu_pods = [(g, c) for g, gpu, c in pods if gpu == 0]
    if cpu_pods and cpus:
        left = x + 0.05
        for gang, cpu in cpu_pods:
            width = min(max(0.06, 0.9 * min(1.0, cpu / cpus)), x + 0.95 - left)
            out.append((Rectangle((left, y + 0.04), width, strip - 0.04),
                        colours.get(gang, "#999")))
            left += width + 0.01
            if left >= x + 0.95:
                break
    return out


def timeline_svg(record: RunRecord) -> str:
    """Each gang's lifecycle as a bar: creating, gated, queued, starting, running."""
    end = record.meta.duration
    gangs = sorted((g for g in record.gangs if g.created is not None),
                   key=lambda g: (g.created or 0.0, g.name))
    hidden = max(0, len(gangs) - MAX_TIMELINE_GANGS)
    gangs = gangs[:MAX_TIMELINE_GANGS]
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
        if hidden:
            ax.set_title(f"first {MAX_TIMELINE_GANGS} gangs shown; {hidden} more in the table",
                         fontsize=8, fontweight="normal", color=MUTED, loc="right")
        handles = [Patch(color=STATE_COLOURS[s], label=STATE_LABELS[s])
                   for s in STATE_COLOURS if s in seen]
        if any(g.preempted for g in gangs):
            handles.append(ax.scatter([], [], marker="x", color=INK, label="preempted"))
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
    if g.deleted is not None:
        ax.plot([g.deleted, g.deleted], [row - 0.32, row + 0.32], color=INK, lw=1.2)
