"""`python -m phalanx.bench.kube.profiled OUT.pstats ARGS...`: the `phalanx` command under
cProfile, timed in CPU time of the main thread (where the event loop and every scheduling
cycle run), so time the process spends waiting for a CPU on a busy machine, or in a
send() that wakes the API server first, is not counted as work. Stats are written at exit,
also on SIGTERM (the service stops gracefully and returns)."""

from __future__ import annotations

import cProfile
import sys
import time


def main() -> None:
    out, args = sys.argv[1], sys.argv[2:]
    from phalanx.cli.errors import run_cli
    from phalanx.cli.main import app

    profile = cProfile.Profile(time.thread_time)
    try:
        profile.runcall(run_cli, app, args)
    except SystemExit:
        pass
    finally:
        profile.dump_stats(out)


if __name__ == "__main__":
    main()
