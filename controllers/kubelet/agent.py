"""Wires pod sources, PodConfig, the sync loop and pod workers into one node agent.

What the kubelet's ``makePodSourceConfig`` plus ``syncLoop`` do (``pkg/kubelet/kubelet.go``):
a source is registered only when it is configured -- the file source when a manifest path is
given, the URL source when a manifest URL is given, the API-server source when an API client
is given -- so the agent's sources become ready exactly when each configured one has sent its
first SET.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from controllers.kubelet.apiserver_source import APIServerSource
from controllers.kubelet.file_source import DEFAULT_FILE_CHECK_FREQUENCY, FileSource
from controllers.kubelet.pod_config import PodConfig
from controllers.kubelet.pod_update import (
    API_SOURCE,
    FILE_SOURCE,
    HTTP_SOURCE,
    INCREMENTAL,
    PodConfigNotificationMode,
    PodUpdate,
)
from controllers.kubelet.runtime import PodSyncHandler, RecordingRuntime, Runtime
from controllers.kubelet.sync_loop import (
    DEFAULT_HOUSEKEEPING_PERIOD,
    DEFAULT_SYNC_PERIOD,
    SyncHandler,
    SyncLoop,
)
from controllers.kubelet.url_source import DEFAULT_HTTP_CHECK_FREQUENCY, URLSource
from informers.clock import REAL_CLOCK, Clock
from informers.memory import MemoryTuning

__all__ = ["NodeAgent"]

logger = logging.getLogger(__name__)


class _Source(Protocol):
    def start(self, stop: threading.Event) -> None: ...

    def join(self, timeout: float | None = None) -> None: ...


class NodeAgent:
    """A small kubelet front half: sources -> PodConfig -> SyncLoop -> handler -> runtime.

    Lifecycle: :meth:`start` starts the sync loop, then the sources; :meth:`stop` stops the
    sources first, then the sync loop, then the pod workers (running syncs finish, each join
    bounded by ``timeout``). Usable as a context manager. ``start``/``stop`` are not meant to
    be called concurrently.

    Args:
        node_name: the node's name.
        pod_manifest_path: directory or file of static pod manifests (file source).
        manifest_url: URL of static pod manifests (URL source).
        manifest_url_headers: headers for the manifest URL.
        api_client: a ``kubernetes.client.ApiClient`` (API-server source).
        file_check_frequency: seconds between rescans of the manifest path.
        http_check_frequency: seconds between polls of the manifest URL.
        mode: PodConfig notification mode.
        runtime: runs the pods; default a :class:`RecordingRuntime`.
        handler: replaces the default :class:`PodSyncHandler` (then ``runtime`` is unused).
        clock: for every component.
        sync_period: seconds between periodic syncs.
        housekeeping_period: seconds between housekeeping runs.
        observer: sees every update before it is dispatched.
        file_watch: use inotify for the manifest path (``None``: where available).
        memory_tuning: the api source's opt-in GC pause while it lists
            (:class:`~informers.memory.MemoryTuning`); ``None``: none.
    """

    def __init__(
        self,
        node_name: str,
        *,
        pod_manifest_path: str | None = None,
        manifest_url: str | None = None,
        manifest_url_headers: Mapping[str, str] | None = None,
        api_client: Any = None,
        file_check_frequency: float = DEFAULT_FILE_CHECK_FREQUENCY,
        http_check_frequency: float = DEFAULT_HTTP_CHECK_FREQUENCY,
        mode: PodConfigNotificationMode | int = INCREMENTAL,
        runtime: Runtime | None = None,
        handler: SyncHandler | None = None,
        clock: Clock = REAL_CLOCK,
        sync_period: float = DEFAULT_SYNC_PERIOD,
        housekeeping_period: float = DEFAULT_HOUSEKEEPING_PERIOD,
        observer: Callable[[PodUpdate], None] | None = None,
        file_watch: bool | None = None,
        memory_tuning: MemoryTuning | None = None,
    ) -> None:
        self.node_name = node_name
        self.config = PodConfig(mode, clock=clock)
        self.sources: dict[str, _Source] = {}
        if pod_manifest_path:
            self.file_source: FileSource | None = FileSource(
                pod_manifest_path, node_name, file_check_frequency,
                self.config.channel(FILE_SOURCE), clock=clock, watch=file_watch,
            )
            self.sources[FILE_SOURCE] = self.file_source
        else:
            self.file_source = None
        if manifest_url:
            self.url_source: URLSource | None = URLSource(
                manifest_url, manifest_url_headers, node_name, http_check_frequency,
                self.config.channel(HTTP_SOURCE), clock=clock,
            )
            self.sources[HTTP_SOURCE] = self.url_source
        else:
            self.url_source = None
        if api_client is not None:
            self.api_source: APIServerSource | None = APIServerSource(
                api_client, node_name, self.config.channel(API_SOURCE), clock=clock,
                memory_tuning=memory_tuning,
            )
            self.sources[API_SOURCE] = self.api_source
        else:
            self.api_source = None
        self.runtime: Runtime = runtime if runtime is not None else RecordingRuntime()
        self.handler: SyncHandler = (
            handler if handler is not None else PodSyncHandler(self.runtime, clock=clock)
        )
        self.sync_loop = SyncLoop(
            self.config, self.handler, clock=clock, sync_period=sync_period,
            housekeeping_period=housekeeping_period, observer=observer,
        )
        self._sources_stop = threading.Event()
        self._loop_stop = threading.Event()
        self._started = False

    def start(self) -> NodeAgent:
        """Start the sync loop, then every configured source. Idempotent."""
        if self._started:
            return self
        self._started = True
        logger.info("node agent %s: starting with sources %s", self.node_name,
                    ", ".join(sorted(self.sources)) or "(none)")
        self.sync_loop.start(self._loop_stop)
        for source in self.sources.values():
            source.start(self._sources_stop)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the sources, then the sync loop, then the pod workers."""
        if not self._started:
            return
        self._sources_stop.set()
        for source in self.sources.values():
            source.join(timeout)
        self._loop_stop.set()
        self.sync_loop.join(timeout)
        shut_down = getattr(self.handler, "shut_down", None)
        if callable(shut_down):
            shut_down(timeout)
        logger.info("node agent %s: stopped", self.node_name)

    def sources_ready(self) -> bool:
        """Every configured source has sent its first SET and the sync loop consumed it."""
        return self.sync_loop.sources_ready()

    def __enter__(self) -> NodeAgent:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
