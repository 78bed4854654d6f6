"""KAI's Queue model (phalanx/api/queue.py): `spec.priority` is the CRD's `type: integer`, so a
string, a boolean or a fraction is refused with the field named, as a strict kube-apiserver
refuses it; an integer is taken as it is."""

from __future__ import annotations

import pytest

from phalanx.api.loader import ManifestError, load_yaml
from phalanx.api.queue import Queue

DOC = """
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {{name: a}}
spec:
  priority: {priority}
  resources:
    gpu: {{quota: 8, limit: -1}}
"""


@pytest.mark.parametrize(("priority", "says"), [
    ('"5"', "got string '5'"), ("true", "got boolean true"), ("5.5", "got number 5.5")])
def test_a_non_integer_priority_is_refused_naming_the_field(priority: str, says: str) -> None:
    with pytest.raises(ManifestError) as err:
        load_yaml(DOC.format(priority=priority), source="q.yaml")
    assert "spec.priority: expected an integer" in str(err.value) and says in str(err.value)


def test_an_integer_priority_is_kept() -> None:
    [queue] = load_yaml(DOC.format(priority=200), source="q.yaml")
    assert isinstance(queue, Queue) and queue.spec.priority == 200
    assert queue.spec.effective_priority() == 200
