import pytest

from phalanx.bench.kube.config import (
    DEFAULT_LIMITS,
    KUBE_SCHEDULER,
    PHALANX_SCHEDULER,
    KubeBenchConfig,
    parse_names,
)


def test_gang_sizes_are_seeded_within_bounds_and_add_up():
    cfg = KubeBenchConfig(gang_pods=2000, gang_min=8, gang_max=64, seed=3)
    sizes = cfg.gang_sizes()
    assert sizes == KubeBenchConfig(gang_pods=2000, gang_min=8, gang_max=64, seed=3).gang_sizes()
    assert sizes != KubeBenchConfig(gang_pods=2000, seed=4).gang_sizes()
    assert sum(sizes) == 2000
    assert all(s >= 8 for s in sizes)
    # Only the last gang may grow past the maximum, by less than a minimum gang.
    assert all(s <= 64 for s in sizes[:-1]) and sizes[-1] < 64 + 8


def test_no_runt_gang_at_the_end():
    cfg = KubeBenchConfig(gang_pods=20, gang_min=8, gang_max=8)
    assert cfg.gang_sizes() == [8, 12]


def test_equal_limits_by_default_and_each_ones_defaults_on_request():
    cfg = KubeBenchConfig(qps=300, burst=600)
    assert cfg.limits_for(KUBE_SCHEDULER) == cfg.limits_for(PHALANX_SCHEDULER) == (300, 600)
    own = KubeBenchConfig(own_defaults=True)
    assert own.limits_for(KUBE_SCHEDULER) == DEFAULT_LIMITS[KUBE_SCHEDULER] == (50.0, 100)
    assert own.limits_for(PHALANX_SCHEDULER) == (100.0, 150)
    assert own.as_json()["client_limits"][KUBE_SCHEDULER] == {"qps": 50.0, "burst": 100}


@pytest.mark.parametrize(("changes", "option"), [
    ({"nodes": 0}, "--nodes"),
    ({"gang_min": 9, "gang_max": 8}, "--gang-min"),
    ({"gang_pods": 5, "gang_min": 8}, "--gang-pods"),
    ({"qps": 0}, "--qps"),
    ({"schedulers": ("volcano",)}, "--schedulers"),
    ({"workloads": ()}, "--workloads"),
    ({"gang_pods": 0}, "--gang-pods"),  # a workload that would wait for none of its pods
    ({"plain_pods": 0, "workloads": ("plain",)}, "--plain-pods"),
    ({"nodes": 10, "plain_pods": 81}, "--nodes"),  # 10 nodes x 8 GPUs hold 80 pods
])
def test_invalid_configurations_name_the_option(changes, option):
    with pytest.raises(ValueError, match=f"^{option}:"):
        KubeBenchConfig(**changes).validate()


def test_a_full_cluster_is_valid():
    """Exactly as many pods as the nodes hold (8 GPUs each) is valid; one more is not, in
    either workload; and the capacity counts each pod's GPUs."""
    full = KubeBenchConfig(nodes=10, plain_pods=80, gang_pods=80)
    assert full.validate() is None
    assert full.pods_of("plain") == full.pods_of("gangs") == 80
    assert sum(full.gang_sizes()) == 80
    for changes in ({"plain_pods": 81}, {"gang_pods": 81}):
        over = KubeBenchConfig(**{"nodes": 10, "plain_pods": 80, "gang_pods": 80, **changes})
        with pytest.raises(ValueError, match="^--nodes: 10 nodes hold 80 pods of 1 GPU"):
            over.validate()
    # Only the workloads that run count: 81 plain pods are fine when only gangs run.
    KubeBenchConfig(nodes=10, plain_pods=81, gang_pods=80, workloads=("gangs",)).validate()
    KubeBenchConfig(nodes=10, plain_pods=40, gang_pods=40, pod_gpus=2).validate()
    with pytest.raises(ValueError, match="^--nodes: 10 nodes hold 40 pods of 2 GPU"):
        KubeBenchConfig(nodes=10, plain_pods=40, gang_pods=41, pod_gpus=2).validate()


def test_parse_names():
    both = ("kube-scheduler", "phalanx-scheduler")
    assert parse_names(" kube-scheduler, phalanx-scheduler ", both, "schedulers") == both
    with pytest.raises(ValueError, match="--schedulers: unknown kai"):
        parse_names("kai", ("kube-scheduler",), "schedulers")
    with pytest.raises(ValueError, match="--workloads"):
        parse_names(",", ("plain",), "workloads")


def test_pairs_alternate_the_order_and_must_be_positive():
    cfg = KubeBenchConfig(pairs=3)
    assert cfg.order(0) == (KUBE_SCHEDULER, PHALANX_SCHEDULER)
    assert cfg.order(1) == (PHALANX_SCHEDULER, KUBE_SCHEDULER)
    assert cfg.order(2) == cfg.order(0)
    with pytest.raises(ValueError, match="--pairs: must be at least 1"):
        KubeBenchConfig(pairs=0).validate()


def test_the_result_name_says_which_workloads_ran():
    from phalanx.bench.kube.config import result_name

    both = KubeBenchConfig(nodes=5000, plain_pods=5000, gang_pods=4000, pairs=3, qps=5000)
    assert result_name(both) == "kube-5000n-5000p-4000g-qps5000-3pairs"
    plain = KubeBenchConfig(nodes=5000, plain_pods=5000, workloads=("plain",), qps=5000,
                            profile=True)
    assert result_name(plain) == "kube-5000n-5000p-qps5000-profile"
    gangs = KubeBenchConfig(nodes=20, gang_pods=40, workloads=("gangs",), qps=5000)
    assert result_name(gangs) == "kube-20n-40g-qps5000"
