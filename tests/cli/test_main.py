"""The `phalanx` command as a user runs it: help everywhere, clean errors."""

import subprocess
import sys


def phalanx(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "phalanx.cli.main", *args], capture_output=True, text=True
    )


def test_help_lists_commands() -> None:
    r = phalanx("--help")
    assert r.returncode == 0
    assert "manifests" in r.stdout


def test_unknown_command_is_a_usage_error_not_a_traceback() -> None:
    r = phalanx("no-such-command")
    assert r.returncode == 2
    assert "No such command" in r.stderr
    assert "Traceback" not in r.stderr


def test_scheduler_lease_timing_is_checked_before_connecting() -> None:
    r = phalanx("scheduler", "--kubeconfig", "/nonexistent", "--leader-elect-lease-duration",
                "5s", "--leader-elect-renew-deadline", "5s")
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "--leader-elect-*" in r.stderr and "leaseDuration > renewDeadline" in r.stderr
    r = phalanx("scheduler", "--kubeconfig", "/nonexistent", "--leader-elect-retry-period", "2x")
    assert r.returncode != 0 and "Traceback" not in r.stderr and "2x" in r.stderr


def test_error_messages_keep_their_brackets() -> None:
    # Rich markup must not eat a message's own brackets (an extra's name, an index).
    r = phalanx("get", "podgang", "--run", "/nonexistent/[run].json")
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "[run]" in r.stderr, r.stderr
