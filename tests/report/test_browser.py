"""The HTML report in a real browser: it loads, the plots render, and the page has content.

Set PHALANX_SCREENSHOT_DIR to keep the screenshots (to look at them, as a person would)."""

import os
import shutil
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
    # The browser parsed five inline SVG plots (placement before the preemption and at the
    # end) with their drawn shapes and text.
    assert dom.count("<svg") == 5
    assert dom.count("<path") > 50
    assert "Phalanx run report" in dom and "big-0" in dom
    shot = screenshot(page, tmp_path / "report.png", tmp_path / "profile")
    width, height = _png_size(shot)
    assert (width, height) == (1280, 3000)
    # A blank or failed render compresses to almost nothing; plots and tables do not.
    assert shot.stat().st_size > 60_000


def _keep(shot: Path, name: str) -> None:
    where = os.environ.get("PHALANX_SCREENSHOT_DIR")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(where) / name)


def test_issue_25_report_items_render_in_headless_chromium(tmp_path: Path) -> None:
    """The wait card (p50 / p95 / max), the step labels above the plot, the placement before
    the preemption, and a 300-gang lifecycle that shows the pending gangs first."""
    from .test_html import _many_gangs

    rec = synthetic_record()
    page = tmp_path / "report.html"
    write_html_report(rec, page)
    dom = dump_dom(page, tmp_path / "profile")
    assert "wait p50 / p95 / max" in dom and "2s / 1m59s / 1m59s" in dom
    assert "2m create PodCliqueSet train" in dom
    assert "Placement at 1m59s" in dom and "still pending: 8m1s since its preemption" in dom
    shot = screenshot(page, tmp_path / "issue25.png", tmp_path / "profile", "1280,4200")
    assert shot.stat().st_size > 60_000
    _keep(shot, "issue25-report.png")

    many = tmp_path / "many.html"
    write_html_report(_many_gangs(300, pending=12), many)
    dom = dump_dom(many, tmp_path / "profile")
    assert "60 of 300 gangs shown: the 12 pending" in dom
    timeline = dom[dom.index('id="timeline"'):]
    timeline = timeline[:timeline.index("</section>")]
    assert ">g-288<" in timeline and ">g-000<" not in timeline  # pending first, quick hidden
    shot = screenshot(many, tmp_path / "many.png", tmp_path / "profile", "1280,2600")
    _keep(shot, "issue25-300-gangs.png")
