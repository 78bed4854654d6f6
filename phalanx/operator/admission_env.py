"""Container environment rules of Grove's PodCliqueSet webhook (validateContainerEnvVars):
every env var name is a valid name (IsEnvVarName) and unique within its container. Same
names in different containers are fine."""

from __future__ import annotations

import re

from phalanx.api.grove import PodCliqueSet

FieldErrors = list[tuple[str, str]]

# k8s.io/apimachinery validation.IsEnvVarName
_ENV_VAR_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_ENV_VAR_NAME_MSG = ("a valid environment variable name must consist of alphabetic "
                     "characters, digits, '_', '-', or '.', and must not start with a digit "
                     "(regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')")


def env_errors(pcs: PodCliqueSet) -> FieldErrors:
    errs: FieldErrors = []
    for i, c in enumerate(pcs.spec.template.cliques):
        # Grove's field path (its PodSpec sits under podSpec.spec in its errors).
        base = f"spec.template.cliques[{i}].spec.podSpec.spec"
        spec = c.spec.pod_spec
        for key, containers in (("containers", spec.containers),
                                ("initContainers", spec.init_containers)):
            for j, container in enumerate(containers or ()):
                path = f"{base}.{key}[{j}].env"
                seen: set[str] = set()
                dupes: list[str] = []
                for k, env in enumerate(container.env or ()):
                    if not _ENV_VAR_NAME.match(env.name):
                        errs.append((f"{path}[{k}].name",
                                     f"Invalid value: {env.name!r}: {_ENV_VAR_NAME_MSG}"))
                    if env.name in seen and env.name not in dupes:
                        dupes.append(env.name)
                    seen.add(env.name)
                if dupes:
                    errs.append((path, f"Duplicate value: {dupes}"))
    return errs
