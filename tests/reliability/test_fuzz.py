"""Bad input, fuzzed with hypothesis: PodCliqueSets, OperatorConfigurations and ClusterSpecs,
through admission (and the operator behind it) and through `phalanx run`.

Every input must be either accepted or rejected with a message: no traceback, no internal
error, no reconcile or scheduling cycle that crashes on what admission let in, and nothing
written when rejected (no stored object, no saved run).
"""

from __future__ import annotations

import contextlib
import io
import logging
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phalanx.api.errors import ManifestError
from phalanx.api.grove import PodCliqueSet, TopologyConstraint, TopologyPackConstraint
from phalanx.sim.runner import DEFAULT_TOPOLOGY_NAME
from phalanx.api.loader import load_yaml
from phalanx.backends.registry import BackendRegistry
from phalanx.bench.workload import job_podcliqueset, leader_workers_podcliqueset
from phalanx.cluster.client import ApiError, Invalid
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.operator.admission import install_admission
from phalanx.operator.manager import OperatorManager
from phalanx.sim.clusterspec import default_cluster_spec
from phalanx.sim.workload import embedded_default_config

from .fuzzing import mutated
from .invariants import env_int

EXAMPLES = env_int("PHALANX_RELIABILITY_EXAMPLES", 60)
# Fixed examples by default (the suite is reproducible); PHALANX_RELIABILITY_EXPLORE=1 draws
# new ones on every run, to hunt for bugs.
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                derandomize=not env_int("PHALANX_RELIABILITY_EXPLORE", 0),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _pcs_bases() -> list[dict[str, Any]]:
    packed = job_podcliqueset("packed", 4, 8, termination_delay="30m")
    packed.spec.template.topology_constraint = TopologyConstraint(
        topology_name=DEFAULT_TOPOLOGY_NAME, pack=TopologyPackConstraint(required="rack"))
    ordered = leader_workers_podcliqueset("serve", replicas=2, workers=2, group_replicas=2)
    ordered.spec.template.clique_startup_type = "CliqueStartupTypeExplicit"
    ordered.spec.template.cliques[2].spec.starts_after = ["leader"]
    kai = job_podcliqueset("on-kai", 2, 1, scheduler="kai-scheduler")
    return [_clean(p) for p in (job_podcliqueset("train", 3, 8), packed, ordered, kai)]


def _clean(pcs: PodCliqueSet) -> dict[str, Any]:
    d = pcs.to_dict()
    d.pop("status", None)
    return d


PCS_BASES = _pcs_bases()
CONFIG_BASE = embedded_default_config().to_dict()
_spec = default_cluster_spec()
_spec.spec.node_pools[0].count = 16
_spec.spec.node_pools[0].nodes_per = {"zone": 16, "block": 16, "rack": 8}
CLUSTER_BASE = _spec.to_dict()


class CrashLog(logging.Handler):
    """Log records carrying an exception that is not an API error: a crash somewhere."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.crashes: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and not isinstance(exc, ApiError):
            self.crashes.append(f"{record.name}: {record.getMessage()}: {type(exc).__name__}: {exc}")


@contextlib.contextmanager
def crash_log() -> Any:
    handler = CrashLog()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)


# ---------------------------------------------------------------------- admission


def _admit(text: str) -> str:
    """Load, admit, and (when admitted) let the operator act on it; returns the outcome."""
    try:
        objs = load_yaml(text, source="fuzz.yaml")
    except ManifestError as err:
        assert str(err).strip(), "a rejection must say why"
        return "rejected by the loader"
    assert len(objs) == 1

    async def main() -> str:
        cluster = MemoryCluster()
        config = embedded_default_config()
        install_admission(cluster, BackendRegistry.from_config(config))
        op = OperatorManager(cluster, config)
        await op.start()
        rv = cluster.resource_version
        try:
            await cluster.create(objs[0])
        except Invalid as err:
            assert err.message.strip() and err.field, (err.message, err.field)
            assert cluster.resource_version == rv and cluster.count(PodCliqueSet) == 0
            await op.stop()
            return "rejected by admission"
        await op.wait_idle(timeout=600)
        errors = {c.name: c.errors for c in op.controllers if c.errors}
        await op.stop()
        assert errors == {}, f"reconciles failed on an admitted object: {errors}"
        return "accepted"

    return run_virtual(main)


def test_fuzzed_podcliquesets_through_admission_and_the_operator(report) -> None:
    outcomes: Counter[str] = Counter()

    @FUZZ
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        base = data.draw(st.sampled_from(PCS_BASES))
        doc = data.draw(mutated(base))
        with crash_log() as log:
            outcomes[_admit(yaml.safe_dump(doc))] += 1
        assert log.crashes == []

    check()
    report(inputs_tried=sum(outcomes.values()), **{k.replace(" ", "_"): v for k, v in outcomes.items()})


# ---------------------------------------------------------------------- the CLI


def _phalanx_run(workdir: Path, workload: Any, config: Any, cluster: Any) -> tuple[int, str]:
    """`phalanx run` in-process on three documents; returns (exit code, stderr)."""
    from phalanx.cli.errors import run_cli
    from phalanx.cli.main import app

    files = {"workload.yaml": workload, "config.yaml": config, "cluster.yaml": cluster}
    for name, doc in files.items():
        (workdir / name).write_text(yaml.safe_dump(doc, allow_unicode=True))
    argv = ["run", str(workdir / "workload.yaml"), "--config", str(workdir / "config.yaml"),
            "--cluster", str(workdir / "cluster.yaml"), "--until", "2m", "--quiet",
            "--output", "json", "--save", str(workdir / "out" / "run.json")]
    err, out = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            run_cli(app, argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return code, err.getvalue()


def _check_cli(workload: Any, config: Any, cluster: Any, outcomes: Counter[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp, crash_log() as log:
        workdir = Path(tmp)
        code, stderr = _phalanx_run(workdir, workload, config, cluster)
        saved = (workdir / "out").exists()
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    assert log.crashes == []
    if code == 0:
        assert saved, "an accepted run saves its record"
        outcomes["accepted"] += 1
    else:
        assert code in (1, 2, 3), (code, stderr)
        # Notes and warnings on what the configuration sets may come first; then the refusal.
        said = [ln for ln in stderr.strip().splitlines()
                if not ln.startswith(("note:", "warning:", "Warning:", " "))]
        assert said and said[0].startswith(("error:", "Usage:")) and len(said[0]) > 10, stderr
        assert not saved, "a rejected run must write nothing"
        outcomes[f"rejected (exit {code})"] += 1


def _cli_test(target: str, report: Any) -> None:
    outcomes: Counter[str] = Counter()

    @FUZZ
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        docs = {"workload": data.draw(st.sampled_from(PCS_BASES)), "config": CONFIG_BASE,
                "cluster": CLUSTER_BASE}
        docs[target] = data.draw(mutated(docs[target]))
        _check_cli(docs["workload"], docs["config"], docs["cluster"], outcomes)

    check()
    report(inputs_tried=sum(outcomes.values()),
           **{k.replace(" ", "_").replace("(", "").replace(")", ""): v for k, v in sorted(outcomes.items())})


def test_fuzzed_podcliquesets_through_phalanx_run(report) -> None:
    _cli_test("workload", report)


def test_fuzzed_operator_configurations_through_phalanx_run(report) -> None:
    _cli_test("config", report)


def test_fuzzed_cluster_specs_through_phalanx_run(report) -> None:
    _cli_test("cluster", report)
