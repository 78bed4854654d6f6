"""`--profile`: where `phalanx scheduler`'s time goes, from the cProfile files it wrote.

Times are CPU seconds of the scheduler's main thread (profiled.py). The profiled run is
slower than a plain one (cProfile hooks every call), so its numbers are for proportions
only; the measured runs are never profiled.
"""

from __future__ import annotations

import io
import pstats
from pathlib import Path

TOP = 40


def summarize(path: Path, top: int = TOP) -> str:
    out = io.StringIO()
    stats = pstats.Stats(str(path), stream=out)
    stats.strip_dirs()
    out.write(f"== {path.name}: by own time ==\n")
    stats.sort_stats("tottime").print_stats(top)
    out.write(f"== {path.name}: by cumulative time ==\n")
    stats.sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def summarize_profiles(folder: Path, top: int = TOP) -> str:
    files = sorted(folder.glob("*.pstats"))
    if not files:
        return f"no profile written in {folder} (did the scheduler exit cleanly?)\n"
    return "\n".join(summarize(f, top) for f in files)
