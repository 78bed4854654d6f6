"""kubectl-style tables of a run for the terminal, and the same data as JSON/YAML."""

from __future__ import annotations

import json
from typing import Any, Literal

import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from phalanx.sim.record import RunRecord

from .format import fmt_duration
from .summary import Summary, headline, summarize

OutputFormat = Literal["table", "json", "yaml"]

_PHASE_STYLE = {
    "Running": "green",
    "Completed": "green",
    "Succeeded": "green",
    "Pending": "yellow",
    "Progressing": "yellow",
    "Starting": "cyan",
    "Failed": "red",
    "Deleted": "dim",
    "Terminating": "dim",
}


def _table(*headers: str) -> Table:
    # kubectl look: upper-case headers, no borders, two spaces between columns.
    table = Table(box=None, pad_edge=False, padding=(0, 2, 0, 0), show_edge=False,
                  header_style="bold")
    for h in headers:
        table.add_column(h.upper(), overflow="fold")
    return table


def _phase(text: str) -> Text:
    return Text(text, style=_PHASE_STYLE.get(text, ""))


def print_tables(record: RunRecord, console: Console, summary: Summary | None = None) -> None:
    summary = summary or summarize(record)
    if summary.podcliquesets:
        t = _table("podcliqueset", "scheduler", "replicas", "gangs", "pods running", "status")
        for r in summary.podcliquesets:
            t.add_row(r.name, r.scheduler or "-", str(r.replicas),
                      f"{r.gangs_scheduled}/{r.gangs_total}", f"{r.pods_running}/{r.pods_total}",
                      _phase(r.status))
        console.print(t)
        for r in summary.podcliquesets:
            for c in r.conditions:
                if "=False" in c or "=Unknown" in c:
                    console.print(f"  [yellow]{r.name}: {c}[/yellow]")
        console.print()
    if summary.gangs:
        t = _table("podgang", "phase", "pods", "placement", "domain", "scheduled in", "priority")
        for g in summary.gangs:
            t.add_row(g.name, _phase(g.phase), f"{g.pods_bound}/{g.pods_total}",
                      g.placement or "-", g.domain or "-", fmt_duration(g.wait),
                      (f"{g.priority_class} ({g.priority})" if g.priority_class
                       else str(g.priority)) + (f", preempted x{g.preemptions}"
                                                if g.preemptions else ""))
        console.print(t)
        console.print()
    if summary.pending:
        console.print("[bold yellow]Pending gangs[/bold yellow]")
        for p in summary.pending:
            console.print(f"  [bold]{p.name}[/bold] (waiting {fmt_duration(p.waiting_for)}): "
                          f"{p.explanation}", highlight=False)
        console.print()
    if summary.events:
        t = _table("t", "type", "reason", "object", "message")
        for e in summary.events:
            count = f" (x{e.count})" if e.count > 1 else ""
            t.add_row(fmt_duration(e.t), Text(e.type, style="red" if e.type == "Warning"
                                               else ""), e.reason, e.object, e.message + count)
        if summary.events_hidden:
            console.print(f"[dim]Events ({summary.events_hidden} earlier not shown):[/dim]")
        console.print(t)
        console.print()
    failed = [s for s in record.steps if not s.ok]
    for s in failed:
        console.print(f"[red]step at {fmt_duration(s.t)} failed:[/red] {s.description}: "
                      f"{s.error}", highlight=False)
    style = "green" if record.meta.settled and not summary.pending else "yellow"
    console.print(f"[{style}]{headline(record, summary)}[/{style}]", highlight=False)


def machine_output(record: RunRecord, fmt: Literal["json", "yaml"]) -> str:
    """The run's outcome for scripts: the summary rows plus the run's metadata."""
    summary = summarize(record, event_limit=0)
    data: dict[str, Any] = {
        "meta": record.meta.model_dump(),
        "headline": headline(record, summary),
        **summary.to_dict(),
        "steps": [s.model_dump() for s in record.steps],
    }
    if fmt == "json":
        return json.dumps(data, indent=2, sort_keys=False) + "\n"
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
