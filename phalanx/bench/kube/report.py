"""The bench's result as a table: one row per scheduler and workload, then the ratio
phalanx / kube-scheduler. `markdown_table` is what bench/README.md shows."""

from __future__ import annotations

from typing import Any

COLUMNS = (  # (header, run field or None for computed, format)
    ("workload", "workload", "{}"),
    ("scheduler", "scheduler", "{}"),
    ("pods", "pods", "{}"),
    ("pods/s (binds)", "pods_per_second", "{:.0f}"),
    ("pods/s (from start)", "pods_per_second_from_start", "{:.0f}"),
    ("first bind s", "first_bind_seconds", "{:.2f}"),
    ("CPU ms/pod", "cpu_ms_per_pod", "{:.2f}"),
    ("API req/pod", "api_requests_per_pod", "{:.2f}"),
    ("gang p50 s", "gang_p50", "{:.2f}"),
    ("gang p99 s", "gang_p99", "{:.2f}"),
)
RATIO_KEYS = {"pods_per_second": "pods/s (binds)", "pods_per_second_from_start":
              "pods/s (from start)", "cpu_ms_per_pod": "CPU ms/pod",
              "api_requests_per_pod": "API req/pod", "gang_p50": "gang p50 s",
              "gang_p99": "gang p99 s"}


def _cell(run: dict[str, Any], field: str, fmt: str) -> str:
    if field.startswith("gang_p"):
        ttb = run.get("gang_time_to_bound_seconds")
        return fmt.format(ttb[field.removeprefix("gang_")]) if ttb else "-"
    value = run.get(field)
    return "-" if value is None else fmt.format(value)


def rows(result: dict[str, Any]) -> list[list[str]]:
    out = [[_cell(r, f, fmt) for _, f, fmt in COLUMNS] for r in result["runs"]]
    for workload, ratio in result.get("ratio_phalanx_over_kube", {}).items():
        row = [workload, "ratio phalanx/kube", ""]
        for header, _, _ in COLUMNS[3:]:
            key = next((k for k, h in RATIO_KEYS.items() if h == header), None)
            value = ratio.get(key) if key else None
            row.append("-" if value is None else f"{value:.2f}x")
        out.append(row)
    return out


def headers() -> list[str]:
    return [h for h, _, _ in COLUMNS]


def markdown_table(result: dict[str, Any]) -> str:
    lines = ["| " + " | ".join(headers()) + " |",
             "|" + "|".join("---" for _ in COLUMNS) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows(result)]
    return "\n".join(lines)


def rich_table(result: dict[str, Any]) -> Any:
    from rich.table import Table

    table = Table(title=f"{result['config']['nodes']} nodes, one kube-apiserver "
                        f"{result.get('versions', {}).get('kube-apiserver', '')}")
    for i, h in enumerate(headers()):
        table.add_column(h, justify="left" if i < 2 else "right")
    for r in rows(result):
        table.add_row(*r, style="bold" if r[1].startswith("ratio") else None)
    return table
