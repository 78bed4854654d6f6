"""Headless Chromium (Debian's package) for looking at reports the way a person does."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
]


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip(
        "headless Chromium is not installed (.ci/run installs Debian's `chromium`; "
        "locally: apt-get install -y chromium)"
    )


def _run(args: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    cmd = [chromium(), *FLAGS, f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def dump_dom(page: Path, profile: Path) -> str:
    """The DOM after the page loaded and rendered (what the browser built, not the file)."""
    r = _run(["--virtual-time-budget=2000", "--dump-dom", page.resolve().as_uri()], profile)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def screenshot(page: Path, out: Path, profile: Path, size: str = "1280,3000") -> Path:
    r = _run([f"--window-size={size}", f"--screenshot={out}", page.resolve().as_uri()], profile)
    assert r.returncode == 0 and out.exists(), r.stderr[-2000:]
    return out
