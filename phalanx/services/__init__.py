"""Long-running Phalanx processes against a real cluster.

Between the CLI and the operator/scheduler: leader election on a Lease (`leader`), the
probes/metrics/webhook HTTP server (`server`, `metrics`, `webhook`, `certs`), and the
`operator` and `scheduler` service entry points that `phalanx operator|scheduler` run.
"""
