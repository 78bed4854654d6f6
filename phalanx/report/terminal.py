"""kubectl-style tables of a run for the terminal, and the same data as JSON/YAML."""

from __future__ import annotations

import json
from typing import Any, Literal

import yaml
from rich.console import Console
from rich.markup import escape
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
    "Degraded": "red",
    "Deleted": "dim",
    "Terminating": "dim",
}


class _Rows:
    """Collects rows, then prints a kubectl-looking table: upper-case headers, no borders,
    columns two spaces apart. Nothing is ever cut or dropped: a long cell makes a long line,
    which the terminal wraps, as kubectl's tables do."""

    def __init__(self, *headers: str) -> None:
        self.headers = headers
        self.rows: list[tuple[str | Text, ...]] = []

    def add_row(self, *cells: str | Text) -> None:
        self.rows.append(cells)

    def lines(self) -> list[Text]:
        widths = [max([len(h)] + [len(str(r[i])) for r in self.rows])
                  for i, h in enumerate(self.headers)]
        out = [Text("  ".join(h.upper().ljust(w) for h, w in zip(self.headers, widths))
                    .rstrip(), style="bold")]
        for r in self.rows:
            line = Text()
            for i, (cell, w) in enumerate(zip(r, widths)):
                text = cell if isinstance(cell, Text) else Text(str(cell))
                line.append_text(text)
                if i < len(r) - 1:
                    line.append(" " * (w - len(text.plain) + 2))
            out.append(line)
        return out

    def print(self, console: Console) -> None:
        for line in self.lines():
            console.print(line, soft_wrap=True, crop=False, overflow="ignore")


def _table(*headers: str) -> _Rows:
    return _Rows(*headers)


def _phase(text: str) -> Text:
    return Text(text, style=_PHASE_STYLE.get(text, ""))


def print_tables(record: RunRecord, console: Console, summary: Summary | None = None) -> None:
    summary = summary or summarize(record)
    # Names repeat across namespaces: with more than one, a NAMESPACE column comes first
    # (as `kubectl get -A`) and other lines say namespace/name.
    spread = summary.spans_namespaces
    ns_col: tuple[str, ...] = ("namespace",) if spread else ()
    named = summary.display_names()

    def ns(namespace: str) -> tuple[str, ...]:
        return (namespace,) if spread else ()

    if summary.podcliquesets:
        t = _table(*ns_col, "podcliqueset", "scheduler", "replicas", "gangs", "pods running",
                   "status")
        for r in summary.podcliquesets:
            t.add_row(*ns(r.namespace), r.name, r.scheduler or "-", str(r.replicas),
                      f"{r.gangs_scheduled}/{r.gangs_total}", f"{r.pods_running}/{r.pods_total}",
                      _phase(r.status))
        t.print(console)
        for r in summary.podcliquesets:
            for c in r.conditions:  # the unhealthy ones (summary.py), and SchedulerCompatible
                if not c.startswith("SchedulerCompatible=True"):
                    console.print(f"  [yellow]{escape(named(r.namespace, r.name))}: "
                                  f"{escape(c)}[/yellow]", soft_wrap=True)
        console.print()
    if summary.gangs:
        t = _table(*ns_col, "podgang", "phase", "pods", "placement", "domain", "scheduled in",
                   "priority")
        for g in summary.gangs:
            t.add_row(*ns(g.namespace), g.name, _phase(g.phase), f"{g.pods_bound}/{g.pods_total}",
                      g.placement or "-", g.domain or "-", fmt_duration(g.wait),
                      (f"{g.priority_class} ({g.priority})" if g.priority_class
                       else str(g.priority)) + (f", preempted x{g.preemptions}"
                                                if g.preemptions else "")
                      + (f", updated {g.updates}" if g.updates else ""))
        t.print(console)
        console.print()
    if summary.pending:
        console.print("[bold yellow]Pending gangs[/bold yellow]")
        for p in summary.pending:
            where = f" -n {p.namespace}" if spread else ""
            more = (f" [dim](more: phalanx describe podgang {p.name}{where})[/dim]"
                    if p.details else "")
            console.print(f"  [bold]{named(p.namespace, p.name)}[/bold] "
                          f"(waiting {fmt_duration(p.waiting_for)}): "
                          f"{escape(p.explanation)}{more}", highlight=False, soft_wrap=True)
        console.print()
    if summary.events:
        # One event per line, message last and free to wrap: readable at any width.
        hidden = f", {summary.events_hidden} earlier not shown" if summary.events_hidden else ""
        console.print(f"[bold]Events[/bold][dim] (warnings and notable ones{hidden})[/dim]")
        w_t = max(len(fmt_duration(e.t)) for e in summary.events)
        w_reason = max(len(e.reason) for e in summary.events)
        for e in summary.events:
            count = f" (x{e.count})" if e.count > 1 else ""
            line = Text(f"  {fmt_duration(e.t):>{w_t}}  ")
            line.append(f"{e.type:<7}", style="red" if e.type == "Warning" else "")
            line.append(f"  {e.reason:<{w_reason}}  {e.object}: {e.message}{count}")
            console.print(line, soft_wrap=True)
        console.print()
    failed = [s for s in record.steps if not s.ok]
    for s in failed:
        console.print(f"[red]step at {fmt_duration(s.t)} failed:[/red] {s.description}: "
                      f"{s.error}", highlight=False)
    style = "green" if record.meta.settled and not summary.pending else "yellow"
    console.print(f"[{style}]{headline(record, summary)}[/{style}]", highlight=False,
                  soft_wrap=True)


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
