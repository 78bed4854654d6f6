"""Admission and the start-up check of auto-MNNVL (Grove's internal/mnnvl webhook.go and
preflight.go; the feature is computedomain.py).

`grove.io/mnnvl-group` on the PodCliqueSet, a clique or a scaling group config: on create it
must be a DNS-1123 label or `none`, and anything but `none` is refused while
`network.autoMNNVLEnabled` is off (never admitted and ignored); on update it is immutable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from phalanx.api.computedomain import ComputeDomain
from phalanx.api.grove import PodCliqueSet

from .computedomain import ANNOTATION_MNNVL_GROUP, OPT_OUT

FieldErrors = list[tuple[str, str]]
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
NOT_ENABLED = ("MNNVL is not enabled in the operator configuration. Either enable MNNVL "
               f"globally or remove the {ANNOTATION_MNNVL_GROUP} annotation")


class MNNVLPreflightError(RuntimeError):
    """The operator cannot start: auto-MNNVL is on but the server serves no ComputeDomain."""


def _layers(pcs: PodCliqueSet) -> list[tuple[str, Mapping[str, str] | None, str | None]]:
    """(field path, annotations, identity across versions) of each annotated level."""
    t = pcs.spec.template
    out: list[tuple[str, Mapping[str, str] | None, str | None]] = [
        ("metadata.annotations", pcs.metadata.annotations, "pcs")]
    out += [(f"spec.template.cliques[{i}].annotations", c.annotations, f"clique/{c.name}")
            for i, c in enumerate(t.cliques)]
    out += [(f"spec.template.podCliqueScalingGroups[{i}].annotations", g.annotations,
             f"group/{g.name}") for i, g in enumerate(t.pod_clique_scaling_groups or ())]
    return out


def _value_error(value: str) -> str | None:
    if value == "":
        return "mnnvl-group value must not be empty"
    if value != OPT_OUT and (len(value) > 63 or not _DNS_LABEL.match(value)):
        return (f"mnnvl-group value {value!r} is not a valid DNS-1123 label: at most 63 "
                "lower-case letters, digits or '-', starting and ending with a letter or digit")
    return None


def mnnvl_errors(pcs: PodCliqueSet, old: PodCliqueSet | None, *, enabled: bool) -> FieldErrors:
    errs: FieldErrors = []
    if old is not None:
        before = {ident: (a or {}).get(ANNOTATION_MNNVL_GROUP) for _, a, ident in _layers(old)}
        for path, annotations, ident in _layers(pcs):
            if ident not in before:
                continue
            if (annotations or {}).get(ANNOTATION_MNNVL_GROUP) != before[ident]:
                errs.append((f"{path}[{ANNOTATION_MNNVL_GROUP}]", "field is immutable"))
        return errs
    for path, annotations, _ in _layers(pcs):
        if not annotations or ANNOTATION_MNNVL_GROUP not in annotations:
            continue
        value = annotations[ANNOTATION_MNNVL_GROUP]
        at = f"{path}[{ANNOTATION_MNNVL_GROUP}]"
        if (why := _value_error(value)) is not None:
            errs.append((at, f"Invalid value: {value!r}: {why}"))
        if not enabled and value != OPT_OUT:
            errs.append((at, f"Invalid value: {value!r}: {NOT_ENABLED}"))
    return errs


async def preflight(client: Any, enabled: bool) -> None:
    """Grove's Preflight: with the feature on, the server must serve ComputeDomain
    (resource.nvidia.com/v1beta1, NVIDIA's DRA driver's CRD). A client that cannot tell
    (the embedded cluster serves every kind) passes."""
    if not enabled:
        return
    serves = getattr(client, "serves", None)
    if serves is not None and not await serves(ComputeDomain):
        raise MNNVLPreflightError(
            "network.autoMNNVLEnabled is true but the ComputeDomain CRD "
            "(computedomains.resource.nvidia.com, resource.nvidia.com/v1beta1) is not "
            "installed: install NVIDIA's DRA driver for GPUs or disable autoMNNVLEnabled in "
            "the operator configuration")
