"""`phalanx bench ...`: measured performance, written as JSON to bench/results/.

Other layers add their benchmarks as commands on `bench_app`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from phalanx.cli.app import app
from phalanx.cli.errors import UserError

bench_app = typer.Typer(
    help="Benchmarks: the scheduler and the whole stack on the embedded cluster (scheduler, "
         "e2e, trace), and against a real kube-apiserver next to kube-scheduler (kube, "
         "kubediff). Results are JSON files (bench/results/ by default); bench/README.md "
         "has the current figures and how to reproduce them.",
    no_args_is_help=True,
)
app.add_typer(bench_app, name="bench")

DEFAULT_OUT = Path("bench/results")


def require_profiler(profile: bool) -> None:
    """--profile needs pyinstrument, an optional dependency (the `bench` extra)."""
    import importlib.util

    if profile and importlib.util.find_spec("pyinstrument") is None:
        raise UserError("--profile: pyinstrument is not installed; install the bench extra "
                        "(pip install -e '.[bench]') or pip install pyinstrument")


def _parse_counts(text: str) -> list[int]:
    try:
        counts = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UserError(f"--scaling: expected comma-separated node counts like 500,1000,5000, got {text!r}") from None
    if not counts or any(c <= 0 for c in counts):
        raise UserError(f"--scaling: node counts must be positive, got {text!r}")
    return counts


@bench_app.command("scheduler")
def scheduler(
    nodes: Annotated[int, typer.Option(min=1, help="Nodes (8 GPUs, 96 cpu, 1Ti each).")
                     ] = 1000,
    pods: Annotated[int, typer.Option(min=1, help="Pods, in PodGangs of --gang-min..--gang-max "
                                      "members (the reference figures: --nodes 5000 --pods "
                                      "50000).")] = 5000,
    gang_min: Annotated[int, typer.Option(min=1, help="Smallest gang.")] = 8,
    gang_max: Annotated[int, typer.Option(min=1, help="Largest gang.")] = 64,
    seed: Annotated[int, typer.Option(help="Workload and tie-break seed.")] = 0,
    scaling: Annotated[str, typer.Option(help="Also run these node counts (comma-separated) with "
                                         "--scaling-pods pods each; empty to skip.")] = "",
    scaling_pods: Annotated[int, typer.Option(min=1, help="Pods per --scaling run.")] = 4000,
    events: Annotated[bool, typer.Option(help="Write Scheduled/FailedScheduling Events (as in production).")] = True,
    profile: Annotated[bool, typer.Option(help="Run under pyinstrument; write the profile next to the JSON.")] = False,
    gc_freeze: Annotated[bool, typer.Option(help="gc.freeze() after the informers sync (long-lived objects "
                                            "leave the cyclic GC's full collections).")] = False,
    service_gc: Annotated[bool, typer.Option(help="The garbage-collector settings `phalanx scheduler` and "
                                             "`phalanx run` use: --gc-freeze and their thresholds "
                                             "(phalanx/services/gctune.py). --no-service-gc: CPython's "
                                             "defaults.")] = True,
    dra: Annotated[bool, typer.Option(help="GPUs as DRA devices (a ResourceSlice per node) "
                                      "and one ResourceClaim per GPU pod, instead of "
                                      "nvidia.com/gpu.")] = False,
    spread: Annotated[float, typer.Option(min=0.0, max=1.0, help="Fraction of the gangs whose pods "
                                          "carry topologySpreadConstraints (maxSkew 1 over zones, "
                                          "DoNotSchedule; half of them also ScheduleAnyway over "
                                          "hostnames).")] = 0.0,
    pairs: Annotated[int, typer.Option(min=0, help="With --spread: run this many pairs of spread and "
                                       "no spread, alternating which goes first, and write their "
                                       "comparison (median and range of each ratio).")] = 0,
    out: Annotated[Path, typer.Option(help="Directory for the JSON results.")] = DEFAULT_OUT,
) -> None:
    """Schedule --pods gang pods on --nodes nodes through the full scheduler; report pods/s and
    p50/p99 time-to-schedule per gang (wall clock)."""
    from phalanx.scheduler.bench import BenchConfig, run_scaling, run_scheduler_bench, write_result

    if gang_min > gang_max:
        raise UserError(f"--gang-min ({gang_min}) must not exceed --gang-max ({gang_max})")
    require_profiler(profile)
    counts = _parse_counts(scaling) if scaling else []
    if pairs and not spread:
        raise UserError("--pairs compares spread with no spread: give --spread above 0")
    if pairs and (profile or counts):
        raise UserError("--pairs runs whole comparisons: drop --profile and --scaling")
    typer.echo(f"scheduling {pods} pods (gangs of {gang_min}-{gang_max}) on {nodes} nodes ...")
    from phalanx.services.gctune import SERVICE_THRESHOLDS

    cfg = BenchConfig(nodes=nodes, pods=pods, gang_min=gang_min, gang_max=gang_max, seed=seed,
                      events=events, profile=profile, gc_freeze=gc_freeze or service_gc, dra=dra,
                      spread_fraction=spread, gc_thresholds=SERVICE_THRESHOLDS if service_gc else None)
    # Result names: none for the product's collector settings, else which ones.
    gc_tag = "" if service_gc else "-gcfreeze" if gc_freeze else "-defaultgc"
    if pairs:
        from phalanx.scheduler.bench_compare import run_spread_pairs

        tag = f"spread{round(spread * 100)}" + gc_tag
        comparison, path = run_spread_pairs(cfg, pairs, out, tag, progress=typer.echo)
        ratio = comparison["pods_per_second_ratio"]
        typer.echo(f"  pods/s spread/plain: median {ratio['median']:.3f} ({ratio['min']} to {ratio['max']}); "
                   f"wrote {path}")
        return
    result = run_scheduler_bench(cfg)
    profile_text = result.pop("profile", "")
    path = write_result(result, out, f"scheduler-{nodes}n-{pods}p"
                        + gc_tag
                        + ("-dra" if dra else "") + (f"-spread{round(spread * 100)}" if spread else ""))
    tts = result["gang_time_to_schedule_seconds"]
    e2e = result["gang_end_to_end_seconds"]
    typer.echo(
        f"  {result['pods_bound']}/{pods} pods bound ({result['pods_with_spread']} with spread), {result['gangs_scheduled']}/{result['gangs']} gangs, "
        f"{result['pods_per_second']:.0f} pods/s ({result['us_per_pod']:.0f} us/pod wall, "
        f"{result['cpu_us_per_pod']:.0f} us/pod CPU)\n"
        f"  gang time-to-schedule p50 {tts['p50'] * 1000:.1f} ms, p99 {tts['p99'] * 1000:.1f} ms; "
        f"end-to-end from start p50 {e2e['p50']:.2f} s, p99 {e2e['p99']:.2f} s\n"
        f"  wrote {path}"
    )
    if profile_text:
        prof_path = path.with_suffix(".profile.txt")
        prof_path.write_text(profile_text)
        typer.echo(f"  profile: {prof_path}")
    if counts:
        typer.echo(f"scaling: {scaling_pods} pods on {', '.join(map(str, counts))} nodes ...")
        sc = run_scaling(counts, scaling_pods, gang_min, gang_max, seed=seed, events=events,
                         gc_freeze=cfg.gc_freeze, gc_thresholds=cfg.gc_thresholds)
        for row in sc["rows"]:
            t = row["gang_time_to_schedule_seconds"]
            typer.echo(f"  {row['nodes']:>6} nodes: {row['pods_per_second']:>7.0f} pods/s, "
                       f"{row['us_per_pod']:>6.0f} us/pod ({row['cpu_us_per_pod']:.0f} CPU), gang p50 {t['p50'] * 1000:.1f} ms, p99 {t['p99'] * 1000:.1f} ms")
        name = f"scheduler-scaling-{scaling_pods}p" + gc_tag
        typer.echo(f"  wrote {write_result(sc, out, name)}")


# Whole-stack benchmarks: e2e, trace, trace-gen.
from phalanx.bench import cli as _bench_cli  # noqa: E402,F401  (registers on bench_app)
# The differential test against kube-scheduler (phalanx/bench/kubediff/cli.py).
from phalanx.bench.kubediff import cli as _kubediff_cli  # noqa: E402,F401  (registers on bench_app)
# Grove's operator scale tests on a real API server (phalanx/bench/grovescale/cli.py).
from phalanx.bench.grovescale import cli as _grovescale_cli  # noqa: E402,F401  (registers on bench_app)


@bench_app.command("dra-fragmented")
def dra_fragmented(
    racks: Annotated[int, typer.Option(min=1, help="Racks of 16 nodes (8 GPUs each).")] = 8,
    seed: Annotated[int, typer.Option(help="Which GPUs are taken.")] = 0,
    out: Annotated[Path, typer.Option(help="Directory for the JSON results.")] = DEFAULT_OUT,
) -> None:
    """On racks with 1 or 3 free GPUs per node, one gang per rack whose members take two
    GPUs or else one: gangs placed with gang-aware device allocation and member by member."""
    from phalanx.bench.dra import run_fragmented
    from phalanx.scheduler.bench import write_result

    result = run_fragmented(racks, seed)
    for mode, r in result["runs"].items():
        typer.echo(f"  {mode:>10}: {r['gangs_placed']}/{r['gangs']} gangs placed "
                   f"({r['attempts']} attempts, {r['wall_seconds']} s)")
    typer.echo(f"  wrote {write_result(result, out, f'dra-fragmented-{racks}r-s{seed}')}")
