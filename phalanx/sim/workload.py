"""Reading what `phalanx run` is given: workload files, a cluster spec, an operator config.

Everything is loaded and validated before the simulation starts, so a bad file fails fast
with the file, document, object and field path, and nothing runs or gets written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from phalanx.api import registry
from phalanx.api.base import Resource
from phalanx.api.config import ConfigError, OperatorConfiguration, load_operator_config
from phalanx.api.duration import parse_duration
from phalanx.api.errors import ManifestError
from phalanx.api.grove import AnyTopology, ClusterTopology, ClusterTopologyBinding, PodCliqueSet
from phalanx.api.loader import load_file
from phalanx.scheduler import configfile
from phalanx.scheduler.configfile import KubeSchedulerConfiguration

from .clusterspec import ClusterSpec, default_cluster_spec
from .scenario import (
    ANNOTATION_EXIT_CODE,
    ANNOTATION_FAIL_AFTER,
    ANNOTATION_RUN_FOR,
    LIFECYCLE_ANNOTATIONS,
    Scenario,
    Step,
)

# File-only kinds: read by `phalanx run`, never stored in a cluster.
for _cls in (ClusterSpec, Scenario):
    _cls.SERVED = False  # type: ignore[attr-defined]
    if _cls.gvk() not in {(c.API_VERSION, c.KIND) for c in registry.kinds()}:
        registry.register(_cls)


@dataclass(slots=True)
class Workload:
    objects: list[Resource] = field(default_factory=list)  # created at t=0, in file order
    steps: list[Step] = field(default_factory=list)  # by time
    snapshot_every: float | None = None  # seconds between object snapshots (Scenario spec)
    cluster: ClusterSpec | None = None  # from a workload file (--cluster wins)
    cluster_source: str = ""
    operator_config: OperatorConfiguration | None = None
    config_source: str = ""
    scheduler_config: KubeSchedulerConfiguration | None = None
    scheduler_config_source: str = ""
    sources: list[str] = field(default_factory=list)

    @property
    def topology(self) -> AnyTopology | None:
        """The workload's ClusterTopologyBinding (else legacy ClusterTopology), if any."""
        return next((o for kind in (ClusterTopologyBinding, ClusterTopology)
                     for o in self.objects if isinstance(o, kind)), None)

    def podcliquesets(self) -> list[PodCliqueSet]:
        return [o for o in self.objects if isinstance(o, PodCliqueSet)]


def _check_path(path: Path) -> None:
    if not path.exists():
        raise FileNotFoundError(2, "No such file", str(path))
    if path.is_dir():
        raise ManifestError(f"{path} is a directory; pass YAML files", source=str(path))


def _check_lifecycle_notes(obj: Resource, source: str) -> None:
    """Scripted pod lifetimes must parse now, not fail silently mid-run; and each pod ends
    one way. `run-for` (Succeeded, exit code 0) and `fail-after` (Failed, a non-zero exit
    code) are never both in one place, nor a clique's run-for under a PodCliqueSet's
    fail-after (the failure would win, the narrower run-for silently lost); a PodCliqueSet's
    run-for with a clique's fail-after is the clique's own script, as intended."""
    own = obj.metadata.annotations
    places: list[tuple[str, dict[str, str]]] = [("metadata.annotations", own)]
    if isinstance(obj, PodCliqueSet):
        places += [(f"spec.template.cliques[{i}].annotations", c.annotations or {})
                   for i, c in enumerate(obj.spec.template.cliques)]

    def refuse(where: str, message: str) -> ManifestError:
        return ManifestError(f"{where}: {message}", source=source,
                             obj=f"{obj.kind}/{obj.name}")

    for where, notes in places:
        for key in LIFECYCLE_ANNOTATIONS:
            if key in notes:
                try:
                    if parse_duration(notes[key]) < 0:
                        raise ValueError("must not be negative")
                except ValueError as e:
                    raise refuse(f"{where}[{key}]", str(e)) from None
        if ANNOTATION_EXIT_CODE in notes:
            code = notes[ANNOTATION_EXIT_CODE]
            if not code.lstrip("-").isdigit():
                raise refuse(f"{where}[{ANNOTATION_EXIT_CODE}]", "must be an integer")
            if int(code) == 0:
                raise refuse(f"{where}[{ANNOTATION_EXIT_CODE}]", "must not be 0: it is the "
                             f"exit code of {ANNOTATION_FAIL_AFTER}, and a container exiting "
                             f"0 ends Succeeded (use {ANNOTATION_RUN_FOR} for that)")
        if ANNOTATION_RUN_FOR in notes and ANNOTATION_FAIL_AFTER in notes:
            raise refuse(where, f"{ANNOTATION_RUN_FOR} and {ANNOTATION_FAIL_AFTER} are both "
                         "set: a pod ends either Succeeded (run-for) or Failed (fail-after); "
                         "keep one")
        if notes is not own and ANNOTATION_RUN_FOR in notes and ANNOTATION_FAIL_AFTER in own:
            raise refuse(f"{where}[{ANNOTATION_RUN_FOR}]", "these pods would fail anyway, "
                         f"after the PodCliqueSet's {ANNOTATION_FAIL_AFTER} (metadata."
                         "annotations): a pod ends one way; set fail-after per clique instead")


