"""Reading the logs of processes under test: every Python traceback in them.

Works on plain text logs (a `Traceback (most recent call last):` block up to the exception
line) and on JSON-lines logs (a traceback inside any string field, e.g. `exc_info`).
"""

from __future__ import annotations

import json
from typing import Any

MARK = "Traceback (most recent call last):"


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _text_blocks(lines: list[str]) -> list[str]:
    blocks: list[str] = []
    i = 0
    while i < len(lines):
        at = lines[i].find(MARK)
        if at < 0:
            i += 1
            continue
        block = [lines[i][at:]]
        i += 1
        # Frames and source lines are indented; chained tracebacks repeat the header.
        while i < len(lines) and (lines[i].startswith((" ", "\t")) or not lines[i].strip()
                                  or lines[i].startswith(MARK)):
            block.append(lines[i])
            i += 1
        if i < len(lines):
            block.append(lines[i])  # "SomeError: message"
            i += 1
        blocks.append("\n".join(block).rstrip())
    return blocks


def find_tracebacks(log: str) -> list[str]:
    """Every traceback in `log`, each as one string ending with the exception line."""
    found: list[str] = []
    plain: list[str] = []
    for line in log.splitlines():
        stripped = line.strip()
        if stripped.startswith("{") and MARK in stripped:
            try:
                record = json.loads(stripped)
            except ValueError:
                plain.append(line)
                continue
            found.extend(t for s in _strings(record) if MARK in s
                         for t in _text_blocks(s.splitlines()))
        else:
            plain.append(line)
    return found + _text_blocks(plain)
