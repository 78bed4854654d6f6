"""The cluster API layer: the `Client` protocol, the embedded `MemoryCluster`, informers,
work queues, controllers and the event recorder. See CONTRIBUTING.md, "Talking to the
cluster"."""

from .admission import AdmissionChain
from .client import (
    AlreadyExists,
    ApiError,
    Client,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    ObjectList,
    ServerError,
    ServiceUnavailable,
    WatchEvent,
)
from .clock import Clock, RealClock, VirtualClock, run_virtual, settle, wait_for_condition
from .controller import (
    Controller,
    Manager,
    Result,
    generation_changed,
    map_from_label,
    map_to_owner,
    own_key,
)
from .events import EventRecorder
from .faults import FaultInjector
from .informer import Informer
from .informer_factory import InformerFactory
from .memory import MemoryCluster
from .objects import merge_patch, object_key, split_key
from .scale import Scale
from .selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)
from .stats import ClusterStats
from .workqueue import ExponentialBackoff, ShutDown, WorkQueue

__all__ = [
    "AdmissionChain", "AlreadyExists", "ApiError", "Client", "Clock", "ClusterStats",
    "Conflict", "Controller", "EventRecorder", "ExponentialBackoff", "FaultInjector",
    "FieldSelector", "Forbidden", "Gone", "Informer", "InformerFactory", "Invalid",
    "LabelSelector", "Manager", "MemoryCluster", "NotFound", "ObjectList", "RealClock",
    "Result", "Scale", "SelectorError", "ServerError", "ServiceUnavailable", "ShutDown", "VirtualClock",
    "WatchEvent", "WorkQueue", "generation_changed", "map_from_label", "map_to_owner",
    "merge_patch", "object_key", "own_key", "parse_field_selector", "parse_label_selector",
    "run_virtual", "settle", "split_key", "wait_for_condition",
]
