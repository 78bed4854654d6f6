"""The parts of a kubediff case's pods: selectors and terms, tolerations, node and pod
(anti-)affinity, preferred terms, topology spread, host ports and volume claims.

A mixin of the generator (generate.py), which provides `rng`, `on` (the enabled features),
`case`, `use(feature)`, `chance`, `pick` and `sample`; kept apart so each module stays short.
"""

from __future__ import annotations

from typing import Any

from . import features as F

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
CASE_LABEL = "kubediff.phalanx.io/case"  # on every object of a case (cleanup, canary)
ZONES = ("zone-a", "zone-b", "zone-c")
APPS = ("web", "db", "cache")
TIERS = ("front", "back")
DISKS = ("ssd", "hdd")
POOLS = ("blue", "green")
# (key, value, effect); value "" means none.
TAINTS = (
    ("dedicated", "gpu", "NoSchedule"),
    ("dedicated", "infra", "NoExecute"),
    ("spot", "true", "NoSchedule"),
    ("maintenance", "", "NoExecute"),
    ("soft", "yes", "PreferNoSchedule"),
)
HOST_PORTS = (8080, 8081, 9000)
EXISTING_SCHEDULER = "kubediff-nobody"  # bound pods: no scheduler serves this name
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"


class PodParts:
    rng: Any
    on: set[str]
    case: Any

    def use(self, feature: str) -> None:
        raise NotImplementedError

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def pick(self, seq: tuple[Any, ...] | list[Any]) -> Any:
        return seq[self.rng.randrange(len(seq))]

    def sample(self, seq: tuple[Any, ...] | list[Any], k: int) -> list[Any]:
        return self.rng.sample(list(seq), min(k, len(seq)))

    def selector(self) -> dict[str, Any]:
        """A label selector over the pods' app/tier labels."""
        roll = self.rng.random()
        if roll < 0.5:
            return {"matchLabels": {"app": self.pick(APPS)}}
        if roll < 0.8:
            return {"matchExpressions": [
                {"key": "app", "operator": "In",
                 "values": self.sample(APPS, self.rng.randint(1, 2))}]}
        if roll < 0.9:
            return {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}
        return {"matchLabels": {"app": self.pick(APPS), "tier": self.pick(TIERS)}}

    def topology_key(self) -> str:
        roll = self.rng.random()
        return HOSTNAME if roll < 0.45 else ZONE if roll < 0.9 else "pool"

    def pod_term(self, own_labels: dict[str, str]) -> dict[str, Any]:
        term: dict[str, Any] = {"labelSelector": self.selector(),
                                "topologyKey": self.topology_key()}
        if F.MATCH_LABEL_KEYS in self.on and self.chance(0.3):
            used = _selector_keys(term["labelSelector"])
            free = [k for k in ("app", "tier") if k in own_labels and k not in used]
            if free:
                term["matchLabelKeys" if self.chance(0.5) else "mismatchLabelKeys"] = free[:1]
                self.use(F.MATCH_LABEL_KEYS)
        return term

    def host_port(self) -> dict[str, Any]:
        port = self.pick(HOST_PORTS)
        out: dict[str, Any] = {"containerPort": port, "hostPort": port,
                               "protocol": self.pick(("TCP", "TCP", "UDP"))}
        roll = self.rng.random()
        if roll < 0.2:
            out["hostIP"] = "127.0.0.1"
        elif roll < 0.35:
            out["hostIP"] = "0.0.0.0"
        return out

    def tolerations(self, spec: dict[str, Any]) -> None:
        if any(n["spec"].get("taints") for n in self.case.nodes):
            self.use(F.TAINTS)
        if not self.chance(0.5):
            return
        self.use(F.TAINTS)
        out: list[dict[str, Any]] = []
        for key, value, effect in self.sample(TAINTS, self.rng.randint(1, 3)):
            roll = self.rng.random()
            if roll < 0.45:
                tol = {"key": key, "operator": "Equal", "value": value, "effect": effect}
            elif roll < 0.7:
                tol = {"key": key, "operator": "Exists"}
            elif roll < 0.85:
                tol = {"key": key, "operator": "Equal", "value": value or "other"}
            else:  # a wrong effect: does not tolerate
                other = "NoSchedule" if effect != "NoSchedule" else "NoExecute"
                tol = {"key": key, "operator": "Equal", "value": value, "effect": other}
            out.append(tol)
        if self.chance(0.05):
            out.append({"operator": "Exists"})  # tolerates everything
        spec["tolerations"] = out

    def requirement(self) -> dict[str, Any]:
        roll = self.rng.random()
        if roll < 0.3:
            return {"key": ZONE, "operator": self.pick(("In", "NotIn")),
                    "values": self.sample(ZONES, self.rng.randint(1, 2))}
        if roll < 0.5:
            return {"key": "disk", "operator": self.pick(("In", "NotIn", "Exists", "DoesNotExist")),
                    "values": [self.pick(DISKS)]}
        if roll < 0.7:
            return {"key": "gen", "operator": self.pick(("Gt", "Lt")),
                    "values": [str(self.rng.randint(0, 8))]}
        if roll < 0.85:
            return {"key": "pool", "operator": self.pick(("In", "Exists", "DoesNotExist")),
                    "values": [self.pick(POOLS)]}
        return {"key": HOSTNAME, "operator": self.pick(("In", "NotIn")),
                "values": self.sample(self.case.node_names, self.rng.randint(1, 3))}

    def node_affinity(self, spec: dict[str, Any]) -> None:
        if self.chance(0.25):
            sel = {}
            if self.chance(0.6):
                sel[ZONE] = self.pick(ZONES)
            else:
                sel["disk"] = self.pick(DISKS)
            spec["nodeSelector"] = sel
            self.use(F.NODE_AFFINITY)
        if not self.chance(0.4):
            return
        terms = []
        for _ in range(self.rng.randint(1, 2)):
            term: dict[str, Any] = {}
            exprs = [self.requirement() for _ in range(self.rng.randint(0, 2))]
            for e in exprs:
                if e["operator"] in ("Exists", "DoesNotExist"):
                    e.pop("values", None)
            if exprs:
                term["matchExpressions"] = exprs
            if not exprs or self.chance(0.15):
                # matchFields: metadata.name with exactly one value (API validation).
                term["matchFields"] = [{"key": "metadata.name",
                                        "operator": self.pick(("In", "In", "NotIn")),
                                        "values": [self.pick(self.case.node_names)]}]
            terms.append(term)
        spec.setdefault("affinity", {})["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
        self.use(F.NODE_AFFINITY)

    def pod_affinity(self, spec: dict[str, Any], labels: dict[str, str]) -> None:
        for kind, p in (("podAffinity", 0.3), ("podAntiAffinity", 0.3)):
            if self.chance(p):
                terms = [self.pod_term(labels) for _ in range(self.rng.randint(1, 2))]
                spec.setdefault("affinity", {})[kind] = {
                    "requiredDuringSchedulingIgnoredDuringExecution": terms}
                self.use(F.POD_AFFINITY)

    def preferred(self, spec: dict[str, Any], labels: dict[str, str]) -> None:
        if self.chance(0.2):
            aff = spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
            aff["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": self.rng.randint(1, 100), "preference": {
                    "matchExpressions": [{"key": ZONE, "operator": "In",
                                          "values": [self.pick(ZONES)]}]}}]
            self.use(F.PREFERRED)
        if self.chance(0.2):
            kind = self.pick(("podAffinity", "podAntiAffinity"))
            aff = spec.setdefault("affinity", {}).setdefault(kind, {})
            aff["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": self.rng.randint(1, 100), "podAffinityTerm": self.pod_term(labels)}]
            self.use(F.PREFERRED)

    def spread(self, spec: dict[str, Any], labels: dict[str, str]) -> None:
        out: list[dict[str, Any]] = []
        for key in self.sample((ZONE, HOSTNAME), self.rng.randint(1, 2)):
            hard = self.chance(0.75)
            selector = ({"matchLabels": {"app": labels["app"]}} if "app" in labels
                        and self.chance(0.7) else self.selector())
            c: dict[str, Any] = {
                "maxSkew": self.rng.randint(1, 2), "topologyKey": key,
                "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
                "labelSelector": selector}
            if hard and self.chance(0.35):
                c["minDomains"] = self.rng.randint(2, 4)
            if self.chance(0.2):
                c["nodeAffinityPolicy"] = self.pick(("Honor", "Ignore"))
            if self.chance(0.2):
                c["nodeTaintsPolicy"] = self.pick(("Honor", "Ignore"))
            if F.MATCH_LABEL_KEYS in self.on and self.chance(0.3):
                free = [k for k in ("tier", "app") if k in labels
                        and k not in _selector_keys(selector)]
                if free:
                    c["matchLabelKeys"] = free[:1]
                    self.use(F.MATCH_LABEL_KEYS)
            out.append(c)
            if self.lean and hard and self.chance(0.7):
                self.hot_domain(c, labels)
        spec["topologySpreadConstraints"] = out
        self.use(F.SPREAD)

    def hot_domain(self, constraint: dict[str, Any], labels: dict[str, str]) -> None:
        """1-3 more bound pods the constraint counts, all in one of its domains, so that
        the skew decides for some nodes."""
        key = constraint["topologyKey"]
        domains = list(dict.fromkeys(n["metadata"]["labels"][key] for n in self.case.nodes
                                     if key in n["metadata"]["labels"]))
        if not domains:
            return
        hot = self.pick(domains)
        nodes = [n["metadata"]["name"] for n in self.case.nodes
                 if n["metadata"]["labels"].get(key) == hot]
        want = _labels_matching(constraint["labelSelector"])
        for k in constraint.get("matchLabelKeys", ()):
            want[k] = labels[k]
        prefix = self.case.prefix
        for _ in range(self.rng.randint(1, 3)):
            name = f"{prefix}-h{len(self.case.existing)}"
            self.case.existing.append({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "labels": {CASE_LABEL: prefix, **want}},
                "spec": {"schedulerName": EXISTING_SCHEDULER, "nodeName": self.pick(nodes),
                         "containers": [{"name": "c", "image": PAUSE_IMAGE}],
                         "terminationGracePeriodSeconds": 0}})

    def volumes(self, spec: dict[str, Any]) -> None:
        """Claims the scheduler must place by: a bound claim whose PV has node affinity (a
        node or a zone), an unbound Immediate claim, a WaitForFirstConsumer claim no PV can
        satisfy, or a claim that does not exist. Never one the scheduler would have to bind
        (that needs the PV controller, which the harness does not run)."""
        prefix = self.case.prefix
        sc_wffc, sc_imm = f"{prefix}-wffc", f"{prefix}-imm"
        self.case.volumes += [
            {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
             "metadata": {"name": sc_wffc, "labels": {CASE_LABEL: prefix}},
             "provisioner": "kubernetes.io/no-provisioner",
             "volumeBindingMode": "WaitForFirstConsumer"},
            {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
             "metadata": {"name": sc_imm, "labels": {CASE_LABEL: prefix}},
             "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "Immediate"},
        ]
        vols = []
        for i in range(self.rng.randint(1, 2)):
            claim = f"{prefix}-c{i}"
            roll = self.rng.random()
            if roll < 0.6:
                self.bound_claim(claim, sc_wffc)
            elif roll < 0.75:
                self.case.volumes.append(_claim(prefix, claim, sc_imm, "1Gi"))
            elif roll < 0.9:
                self.case.volumes.append(_claim(prefix, claim, sc_wffc, "1000Gi"))
            # else: the claim is missing
            vols.append({"name": f"v{i}", "persistentVolumeClaim": {"claimName": claim}})
        spec["volumes"] = vols
        self.use(F.VOLUMES)

    def bound_claim(self, claim: str, storage_class: str) -> None:
        prefix = self.case.prefix
        pv = f"{prefix}-pv-{claim.rsplit('-', 1)[1]}"
        labels = {CASE_LABEL: prefix}
        if self.chance(0.5):
            term = {"key": HOSTNAME, "operator": "In", "values": [self.pick(self.case.node_names)]}
        else:
            zone = self.pick(ZONES)
            term = {"key": ZONE, "operator": "In", "values": [zone]}
            if self.chance(0.5):
                labels[ZONE] = zone  # VolumeZone reads the PV's zone label
        self.case.volumes.append({
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": pv, "labels": labels},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "storageClassName": storage_class, "local": {"path": "/mnt/kubediff"},
                     "persistentVolumeReclaimPolicy": "Retain",
                     "claimRef": {"namespace": "", "name": claim},  # namespace: the runner's
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [
                         {"matchExpressions": [term]}]}}}})
        c = _claim(prefix, claim, storage_class, "1Gi")
        c["spec"]["volumeName"] = pv
        c["metadata"]["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
        self.case.volumes.append(c)


def _claim(prefix: str, name: str, storage_class: str, size: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "labels": {CASE_LABEL: prefix}},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": storage_class,
                     "resources": {"requests": {"storage": size}}}}


def _selector_keys(selector: dict[str, Any]) -> list[str]:
    keys = list(selector.get("matchLabels") or {})
    keys += [e["key"] for e in selector.get("matchExpressions") or ()]
    return keys


def _labels_matching(selector: dict[str, Any]) -> dict[str, str]:
    """Labels the selector (as `selector()` makes them: matchLabels, In, Exists) matches."""
    out = dict(selector.get("matchLabels") or {})
    for e in selector.get("matchExpressions") or ():
        if e["operator"] == "In":
            out[e["key"]] = e["values"][0]
        elif e["operator"] == "Exists":
            out[e["key"]] = TIERS[0] if e["key"] == "tier" else APPS[0]
    return out
