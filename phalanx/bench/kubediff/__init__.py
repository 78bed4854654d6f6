"""kubediff: a differential test of phalanx-scheduler against the real kube-scheduler 1.36.

Seeded random cases (generate.py) are placed by both schedulers on one real API server
(run.py); their outcomes must agree on schedulable vs unschedulable and, when unschedulable,
on the per-reason node counts of `0/N nodes are available: ...` (compare.py); report.py
writes the agreement per feature and every disagreement with its seed. `phalanx bench
kubediff` (cli.py) runs any number of cases; tests/bench/kubediff runs a few dozen in CI.
"""
