"""Between runs (cleanup.py): a collection DELETE that times out while the server deletes is
sent again for what is left, until nothing is."""

import asyncio

from phalanx.bench.kube.cleanup import delete_run
from phalanx.cluster.client import NotFound, ServiceUnavailable


class FakeTransport:
    """Pods deleted `per_delete` at a time; the first pods DELETE times out."""

    def __init__(self, pods: int, per_delete: int) -> None:
        self.pods = [f"p{i}" for i in range(pods)]
        self.per_delete = per_delete
        self.pod_deletes = 0

    async def request(self, method, path, *, query=(), body=None, kind="", name="", **_):
        if "/pods" in path:
            if method == "DELETE":
                self.pod_deletes += 1
                del self.pods[:self.per_delete]
                if self.pod_deletes == 1:
                    raise ServiceUnavailable("cannot reach the API server: TimeoutError")
                return {}
            return {"items": [{"metadata": {"name": n}} for n in self.pods]}
        raise NotFound(f"{kind} is not served")  # no gang kinds in this fake


def test_a_timed_out_delete_is_sent_again_until_no_pod_is_left():
    transport = FakeTransport(pods=10, per_delete=4)
    kube = type("Kube", (), {"transport": transport})()
    asyncio.run(delete_run(kube, "ns", timeout=30))
    assert transport.pods == []
    assert transport.pod_deletes == 3  # 10 pods, 4 a time: the timed-out one, then two more
