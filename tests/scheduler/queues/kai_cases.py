"""Turn one KAI table (kai_rows.py) into pytest cases for the test modules named after KAI's
test files: one case per row, id = KAI's row name (a repeated name gets `#2`), rows the
harness cannot express left out (each module's docstring lists them with the reason, and
test_kai_tables.py checks that list is complete)."""

from __future__ import annotations

from typing import Any

import pytest

from . import kai_rows
from .kai_scenario import check, run_row, unsupported


def table(name: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = getattr(kai_rows, name)
    return rows


def row_ids(name: str) -> list[str]:
    seen: dict[str, int] = {}
    ids = []
    for row in table(name):
        seen[row["Name"]] = seen.get(row["Name"], 0) + 1
        n = seen[row["Name"]]
        ids.append(row["Name"] if n == 1 else f"{row['Name']} #{n}")
    return ids


def cases(name: str, known_failures: dict[str, str] | None = None) -> list[Any]:
    """pytest params for the rows of `name` that the harness can express. `known_failures`
    maps a row id to why Phalanx differs from KAI there: those rows run as strict xfail,
    so a fix shows up as an unexpected pass."""
    known = dict(known_failures or {})
    out = []
    for rid, row in zip(row_ids(name), table(name), strict=True):
        if unsupported(row):
            continue
        marks = [pytest.mark.xfail(strict=True, reason=known.pop(rid))] if rid in known else []
        out.append(pytest.param(row, id=rid, marks=marks))
    assert not known, f"known failures name no runnable row: {sorted(known)}"
    return out


def unsupported_ids(name: str) -> dict[str, str]:
    return {rid: why for rid, row in zip(row_ids(name), table(name), strict=True)
            if (why := unsupported(row))}


def run_and_check(name: str, row: dict[str, Any]) -> None:
    out = run_row(row, resubmit=name.startswith("INTEGRATION"))
    problems = check(row, out)
    assert not problems, "\n".join(problems)
