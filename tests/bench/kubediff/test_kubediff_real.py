"""kubediff in the real tier: phalanx-scheduler places pods as kube-scheduler 1.36 does.

CASES seeded random cases (seeds SEED, SEED + 1, ...; phalanx/bench/kubediff/generate.py)
are each placed by the real kube-scheduler and by phalanx-scheduler (in this process, on a
KubeCluster, with kube's default profile: LeastAllocated) on the shared control plane, one
case at a time (only its nodes exist meanwhile). They must agree on every case: schedulable
or not; when not, the per-reason node counts of `0/N nodes are available: ...`; and when
phalanx binds the pod, kube-scheduler must accept that node too (the pod pinned there).

The features in play are the ones phalanx implements (`available_features()`: topology
spread, host ports, volumes and DRA claims join as soon as their plugins are registered;
matchLabelKeys is merged into the selectors by kube-apiserver itself); any other set can be
run with `phalanx bench kubediff --features ...`. A failure lists each disagreeing
case's seed and the command that reproduces it alone.
"""

from __future__ import annotations

import asyncio

import pytest

from phalanx.bench.kubediff.features import available_features
from phalanx.bench.kubediff.generate import CASE_LABEL

CASES = 60
SEED = 20_000


def _describe(run) -> str:  # noqa: ANN001
    lines = [f"seed {run.case.seed} (uses {', '.join(run.case.uses)}):"]
    if run.error:
        lines.append(f"  error: {run.error}")
    for d in run.differences:
        if d.blocking:
            lines.append(f"  {d.kind}: {d.detail}")
    for name in ("kube", "phalanx"):
        outcome = getattr(run, name)
        if outcome is not None:
            lines.append(f"  {name}: {outcome.to_dict()}")
    return "\n".join(lines)


@pytest.mark.timeout(180)
def test_phalanx_scheduler_agrees_with_kube_scheduler(control_plane, kube_scheduler,
                                                        kube_namespace):
    from phalanx.bench.kubediff.session import run_cases

    features = available_features()

    async def main():
        async with control_plane.client() as kube:
            stray = await kube.transport.request("GET", "/api/v1/nodes")
            foreign = [n["metadata"]["name"] for n in stray.get("items") or ()
                       if CASE_LABEL not in (n["metadata"].get("labels") or {})]
            assert not foreign, (f"kube-scheduler counts every node: another test left nodes "
                                 f"on the shared server: {foreign}")
            return await run_cases(kube, kube_namespace, range(SEED, SEED + CASES), features)

    runs = asyncio.run(main())
    assert len(runs) == CASES
    bad = [r for r in runs if not r.agrees]
    command = (f"phalanx bench kubediff --cases 1 --features {','.join(features)} --seed "
               "<seed>")
    if bad:
        pytest.fail(f"{len(bad)}/{CASES} cases disagree (reproduce one: {command}):\n"
                    + "\n".join(_describe(r) for r in bad), pytrace=False)
    # The cases are not trivial: both verdicts occur, and phalanx's nodes were re-checked.
    assert any(r.kube.scheduled for r in runs) and any(not r.kube.scheduled for r in runs)
    assert sum(r.node_check == "feasible" for r in runs) >= CASES // 5