def _check_apply_step(obj: Scenario, i: int, j: int, step: Step, data: dict,
                      source: str) -> Resource:
    where = f"Scenario {obj.name}: spec.steps[{i}].apply[{j}] (the step at {step.at})"
    try:
        inner = registry.from_dict(data)
    except ManifestError as e:
        raise ManifestError(f"{where}: {e}", source=source) from None
    if not registry.is_served(type(inner)):
        # ClusterSpec, Scenario, OperatorConfiguration, KubeSchedulerConfiguration: read
        # once when the run starts; no API server stores them, so creating one does nothing.
        raise ManifestError(f"{where}: a {inner.KIND} is read when the run starts, not "
                            "created by a step; give it as a workload file (or its flag)",
                            source=source)
    _check_lifecycle_notes(inner, source)
    return inner


def load_workload(paths: list[str | Path]) -> Workload:
    wl = Workload()
    scenario_steps: list[Step] = []
    for raw in paths:
        path = Path(raw)
        _check_path(path)
        objs = load_file(path)
        if not objs:
            raise ManifestError("the file holds no objects", source=str(path))
        wl.sources.append(str(path))
        for obj in objs:
            if isinstance(obj, Scenario):
                for i, step in enumerate(obj.spec.steps):
                    for j, data in enumerate(step.apply or []):
                        _check_apply_step(obj, i, j, step, data, str(path))
                scenario_steps.extend(obj.spec.steps)
                every = obj.spec.snapshot_seconds
                if every is not None:
                    wl.snapshot_every = every if wl.snapshot_every is None else \
                        min(wl.snapshot_every, every)
            elif isinstance(obj, ClusterSpec):
                if wl.cluster is not None:
                    raise ManifestError("only one ClusterSpec may be given", source=str(path))
                wl.cluster, wl.cluster_source = obj, str(path)
            elif isinstance(obj, OperatorConfiguration):
                if wl.operator_config is not None:
                    raise ManifestError("only one OperatorConfiguration may be given",
                                        source=str(path))
                wl.operator_config, wl.config_source = obj, str(path)
            elif isinstance(obj, KubeSchedulerConfiguration):
                if wl.scheduler_config is not None:
                    raise ManifestError("only one KubeSchedulerConfiguration may be given",
                                        source=str(path))
                configfile.check(obj, source=str(path))
                wl.scheduler_config, wl.scheduler_config_source = obj, str(path)
            else:
                _check_lifecycle_notes(obj, str(path))
                wl.objects.append(obj)
    wl.steps = sorted(scenario_steps, key=lambda s: s.seconds)
    return wl


def load_cluster_spec(path: str | Path | None, workload: Workload) -> tuple[ClusterSpec, str]:
    """--cluster FILE, else a ClusterSpec in the workload files, else the built-in default.
    (One in the workload files that --cluster replaces was checked when it was read; the
    CLI says it is not used.)"""
    if path is None:
        if workload.cluster is not None:
            return workload.cluster, workload.cluster_source
        return default_cluster_spec(), "built-in"
    p = Path(path)
    _check_path(p)
    specs = [o for o in load_file(p) if isinstance(o, ClusterSpec)]
    if len(specs) != 1:
        raise ManifestError(f"expected exactly one ClusterSpec (found {len(specs)})",
                            source=str(p))
    return specs[0], str(p)


def load_config(path: str | Path | None, workload: Workload) -> tuple[OperatorConfiguration,
                                                                       str]:
    """--config FILE, else one in the workload files, else `embedded_default_config()`.
    One in the workload files is checked even when --config replaces it (the CLI says it is
    not used)."""
    import phalanx.backends  # noqa: F401  (registers every backend's profile name first)

    inline = None
    if workload.operator_config is not None:
        try:
            inline = load_operator_config(workload.operator_config)
        except ConfigError as e:  # name the workload file it came from
            raise ConfigError(e.message, source=workload.config_source, obj=e.obj,
                              errors=e.errors) from None
    if path is not None:
        _check_path(Path(path))
        return load_operator_config(Path(path)), str(path)
    if inline is not None:
        return inline, workload.config_source
    return embedded_default_config(), "built-in"


def load_scheduler_config(path: str | Path | None, workload: Workload
                          ) -> tuple[KubeSchedulerConfiguration | None, str]:
    """--scheduler-config FILE, else one in the workload files, else None (the defaults)."""
    if path is not None:
        _check_path(Path(path))
        return configfile.load(path), str(path)
    return workload.scheduler_config, workload.scheduler_config_source


EMBEDDED_DEFAULT_PROFILE = "phalanx-scheduler"


def embedded_default_config() -> OperatorConfiguration:
    """Every registered backend enabled (so any schedulerName in a workload works out of the
    box), default-scheduler with gang scheduling on, pods that name no scheduler going to the
    Phalanx scheduler (the embedded cluster runs Phalanx's own), topology-aware scheduling on."""
    import phalanx.backends  # noqa: F401  (each backend registers itself on import)
    from phalanx.backends.base import known_backends

    names = sorted(known_backends())
    profiles: list[dict[str, object]] = []
    for name in names:
        entry: dict[str, object] = {"name": name}
        if name == "default-scheduler":
            entry["config"] = {"gangScheduling": True}
        profiles.append(entry)
    default = EMBEDDED_DEFAULT_PROFILE if EMBEDDED_DEFAULT_PROFILE in names else "default-scheduler"
    return load_operator_config({
        "apiVersion": OperatorConfiguration.API_VERSION,
        "kind": OperatorConfiguration.KIND,
        "scheduler": {"profiles": profiles, "defaultProfileName": default},
        # The embedded cluster always has a ClusterTopologyBinding (the cluster spec's levels).
        "topologyAwareScheduling": {"enabled": True},
    })
