"""Sends the pods bound to this node in the API server as SETs of source "api".

The Python counterpart of ``NewSourceApiserver`` in ``pkg/kubelet/config/apiserver.go``
(k8s.io/kubernetes v1.36.3). Exactly the kubelet's construction: a
:class:`~informers.list_watch.ListWatch` on ``pods`` in all namespaces with the field selector
``spec.nodeName=<node>``, and a :class:`~informers.reflector.Reflector` (resync 0) writing into
an :class:`~informers.undelta_store.UndeltaStore` keyed ``namespace/name`` whose push sends
``PodUpdate(all pods in the store, SET, "api")``. So the initial list sends one SET (an empty
one when no pod is bound), and so does every relist, every added, modified and deleted pod.
No defaulting and no filtering beyond the field selector; the order of pods in a SET is
unspecified.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from controllers.kubelet.pod_update import API_SOURCE, SET, PodUpdate, UpdateChannel
from informers.client import list_watch_from_client
from informers.clock import REAL_CLOCK, Clock
from informers.keys import meta_namespace_key_func
from informers.list_watch import ListWatch
from informers.memory import MemoryTuning
from informers.reflector import Reflector
from informers.reflector_options import ReflectorOptions
from informers.undelta_store import UndeltaStore

__all__ = ["APIServerSource", "node_field_selector"]

logger = logging.getLogger(__name__)


def node_field_selector(node_name: str) -> str:
    """``spec.nodeName=<node>``.

    kubelet: ``fields.OneTermEqualSelector(api.PodHostField, nodeName)``.
    """
    return f"spec.nodeName={node_name}"


class APIServerSource:
    """Keeps the "api" source of a PodConfig equal to the pods the API server binds to the node.

    Threads: :meth:`start` runs the reflector on a daemon thread ``kubelet-api-source`` until
    ``stop`` is set; :meth:`join` waits for it. The reflector is the store's only writer and the
    push runs on its thread, so SETs are sent in the order of the changes.

    Args:
        api_client: a ``kubernetes.client.ApiClient`` (ignored when ``list_watch`` is given).
        node_name: the node whose pods to follow.
        channel: receives the SETs.
        clock: the reflector's clock (backoff waits).
        list_watch: use this ListWatch instead of one built from ``api_client`` (tests).
        reflector_options: for the :class:`~informers.reflector.Reflector` (e.g. ``backoff``,
            ``page_size``); default client-go's.
        memory_tuning: the reflector's opt-in GC pause while it lists
            (:class:`~informers.memory.MemoryTuning`); ``None``: none.
    """

    def __init__(
        self,
        api_client: Any,
        node_name: str,
        channel: UpdateChannel,
        *,
        clock: Clock = REAL_CLOCK,
        list_watch: ListWatch | None = None,
        reflector_options: ReflectorOptions | None = None,
        memory_tuning: MemoryTuning | None = None,
    ) -> None:
        self.node_name = node_name
        self.channel = channel
        if list_watch is None:
            list_watch = list_watch_from_client(
                api_client, "pods", field_selector=node_field_selector(node_name)
            )
        self.list_watch = list_watch
        self.store = UndeltaStore(self._send, meta_namespace_key_func)
        self.reflector = Reflector(
            list_watch,
            self.store,
            reflector_options,
            name=f"kubelet-api-source-{node_name}",
            resync_period=0.0,
            clock=clock,
            memory_tuning=memory_tuning,
        )
        self._thread: threading.Thread | None = None

    def _send(self, pods: list[Any]) -> None:
        self.channel.put(PodUpdate(list(pods), SET, API_SOURCE))

    def start(self, stop: threading.Event) -> None:
        """Run the reflector on a daemon thread until ``stop`` is set."""
        self._thread = threading.Thread(target=self.run, args=(stop,), name="kubelet-api-source",
                                        daemon=True)
        self._thread.start()

    def run(self, stop: threading.Event) -> None:
        """List and watch until ``stop`` is set. Never raises."""
        logger.info("api source: watching pods with %s", node_field_selector(self.node_name))
        self.reflector.run(stop)

    def join(self, timeout: float | None = None) -> None:
        """Wait for the thread started by :meth:`start` (after ``stop`` was set)."""
        if self._thread is not None:
            self._thread.join(timeout)
