"""The bench's gangs are what each scheduler reads: the phalanx gang sources turn them into
the same gang (one per PodGang / PodGroup, minMember = size, every pod a member)."""

from phalanx.api.pod import Pod
from phalanx.api.podgang import PodGang
from phalanx.api.workloads import PodGroupV1Alpha2, WorkloadV1Alpha2
from phalanx.bench.kube.config import KUBE_SCHEDULER, PHALANX_SCHEDULER, KubeBenchConfig
from phalanx.bench.kube.workload import gangs, plain_pods
from phalanx.scheduler.gang.sources.podgang import PodGangSource
from phalanx.scheduler.gang.sources.workload import PodGroupSource, WorkloadSource

CFG = KubeBenchConfig(plain_pods=3, gang_pods=40, gang_min=8, gang_max=16, pod_gpus=2)


def roundtrip(obj):
    return type(obj).model_validate(obj.to_dict())


def test_plain_pods_differ_only_in_scheduler_name():
    kube = plain_pods(CFG, KUBE_SCHEDULER, "ns", "run")
    ours = plain_pods(CFG, PHALANX_SCHEDULER, "ns", "run")
    assert [p.spec.scheduler_name for p in kube] == ["default-scheduler"] * 3
    assert [p.spec.scheduler_name for p in ours] == ["phalanx-scheduler"] * 3
    for a, b in zip(kube, ours, strict=True):
        a.spec.scheduler_name = b.spec.scheduler_name
        assert a.to_dict() == b.to_dict()
    req = kube[0].spec.containers[0].resources.requests
    assert req == {"cpu": "1", "memory": "4Gi", "nvidia.com/gpu": "2"}


def test_kube_gangs_are_workload_podgroup_and_pods_with_a_scheduling_group():
    built = gangs(CFG, KUBE_SCHEDULER, "ns", "run")
    assert [len(g.pods) for g in built] == CFG.gang_sizes()
    for g in built:
        workload, group = (roundtrip(o) for o in g.objects)
        assert isinstance(workload, WorkloadV1Alpha2) and isinstance(group, PodGroupV1Alpha2)
        assert group.workload_name == workload.name and group.min_count == len(g.pods)
        assert workload.spec.template(group.template_name).scheduling_policy.gang.min_count \
            == len(g.pods)
        (gang,) = PodGroupSource(PodGroupV1Alpha2).gangs(group)
        assert gang.min_member == len(g.pods)
        for p in g.pods:
            p = roundtrip(p)
            assert p.spec.scheduler_name == "default-scheduler"
            assert WorkloadSource().member(p).gang_id == gang.id


def test_phalanx_gangs_are_podgangs_whose_pods_name_them():
    built = gangs(CFG, PHALANX_SCHEDULER, "ns", "run")
    assert [len(g.pods) for g in built] == CFG.gang_sizes()
    source = PodGangSource()
    for g in built:
        (podgang,) = (roundtrip(o) for o in g.objects)
        assert isinstance(podgang, PodGang)
        (gang,) = source.gangs(podgang)
        assert gang.min_member == len(g.pods)
        assert sorted(podgang.pod_names()) == sorted(p.name for p in g.pods)
        for p in g.pods:
            p = Pod.model_validate(p.to_dict())
            member = source.member(p)
            assert member.gang_id == gang.id and member.group == podgang.spec.pod_groups[0].name
            assert p.spec.scheduler_name == "phalanx-scheduler"
