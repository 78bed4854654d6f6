from .helpers import bound_nodes, node, pod, run_scheduler


def test_pods_are_bound_to_nodes_with_room():
    async def body(client, sched):
        assert await sched.wait_idle(timeout=60)
        placed = await bound_nodes(client)
        assert all(placed.values()), placed
        per_node: dict[str, int] = {}
        for n in placed.values():
            per_node[n] = per_node.get(n, 0) + 1
        assert max(per_node.values()) <= 4  # 4 cpus per node, 1 cpu per pod
        return placed

    run_scheduler(body, nodes=[node(f"n{i}", cpu=4) for i in range(3)], pods=[pod(f"p{i}") for i in range(12)])
