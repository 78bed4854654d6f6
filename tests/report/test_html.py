import re
from pathlib import Path

from phalanx.report.html import render_html, write_html_report

from .synthetic import synthetic_record


def test_report_is_self_contained_with_four_plots() -> None:
    page = render_html(synthetic_record())
    assert page.startswith("<!DOCTYPE html>")
    assert page.count("<svg") == 4
    for anchor in ("utilisation", "timeline", "placement", "wait-times"):
        assert f'id="{anchor}"' in page
    assert "<script" not in page
    # Nothing fetched from the network: the only URLs are XML namespaces.
    urls = set(re.findall(r'(?:src|href)="(https?://[^"]+)"', page))
    assert urls == set()
    # Text stays text (searchable, crisp): gang names appear as SVG text.
    assert re.search(r"<text[^>]*>[^<]*train-2", page)


def test_report_tables_name_pending_gangs_and_their_reason() -> None:
    page = render_html(synthetic_record())
    assert "big-0" in page and "every rack has at most 4 free nodes" in page
    assert "node-[008-011]" in page


def test_report_is_deterministic() -> None:
    assert render_html(synthetic_record()) == render_html(synthetic_record())


def test_write_replaces_atomically(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "r.html"
    write_html_report(synthetic_record(), out)
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert [p.name for p in out.parent.iterdir()] == ["r.html"]  # no temp file left behind
