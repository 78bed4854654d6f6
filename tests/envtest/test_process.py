"""Child processes are stopped with their whole process group."""

import os

import pytest

from phalanx.envtest import ManagedProcess, live_processes
from phalanx.envtest.wait import wait_until


def test_stop_kills_the_group_including_grandchildren(tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    proc = ManagedProcess("sh", ["sh", "-c", f"sleep 300 & echo $! > {pidfile}; wait"],
                          tmp_path / "sh.log").start()
    assert proc in live_processes()
    grandchild = int(wait_until(lambda: pidfile.exists() and pidfile.read_text().strip(),
                                10, what="the grandchild's pid"))
    proc.stop(grace=1.0)
    assert not proc.alive and proc not in live_processes()

    def gone():
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            return True
        with open(f"/proc/{grandchild}/stat") as f:  # a zombie awaiting its reaper is gone
            return f.read().split()[2] == "Z"

    wait_until(gone, 10, what="the grandchild to be killed")


def test_a_process_that_ignores_sigterm_is_killed_after_the_grace(tmp_path):
    proc = ManagedProcess("stubborn", ["sh", "-c", "trap '' TERM; sleep 300"],
                          tmp_path / "s.log").start()
    assert proc.stop(grace=0.3) is not None
    assert not proc.alive
    with pytest.raises(RuntimeError, match="already started"):
        proc.start()
