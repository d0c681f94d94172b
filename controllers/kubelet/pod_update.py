"""Defines the message that pod sources and PodConfig exchange, and its vocabulary.

The Python counterpart of ``pkg/kubelet/types/pod_update.go`` plus the notification modes of
``pkg/kubelet/config/config.go``: :class:`PodUpdate` (pods, op, source), the operations
``SET, ADD, DELETE, REMOVE, UPDATE, RECONCILE`` with the kubelet's integer values, the source
names, the ``kubernetes.io/config.*`` annotation keys, the three notification modes of
:class:`~controllers.kubelet.pod_config.PodConfig` and the sync types of the pod workers.
Pods are plain dicts as the API server's JSON decodes.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = [
    "ADD",
    "ALL_SOURCE",
    "API_SOURCE",
    "CONFIG_FIRST_SEEN_ANNOTATION_KEY",
    "CONFIG_HASH_ANNOTATION_KEY",
    "CONFIG_MIRROR_ANNOTATION_KEY",
    "CONFIG_SOURCE_ANNOTATION_KEY",
    "DELETE",
    "FILE_SOURCE",
    "HTTP_SOURCE",
    "INCREMENTAL",
    "LOCAL_ANNOTATIONS",
    "NAMESPACE_DEFAULT",
    "RECONCILE",
    "REMOVE",
    "SET",
    "SNAPSHOT",
    "SNAPSHOT_AND_UPDATES",
    "UPDATE",
    "PodConfigNotificationMode",
    "PodOperation",
    "PodUpdate",
    "SyncPodType",
    "UpdateChannel",
    "get_pod_source",
    "get_validated_sources",
    "pod_full_name",
    "pod_uid",
]


class PodOperation(enum.IntEnum):
    """What a :class:`PodUpdate` says about its pods (kubelet ``PodOperation``, same values)."""

    SET = 0
    """The complete current pod list of the source."""
    ADD = 1
    """Pods new to this source."""
    DELETE = 2
    """Pods gracefully deleted (they carry a ``deletionTimestamp``)."""
    REMOVE = 3
    """Pods removed from the source (only the UID matters)."""
    UPDATE = 4
    """Pods whose spec, labels, annotations or deletion fields changed."""
    RECONCILE = 5
    """Pods whose status alone changed; the node should reconcile its status with them."""


SET = PodOperation.SET
ADD = PodOperation.ADD
DELETE = PodOperation.DELETE
REMOVE = PodOperation.REMOVE
UPDATE = PodOperation.UPDATE
RECONCILE = PodOperation.RECONCILE

FILE_SOURCE = "file"
"""Static pods read from a manifest file or directory (kubelet ``FileSource``)."""
HTTP_SOURCE = "http"
"""Static pods read from a manifest URL (kubelet ``HTTPSource``)."""
API_SOURCE = "api"
"""Pods bound to the node in the API server (kubelet ``ApiserverSource``)."""
ALL_SOURCE = "*"
"""All sources: the source of :meth:`PodConfig.sync` output (kubelet ``AllSource``)."""

NAMESPACE_DEFAULT = "default"
"""metav1 ``NamespaceDefault``: the namespace of a static pod whose manifest names none."""

CONFIG_SOURCE_ANNOTATION_KEY = "kubernetes.io/config.source"
"""Set by PodConfig on every pod to the name of the source it came from."""
CONFIG_MIRROR_ANNOTATION_KEY = "kubernetes.io/config.mirror"
"""v1 ``MirrorPodAnnotationKey``: marks a mirror pod in the API server."""
CONFIG_FIRST_SEEN_ANNOTATION_KEY = "kubernetes.io/config.seen"
"""Set by PodConfig when a pod UID is first seen (RFC 3339 with nanoseconds)."""
CONFIG_HASH_ANNOTATION_KEY = "kubernetes.io/config.hash"
"""Set by static-pod defaulting to the pod's (possibly generated) UID."""

LOCAL_ANNOTATIONS: tuple[str, ...] = (
    CONFIG_SOURCE_ANNOTATION_KEY,
    CONFIG_MIRROR_ANNOTATION_KEY,
    CONFIG_FIRST_SEEN_ANNOTATION_KEY,
)
"""Annotations the node adds itself; ignored when PodConfig compares two versions of a pod
(kubelet config.go ``localAnnotations``). The hash annotation is *not* local."""


