"""The API server's audit log, for telling apart what each client wrote.

The harness's policy records (at Metadata level) every write by a service account and
nothing else: the tests' own admin client stays out of the log, and a process that runs
with its own service-account token (`ControlPlane.service_account_kubeconfig`) can be
checked for the writes it made, e.g. "the standby replica wrote nothing". Reads are not
recorded (a standby polling its Lease would fill the log).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")

POLICY: dict[str, Any] = {
    "apiVersion": "audit.k8s.io/v1", "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        {"level": "Metadata", "userGroups": ["system:serviceaccounts"],
         "verbs": list(WRITE_VERBS)},
        {"level": "None"},
    ],
}


AUDIT_LOG_MAX_MB = 1_000_000  # 1 TB: never reached


def audit_args(workdir: Path) -> tuple[list[str], Path]:
    """kube-apiserver flags for the policy above, and the log they write."""
    policy, log = workdir / "audit-policy.yaml", workdir / "audit.log"
    policy.write_text(yaml.safe_dump(POLICY, sort_keys=False))
    # Never rotated: readers keep a byte offset into this file. With --audit-log-maxsize
    # left at 0 the file was replaced once it passed 100 MB (the rotating writer's own
    # default): the 8th of a 5,000-pod `bench kube`'s 12 runs then read no writes at all.
    return [f"--audit-policy-file={policy}", f"--audit-log-path={log}",
            "--audit-log-format=json", "--audit-log-maxbackup=0",
            f"--audit-log-maxsize={AUDIT_LOG_MAX_MB}"], log


@dataclass(frozen=True)
class AuditEvent:
    user: str
    verb: str
    resource: str  # "pods", "pods/binding", "leases", ...
    namespace: str
    name: str
    code: int
    at: str  # requestReceivedTimestamp (RFC 3339, microseconds)

    def __str__(self) -> str:
        return f"{self.at} {self.user} {self.verb} {self.resource} {self.namespace}/{self.name}"


def completed_records(path: Path | None, offset: int = 0) -> list[dict[str, Any]]:
    """The raw records of completed requests (stage ResponseComplete) written after byte
    `offset` of the log, oldest first; a line still being written is skipped."""
    if path is None:
        return []
    try:
        with path.open("rb") as f:
            size = f.seek(0, 2)
            if size < offset:
                raise RuntimeError(f"{path} is shorter ({size} bytes) than the offset read "
                                   f"from ({offset}): the log was rotated or truncated")
            f.seek(offset)
            data = f.read()
    except FileNotFoundError:
        return []
    out = []
    for line in data.splitlines():
        try:
            raw = json.loads(line)
        except ValueError:
            continue  # a line being written
        if raw.get("stage") == "ResponseComplete":
            out.append(raw)
    return out


def read_audit_log(path: Path, *, user: str | None = None) -> list[AuditEvent]:
    """Every recorded write (completed stage), oldest first; `user` filters by username."""
    out = []
    for raw in completed_records(path):
        name = (raw.get("user") or {}).get("username", "")
        if user is not None and name != user:
            continue
        ref = raw.get("objectRef") or {}
        resource = ref.get("resource", "")
        if ref.get("subresource"):
            resource += "/" + ref["subresource"]
        out.append(AuditEvent(name, raw.get("verb", ""), resource, ref.get("namespace", ""),
                              ref.get("name", ""), int((raw.get("responseStatus") or {})
                                                       .get("code", 0)),
                              raw.get("requestReceivedTimestamp", "")))
    return out


def client_errors(events: list[AuditEvent]) -> list[AuditEvent]:
    """The writes the API server answered with a 4xx (refused, not found, conflict...)."""
    return [e for e in events if 400 <= e.code < 500]
