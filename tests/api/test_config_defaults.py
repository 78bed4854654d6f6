"""Grove's defaulting (operator/api/config/v1alpha1/defaults.go, applied by
DecodeOperatorConfig before validation): what Go's decoder leaves at its zero value (absent,
null, 0, "") is the default; and what Grove's Helm chart renders loads."""

from __future__ import annotations

from phalanx.api.config import ignored_fields, load_operator_config

from .test_config_grove import _load, _problems

# What Grove's Helm chart (operator/charts/templates/_helpers.tpl, "operator.config.data")
# renders with `config.authorizer.enabled: true` and its values.yaml otherwise.
HELM_RENDERED = """\
apiVersion: operator.config.grove.io/v1alpha1
kind: OperatorConfiguration
runtimeClientConnection:
  qps: 100
  burst: 150
leaderElection:
  enabled: true
  leaseDuration: 15s
  renewDeadline: 10s
  retryPeriod: 2s
  resourceLock: leases
  resourceName: grove-operator-leader-election
  resourceNamespace: grove-system
server:
  webhooks:
    port: 9443
    serverCertDir: /etc/grove-operator/webhook-certs
    secretName: grove-webhook-server-cert
    certProvisionMode: auto
  healthProbes:
    port: 9444
  metrics:
    port: 9445
controllers:
  podCliqueSet:
    concurrentSyncs: 3
  podClique:
    concurrentSyncs: 3
  podCliqueScalingGroup:
    concurrentSyncs: 3
scheduler:
  profiles:
  - name: default-scheduler
  - name: kai-scheduler
debugging:
  enableProfiling: false
  pprofBindHost: "127.0.0.1"
  pprofBindPort: 2753
logLevel: info
logFormat: json
topologyAwareScheduling:
  enabled: false
authorizer:
  enabled: true
  reconcilerServiceAccountUserName: system:serviceaccount:grove-system:grove-operator
  exemptServiceAccountUserNames:
    []
"""


def test_groves_helm_rendered_config_loads_and_names_the_authorizer() -> None:
    """The chart renders `reconcilerServiceAccountUserName`, which Grove's AuthorizerConfig
    does not have (its decoder drops it): it loads; the one thing set that Phalanx does not
    do is the authorizer (debugging with profiling off is not named)."""
    cfg = load_operator_config(HELM_RENDERED)
    assert cfg.authorizer.reconciler_service_account_user_name == \
        "system:serviceaccount:grove-system:grove-operator"
    assert [line.split(":")[0] for line in ignored_fields(cfg)] == ["authorizer.enabled"]
    assert cfg.leader_election.enabled and cfg.server.webhooks.port == 9443


def test_zero_lease_settings_are_grove_defaults() -> None:
    le = _load(leaderElection={"enabled": True, "leaseDuration": "0s", "renewDeadline": "0s",
                               "retryPeriod": "0s", "resourceLock": "",
                               "resourceName": ""}).leader_election
    assert (le.lease_duration, le.renew_deadline, le.retry_period, le.resource_lock,
            le.resource_name) == ("15s", "10s", "2s", "leases",
                                  "phalanx-operator-leader-election")


def test_leader_election_is_off_unless_enabled_as_in_grove() -> None:
    assert _load().leader_election.enabled is False
    assert _load(leaderElection={}).leader_election.enabled is False


def test_a_negative_qps_means_no_client_side_limit() -> None:
    """client-go builds no rate limiter for QPS < 0 (rest.RESTClientFor); Phalanx's token
    bucket (cluster/kube/transport.py) does not limit for qps <= 0 either."""
    from phalanx.cluster.kube.transport import TokenBucket

    conn = _load(runtimeClientConnection={"qps": -1}).runtime_client_connection
    assert conn.qps == -1 and conn.burst == 120

    async def many() -> float:
        import asyncio

        bucket = TokenBucket(conn.qps, conn.burst)
        start = asyncio.get_running_loop().time()
        for _ in range(1000):
            await bucket.acquire()
        return asyncio.get_running_loop().time() - start

    from phalanx.cluster.clock import run_virtual

    assert run_virtual(many()) == 0


# --- SetDefaults_ServerConfiguration, SetDefaults_*ControllerConfiguration: what Go's
# decoder leaves at its zero value (absent, null, 0, "") is defaulted ------------------------

def test_empty_and_null_server_sections_and_port_0_are_defaulted() -> None:
    s = _load(server={"healthProbes": {}, "metrics": None,
                      "webhooks": {"port": 0, "serverCertDir": "", "secretName": "",
                                   "certProvisionMode": ""}}).server
    assert (s.health_probes.port, s.metrics.port, s.webhooks.port) == (2751, 2752, 2750)
    assert (s.webhooks.server_cert_dir, s.webhooks.secret_name,
            s.webhooks.cert_provision_mode) == ("/etc/phalanx-operator/webhook-certs",
                                                "phalanx-webhook-server-cert", "auto")
    probes = _load(server={"healthProbes": {"bindAddress": "127.0.0.1"}}).server.health_probes
    assert (probes.bind_address, probes.port) == ("127.0.0.1", 2751)
    assert _load(server=None).server.metrics.port == 2752


def test_null_or_missing_concurrent_syncs_are_each_controllers_default() -> None:
    c = _load(controllers={"podCliqueSet": {"concurrentSyncs": None}, "podClique": {},
                           "podCliqueScalingGroup": None, "podGang": {"concurrentSyncs": 2}}
              ).controllers
    assert (c.pod_clique_set.concurrent_syncs, c.pod_clique.concurrent_syncs,
            c.pod_clique_scaling_group.concurrent_syncs, c.pod_gang.concurrent_syncs) == (
        10, 10, 5, 2)


def test_log_levels_are_groves() -> None:
    """Grove's AllLogLevels: debug, info, error (validateLogConfiguration: NotSupported)."""
    assert _problems(logLevel="warn") == ["logLevel"]
    assert _load(logLevel="error").log_level == "error"