class PodConfigNotificationMode(enum.IntEnum):
    """How PodConfig reports changes (kubelet ``PodConfigNotificationMode``, same values)."""

    UNKNOWN = 0
    """Not a usable mode: PodConfig refuses it."""
    SNAPSHOT = 1
    """A SET of the merged state of all sources whenever anything changes."""
    SNAPSHOT_AND_UPDATES = 2
    """A SET when pods are added or removed, UPDATE and DELETE messages for changed pods."""
    INCREMENTAL = 3
    """REMOVE, ADD, UPDATE, DELETE and RECONCILE messages: the kubelet's mode."""


SNAPSHOT = PodConfigNotificationMode.SNAPSHOT
SNAPSHOT_AND_UPDATES = PodConfigNotificationMode.SNAPSHOT_AND_UPDATES
INCREMENTAL = PodConfigNotificationMode.INCREMENTAL


class SyncPodType(enum.IntEnum):
    """Why a pod worker syncs a pod (kubelet ``SyncPodType``, same values)."""

    SYNC = 0
    """Periodic sync to make sure the pod is in its desired state."""
    UPDATE = 1
    """The pod changed in its source."""
    CREATE = 2
    """The pod is new."""
    KILL = 3
    """The pod must stop; a pending kill is never replaced by another update."""

    def __str__(self) -> str:
        return self.name.lower()


@dataclass
class PodUpdate:
    """One message on a source channel or on :attr:`PodConfig.updates`.

    ``pods`` is always a list (never ``None``), as the kubelet requires. ``op`` is converted to
    :class:`PodOperation` when it is a known value; an unknown value is kept as given (PodConfig
    logs and ignores such an update, as the kubelet does). Not thread-safe: a sender must not
    touch an update or its pods after putting it on a channel.
    """

    pods: list[dict[str, Any]] = field(default_factory=list)
    op: PodOperation | int = SET
    source: str = ""

    def __post_init__(self) -> None:
        self.pods = [] if self.pods is None else list(self.pods)
        try:
            self.op = PodOperation(self.op)
        except ValueError:
            pass

    @property
    def op_name(self) -> str:
        """``"ADD"``, ``"SET"``, ... or the number of an unknown operation."""
        return self.op.name if isinstance(self.op, PodOperation) else str(self.op)

    def to_dict(self) -> dict[str, Any]:
        """``{"op": "ADD", "source": "file", "pods": [...]}`` for JSON output."""
        return {"op": self.op_name, "source": self.source, "pods": self.pods}

    def sorted_pods(self) -> list[dict[str, Any]]:
        """The pods ordered by ``namespace/name`` (for comparing where order is unspecified)."""
        return sorted(self.pods, key=_sort_key)


def _sort_key(pod: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = pod.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""), pod_uid(pod))


def pod_uid(pod: Mapping[str, Any]) -> str:
    """``metadata.uid`` or ``""``."""
    meta = pod.get("metadata")
    if not isinstance(meta, Mapping):
        return ""
    uid = meta.get("uid")
    return uid if isinstance(uid, str) else ""


def pod_full_name(pod: Mapping[str, Any]) -> str:
    """``<name>_<namespace>``, the kubelet's unique pod name (kubecontainer ``GetPodFullName``)."""
    meta = pod.get("metadata")
    if not isinstance(meta, Mapping):
        return "_"
    return f"{meta.get('name') or ''}_{meta.get('namespace') or ''}"


def get_pod_source(pod: Mapping[str, Any]) -> str:
    """The source annotation of ``pod`` (kubelet ``GetPodSource``).

    Raises:
        KeyError: the pod has no source annotation.
    """
    meta = pod.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    if isinstance(annotations, Mapping) and CONFIG_SOURCE_ANNOTATION_KEY in annotations:
        return str(annotations[CONFIG_SOURCE_ANNOTATION_KEY])
    raise KeyError(f"cannot get source of pod {pod_uid(pod)!r}")


def get_validated_sources(sources: Iterable[str]) -> list[str]:
    """Check source names (kubelet ``GetValidatedSources``): ``"*"`` means all three.

    Empty names are skipped.

    Raises:
        ValueError: an unknown source name.
    """
    validated: list[str] = []
    for source in sources:
        if source == ALL_SOURCE:
            return [FILE_SOURCE, HTTP_SOURCE, API_SOURCE]
        if source in (FILE_SOURCE, HTTP_SOURCE, API_SOURCE):
            validated.append(source)
        elif source:
            raise ValueError(f"unknown pod source {source!r}")
    return validated


class UpdateChannel(Protocol):
    """Where a source puts its updates: a :meth:`PodConfig.channel` or any ``queue.Queue``."""

    def put(self, item: PodUpdate, block: bool = ..., timeout: float | None = ...) -> None: ...
