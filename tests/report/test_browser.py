"""The HTML report in a real browser: it loads, the plots render, and the page has content."""

import struct
from pathlib import Path

from phalanx.report.html import write_html_report

from .browser import dump_dom, screenshot
from .synthetic import synthetic_record


def _png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", header[16:24])


def test_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    write_html_report(synthetic_record(), page)
    dom = dump_dom(page, tmp_path / "profile")
    # The browser parsed four inline SVG plots with their drawn shapes and text.
    assert dom.count("<svg") == 4
    assert dom.count("<path") > 50
    assert "Phalanx run report" in dom and "big-0" in dom
    shot = screenshot(page, tmp_path / "report.png", tmp_path / "profile")
    width, height = _png_size(shot)
    assert (width, height) == (1280, 3000)
    # A blank or failed render compresses to almost nothing; plots and tables do not.
    assert shot.stat().st_size > 60_000
