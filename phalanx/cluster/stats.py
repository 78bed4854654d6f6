"""Request counters of the embedded cluster (for "API writes per pod" and friends)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

# Writes the garbage collector makes count under these verbs, so reports can tell them
# apart from what controllers wrote.
GC_VERBS = ("gc_update", "gc_delete")


@dataclass
class ClusterStats:
    """`writes[(verb, kind)]`: committed writes. `noops`: writes that changed nothing (the
    server answers them without a new resourceVersion or event). `reads[(verb, kind)]`."""

    writes: Counter[tuple[str, str]] = field(default_factory=Counter)
    noops: Counter[tuple[str, str]] = field(default_factory=Counter)
    reads: Counter[tuple[str, str]] = field(default_factory=Counter)
    watch_events: int = 0

    def total_writes(self, kind: str | None = None, verbs: Iterable[str] | None = None) -> int:
        verb_set = set(verbs) if verbs is not None else None
        return sum(
            n for (v, k), n in self.writes.items()
            if (kind is None or k == kind) and (verb_set is None or v in verb_set)
        )

    def reset(self) -> None:
        self.writes.clear()
        self.noops.clear()
        self.reads.clear()
        self.watch_events = 0

    def table(self) -> str:
        """Writes per kind and verb, one line each, for logs and reports."""
        rows = [f"{k:<24} {v:<14} {n:>9}" for (v, k), n in sorted(
            self.writes.items(), key=lambda item: (item[0][1], item[0][0]))]
        noop = sum(self.noops.values())
        rows.append(f"{'total':<24} {'':<14} {self.total_writes():>9}  (+{noop} no-op writes)")
        return "\n".join(rows)
