"""Output paths checked before a run starts, so a bad one fails in a second, not after it."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from phalanx.cli.errors import UserError


def check_writable(path: Path, flag: str, example: str) -> None:
    """Raise UserError (naming the flag, the path and why) unless `path` can be written:
    not a directory, no file where a directory must be, and the nearest existing directory
    accepts a new file (tried for real: /proc and read-only mounts say yes to access())."""
    if path.is_dir():
        raise UserError(f"{flag}: {path} is a directory; give a file name such as {example}")
    probe = path.parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise UserError(f"{flag}: cannot write {path}: {probe} is a file, not a directory")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".phalanx-probe-", dir=probe)
    except OSError as e:
        raise UserError(f"{flag}: cannot write {path}: cannot create a file in {probe} "
                        f"({e.strerror or e})") from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(tmp)


def write_error(flag: str, path: Path, err: OSError) -> UserError:
    """An OSError met while writing `path`, said about `path` (not a temporary file)."""
    return UserError(f"{flag}: cannot write {path}: {err.strerror or err}")
