"""Child processes that never outlive the harness.

Each process runs in its own session (so its own process group): `stop()` signals the whole
group, so helpers a binary spawns die with it. Three nets catch the cases a `finally` cannot:
- `atexit` stops every live process when the interpreter exits (also after Ctrl-C);
- SIGTERM to the harness (when nobody else handles it) becomes a normal exit, so `atexit`
  runs;
- on Linux the kernel sends SIGKILL to a child whose parent dies (PR_SET_PDEATHSIG), so even
  `kill -9` of the test runner leaves no kube-apiserver or etcd behind.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

_PR_SET_PDEATHSIG = 1
_live: dict[int, ManagedProcess] = {}
_lock = threading.Lock()
_hooks_installed = False


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except OSError:
        pass


def _on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def _install_hooks() -> None:
    global _hooks_installed
    if _hooks_installed:
        return
    _hooks_installed = True
    atexit.register(stop_all)
    if (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None)):
        signal.signal(signal.SIGTERM, _on_sigterm)


def stop_all() -> None:
    """Kill every process this harness started and that still runs (atexit's net)."""
    with _lock:
        procs = list(_live.values())
    for proc in procs:
        proc.stop(grace=0.0)


class ManagedProcess:
    """One child process with its output in `log_path`.

        proc = ManagedProcess("etcd", [etcd, "--data-dir", d], workdir / "etcd.log").start()
        proc.stop()            # SIGTERM to its group, SIGKILL after `grace` seconds
    """

    def __init__(self, name: str, argv: Sequence[str], log_path: Path, *,
                 env: Mapping[str, str] | None = None, cwd: Path | None = None) -> None:
        self.name = name
        self.argv = [str(a) for a in argv]
        self.log_path = log_path
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.popen: subprocess.Popen[bytes] | None = None

    def __repr__(self) -> str:
        state = "not started" if self.popen is None else (
            f"pid {self.pid}" if self.alive else f"exited {self.popen.returncode}")
        return f"<{self.name} {state}>"

    def start(self) -> ManagedProcess:
        if self.popen is not None:
            raise RuntimeError(f"{self.name} already started")
        _install_hooks()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        # PDEATHSIG follows the forking thread: only ask for it from the main thread, where
        # "the thread exits" means "the harness exits".
        main_thread = threading.current_thread() is threading.main_thread()
        with self.log_path.open("ab") as log:
            self.popen = subprocess.Popen(
                self.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=self.env, cwd=self.cwd, start_new_session=True,
                preexec_fn=_die_with_parent if main_thread and sys.platform == "linux" else None)
        with _lock:
            _live[self.popen.pid] = self
        return self

    @property
    def pid(self) -> int:
        if self.popen is None:
            raise RuntimeError(f"{self.name} was not started")
        return self.popen.pid

    @property
    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    @property
    def returncode(self) -> int | None:
        return None if self.popen is None else self.popen.poll()

    def log_text(self, tail: int | None = None) -> str:
        """The process's output so far (the last `tail` characters)."""
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return text if tail is None else text[-tail:]

    def _signal_group(self, sig: int) -> None:
        assert self.popen is not None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, sig)

    def kill(self) -> None:
        """SIGKILL the process group now (a crash, for tests); reaps the process."""
        self.stop(grace=0.0)

    def stop(self, grace: float = 5.0) -> int | None:
        """SIGTERM the group, SIGKILL it after `grace` seconds; returns the exit code."""
        if self.popen is None:
            return None
        if self.popen.poll() is None:
            self._signal_group(signal.SIGTERM if grace > 0 else signal.SIGKILL)
            try:
                self.popen.wait(timeout=grace if grace > 0 else 10)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                self.popen.wait(timeout=10)
        # Children left in the group (the leader exited first) go too.
        self._signal_group(signal.SIGKILL)
        with _lock:
            _live.pop(self.popen.pid, None)
        return self.popen.returncode


def live_processes() -> list[ManagedProcess]:
    """The processes started and not yet stopped (for leak checks)."""
    with _lock:
        return [p for p in _live.values() if p.alive]
