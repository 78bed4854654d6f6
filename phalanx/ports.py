"""Default ports of the services (no imports: the CLI reads them for its help text).

The operator's are Grove's (webhook 2750, probes 2751, metrics 2752); `phalanx scheduler`
takes the next two, so both run on one host without flags. None is a port that API servers
or common controllers use (6443, 8443, 9443, 10250, 10257, 10259).
"""

WEBHOOK_PORT = 2750
OPERATOR_PROBE_PORT = 2751
OPERATOR_METRICS_PORT = 2752
SCHEDULER_PROBE_PORT = 2753
SCHEDULER_METRICS_PORT = 2754
