"""Grove's operator scale tests (ai-dynamo/grove operator/e2e/tests/scale/), one test per
Grove test and named after it, on one real kube-apiserver 1.36 stack (phalanx/bench/
grovescale): kube-controller-manager, kube-scheduler with the Workload API (Grove's YAML
names default-scheduler), `phalanx operator` and the stand-in kubelet.

What differs from Grove's run, and why:
- The replica counts are Grove's times a factor (so at most 20 pods each), which CI can
  afford; `phalanx bench grove-scale` runs them at Grove's size.
- Grove's nodes are kwok nodes; ours are Nodes the stand-in kubelet runs pods on, with the
  label and taint Grove's workloads expect, 5 for every test.
- Grove's `steady-state-reconcile` phase (a no-op annotation, then a 30 s pprof window)
  measures CPU profiles and asserts nothing; it is left out. Its `operator-baseline` checks
  that the operator's pod did not restart: here the operator is a process, and a crash
  shows as a traceback in its log, which every test checks.
- SoakChurn runs 2 cycles with a 0.2 s hold (Grove: 10 cycles, 30 s), and checks that the
  operator's event-loop tasks and the server's open watches do not grow across cycles.
- PcsgScaleUp is ours (issue 28, Grove #847): a scaling group scaled up, timed until every
  new pod's gate is lifted.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from phalanx.bench.grovescale.runner import GroveScaleConfig, run_scenario
from phalanx.bench.grovescale.stack import ScaleStack, StackConfig

# Each milestone's wait: a few seconds on an idle machine, far more on a loaded one.
MILESTONE_TIMEOUT = 60.0
pytestmark = [pytest.mark.real_cluster,
              pytest.mark.timeout(3 * MILESTONE_TIMEOUT, func_only=True)]


@pytest.fixture(scope="module")
def stack() -> Iterator[ScaleStack]:
    from phalanx.envtest import BinariesNotFound, find_binaries

    try:
        find_binaries()
    except BinariesNotFound as err:
        pytest.skip(str(err))
    with ScaleStack(StackConfig(nodes=5)) as s:
        yield s


def run(stack: ScaleStack, scenario: str, factor: float = 1.0, **kw: Any) -> dict[str, Any]:
    cfg = GroveScaleConfig(scenario=scenario, factor=factor, nodes=5, floor=kw.pop("floor", False),
                           timeout=MILESTONE_TIMEOUT, **kw)
    r = run_scenario(stack, cfg, progress=lambda _line: None)
    missed = [(p["name"], k) for p in r["phases"] for k, v in p["milestones"].items()
              if v is None]
    assert not missed, f"milestones not reached: {missed}"
    assert r.get("final_check_problems") == [], r.get("final_check_problems")
    assert r["tracebacks"] == []
    assert not [k for k in r["api_errors"] if k.startswith("5")], r["api_errors"]
    return r


def pods_of(r: dict[str, Any], phase: str) -> int:
    return next(p["pods"] for p in r["phases"] if p["name"] == phase)


def test_ScaleTest_1000(stack: ScaleStack) -> None:
    r = run(stack, "ScaleTest_1000", 0.02)
    assert pods_of(r, "deploy") == 20 and pods_of(r, "delete") == 0


def test_ScaleUp_Tiny(stack: ScaleStack) -> None:
    r = run(stack, "ScaleUp_Tiny", floor=True)
    assert pods_of(r, "scale-up") == 10
    floor = r["floor"]
    assert floor["pods"] == 10 and floor["created_to_ready_seconds"] is not None
    assert r["ratio_to_floor"]["scale-up"] is not None


def test_ScaleUp_FromZero(stack: ScaleStack) -> None:
    r = run(stack, "ScaleUp_FromZero", 0.02)
    assert pods_of(r, "deploy") == 0 and pods_of(r, "scale-up") == 20


def test_ScaleUp(stack: ScaleStack) -> None:
    r = run(stack, "ScaleUp", 0.02)
    assert pods_of(r, "deploy") == 10 and pods_of(r, "scale-up") == 20


def test_ScaleDown_Tiny(stack: ScaleStack) -> None:
    r = run(stack, "ScaleDown_Tiny")
    assert pods_of(r, "deploy") == 10 and pods_of(r, "scale-down") == 0


def test_ScaleDown_ToZero(stack: ScaleStack) -> None:
    r = run(stack, "ScaleDown_ToZero", 0.02)
    assert pods_of(r, "deploy") == 20 and pods_of(r, "scale-down") == 0


def test_ScaleDown(stack: ScaleStack) -> None:
    r = run(stack, "ScaleDown", 0.02)
    assert pods_of(r, "deploy") == 20 and pods_of(r, "scale-down") == 10


def test_SoakChurn(stack: ScaleStack) -> None:
    r = run(stack, "SoakChurn", 0.1, soak_cycles=2, soak_hold=0.2)
    soak = r["soak"]
    assert [c["cycle"] for c in soak["cycles"]] == [1, 2]
    assert soak["base_replicas"] == 2 and soak["peak_replicas"] == 5
    # Same objects alive after each cycle: no task or watch left behind by the churn.
    first, last = soak["samples"][1], soak["samples"][-1]
    assert last["apiserver_watches"] <= first["apiserver_watches"]
    assert last["operator_asyncio_tasks"] <= first["operator_asyncio_tasks"] + 5


def test_PcsgScaleUp(stack: ScaleStack) -> None:
    r = run(stack, "PcsgScaleUp", 0.05)
    assert pods_of(r, "deploy") == 2 and pods_of(r, "scale-up") == 10
    m = next(p for p in r["phases"] if p["name"] == "scale-up")["milestones"]
    assert m["pods-created"] <= m["gates-lifted"] <= m["pods-ready"]
