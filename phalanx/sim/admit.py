"""Creating a workload's objects in the embedded cluster, and checking them without a run.

Every object is offered to the API server (and its admission: the operator's PodCliqueSet
webhook, the built-in checks); every refusal is collected, so a user fixes all of them in
one go rather than one per run. `validate` does only that, on a cluster with nodes but no
controllers: `phalanx validate` and `phalanx run --dry-run`. It applies what `phalanx run`
applies: the operator's admission as the run installs it (the topology rules when
topology-aware scheduling is on, auto-MNNVL, the backends), and a Scenario's `apply` of an
object that exists is an update (validated against the stored object, as the run's step
does; a Scenario `delete` before it is done too, so a later `apply` creates again).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from phalanx.api import registry
from phalanx.api.base import Resource
from phalanx.api.config import OperatorConfiguration
from phalanx.api.errors import ManifestError
from phalanx.cluster.client import AlreadyExists, ApiError, Invalid, NotFound
from phalanx.cluster.memory import MemoryCluster

from .workload import Workload

# First objects to create: what others refer to (priorities, topology, namespaces).
CREATE_FIRST = ("Namespace", "PriorityClass", "ClusterTopologyBinding", "ClusterTopology")
PROGRESS_EVERY = 250  # objects between two progress reports while creating

CreateProgress = Callable[[int, int], None]  # (created so far, total)


class RunFailed(Exception):
    """The run cannot produce a meaningful result (objects the cluster rejects, a
    ClusterTopology the nodes cannot carry)."""

    exit_code = 3


@dataclass(slots=True)
class Admitted:
    """What `validate` found: objects accepted, and each refusal in words."""

    accepted: list[str] = field(default_factory=list)  # "PodCliqueSet pretrain"
    rejected: list[str] = field(default_factory=list)  # "PodCliqueSet x: <why>"
    # Admitted with warnings (fields the scheduler backend ignores): "PodCliqueSet x: <what>"
    warnings: list[str] = field(default_factory=list)


def creation_order(objs: list[Resource]) -> list[Resource]:
    return sorted(objs, key=lambda o: CREATE_FIRST.index(o.kind)
                  if o.kind in CREATE_FIRST else len(CREATE_FIRST))


async def create_all(client: MemoryCluster, objs: list[Resource],
                     progress: CreateProgress | None = None) -> Admitted:
    """Create each object (a copy); refusals are collected, not raised."""
    out = Admitted()
    for i, obj in enumerate(objs):
        if progress is not None and i % PROGRESS_EVERY == 0:
            progress(i, len(objs))
        try:
            client.last_warnings = []
            await client.create(obj.copy_deep())
            out.accepted.append(f"{obj.kind} {obj.name}")
            out.warnings += [f"{obj.kind} {obj.name}: {w}" for w in client.last_warnings]
        except Invalid as e:
            # The API's message already names the object and the field.
            out.rejected.append(f"{obj.kind} {obj.name}: {e.message}")
        except ApiError as e:
            out.rejected.append(f"{obj.kind} {obj.name}: could not create it: {e.message}")
    if progress is not None:
        progress(len(objs), len(objs))
    return out


def rejection_message(rejected: list[str]) -> str:
    if len(rejected) == 1:
        return f"admission rejected {rejected[0]}"
    return f"admission rejected {len(rejected)} objects:\n" + "\n".join(
        f"  {r}" for r in rejected)


async def create_workload(client: MemoryCluster, objs: list[Resource],
                          progress: CreateProgress | None = None) -> None:
    """Create the workload; RunFailed listing every object the cluster refused."""
    admitted = await create_all(client, creation_order(objs), progress)
    if admitted.rejected:
        raise RunFailed(rejection_message(admitted.rejected))


async def validate(workload: Workload, config: OperatorConfiguration,
                   nodes: list[Resource], extra: list[Resource]) -> Admitted:
    """Admission checks of every object, and of those the Scenario applies later, on a
    cluster with the nodes and the operator's admission but no controllers."""
    import phalanx.backends  # noqa: F401  (each backend registers itself on import)
    from phalanx.api.config import default_operator_config
    from phalanx.backends.registry import BackendRegistry
    from phalanx.operator.admission import install_admission

    client = MemoryCluster()
    for node in nodes:
        await client.create(node)
    # The operator's admission, with the backends the configuration enables, installed as
    # the run's OperatorManager installs it.
    cfg = default_operator_config(config.model_copy(deep=True))
    install_admission(client, BackendRegistry.from_config(cfg),
                      topology_aware=cfg.topology_aware_scheduling.enabled,
                      auto_mnnvl=cfg.network.auto_mnnvl_enabled)
    admitted = await create_all(client, creation_order([*extra, *workload.objects]))
    for i, step in enumerate(workload.steps):
        if step.delete is not None:
            await _delete(client, step.delete)
        for j, data in enumerate(step.apply or ()):
            try:
                obj = registry.from_dict(data)
            except ManifestError as e:
                admitted.rejected.append(f"step {i + 1} apply[{j}]: {e}")
                continue
            await _apply(client, obj, step.at, admitted)
    return admitted


async def _apply(client: MemoryCluster, obj: Resource, at: str, admitted: Admitted) -> None:
    """The run's `apply` step (sim/steps.py run_step): create, or replace what exists."""
    client.last_warnings = []
    try:
        await client.create(obj.copy_deep())
        admitted.accepted.append(f"{obj.kind} {obj.name} (at {at})")
        admitted.warnings += [f"{obj.kind} {obj.name} (at {at}): {w}"
                              for w in client.last_warnings]
        return
    except AlreadyExists:
        pass
    except ApiError as e:
        admitted.rejected.append(f"{obj.kind} {obj.name} (at {at}): {e.message}")
        return
    new = obj.copy_deep()
    ns = new.namespace or ("default" if type(new).NAMESPACED else None)
    new.metadata.namespace = ns
    try:
        current = await client.get(type(new), new.name, ns)
        new.metadata.resource_version = current.metadata.resource_version
        new.metadata.uid = current.metadata.uid
        client.last_warnings = []
        await client.update(new)
        admitted.accepted.append(f"{obj.kind} {obj.name} (at {at}, an update)")
        admitted.warnings += [f"{obj.kind} {obj.name} (at {at}, an update): {w}"
                              for w in client.last_warnings]
    except ApiError as e:
        admitted.rejected.append(f"{obj.kind} {obj.name} (at {at}, an update): {e.message}")


async def _delete(client: MemoryCluster, target: object) -> None:
    """A Scenario `delete` step, so that a later `apply` of the object creates it again."""
    try:
        kind = registry.resolve(getattr(target, "kind", ""))
    except LookupError:
        return  # the run reports the step; nothing here depends on it
    ns = (getattr(target, "namespace", None) or "default") if kind.NAMESPACED else None
    try:
        await client.delete(kind, getattr(target, "name", ""), ns)
    except (NotFound, ApiError):
        pass
