"""`phalanx bench grove-scale SCENARIO`: one of Grove's scale tests on a real API server."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from phalanx.bench.cli import _duration, _write
from phalanx.cli.bench import DEFAULT_OUT, bench_app
from phalanx.cli.errors import UserError

from .scenarios import SCENARIOS

H_SCENARIO = ("Grove's scale test: " + ", ".join(SCENARIOS) + " (PcsgScaleUp: a scaling group "
              "scaled up by 100 replicas, timed until every gate is lifted).")


@bench_app.command("grove-scale")
def grove_scale(
    scenario: Annotated[str, typer.Argument(help=H_SCENARIO)],
    factor: Annotated[float, typer.Option(min=0.001, help="Multiply Grove's replica counts "
                                          "(e.g. 0.1 on a small machine).")] = 1.0,
    nodes: Annotated[int | None, typer.Option(min=1, help="Worker nodes (default: Grove's "
                                              "count for the scenario).")] = None,
    scheduler: Annotated[str, typer.Option(help="kube-scheduler (Grove's YAML as written: "
                                           "default-scheduler, Workload API) or "
                                           "phalanx-scheduler.")] = "kube-scheduler",
    qps: Annotated[float, typer.Option(min=1, help="Client QPS of the operator, the scheduler "
                                       "and the floor client.")] = 2000.0,
    burst: Annotated[int, typer.Option(min=1, help="Client burst, the same for all.")] = 4000,
    floor: Annotated[bool, typer.Option(help="Measure the floor in the same run.")] = True,
    soak_cycles: Annotated[int | None, typer.Option(min=1, help="SoakChurn: cycles "
                                                    "(Grove: 10).")] = None,
    soak_hold: Annotated[str | None, typer.Option(help="SoakChurn: hold at the peak "
                                                  "(Grove: 30s).")] = None,
    timeout: Annotated[str, typer.Option(help="Longest wait for one milestone.")] = "15m",
    audit: Annotated[bool, typer.Option(help="Record every write in the API server's audit "
                                        "log and report writes by writer and call.")] = False,
    pod_scheduling_gate: Annotated[bool, typer.Option(
        help="Create pods with Grove's scheduling gate. --no-pod-scheduling-gate sets "
             "podSchedulingGate: false on the scheduler's profile (with kube-scheduler: "
             "default-scheduler with gangScheduling), which holds the pods itself.")] = True,
    out: Annotated[Path, typer.Option(help="Directory for the JSON results.")] = DEFAULT_OUT,
) -> None:
    """Run one of Grove's operator scale tests (operator/e2e/tests/scale) against
    kube-apiserver 1.36 with kube-controller-manager, `phalanx operator`, the scheduler and
    the stand-in kubelet, and the floor beside it: the same pod creates, binds and deletes
    made by a minimal client against the same server. Reports each milestone's time from
    its action, the ratio to the floor, and Grove's final checks."""
    from phalanx.envtest import BinariesNotFound

    from .runner import KUBE_SCHEDULER, PHALANX_SCHEDULER, GroveScaleConfig, run_grove_scale

    if scheduler not in (KUBE_SCHEDULER, PHALANX_SCHEDULER):
        raise UserError(f"--scheduler: {scheduler!r} is not kube-scheduler or phalanx-scheduler")
    cfg = GroveScaleConfig(
        scenario=scenario, factor=factor, nodes=nodes, scheduler=scheduler, qps=qps,
        burst=burst, floor=floor, timeout=_duration(timeout, "--timeout"),
        soak_cycles=soak_cycles, audit=audit, pod_scheduling_gate=pod_scheduling_gate,
        soak_hold=None if soak_hold is None else _duration(soak_hold, "--soak-hold"))
    try:
        cfg.resolved()
    except ValueError as e:
        raise UserError(str(e)) from None
    try:
        r = run_grove_scale(cfg, progress=lambda line: typer.echo(line, err=True))
    except BinariesNotFound as e:
        raise UserError(str(e)) from None
    except KeyboardInterrupt:
        typer.echo("interrupted: every process the bench started is stopped", err=True)
        raise typer.Exit(130) from None
    variant = "" if factor == 1.0 else f"-x{factor:g}"
    variant += "" if scheduler == KUBE_SCHEDULER else "-phalanx-scheduler"
    variant += "" if pod_scheduling_gate else "-gate-free"
    path = _write(r, out, f"grove-scale-{r['scenario']}{variant}")
    for phase in r["phases"]:
        ms = ", ".join(f"{k} {v}s" if v is not None else f"{k} NOT REACHED"
                       for k, v in phase["milestones"].items())
        typer.echo(f"  {phase['name']} ({phase['pods']} pods): {ms}")
    if r.get("floor"):
        f = r["floor"]
        typer.echo(f"  floor ({f['pods']} pods, minimal client): ready "
                   f"{f['created_to_ready_seconds']}s, gone {f['delete_to_gone_seconds']}s; "
                   f"ratio to floor {r['ratio_to_floor']}")
    if "soak" in r:
        typer.echo(f"  soak growth, first to last cycle: {r['soak']['growth']}")
    problems = r.get("final_check_problems") or []
    typer.echo(f"  final checks: {'; '.join(problems) if problems else 'passed'}")
    typer.echo(f"  wrote {path}")
    missed = [k for p in r["phases"] for k, v in p["milestones"].items() if v is None]
    if missed or problems or r["tracebacks"]:
        raise UserError(f"the scenario did not complete cleanly (results in {path})")
