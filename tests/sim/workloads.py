"""Small workload files for the sim tests (Grove's schema: roleName is required)."""

PCS = """\
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata:
  name: {name}
  annotations: {{sim.phalanx.dev/run-for: 10m}}
spec:
  replicas: {replicas}
  template:
    cliques:
    - name: w
      annotations: {{sim.phalanx.dev/fail-after: 20m}}
      spec:
        roleName: w
        replicas: {pods}
        podSpec:
          schedulerName: {scheduler}
          containers:
          - name: c
            image: x
            resources:
              requests: {{cpu: "1", nvidia.com/gpu: "{gpus}"}}
              limits: {{nvidia.com/gpu: "{gpus}"}}
"""


def pcs(name: str = "job", replicas: int = 1, pods: int = 4, gpus: int = 1,
        scheduler: str = "phalanx-scheduler") -> str:
    return PCS.format(name=name, replicas=replicas, pods=pods, gpus=gpus, scheduler=scheduler)
