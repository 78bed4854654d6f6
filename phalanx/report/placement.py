"""The report's placement plot: where each gang's pods sat, one box per node, one cell per
GPU coloured by gang, racks as rows.

A run is drawn at the moments that tell its story: the end (or the peak of GPU use when
everything finished), and just before each gang preemption (at most two), so a preempted
gang's old place stays visible next to the gang that took it.
"""

from __future__ import annotations

from matplotlib.collections import PatchCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from phalanx.sim.record import RunRecord

from .format import fmt_duration
from .plots import FREE_SLOT, INK, MUTED, _style, _svg, gang_colours

NODES_PER_PLACEMENT_ROW = 16
MAX_PREEMPTION_VIEWS = 2


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


def placement_moments(record: RunRecord) -> list[tuple[float, str]]:
    """(time, why) of each placement view: just before each preemption (at most two), and
    the end (or peak use)."""
    out: list[tuple[float, str]] = []
    for t in sorted({t for g in record.gangs for t in g.preempted})[:MAX_PREEMPTION_VIEWS]:
        victims = sorted(g.name for g in record.gangs if t in g.preempted)
        why = f"just before the preemption at {fmt_duration(t)} (of {', '.join(victims)})"
        out.append((max(t - 1e-3, 0.0), why))
    out.append(placement_time(record))
    return out


def placement_svg(record: RunRecord, at: float | None = None) -> str:
    """Where each gang's pods sat at `at` (default: placement_time): one row per rack, one
    box per node, one cell per GPU coloured by the gang holding it; a strip below for
    CPU-only pods."""
    colours = gang_colours(record)
    level, key = _group_level(record)
    groups: dict[str, list[str]] = {}
    for n in sorted(record.nodes, key=lambda n: (n.labels.get(key, ""), n.name)):
        groups.setdefault(n.labels.get(key, "") or "(unlabelled)" if key else "cluster",
                          []).append(n.name)
    nodes = {n.name: n for n in record.nodes}
    if at is None:
        at, _ = placement_time(record)
    preempted_after = {g.name for g in record.gangs if any(t > at for t in g.preempted)}
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
        handles = [Patch(color=colours.get(g, "#999"),
                         label=g + (" (preempted next)" if g in preempted_after else ""))
                   for g in shown]
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
