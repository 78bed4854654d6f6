"""topology.volcano.sh/v1alpha1 `HyperNode`: one domain of Volcano's network topology.

Cluster-scoped. Tier 1 HyperNodes hold nodes, a tier n+1 HyperNode holds tier n HyperNodes;
a PodGroup's `networkTopology.highestTierAllowed` keeps its pods inside one HyperNode of at
most that tier. A member is chosen by exactly one selector: `exactMatch` (a name),
`regexMatch` (a pattern over names) or `labelMatch` (node labels; Node members only). The
volcano backend writes the tree of a Grove ClusterTopology (see phalanx.backends.volcano).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, Self

from pydantic import Field, model_validator

from . import registry as _registry
from .base import KubeModel, Resource, _is_empty
from .scheduling import DNS_SUBDOMAIN_PATTERN, QUALIFIED_NAME_PATTERN, LabelSelector

# metav1.Condition's reason, as the apimachinery markers validate it.
REASON_PATTERN = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"


class ExactMatch(KubeModel):
    name: str = Field(min_length=1, max_length=253, pattern=DNS_SUBDOMAIN_PATTERN)


class RegexMatch(KubeModel):
    pattern: str = Field(min_length=1)


class MemberSelector(KubeModel):
    exact_match: ExactMatch | None = None
    regex_match: RegexMatch | None = None
    label_match: LabelSelector | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        given = sum(s is not None for s in (self.exact_match, self.regex_match, self.label_match))
        if given != 1:
            raise ValueError("exactly one of exactMatch, regexMatch or labelMatch must be set")
        return self


class HyperNodeMember(KubeModel):
    type: Literal["Node", "HyperNode"]
    selector: MemberSelector | None = None


class HyperNodeSpec(KubeModel):
    tier: int = Field(ge=0)
    tier_name: str | None = Field(default=None, max_length=253)
    members: list[HyperNodeMember] | None = Field(default=None, min_length=1)


class MetaCondition(KubeModel):
    """metav1.Condition with the validation its CRD schemas carry (every field required)."""

    type: str = Field(max_length=316, pattern=QUALIFIED_NAME_PATTERN)
    status: Literal["True", "False", "Unknown"]
    reason: str = Field(min_length=1, max_length=1024, pattern=REASON_PATTERN)
    message: str = Field(max_length=32768)
    last_transition_time: datetime
    observed_generation: int | None = Field(default=None, ge=0)


class HyperNodeStatus(KubeModel):
    conditions: list[MetaCondition] = Field(default_factory=list, exclude_if=_is_empty)
    node_count: int | None = Field(default=None, ge=0)


class HyperNode(Resource):
    API_VERSION = "topology.volcano.sh/v1alpha1"
    KIND = "HyperNode"
    PLURAL = "hypernodes"
    NAMESPACED = False
    HAS_STATUS = True

    spec: HyperNodeSpec | None = None
    status: HyperNodeStatus = Field(default_factory=HyperNodeStatus)


_registry.register(HyperNode)
