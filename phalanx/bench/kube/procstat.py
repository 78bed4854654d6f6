"""CPU time of a process from /proc, its children included (Linux).

`peak_rss_mb(pid)`: its peak resident memory.
`machine_busy_seconds()`: CPU seconds every process on the machine has used since boot (all
CPUs, idle and iowait left out), to tell how busy the machine was over a window.
`cpu_seconds(pid)`: utime + stime of the process and of every live descendant, plus
cutime + cstime (children it has already reaped), in seconds. Threads are part of their
process's counters. Read it while the process still runs: /proc forgets it at exit.
"""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def parse_stat(text: str) -> tuple[int, int, int, int, int, int]:
    """(pid, ppid, utime, stime, cutime, cstime) in clock ticks from a /proc/<pid>/stat line.

    The command name (field 2) is in parentheses and may hold spaces or parentheses itself,
    so fields are counted from the last ')'."""
    head, _, rest = text.rpartition(")")
    pid = int(head.split("(", 1)[0])
    fields = rest.split()
    # rest starts at field 3 (state): ppid is field 4, utime..cstime are fields 14..17.
    return (pid, int(fields[1]), int(fields[11]), int(fields[12]), int(fields[13]),
            int(fields[14]))


def _read(pid: int, proc: Path) -> tuple[int, int, int, int, int, int] | None:
    try:
        return parse_stat((proc / str(pid) / "stat").read_text())
    except (OSError, ValueError, IndexError):
        return None


def descendants(pid: int, proc: Path = PROC) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in proc.iterdir():
        if entry.name.isdigit():
            stat = _read(int(entry.name), proc)
            if stat is not None:
                children.setdefault(stat[1], []).append(stat[0])
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            out.append(child)
            todo.append(child)
    return out


def cpu_times(pid: int, proc: Path = PROC) -> tuple[float, float]:
    """(user, system) CPU seconds of `pid` and its descendants ((0, 0) when it is gone)."""
    own = _read(pid, proc)
    if own is None:
        return 0.0, 0.0
    user, system = own[2] + own[4], own[3] + own[5]
    for child in descendants(pid, proc):
        stat = _read(child, proc)
        if stat is not None:
            user += stat[2] + stat[4]
            system += stat[3] + stat[5]
    return user / _TICKS, system / _TICKS


def cpu_seconds(pid: int, proc: Path = PROC) -> float:
    """CPU seconds of `pid` and its descendants (0.0 when it is gone)."""
    return sum(cpu_times(pid, proc))


def machine_busy_seconds(proc: Path = PROC) -> float:
    """Busy CPU seconds of the whole machine since boot, from /proc/stat's `cpu` line:
    user, nice, system, irq, softirq and steal (guest time is inside user already)."""
    try:
        fields = (proc / "stat").read_text().split("\n", 1)[0].split()
        user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[1:9])
    except (OSError, ValueError):
        return 0.0
    return (user + nice + system + irq + softirq + steal) / _TICKS


def peak_rss_mb(pid: int, proc: Path = PROC) -> float:
    """The process's peak resident memory (VmHWM) in MiB (0.0 when it is gone)."""
    try:
        for line in (proc / str(pid) / "status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    return 0.0
