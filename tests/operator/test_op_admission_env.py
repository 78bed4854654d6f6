"""Grove's webhook env rules (TestEnvVarValidation in pcs/validation, ported case by case)."""

from __future__ import annotations

from op_harness import make_pcs

from phalanx.api.core import Container, EnvVar
from phalanx.operator import default_podcliqueset, validate_podcliqueset

PATH = "spec.template.cliques[0].spec.podSpec.spec"


def _errors(containers=None, init=None) -> dict[str, str]:
    pcs = make_pcs("inference", [("worker", 1)])
    spec = pcs.spec.template.cliques[0].spec.pod_spec
    if containers is not None:
        spec.containers = containers
    spec.init_containers = init
    return {f: m for f, m in validate_podcliqueset(default_podcliqueset(pcs))
            if ".env" in f}


def _c(name: str, *env: str) -> Container:
    return Container(name=name, image="test:latest", env=[EnvVar(name=n) for n in env] or None)


def test_env_var_validation() -> None:
    # Valid env var names
    assert _errors([_c("main", "MY_VAR", "_PRIVATE", "Var123", "MY-VAR", "my.var")]) == {}
    # Env var name starting with digit
    errs = _errors([_c("main", "1VAR")])
    assert list(errs) == [f"{PATH}.containers[0].env[0].name"] and "'1VAR'" in errs[
        f"{PATH}.containers[0].env[0].name"]
    # Duplicate env var names in same container
    errs = _errors([_c("main", "MY_VAR", "MY_VAR")])
    assert list(errs) == [f"{PATH}.containers[0].env"] and "Duplicate" in errs[
        f"{PATH}.containers[0].env"]
    # Duplicate env var names in initContainers
    assert list(_errors(init=[_c("init", "INIT_VAR", "INIT_VAR")])) == [
        f"{PATH}.initContainers[0].env"]
    # Same env var name in different containers is valid
    assert _errors([_c("first", "SHARED_VAR"), _c("second", "SHARED_VAR")]) == {}
    # Empty env list
    assert _errors([_c("main")]) == {}
