"""The `phalanx` command.

Each sub-command lives in its own module and registers itself on `app`; this module only
assembles them and turns expected errors into one clear line and a non-zero exit code.
"""

from __future__ import annotations

import sys

import typer

from phalanx.cli.app import app
from phalanx.cli.errors import run_cli
from phalanx.services.gctune import skip_collection_at_exit

# Sub-command modules register themselves on `app` when imported.
from phalanx.cli import manifests as _manifests  # noqa: F401,E402
from phalanx.cli import run as _run  # noqa: F401,E402
from phalanx.cli import explain as _explain  # noqa: F401,E402
from phalanx.cli import get as _get  # noqa: F401,E402
from phalanx.cli import tools as _tools  # noqa: F401,E402
from phalanx.cli import services as _services  # noqa: F401,E402
from phalanx.cli import bench as _bench  # noqa: F401,E402
from phalanx.cli import startup_wait as _startup_wait  # noqa: F401,E402


def main() -> None:
    try:
        run_cli(app, sys.argv[1:])
    finally:
        skip_collection_at_exit()


if __name__ == "__main__":
    main()

__all__ = ["app", "main", "typer"]
