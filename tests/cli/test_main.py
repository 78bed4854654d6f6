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


def test_version_and_completion() -> None:
    from phalanx.cli.app import version_text

    for args in (("--version",), ("version",)):
        r = phalanx(*args)
        assert r.returncode == 0 and r.stdout.strip() == f"phalanx {version_text()}"
    r = phalanx("--help")
    assert "--install-completion" in r.stdout and "--show-completion" in r.stdout


def test_every_command_a_kubectl_user_reaches_for_exists() -> None:
    text = phalanx("--help").stdout
    for command in ("version", "run", "get", "describe", "explain", "validate", "export",
                    "diff", "operator", "scheduler", "manifests", "bench"):
        assert f"│ {command} " in text, command


def test_namespace_flags_are_named_alike_and_bench_help_is_right() -> None:
    for service in ("operator", "scheduler"):
        assert "--namespace" in phalanx(service, "--help").stdout
    bench = " ".join(phalanx("bench", "--help").stdout.split())
    assert "real kube-apiserver" in bench
    sched = " ".join(phalanx("bench", "scheduler", "--help").stdout.split())
    assert "[default: 5000]" in sched and "[default: 50000]" not in sched


def test_an_unreachable_api_server_leaves_no_unclosed_session(tmp_path) -> None:  # type: ignore
    kubeconfig = tmp_path / "kc.yaml"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: "
        "'https://127.0.0.1:1', insecure-skip-tls-verify: true}\nusers:\n- name: u\n  user: "
        "{token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
        "current-context: x\n")
    r = phalanx("scheduler", "--kubeconfig", str(kubeconfig), "--no-leader-elect",
                "--probe-port", "27953", "--metrics-port", "27954")
    assert r.returncode == 1
    assert "cannot reach the API server at https://127.0.0.1:1" in r.stderr
    assert "Unclosed client session" not in r.stderr and "Traceback" not in r.stderr


def test_the_exit_skips_the_last_collection_but_runs_exit_handlers() -> None:
    """The entry point freezes the collector on its way out (success or error), so that the
    interpreter does not walk the whole heap before exiting; atexit handlers still run, and
    the exit code is the command's."""
    probe = ("import atexit, gc, sys\n"
             "from phalanx.cli.main import main\n"
             "atexit.register(lambda: print('frozen at exit:', gc.get_freeze_count() > 0))\n"
             "sys.argv = ['phalanx', *sys.argv[1:]]\n"
             "main()\n")
    ok = subprocess.run([sys.executable, "-c", probe, "--help"], capture_output=True, text=True,
                        check=False)
    assert ok.returncode == 0 and "frozen at exit: True" in ok.stdout
    bad = subprocess.run([sys.executable, "-c", probe, "no-such-command"], capture_output=True,
                         text=True, check=False)
    assert bad.returncode == 2 and "frozen at exit: True" in bad.stdout
