"""The kubelet pod-source adapter: file, URL and API-server pod sources merged like a kubelet.

Static pod manifests from a directory or file (:class:`FileSource`), a manifest URL
(:class:`URLSource`) and the pods bound to the node in the API server
(:class:`APIServerSource`, a Reflector into an UndeltaStore) are merged by a
:class:`PodConfig` into one ordered stream of :class:`PodUpdate` s, which a :class:`SyncLoop`
dispatches to a :class:`SyncHandler`; the default :class:`PodSyncHandler` runs each pod on its
own worker (:class:`PodWorkers`) against a pluggable :class:`Runtime`. :class:`NodeAgent` wires
it all. Upstream: ``pkg/kubelet/config`` and the sync loop of ``pkg/kubelet/kubelet.go``
(k8s.io/kubernetes v1.36.3), in the shape of earlier releases where each source sends
``PodUpdate`` SETs and ``PodConfig`` has notification modes (v1.36.3 sources send plain pod
lists and only the incremental mode is left); each module names its upstream file where it
has one.

The package root only re-exports; each component lives in a module named by its noun.
"""

from __future__ import annotations

from controllers.kubelet.agent import NodeAgent
from controllers.kubelet.apiserver_source import APIServerSource, node_field_selector
from controllers.kubelet.defaults import (
    NO_EXECUTE_TOLERATION,
    apply_defaults,
    decode_static_pods,
    default_static_pod,
    generate_pod_name,
    set_api_defaults,
    static_pod_uid,
    try_decode_pod_list,
    try_decode_single_pod,
)
from controllers.kubelet.errors import ManifestError, ManifestFetchError, PodSourceError
from controllers.kubelet.file_source import FileSource
from controllers.kubelet.pod_config import PodConfig, PodUpdateQueue, SourceChannel
from controllers.kubelet.pod_update import (
    ADD,
    ALL_SOURCE,
    API_SOURCE,
    CONFIG_FIRST_SEEN_ANNOTATION_KEY,
    CONFIG_HASH_ANNOTATION_KEY,
    CONFIG_MIRROR_ANNOTATION_KEY,
    CONFIG_SOURCE_ANNOTATION_KEY,
    DELETE,
    FILE_SOURCE,
    HTTP_SOURCE,
    INCREMENTAL,
    LOCAL_ANNOTATIONS,
    RECONCILE,
    REMOVE,
    SET,
    SNAPSHOT,
    SNAPSHOT_AND_UPDATES,
    UPDATE,
    PodConfigNotificationMode,
    PodOperation,
    PodUpdate,
    SyncPodType,
    UpdateChannel,
    get_pod_source,
    get_validated_sources,
    pod_full_name,
    pod_uid,
)
from controllers.kubelet.pod_workers import PodWorkers, UpdatePodOptions
from controllers.kubelet.runtime import PodSyncHandler, RecordingRuntime, Runtime, pod_key
from controllers.kubelet.sync_loop import SyncHandler, SyncLoop
from controllers.kubelet.url_source import URLSource, parse_headers
from controllers.kubelet.validation import api_object_reference, validate_pod

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
    "NO_EXECUTE_TOLERATION",
    "RECONCILE",
    "REMOVE",
    "SET",
    "SNAPSHOT",
    "SNAPSHOT_AND_UPDATES",
    "UPDATE",
    "APIServerSource",
    "FileSource",
    "ManifestError",
    "ManifestFetchError",
    "NodeAgent",
    "PodConfig",
    "PodConfigNotificationMode",
    "PodOperation",
    "PodSourceError",
    "PodSyncHandler",
    "PodUpdate",
    "PodUpdateQueue",
    "PodWorkers",
    "RecordingRuntime",
    "Runtime",
    "SourceChannel",
    "SyncHandler",
    "SyncLoop",
    "SyncPodType",
    "URLSource",
    "UpdateChannel",
    "UpdatePodOptions",
    "api_object_reference",
    "apply_defaults",
    "decode_static_pods",
    "default_static_pod",
    "generate_pod_name",
    "get_pod_source",
    "get_validated_sources",
    "node_field_selector",
    "parse_headers",
    "pod_full_name",
    "pod_key",
    "pod_uid",
    "set_api_defaults",
    "static_pod_uid",
    "try_decode_pod_list",
    "try_decode_single_pod",
    "validate_pod",
]
