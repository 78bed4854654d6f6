"""The bench's result as a table: one row per run (pair, scheduler, workload), then per
workload the ratio phalanx / kube-scheduler as the median of the pairs with their range.
`markdown_table` is what bench/README.md shows. The headline column is "pods/s to done":
from t0 until every pod is bound and the scheduler's own writes are finished."""

from __future__ import annotations

from typing import Any

COLUMNS = (  # (header, run field, format)
    ("workload", "workload", "{}"),
    ("scheduler", "scheduler", "{}"),
    ("pair", "pair", "{}"),
    ("pods", "pods", "{}"),
    ("pods/s to done", "pods_per_second_to_done", "{:.0f}"),
    ("pods/s (binds)", "pods_per_second", "{:.0f}"),
    ("pods/s (to last bind)", "pods_per_second_from_start", "{:.0f}"),
    ("first bind s", "first_bind_seconds", "{:.2f}"),
    ("writes trail s", "writes_trail", "{:.2f}"),
    ("CPU ms/pod", "cpu_ms_per_pod", "{:.2f}"),
    ("API req/pod", "api_requests_per_pod", "{:.2f}"),
    ("apiserver CPU ms/pod", "apiserver_cpu_ms_per_pod", "{:.2f}"),
    ("run CPU ms/pod", "run_cpu_ms_per_pod", "{:.2f}"),
    ("machine busy", "machine_busy_fraction", "{:.0%}"),
    ("nodes used", "nodes_used", "{}"),
    ("gang p50 s", "gang_p50", "{:.2f}"),
    ("gang p99 s", "gang_p99", "{:.2f}"),
)
RATIO_FIRST = 4  # the columns from here on have a ratio (where the run gives one)
RATIO_KEYS = {"pods_per_second_to_done": "pods/s to done", "pods_per_second": "pods/s (binds)",
              "pods_per_second_from_start": "pods/s (to last bind)",
              "cpu_ms_per_pod": "CPU ms/pod", "api_requests_per_pod": "API req/pod",
              "apiserver_cpu_ms_per_pod": "apiserver CPU ms/pod",
              "run_cpu_ms_per_pod": "run CPU ms/pod",
              "gang_p50": "gang p50 s", "gang_p99": "gang p99 s"}


def _cell(run: dict[str, Any], field: str, fmt: str) -> str:
    if field.startswith("gang_p"):
        ttb = run.get("gang_time_to_bound_seconds")
        return fmt.format(ttb[field.removeprefix("gang_")]) if ttb else "-"
    if field == "writes_trail":
        value = (run.get("own_writes") or {}).get("writes_trail_last_bind_seconds")
    else:
        value = run.get(field)
    return "-" if value is None else fmt.format(value)


def _ratio(entry: Any) -> str:
    if entry is None:
        return "-"
    if isinstance(entry, dict):  # median of the pairs, with their range
        if entry["min"] == entry["max"]:
            return f"{entry['median']:.2f}x"
        return f"{entry['median']:.2f}x ({entry['min']:.2f}-{entry['max']:.2f})"
    return f"{entry:.2f}x"


def rows(result: dict[str, Any]) -> list[list[str]]:
    out = [[_cell(r, f, fmt) for _, f, fmt in COLUMNS] for r in result["runs"]]
    pairs = len(result.get("ratio_phalanx_over_kube_by_pair") or ()) or 1
    for workload, ratio in result.get("ratio_phalanx_over_kube", {}).items():
        row = [workload, "ratio phalanx/kube", "median" if pairs > 1 else "", ""]
        for header, _, _ in COLUMNS[RATIO_FIRST:]:
            key = next((k for k, h in RATIO_KEYS.items() if h == header), None)
            row.append(_ratio(ratio.get(key)) if key else "-")
        out.append(row)
    return out


def headers() -> list[str]:
    return [h for h, _, _ in COLUMNS]


def markdown_table(result: dict[str, Any]) -> str:
    lines = ["| " + " | ".join(headers()) + " |",
             "|" + "|".join("---" for _ in COLUMNS) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows(result)]
    return "\n".join(lines)


# The terminal shows two tables, each with the identifying columns: the times, then the costs.
TABLE_SPLIT = 9  # COLUMNS[RATIO_FIRST:TABLE_SPLIT] are the times


def rich_tables(result: dict[str, Any]) -> list[Any]:
    """The table for a terminal, as two (times, costs), each narrow enough to read; the
    scheduler and ratio labels are never cut, whatever the width."""
    from rich.table import Table

    all_rows = rows(result)
    title = (f"{result['config']['nodes']} nodes, one kube-apiserver "
             f"{result.get('versions', {}).get('kube-apiserver', '')}")
    parts = (("times", range(RATIO_FIRST, TABLE_SPLIT)),
             ("costs", range(TABLE_SPLIT, len(COLUMNS))))
    tables = []
    for name, columns in parts:
        table = Table(title=f"{title}: {name}")
        keep = [*range(RATIO_FIRST), *columns]
        for i in keep:
            table.add_column(COLUMNS[i][0], justify="left" if i < 2 else "right",
                             no_wrap=i < RATIO_FIRST)
        for r in all_rows:
            table.add_row(*(r[i] for i in keep),
                          style="bold" if r[1].startswith("ratio") else None)
        tables.append(table)
    return tables
