"""Expected failures become one readable message and an exit code, never a traceback."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import typer
from rich.console import Console
from rich.markup import escape

err_console = Console(stderr=True, highlight=False)


class UserError(Exception):
    """A problem with what the user asked for (bad file, bad flag, impossible request)."""

    exit_code = 2


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
        err_console.print(f"[bold red]error:[/bold red] {escape(message)}", markup=True, soft_wrap=True)
        sys.exit(e.exit_code if isinstance(e, UserError) else 1)
    except KeyboardInterrupt:
        err_console.print("[red]Interrupted.[/red]")
        sys.exit(130)
    except Exception as e:  # a bug: say so plainly; the traceback is one env var away
        if os.environ.get("PHALANX_DEBUG"):
            raise
        err_console.print(
            f"[bold red]internal error:[/bold red] {type(e).__name__}: {escape(str(e))}\n"
            "This is a bug in Phalanx. Re-run with PHALANX_DEBUG=1 for the traceback.",
            markup=True,
            soft_wrap=True,
        )
        sys.exit(70)
