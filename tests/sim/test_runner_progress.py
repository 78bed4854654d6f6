"""A run says how far it is while objects are created and while pods appear, not only as
virtual time passes (issue 25 item 7), and keeps every object's history for `get --at`."""

from pathlib import Path

from phalanx.cluster.clock import run_virtual
from phalanx.sim import admit
from phalanx.sim.runner import RunOptions, Simulation
from phalanx.sim.workload import load_cluster_spec, load_config, load_workload

from .fakes import mini_components
from .workloads import pcs


def _sim(tmp_path: Path, text: str, **opts: object) -> Simulation:
    f = tmp_path / "w.yaml"
    f.write_text(text)
    wl = load_workload([f])
    spec, _ = load_cluster_spec(None, wl)
    cfg, _ = load_config(None, wl)
    return Simulation(wl, spec, cfg, RunOptions(**opts), components=mini_components())


def test_creation_and_pods_are_reported_as_they_happen(tmp_path: Path, monkeypatch) -> None:
    # Creation reports come every PROGRESS_EVERY objects: fewer here, so that 150
    # PodCliqueSets (1,200 pods, for the thousands separator) give several of them.
    monkeypatch.setattr(admit, "PROGRESS_EVERY", 25)
    sim = _sim(tmp_path, "---\n".join(pcs(f"j{i}", pods=8) for i in range(150)),
               until=5.0)
    created: list[tuple[int, int]] = []
    notes: list[str] = []
    sim.create_progress = lambda done, total: created.append((done, total))
    sim.progress = lambda t, until, note: notes.append(note)
    run_virtual(sim.run())
    total = 151  # the ClusterTopology made from the cluster spec, and 150 PodCliqueSets
    assert created[0] == (0, total) and created[-1] == (total, total)
    assert [d for d, _ in created] == sorted(d for d, _ in created) and len(created) >= 4
    assert any(n.startswith("1,200 pods: ") for n in notes), notes[-3:]


def test_the_history_answers_get_at_any_time(tmp_path: Path) -> None:
    record = run_virtual(_sim(tmp_path, pcs("job", pods=2), until=60.0).run())
    assert record.history and record.history[0].t == 0.0
    _, label, early = record.objects_at(0.0)
    assert label == "history" and "Node" in early
    kinds = {c.kind for c in record.history}
    assert {"Pod", "PodGang", "PodCliqueSet", "Node"} <= kinds
    no_history = run_virtual(_sim(tmp_path, pcs("job", pods=2), until=60.0,
                                  history=False).run())
    assert no_history.history == []
