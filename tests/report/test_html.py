import re
from pathlib import Path

from phalanx.report.html import render_html, write_html_report

from .synthetic import synthetic_record


def test_report_is_self_contained_with_its_plots() -> None:
    page = render_html(synthetic_record())
    assert page.startswith("<!DOCTYPE html>")
    # utilisation, lifecycle, placement before the preemption and at the end, wait times
    assert page.count("<svg") == 5
    for anchor in ("utilisation", "timeline", "placement-0", "placement", "wait-times"):
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


def _svg(page: str, anchor: str) -> str:
    start = page.index(f'id="{anchor}"')
    return page[start:page.index("</section>", start)]


def test_the_wait_card_says_p50_p95_and_max_as_the_cli_does() -> None:
    page = render_html(synthetic_record())
    assert "wait p50 / p95 / max" in page and "2s / 1m59s / 1m59s" in page


def test_a_gang_pending_after_preemption_shows_its_wait_since_then_not_its_old_one() -> None:
    wait = _svg(render_html(synthetic_record()), "wait-times")
    assert "still pending: 8m1s since its preemption" in wait
    assert "500ms" not in wait  # what its first placement took


def _reddish(colour: str) -> bool:
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return r > 180 and g < 120 and b < 120


def test_no_gang_is_drawn_in_the_red_of_preempted_and_pending() -> None:
    from phalanx.report.plots import GANG_PALETTE, PENDING_RED, STATE_COLOURS

    assert _reddish(STATE_COLOURS["Preempted"]) and _reddish(PENDING_RED)
    assert [c for c in GANG_PALETTE if _reddish(c)] == []


def test_scenario_step_labels_are_horizontal_text_above_the_plot() -> None:
    util = _svg(render_html(synthetic_record()), "utilisation")
    tag = re.search(r"<text[^>]*>[^<]*create PodCliqueSet train", util)
    assert tag is not None and not re.search(r"rotate\(-?90", tag.group(0))


def test_placement_before_a_preemption_shows_the_victims_old_place() -> None:
    from phalanx.sim.record import PodRecord

    rec = synthetic_record()
    for k, node in enumerate(("node-012", "node-013")):
        rec.pods.append(PodRecord(name=f"scavenger-0-w-{k}", gang="scavenger-0", node=node,
                                  phase="Running", gpu=8, created=0.5, bound=1.0, running=6.0,
                                  deleted=119.0))
    page = render_html(rec)
    before, end = _svg(page, "placement-0"), _svg(page, "placement")
    assert "Placement at 1m59s" in before and "just before the preemption at 1m59s" in before
    assert "scavenger-0 (preempted next)" in before
    assert "scavenger-0" not in end


def _many_gangs(n: int, pending: int):  # type: ignore[no-untyped-def]
    from phalanx.sim.record import GangRecord

    rec = synthetic_record()
    rec.gangs = []
    for i in range(n):
        g = GangRecord(name=f"g-{i:03d}", created=float(i), min_member=1)
        if i < n - pending:
            g.scheduled, g.phase = i + (i % 7) * 10.0 + 1, "Running"
        rec.gangs.append(g)
    return rec


def test_lifecycle_of_many_gangs_shows_the_pending_and_slowest_first() -> None:
    from phalanx.report.plots import MAX_TIMELINE_GANGS, timeline_gangs

    rec = _many_gangs(300, pending=12)
    shown, note = timeline_gangs(rec)
    assert len(shown) == MAX_TIMELINE_GANGS == 60
    assert {g.name for g in shown[:12]} == {f"g-{i:03d}" for i in range(288, 300)}
    waits = [g.wait_seconds for g in shown[12:]]
    assert waits == sorted(waits, reverse=True) and waits[0] == 61.0
    assert note == ("60 of 300 gangs shown: the 12 pending, then the 48 slowest to "
                    "schedule; 240 more in the PodGangs table")
    assert "240 more in the PodGangs table" in _svg(render_html(rec), "timeline")
    few, none = timeline_gangs(_many_gangs(10, pending=2))
    assert [g.name for g in few] == [f"g-{i:03d}" for i in range(10)] and none == ""


def test_names_repeated_across_namespaces_read_namespace_slash_name() -> None:
    from .synthetic import two_namespace_record

    page = render_html(two_namespace_record())
    assert "<code>team-a/pretrain</code>" in page and "<code>team-b/pretrain</code>" in page
    assert "<code>team-b/pretrain-0</code> has waited" in page
    assert "<code>team-a/" not in render_html(synthetic_record())
