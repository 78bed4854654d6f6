"""What a profile's gangs get when their objects say nothing: the Permit wait, the match
policy and how long "satisfied once" lasts, per schedulerName.

Each default follows the peer whose objects that scheduler name reads:

| schedulerName       | wait   | why                                                            |
|---------------------|--------|----------------------------------------------------------------|
| koord-scheduler     | 600 s  | Koordinator's CoschedulingArgs.defaultTimeout                  |
| default-scheduler   | 300 s  | kube-scheduler's GangScheduling Permit timeout (5 minutes)     |
| phalanx-scheduler   | 60 s   | scheduler-plugins' Coscheduling permitWaitingTimeSeconds       |
| kai-scheduler       | 60 s   | none: KAI places a whole gang in one session and never waits   |
| volcano             | 60 s   | none: Volcano likewise                                         |

koord-scheduler gangs stay satisfied for as long as their PodGroup exists, as in
Koordinator (`SatisfiedScope.OBJECT`); the others stay satisfied while a member holds a
node (`SatisfiedScope.PLACEMENT`), so a gang whose pods were all replaced is placed whole
again. A profile overrides any of the three with its Coscheduling plugin args
(`defaultTimeoutSeconds`, `defaultMatchPolicy`, `onceSatisfiedScope`).
"""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.api import labels

from .model import MatchPolicy, SatisfiedScope

# Koordinator's default gang wait (pkg/scheduler/apis/config/v1/defaults.go: 600 s).
KOORDINATOR_DEFAULT_TIMEOUT = 600.0
# kube-scheduler's GangScheduling plugin: permitTimeoutDuration = 5 * time.Minute.
KUBE_GANG_PERMIT_TIMEOUT = 300.0
# scheduler-plugins' Coscheduling: defaultPermitWaitingTimeSeconds = 60.
SCHEDULER_PLUGINS_DEFAULT_TIMEOUT = 60.0


@dataclass(frozen=True, slots=True)
class GangDefaults:
    """A profile's defaults for the gangs of its pods."""

    timeout: float = SCHEDULER_PLUGINS_DEFAULT_TIMEOUT
    match_policy: MatchPolicy = MatchPolicy.ONCE_SATISFIED
    satisfied_scope: SatisfiedScope = SatisfiedScope.PLACEMENT


FALLBACK = GangDefaults()

PEER_DEFAULTS: dict[str, GangDefaults] = {
    labels.SCHEDULER_KOORDINATOR: GangDefaults(
        KOORDINATOR_DEFAULT_TIMEOUT, MatchPolicy.ONCE_SATISFIED, SatisfiedScope.OBJECT
    ),
    labels.SCHEDULER_DEFAULT: GangDefaults(KUBE_GANG_PERMIT_TIMEOUT),
    labels.SCHEDULER_PHALANX: FALLBACK,
    labels.SCHEDULER_KAI: FALLBACK,
    labels.SCHEDULER_VOLCANO: FALLBACK,
}


def defaults_for(scheduler_name: str | None) -> GangDefaults:
    """The peer's defaults for a schedulerName (FALLBACK for names no peer defines)."""
    return PEER_DEFAULTS.get(scheduler_name or "", FALLBACK)


def profile_defaults(
    scheduler_name: str,
    timeout: float | None = None,
    match_policy: MatchPolicy | None = None,
    satisfied_scope: SatisfiedScope | None = None,
) -> GangDefaults:
    """A profile's defaults: what its Coscheduling args set, the peer's for the rest."""
    peer = defaults_for(scheduler_name)
    return GangDefaults(
        timeout or peer.timeout,
        match_policy or peer.match_policy,
        satisfied_scope or peer.satisfied_scope,
    )
