"""Expected failures become one readable message and an exit code, never a traceback.

Every exit code of `phalanx` is defined here, once, and listed in `--help`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from enum import IntEnum

import typer
from rich.console import Console
from rich.markup import escape

err_console = Console(stderr=True, highlight=False)


class ExitCode(IntEnum):
    OK = 0
    BAD_INPUT = 1  # a file that is missing, unreadable or invalid (named: file, line, field)
    USAGE = 2  # a bad flag or argument, an unwritable output path, an unreadable saved run
    REJECTED = 3  # the cluster refused the workload (admission), or the run could not start
    PENDING = 4  # --fail-on-pending: PodGangs still pending at the end of the run
    STEP_FAILED = 5  # --strict: a Scenario step failed
    TOO_LARGE = 6  # the workload is beyond --max-pods / --max-objects (refused before running)
    INTERNAL = 70  # a bug in Phalanx
    INTERRUPTED = 130  # Ctrl-C


_MEANING = {
    ExitCode.OK: "success",
    ExitCode.BAD_INPUT: "a file is missing, unreadable or invalid (the message names the "
                        "file, line and field), or the API server cannot be reached",
    ExitCode.USAGE: "a bad flag or argument, an output path that cannot be written, or a "
                    "saved run that cannot be read",
    ExitCode.REJECTED: "the cluster refused the workload (admission; every rejected object "
                       "is listed), or the run could not start",
    ExitCode.PENDING: "run --fail-on-pending: PodGangs were still pending at the end",
    ExitCode.STEP_FAILED: "run --strict: a Scenario step failed",
    ExitCode.TOO_LARGE: "run: the workload is larger than --max-pods / --max-objects allow "
                        "(nothing was run)",
    ExitCode.INTERNAL: "internal error (a bug in Phalanx; PHALANX_DEBUG=1 shows the traceback)",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C)",
}

EXIT_CODES_HELP = "**Exit codes:** " + "; ".join(
    f"**{int(code)}** {meaning}" for code, meaning in _MEANING.items()) + "."


class UserError(Exception):
    """A problem with what the user asked for (bad file, bad flag, impossible request)."""

    exit_code = ExitCode.USAGE

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code  # type: ignore[assignment]


def fail(message: str, code: ExitCode) -> typer.Exit:
    """Print `error: message` and return the Exit to raise with `code`."""
    err_console.print(f"[bold red]error:[/bold red] {escape(message)}", soft_wrap=True)
    return typer.Exit(int(code))


def _expected_errors() -> tuple[type[BaseException], ...]:
    # Imported lazily so `phalanx --help` stays fast and layers stay optional.
    kinds: list[type[BaseException]] = [UserError, FileNotFoundError, IsADirectoryError]
    try:
        from phalanx.api.loader import ManifestError

        kinds.append(ManifestError)
    except ImportError:
        pass
    try:
        from phalanx.backends.registry import BackendConfigError, UnknownBackend

        kinds += [BackendConfigError, UnknownBackend]
    except ImportError:
        pass
    try:
        from phalanx.cluster.client import ApiError

        kinds.append(ApiError)
    except ImportError:
        pass
    return tuple(kinds)


def run_cli(app: typer.Typer, argv: Sequence[str]) -> None:
    """Run the app; usage errors are typer's, our expected errors become one line."""
    try:
        app(args=list(argv), prog_name="phalanx")
    except _expected_errors() as e:
        message = str(e) or type(e).__name__
        if isinstance(e, FileNotFoundError) and e.filename:
            message = f"no such file: {e.filename}"
        # escape: a message may hold brackets (an extra's name, an index) that are not markup
        err_console.print(f"[bold red]error:[/bold red] {escape(message)}", markup=True,
                          soft_wrap=True)
        sys.exit(int(e.exit_code) if isinstance(e, UserError) else int(ExitCode.BAD_INPUT))
    except KeyboardInterrupt:
        err_console.print("[red]Interrupted.[/red]")
        sys.exit(int(ExitCode.INTERRUPTED))
    except Exception as e:  # a bug: say so plainly; the traceback is one env var away
        if os.environ.get("PHALANX_DEBUG"):
            raise
        err_console.print(
            f"[bold red]internal error:[/bold red] {type(e).__name__}: {escape(str(e))}\n"
            "This is a bug in Phalanx. Re-run with PHALANX_DEBUG=1 for the traceback.",
            markup=True,
            soft_wrap=True,
        )
        sys.exit(int(ExitCode.INTERNAL))
