import gc
import weakref

from phalanx.services.gctune import (
    SERVICE_THRESHOLDS,
    collect_rarely,
    freeze_after_warmup,
    skip_collection_at_exit,
)


def test_freeze_after_warmup_freezes_what_exists_and_collects_less_often():
    before = gc.get_threshold()
    try:
        held = [{"i": i} for i in range(1000)]  # start-up objects, still referenced
        frozen = freeze_after_warmup()
        assert frozen == gc.get_freeze_count() >= len(held)
        assert gc.get_threshold() == SERVICE_THRESHOLDS
        # Garbage cycles made afterwards are still collected.
        cycle = []
        cycle.append(cycle)
        del cycle
        assert gc.collect() >= 1
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_freeze_after_warmup_frees_young_garbage_instead_of_freezing_it():
    class Node:
        pass

    before = gc.get_threshold()
    freed: list[bool] = []
    try:
        gc.collect()
        cycle = Node()
        cycle.self = cycle  # only the collector can free it
        weakref.finalize(cycle, freed.append, True)
        del cycle
        freeze_after_warmup()
        assert freed == [True]
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_the_scheduler_service_tunes_by_default_and_can_be_told_not_to():
    from typer.testing import CliRunner

    from phalanx.cli.main import app
    from phalanx.services.scheduler import SchedulerServiceOptions

    assert SchedulerServiceOptions().tune_gc is True
    out = CliRunner().invoke(app, ["scheduler", "--help"])
    assert "--no-tune-gc" in out.output


def test_collect_rarely_sets_the_service_thresholds_from_the_start():
    before = gc.get_threshold()
    try:
        collect_rarely()
        assert gc.get_threshold() == SERVICE_THRESHOLDS
    finally:
        gc.set_threshold(*before)


def test_the_operator_service_tunes_by_default_and_can_be_told_not_to():
    from typer.testing import CliRunner

    from phalanx.cli.main import app
    from phalanx.services.operator import OperatorServiceOptions

    assert OperatorServiceOptions().tune_gc is True
    out = CliRunner().invoke(app, ["operator", "--help"])
    assert "--no-tune-gc" in out.output


def test_tuned_gc_tunes_inside_the_block_and_hands_the_process_back_as_it_was():
    from phalanx.services.gctune import tuned_gc

    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    held = [{"i": i} for i in range(1000)]
    with tuned_gc():
        assert gc.get_threshold() == SERVICE_THRESHOLDS
        assert gc.get_freeze_count() >= len(held)
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    with tuned_gc(enabled=False):
        assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_phalanx_run_simulates_with_the_services_collector_settings(monkeypatch):
    """The embedded cluster keeps every object as a model: `phalanx run` collects as the
    services do while it simulates, and leaves the process as it found it."""
    from pathlib import Path

    from typer.testing import CliRunner

    from phalanx.cli.main import app
    from phalanx.cluster import clock

    seen: list[tuple[int, int, int]] = []
    real = clock.run_virtual

    def run_virtual(coro):  # type: ignore[no-untyped-def]
        seen.append(gc.get_threshold())
        return real(coro)

    monkeypatch.setattr(clock, "run_virtual", run_virtual)
    example = Path(__file__).resolve().parents[2] / "examples" / "training-rack.yaml"
    before = gc.get_threshold()
    res = CliRunner().invoke(app, ["run", str(example), "--no-save", "-q"])
    assert res.exit_code == 0, res.output
    assert seen == [SERVICE_THRESHOLDS]
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_skip_collection_at_exit_leaves_existing_cycles_alone():
    """What exists when the process starts to exit is not collected any more (the system
    frees it); the collector still works for what comes after."""
    class Node:
        pass

    freed: list[bool] = []
    try:
        gc.collect()
        cycle = Node()
        cycle.self = cycle  # only the collector can free it
        weakref.finalize(cycle, freed.append, True).atexit = False
        del cycle
        skip_collection_at_exit()
        gc.collect()
        assert freed == []
    finally:
        gc.unfreeze()
    gc.collect()
    assert freed == [True]
