"""The progress line of `phalanx run`: objects being created, then virtual time passing."""

from __future__ import annotations

import time

from rich.console import Console


class RunProgress:
    """A transient bar, redrawn from the event loop at most every 80 ms of wall time (no
    refresh thread: the embedded cluster runs without threads)."""

    def __init__(self, console: Console) -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(
            TextColumn("[bold]{task.fields[phase]}[/bold]"), BarColumn(),
            TextColumn("{task.description}"), TimeElapsedColumn(), console=console,
            transient=True, auto_refresh=False,
        )
        self._task = self._progress.add_task("", total=None, phase="starting")
        self._last = 0.0

    def __enter__(self) -> RunProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def _due(self) -> bool:
        now = time.monotonic()
        if now - self._last < 0.08:
            return False
        self._last = now
        return True

    def creating(self, done: int, total: int) -> None:
        if done < total and not self._due():
            return
        self._progress.update(self._task, completed=done, total=total, phase="creating",
                              description=f"{done:,}/{total:,} objects")
        self._progress.refresh()

    def __call__(self, t: float, total: float | None, note: str = "") -> None:
        if not self._due():
            return
        from phalanx.report.format import fmt_duration

        label = f"t={fmt_duration(t)}" + (f" of {fmt_duration(total)}" if total else "")
        if note:
            label += f"  {note}"
        self._progress.update(self._task, completed=t, total=total, phase="simulating",
                              description=label)
        self._progress.refresh()
