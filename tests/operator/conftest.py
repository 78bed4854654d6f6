"""Operator tests. The harness lives in op_harness.py (a plain module, so test files can
import it: this directory is not a package, since `operator` would shadow the stdlib):

- `Binder`: a simple test binder standing in for the scheduler (binds ungated pods to
  Ready nodes round-robin);
- `run(scenario)`: MemoryCluster + OperatorManager + Binder + simulated Kubelet on virtual
  time; `Env.settle()` waits until all of them are idle;
- `make_pcs(...)`: a PodCliqueSet from a compact description.
"""

from op_harness import Binder, Env, make_pcs, run  # noqa: F401
