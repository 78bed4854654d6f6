"""spec.volumes and spec.resourceClaims, as kube-apiserver validates them on pod creation.

Volumes: names are unique DNS labels; a volume has one source (none at all is an emptyDir:
the API server defaults it); a persistentVolumeClaim names its claim and not a claim that
the pod's own ephemeral volumes create; an ephemeral volume has a volumeClaimTemplate and a
claim name (`<pod>-<volume>`) that is a valid object name. The checks inside other sources
(paths, secrets, drivers) are not made here: the scheduler never reads them.

Resource claims: names are unique DNS labels; each names exactly one of resourceClaimName
and resourceClaimTemplateName, a valid object name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .fielderrors import (
    FieldErrors,
    dns_label_errors,
    dns_subdomain_errors,
    duplicate,
    each_invalid,
    forbidden,
    invalid,
    render,
    required,
)

# The sources in the order the API server looks at them, and the name each is reported
# under when it is one too many (its own spelling, typos included).
_SOURCES = (
    ("emptyDir", "emptyDir"), ("hostPath", "hostPath"), ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"), ("secret", "secret"), ("nfs", "nfs"),
    ("iscsi", "iscsi"), ("glusterfs", "glusterfs"), ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"), ("rbd", "rbd"),
    ("cinder", "cinder"), ("cephfs", "cephFS"), ("quobyte", "quobyte"),
    ("downwardAPI", "downwarAPI"), ("fc", "fc"), ("flexVolume", "flexVolume"),
    ("configMap", "configMap"), ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"), ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"), ("azureDisk", "azureDisk"),
    ("storageos", "storageos"), ("projected", "projected"), ("scaleIO", "scaleIO"),
    ("csi", "csi"), ("ephemeral", "ephemeral"), ("image", "image"),
)


def volume_errors(volumes: Sequence[Any], path: str,
                  pod_name: str | None) -> tuple[list[str], FieldErrors]:
    """(names of the valid volumes, every problem). Containers may mount only valid ones."""
    vols = [v if isinstance(v, dict) else {} for v in volumes]
    created = {f"{pod_name}-{v.get('name') or ''}" for v in vols
               if pod_name and v.get("ephemeral") is not None}
    valid: list[str] = []
    errs: FieldErrors = []
    for i, vol in enumerate(vols):
        at = f"{path}[{i}]"
        name = vol.get("name") or ""
        mine = _source_errors(vol, at, name, pod_name)
        if not name:
            mine.append(required(f"{at}.name"))
        else:
            mine += each_invalid(f"{at}.name", name, dns_label_errors(name))
        if name in valid:
            mine.append(duplicate(f"{at}.name", name))
        if mine:
            errs += mine
        else:
            valid.append(name)
        claim = vol.get("persistentVolumeClaim")
        if isinstance(claim, dict) and claim.get("claimName") in created:
            errs.append(invalid(f"{at}.persistentVolumeClaim.claimName", claim["claimName"],
                                "must not reference a PVC that gets created for an "
                                "ephemeral volume"))
    return valid, errs


def _source_errors(vol: dict[str, Any], path: str, name: str,
                   pod_name: str | None) -> FieldErrors:
    errs: FieldErrors = []
    counted = 0
    for key, reported in _SOURCES:
        source = vol.get(key)
        if source is None:
            continue
        if counted:
            errs.append(forbidden(f"{path}.{reported}", "may not specify more than 1 volume "
                                                        "type"))
            continue
        counted += 1
        if key == "persistentVolumeClaim":
            if not (isinstance(source, dict) and source.get("claimName")):
                errs.append(required(f"{path}.persistentVolumeClaim.claimName"))
        elif key == "ephemeral":
            errs += _ephemeral_errors(source, path, name, pod_name)
    return errs


def _ephemeral_errors(source: Any, path: str, name: str, pod_name: str | None) -> FieldErrors:
    if not (isinstance(source, dict) and source.get("volumeClaimTemplate") is not None):
        return [required(f"{path}.ephemeral.volumeClaimTemplate")]
    if not (pod_name and name):
        return []
    claim = f"{pod_name}-{name}"
    return [invalid(f"{path}.name", name, f"PVC name {render(claim)}: {why}")
            for why in dns_subdomain_errors(claim)]


def resource_claim_errors(claims: Sequence[Any], path: str, *, mirror: bool = False
                          ) -> tuple[list[str], FieldErrors]:
    """(the claim names containers may reference, every problem of spec.resourceClaims).
    `mirror`: a static pod's mirror, which may not use claims (reported without a field,
    as the API server does)."""
    names = sorted({c["name"] for c in claims if isinstance(c, dict) and c.get("name")})
    seen: set[str] = set()
    errs: FieldErrors = []
    for i, claim in enumerate(claims):
        if mirror:
            errs.append(forbidden("", "static pods do not support resource claims"))
            continue
        at = f"{path}[{i}]"
        claim = claim if isinstance(claim, dict) else {}
        name = claim.get("name") or ""
        if not name:
            errs.append(required(f"{at}.name"))
        elif name in seen:
            errs.append(duplicate(f"{at}.name", name))
        else:
            errs += each_invalid(f"{at}.name", name, dns_label_errors(name))
            seen.add(name)
        by_name = claim.get("resourceClaimName")
        by_template = claim.get("resourceClaimTemplateName")
        if by_name is not None and by_template is not None:
            errs.append(invalid(at, claim, "at most one of `resourceClaimName` or "
                                           "`resourceClaimTemplateName` may be specified"))
        if by_name is None and by_template is None:
            errs.append(invalid(at, claim, "must specify one of: `resourceClaimName`, "
                                           "`resourceClaimTemplateName`"))
        for field, value in (("resourceClaimName", by_name),
                             ("resourceClaimTemplateName", by_template)):
            if value is not None:
                errs += each_invalid(f"{at}.{field}", value, dns_subdomain_errors(str(value)))
    return names, errs
