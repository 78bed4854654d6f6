"""metadata.labels and metadata.annotations as kube-apiserver validates them, in its words.

- labels: metav1validation.ValidateLabels -- every key a qualified name (`[prefix/]name`),
  every value a label value (at most 63 characters);
- annotations: apivalidation.ValidateAnnotations -- every key a qualified name once
  lower-cased, and keys and values together at most 256 KiB (in bytes).

Used by the embedded API server on every object (`rules.validate_meta`) and by the
PodCliqueSet admission for the labels and annotations a template gives the objects the
operator creates, so a bad key is refused where the user wrote it, not when a PodClique or
pod made from it is refused later.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from .podvalidation.fielderrors import FieldErrors, invalid, label_key_errors
from .podvalidation.labelselector import label_map_errors

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024  # apimachinery's TotalAnnotationSizeLimitB


@lru_cache(maxsize=4096)
def annotation_key_errors(key: str) -> tuple[str, ...]:
    """Why `key` is not an annotation key: a qualified name, letter case aside (kube checks
    the lower-cased key and reports the key as written), or ()."""
    return label_key_errors(key.lower())


def annotations_size(annotations: Mapping[str, str]) -> int:
    """ValidateAnnotationsSize's measure: keys and values together, in bytes."""
    return sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items())


def too_long_annotations() -> str:
    return f"Too long: may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT} bytes"


def annotations_errors(annotations: Mapping[str, str] | None, path: str) -> FieldErrors:
    """apivalidation.ValidateAnnotations: one Invalid per bad key, then the size."""
    if not annotations:
        return []
    errs = [invalid(path, key, why) for key in annotations
            for why in annotation_key_errors(str(key))]
    if annotations_size(annotations) > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append((path, too_long_annotations()))
    return errs


def labels_errors(labels: Mapping[str, Any] | None, path: str) -> FieldErrors:
    """metav1validation.ValidateLabels: every key and value, all reported at `path`."""
    return label_map_errors(dict(labels), path) if labels else []
