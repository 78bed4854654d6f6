"""Benchmarks and reliability harness for the whole embedded stack.

- `stack.EmbeddedStack`: API server + operator + scheduler + kubelets, each component on its
  own killable connection (`fence.FencedClient`), so tests can SIGKILL and restart them;
- `tracker.PodTracker`: pods created / bound / Running, per PodCliqueSet, event-driven;
- `e2e`: `phalanx bench e2e` (PodCliqueSet creation to all pods Running);
- `trace`, `tracegen`: `phalanx bench trace` (replay a CSV of job arrivals on the virtual
  clock) and `phalanx bench trace-gen` (a synthetic trace);
- `workload`: GPU cluster specs and gang jobs as PodCliqueSets.

The scheduler-only bench is `phalanx.scheduler.bench` (`phalanx bench scheduler`).
"""
