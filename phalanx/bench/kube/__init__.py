"""`phalanx bench kube`: kube-scheduler 1.36 and `phalanx scheduler` side by side on one real
kube-apiserver, the same fake nodes, the same pods, each through its own gang API.

- config.py: what runs (nodes, workloads, client limits) and its validation;
- workload.py: plain pods; gangs as Workload + PodGroup (kube-scheduler) or PodGang (phalanx);
- schedulers.py: starting each scheduler as a user runs it;
- observer.py: bind times from one watch; procstat.py: CPU of a process from /proc;
- apimetrics.py: API requests from apiserver_request_total deltas;
- phase.py: one scheduler on one workload; cleanup.py: deleting a run;
- runner.py: the whole bench and its result (JSON); report.py: the table.
"""
