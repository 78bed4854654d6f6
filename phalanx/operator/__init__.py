"""The Phalanx operator: Grove's PodCliqueSet -> PodCliques, pods and PodGangs, handed to a
pluggable scheduler backend (GREP-375).

    from phalanx.operator import OperatorManager, install_admission
    op = OperatorManager(client, operator_config)   # builds the BackendRegistry, init_all
    await op.start(); ...; await op.wait_idle(); await op.stop()

Webhook-ready pure functions: `default_podcliqueset(pcs)` and
`validate_podcliqueset(pcs, old) -> [(field, message)]`; `install_admission(cluster,
registry)` runs them (and the backends' check) in a MemoryCluster.
"""

from .admission import check_all, default_podcliqueset, install_admission, validate_podcliqueset
from .context import Tunables
from .manager import OperatorManager
from .naming import ANNOTATION_STARTS_AFTER

__all__ = [
    "ANNOTATION_STARTS_AFTER",
    "OperatorManager",
    "Tunables",
    "check_all",
    "default_podcliqueset",
    "install_admission",
    "validate_podcliqueset",
]
