"""Reads static pods from a manifest directory or file and sends them as SETs of source "file".

The Python counterpart of ``pkg/kubelet/config/file.go`` and ``file_linux.go``
(``sourceFile``; k8s.io/kubernetes v1.36.3). Pods go through an
:class:`~informers.undelta_store.UndeltaStore` keyed ``namespace/name``: every change of the
store sends ``PodUpdate(all pods, SET, "file")`` on the channel.

**Change detection.** Two mechanisms, as in the kubelet: a full rescan right away and then
every ``period`` seconds (``--file-check-frequency``, default 20 s), and, on Linux, inotify
events for the path (:mod:`controllers.kubelet.inotify`, ctypes, no extra dependency), which
make additions, changes, renames and removals visible at once. Without inotify (other
platforms, or ``watch=False``) only the rescan runs, so changes show up within one period;
choose a short period there. A symlinked manifest's target is read on every rescan, but a
change of the target is only noticed by the rescan (inotify watches the directory).
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from controllers.kubelet.defaults import MAX_CONFIG_LENGTH, try_decode_single_pod
from controllers.kubelet.errors import ManifestError
from controllers.kubelet.inotify import (
    POD_ADD,
    POD_DELETE,
    POD_MODIFY,
    Inotify,
    InotifyEvent,
    inotify_available,
)
from controllers.kubelet.pod_update import FILE_SOURCE, SET, PodUpdate, UpdateChannel
from informers.clock import REAL_CLOCK, Clock
from informers.keys import meta_namespace_key_func
from informers.undelta_store import UndeltaStore

__all__ = [
    "DEFAULT_FILE_CHECK_FREQUENCY",
    "WATCH_MAX_RETRY_PERIOD",
    "WATCH_RETRY_PERIOD",
    "FileSource",
]

logger = logging.getLogger(__name__)

DEFAULT_FILE_CHECK_FREQUENCY = 20.0
"""Seconds between rescans (kubelet ``--file-check-frequency`` default, 20 s)."""
WATCH_RETRY_PERIOD = 1.0
"""First delay before watching again after a failure (file_linux.go ``retryPeriod``)."""
WATCH_MAX_RETRY_PERIOD = 20.0
"""Largest such delay (file_linux.go ``maxRetryPeriod``)."""


class FileSource:
    """Keeps the "file" source of a PodConfig equal to the manifests under ``path``.

    Behaviour (kubelet ``sourceFile``):

    * A trailing ``/`` of ``path`` is ignored. ``path`` may be a directory or a single file.
    * **Rescan** (:meth:`list_config`): a missing path sends ``SET{[]}`` (the source counts as
      seen) and logs "path does not exist, ignoring". A directory: every entry not starting
      with ``.``, in name order, is read as one Pod manifest (sub-directories are not
      entered); a file that cannot be read, parsed or validated is logged with its name and
      skipped, the others are used; the store is replaced by the result (an empty result
      sends ``SET{[]}``). A single file that fails is an error and nothing is sent.
    * **Events**: a created, written or chmod-ed entry is read and upserted into the store
      (a failure is logged and changes nothing); a removed or renamed-away entry removes the
      pod it had produced. Entries starting with ``.`` are ignored.
    * Manifests are defaulted and validated as file pods (:mod:`controllers.kubelet.defaults`),
      each with its own file path as the source of its UID.

    Deliberate differences from the kubelet, each fixing a stale or flapping pod: an empty or
    missing directory also clears the store (the kubelet keeps it, so a later event could
    resurrect a deleted file's pod); a file whose pod changes name replaces its old pod in one
    SET; a removal event for a path that holds a file again (a file replaced by a rename) re-reads
    the file instead of dropping its pod; and the path is rescanned whenever its watch is
    (re)established, so nothing changed while it was unwatched waits for the next period. A
    missing path is reported by the rescan (``SET{[]}`` each period) rather than by every watch
    retry as the kubelet does; the source becomes ready either way.

    Threads: :meth:`start` runs the source on a daemon thread ``kubelet-file-source`` (plus an
    inotify reader ``kubelet-file-source-inotify`` and a stopper) until ``stop`` is set;
    :meth:`join` waits for them. All store changes happen on the source thread.
    :meth:`list_config` and :meth:`consume_watch_event` may be called directly instead (tests,
    one-shot reads), but not while the source runs.

    Args:
        path: manifest directory or file.
        node_name: the node's name (pod name suffix, ``spec.nodeName``).
        period: seconds between rescans.
        channel: receives the SETs (``put``).
        clock: measures the period and the watch retry delays.
        watch: use inotify; ``None`` means "where available".
    """

    def __init__(
        self,
        path: str,
        node_name: str,
        period: float,
        channel: UpdateChannel,
        *,
        clock: Clock = REAL_CLOCK,
        watch: bool | None = None,
    ) -> None:
        stripped = str(path).rstrip(os.sep)
        self.path = stripped or os.sep
        self.node_name = node_name
        self.period = period
        self.channel = channel
        self._clock = clock
        self.watch = inotify_available() if watch is None else (watch and inotify_available())
        if watch and not self.watch:
            logger.warning("file source: inotify is not available here; %s is only rescanned "
                           "every %gs", self.path, period)
        self._store = UndeltaStore(self._send, meta_namespace_key_func)
        self._file_keys: dict[str, str] = {}
        self._errors: dict[str, str] = {}
        self._events: deque[InotifyEvent] = deque()
        self._events_lock = threading.Lock()
        self._wake = threading.Event()
        self._inotify: Inotify | None = None
        self._watch_lost = False
        self._threads: list[threading.Thread] = []

    # -- sending ---------------------------------------------------------------------------------

    def _send(self, pods: list[Any]) -> None:
        self.channel.put(PodUpdate(list(pods), SET, FILE_SOURCE))

    def _send_empty(self) -> None:
        """Clear the store and send ``SET{[]}`` so the source counts as seen."""
        self._file_keys.clear()
        self._store.replace([], "")

    @property
    def last_errors(self) -> dict[str, str]:
        """Manifest path -> error message of the last rescan (and of later failed events)."""
        return dict(self._errors)

    # -- reading ---------------------------------------------------------------------------------

    def extract_from_file(self, filename: str) -> dict[str, Any]:
        """Read, decode, default and validate one manifest file.

        Raises:
            ManifestError: naming the file.
        """
        logger.debug("file source: reading manifest file %s", filename)
        try:
            with open(filename, "rb") as fh:
                data = fh.read(MAX_CONFIG_LENGTH + 1)
        except OSError as exc:
            raise ManifestError(f"can't read manifest: {exc.strerror or exc}", filename) from exc
        if not data.strip():
            raise ManifestError("manifest file is empty, please check manifest file", filename)
        parsed, pod, err = try_decode_single_pod(
            data, source=filename, node_name=self.node_name, is_file=True
        )
        if err is not None:
            if parsed:
                raise err
            raise ManifestError(f"{err.reason}, please check manifest file", filename)
        assert pod is not None
        return pod

    def _extract_from_dir(self, dirname: str) -> tuple[list[dict[str, Any]], dict[str, str]]:
        pods: list[dict[str, Any]] = []
        keys: dict[str, str] = {}
        try:
            names = sorted(n for n in os.listdir(dirname) if not n.startswith("."))
        except OSError as exc:
            raise ManifestError(f"can't list manifest directory: {exc.strerror or exc}",
                                dirname) from exc
        for name in names:
            path = os.path.join(dirname, name)
            try:
                mode = os.stat(path).st_mode
            except OSError as exc:
                self._record_error(path, f"can't get metadata: {exc.strerror or exc}")
                continue
            if stat.S_ISDIR(mode):
                logger.info("file source: not recursing into manifest path %s", path)
            elif stat.S_ISREG(mode):
                try:
                    pod = self.extract_from_file(path)
                except ManifestError as exc:
                    self._record_error(path, exc.reason)
                    continue
                pods.append(pod)
                keys[path] = meta_namespace_key_func(pod)
            else:
                self._record_error(path, "manifest path is not a directory or file")
        return pods, keys

    def _record_error(self, path: str, reason: str) -> None:
        self._errors[path] = reason
        logger.error("file source: can't process manifest file %s: %s (skipped; other "
                     "manifests are still used)", path, reason)

    def list_config(self) -> None:
        """Rescan the path and replace the source's pods (kubelet ``listConfig``).

        Raises:
            ManifestError: the path is missing (``SET{[]}`` was sent), is neither a directory
                nor a file, or is a single file that is not a valid pod (nothing was sent).
        """
        self._errors = {}
        try:
            mode = os.stat(self.path).st_mode
        except FileNotFoundError:
            self._send_empty()
            raise ManifestError("path does not exist, ignoring", self.path) from None
        except OSError as exc:
            raise ManifestError(f"can't stat path: {exc.strerror or exc}", self.path) from exc
        if stat.S_ISDIR(mode):
            pods, keys = self._extract_from_dir(self.path)
            self._file_keys = keys
            self._store.replace(pods, "")
        elif stat.S_ISREG(mode):
            try:
                pod = self.extract_from_file(self.path)
            except ManifestError as exc:
                self._errors[self.path] = exc.reason
                raise
            self._file_keys = {self.path: meta_namespace_key_func(pod)}
            self._store.replace([pod], "")
        else:
            raise ManifestError("path is not a directory or file", self.path)

    def consume_watch_event(self, filename: str, kind: str) -> None:
        """Apply one file event (``"add"``, ``"modify"`` or ``"delete"``) to the store.

        Raises:
            ManifestError: an added or modified file is not a valid pod (store unchanged).
        """
        if os.path.basename(filename).startswith("."):
            logger.debug("file source: ignored event for dot-file %s", filename)
            return
        if kind == POD_DELETE and os.path.isfile(filename):
            # Removed or renamed away, but a file is there again (replaced by a rename, as
            # editors and config tools do): re-read it instead of dropping its pod.
            kind = POD_MODIFY
        if kind in (POD_ADD, POD_MODIFY):
            if os.path.isdir(filename) and filename != self.path:
                return
            try:
                pod = self.extract_from_file(filename)
            except ManifestError as exc:
                self._errors[filename] = exc.reason
                raise ManifestError(f"can't process config file: {exc.reason}", filename) from exc
            self._errors.pop(filename, "")
            key = meta_namespace_key_func(pod)
            old_key = self._file_keys.get(filename)
            self._file_keys[filename] = key
            if old_key is not None and old_key != key and old_key not in self._file_keys.values():
                # The file now defines another pod: drop its old pod in the same SET.
                others = [p for p in self._store.list()
                          if meta_namespace_key_func(p) not in (old_key, key)]
                self._store.replace([*others, pod], "")
            else:
                self._store.add(pod)
        elif kind == POD_DELETE:
            self._errors.pop(filename, "")
            gone = self._file_keys.pop(filename, None)
            if gone is None:
                return
            existing = self._store.get_by_key(gone)
            if existing is None:
                logger.debug("file source: pod %s of %s is not in the store", gone, filename)
                return
            self._store.delete(existing)

    # -- running ---------------------------------------------------------------------------------

    def start(self, stop: threading.Event) -> None:
        """Run the source on a daemon thread until ``stop`` is set."""
        thread = threading.Thread(target=self.run, args=(stop,), name="kubelet-file-source",
                                  daemon=True)
        self._threads = [thread]
        thread.start()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the threads started by :meth:`start` to end (after ``stop`` was set)."""
        for thread in self._threads:
            thread.join(timeout)

    def run(self, stop: threading.Event) -> None:
        """Rescan every period and apply file events until ``stop`` is set. Never raises."""
        logger.info("file source: watching path %s (rescan every %gs, inotify %s)", self.path,
                    self.period, "on" if self.watch else "off")
        stopper = threading.Thread(target=self._stopper, args=(stop,),
                                   name="kubelet-file-source-stopper", daemon=True)
        stopper.start()
        clock = self._clock
        retry_delay = WATCH_RETRY_PERIOD
        next_watch = clock.now()
        next_list = clock.now()
        try:
            while not stop.is_set():
                self._wake.clear()
                now = clock.now()
                if self.watch and self._inotify is None and now >= next_watch:
                    ok, retryable = self._start_watch(stop)
                    if ok:
                        retry_delay = WATCH_RETRY_PERIOD
                        next_list = now  # rescan whatever changed while unwatched
                    else:
                        next_watch = now + retry_delay
                        if not retryable:
                            retry_delay = min(retry_delay * 2, WATCH_MAX_RETRY_PERIOD)
                if now >= next_list:
                    self._guarded(self.list_config)
                    next_list = now + self.period
                for event in self._take_events():
                    self._consume_guarded(event)
                if self._watch_lost:
                    self._stop_watch()
                    next_watch = clock.now() + retry_delay
                deadline = next_list
                if self.watch and self._inotify is None:
                    deadline = min(deadline, next_watch)
                if self._pending_events():
                    continue
                clock.wait_event(self._wake, max(deadline - clock.now(), 0.0))
        finally:
            self._stop_watch()
            self._wake.set()
            stopper.join()
            logger.info("file source: stopped watching %s", self.path)

    def _guarded(self, fn: Callable[[], None]) -> None:
        try:
            fn()
        except ManifestError as exc:
            logger.error("file source: %s", exc)
        except Exception:
            logger.exception("file source: unexpected error for path %s", self.path)

    def _consume_guarded(self, event: InotifyEvent) -> None:
        kind = event.kind
        if kind is None:
            return
        try:
            self.consume_watch_event(event.path, kind)
        except ManifestError as exc:
            logger.error("file source: %s", exc)
        except Exception:
            logger.exception("file source: unexpected error for event %s", event)

    def _stopper(self, stop: threading.Event) -> None:
        self._clock.wait_event(stop, None)
        self._wake.set()
        inotify = self._inotify
        if inotify is not None:
            inotify.close()

    def _start_watch(self, stop: threading.Event) -> tuple[bool, bool]:
        """(watching now, failure is retryable without backoff growth)."""
        if not os.path.exists(self.path):
            return False, True
        try:
            inotify = Inotify(self.path)
        except OSError as exc:
            logger.error("file source: unable to watch %s: %s", self.path, exc)
            return False, False
        self._watch_lost = False
        self._inotify = inotify
        reader = threading.Thread(target=self._read_events, args=(inotify,),
                                  name="kubelet-file-source-inotify", daemon=True)
        self._threads.append(reader)
        reader.start()
        if stop.is_set():
            inotify.close()
        return True, False

    def _stop_watch(self) -> None:
        inotify, self._inotify = self._inotify, None
        if inotify is not None:
            inotify.close()

    def _read_events(self, inotify: Inotify) -> None:
        while True:
            events = inotify.read()
            if events is None:
                return
            lost = False
            with self._events_lock:
                for event in events:
                    if event.watch_lost:
                        lost = True
                    self._events.append(event)
            if lost:
                self._watch_lost = True
            self._wake.set()
            if lost:
                return

    def _take_events(self) -> list[InotifyEvent]:
        with self._events_lock:
            events = list(self._events)
            self._events.clear()
        return events

    def _pending_events(self) -> bool:
        with self._events_lock:
            return bool(self._events)
