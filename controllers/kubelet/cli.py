"""The ``kubelet-pod-source`` command: follow a node's pod sources and print what it should run.

Usage (also ``python -m controllers.kubelet``)::

    kubelet-pod-source --node-name node-1 --pod-manifest-path /etc/kubernetes/manifests \\
        --manifest-url http://config/pods.yaml --manifest-url-header Authorization:Bearer\\ x \\
        --kubeconfig ~/.kube/config --output json

``--output json`` prints every merged update as one JSON line (``{"op", "source", "pods"}``);
``--output pods`` prints the set of pods the node runs (``{"running": [...]}``) each time it
changes. With no source given the command demonstrates itself: it starts the embedded API
server (:class:`informers.testing.ApiServer`) and a temporary manifest directory, changes both
following a short script, and narrates each step on stderr.

Flags, logging, kubeconfig errors and exit codes follow :mod:`controllers.command_line`, which
``endpoint-controller`` shares: durations such as ``20s`` or ``1m30s``, ``--log-level`` and
``--log-format text|json``; a bad flag or kubeconfig exits 2 with one line, and a run that
ends before every configured source has sent its first pods exits 1 naming those sources and
their last error.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import socket
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from types import FrameType
from typing import IO, Any

from controllers.command_line import (
    DURATION_HELP,
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_USAGE,
    CommandParser,
    KubeconfigError,
    add_logging_flags,
    configure_logging,
    describe_unsynced,
    formatter_for,
    load_kubeconfig,
    positive_duration,
)
from controllers.kubelet.agent import NodeAgent
from controllers.kubelet.file_source import DEFAULT_FILE_CHECK_FREQUENCY
from controllers.kubelet.pod_update import (
    API_SOURCE,
    FILE_SOURCE,
    HTTP_SOURCE,
    INCREMENTAL,
    SNAPSHOT,
    SNAPSHOT_AND_UPDATES,
    PodUpdate,
)
from controllers.kubelet.runtime import RecordingRuntime, TextStream
from controllers.kubelet.url_source import DEFAULT_HTTP_CHECK_FREQUENCY, parse_headers
from informers.clock import REAL_CLOCK
from informers.memory import MemoryTuning
from informers.name_validation import DNS1123_SUBDOMAIN_MAX_LENGTH, is_dns1123_subdomain

__all__ = ["build_parser", "main", "node_name"]

logger = logging.getLogger(__name__)

MODES = {
    "incremental": INCREMENTAL,
    "snapshot": SNAPSHOT,
    "snapshot-and-updates": SNAPSHOT_AND_UPDATES,
}

DEMO_STEP = 1.0
"""Seconds between two steps of the demonstration script."""


def node_name(text: str) -> str:
    """A node name as the kubelet takes it: trimmed and lower-cased (component-helpers
    ``nodeutil.GetHostname``), and a DNS-1123 subdomain, which the API server requires of a
    Node's name (``ValidateNodeName``, ``pkg/apis/core/validation``).

    Raises:
        argparse.ArgumentTypeError: empty, or not a DNS-1123 subdomain after lower-casing.
    """
    name = text.strip().lower()
    if not name:
        raise argparse.ArgumentTypeError("empty node name is invalid")
    if not is_dns1123_subdomain(name):
        raise argparse.ArgumentTypeError(
            f"invalid node name {text!r}: a lowercase RFC 1123 subdomain of at most "
            f"{DNS1123_SUBDOMAIN_MAX_LENGTH} characters must consist of lower case alphanumeric "
            "characters, '-' or '.', and must start and end with an alphanumeric character"
        )
    return name


def build_parser() -> argparse.ArgumentParser:
    """The argument parser; its errors are one line and exit 2."""
    parser = CommandParser(
        prog="kubelet-pod-source",
        description="Merge a node's pod sources (manifest files, a manifest URL and the API "
        "server) the way a kubelet does and print the update stream or the running pod set. "
        "Without any source, run a self-contained demonstration.",
        epilog=DURATION_HELP,
    )
    parser.add_argument("--node-name", type=node_name, default=None, metavar="NAME",
                        help="node name, lower-cased, a DNS-1123 subdomain (default: the host "
                             "name, lower-cased, as the kubelet)")
    parser.add_argument("--pod-manifest-path", default=None, metavar="PATH",
                        help="directory or file of static pod manifests")
    parser.add_argument("--manifest-url", default=None, metavar="URL",
                        help="URL of static pod manifests")
    parser.add_argument("--manifest-url-header", action="append", default=[],
                        metavar="KEY:VALUE", help="header for the manifest URL (repeatable)")
    parser.add_argument("--kubeconfig", default=None, metavar="PATH",
                        help="kubeconfig of the API server whose pods bound to the node to follow")
    parser.add_argument("--file-check-frequency", type=positive_duration,
                        default=DEFAULT_FILE_CHECK_FREQUENCY, metavar="DURATION",
                        help="time between rescans of the manifest path (default 20s)")
    parser.add_argument("--http-check-frequency", type=positive_duration,
                        default=DEFAULT_HTTP_CHECK_FREQUENCY, metavar="DURATION",
                        help="time between polls of the manifest URL (default 20s)")
    parser.add_argument("--mode", choices=sorted(MODES), default="incremental",
                        help="PodConfig notification mode (default incremental, the kubelet's)")
    parser.add_argument("--output", choices=("json", "pods"), default="json",
                        help="json: the update stream as JSON lines; pods: the running pod set")
    parser.add_argument("--duration", type=positive_duration, default=None, metavar="DURATION",
                        help="stop after this long (default: until interrupted; the "
                        "demonstration stops after its script)")
    add_logging_flags(parser)
    parser.add_argument("--demo-step", type=positive_duration, default=DEMO_STEP,
                        help=argparse.SUPPRESS)
    return parser


class _StopOnClosedOutput:
    """A text stream that ends the run (sets ``stop``) when the reader goes away (``| head``)."""

    def __init__(self, out: IO[str], stop: threading.Event) -> None:
        self.out = out
        self.stop = stop

    def write(self, text: str) -> int:
        if self.stop.is_set() and self.closed:
            return 0
        try:
            return self.out.write(text)
        except (BrokenPipeError, ValueError):
            self._close()
            return 0

    def flush(self) -> None:
        try:
            self.out.flush()
        except (BrokenPipeError, ValueError):
            self._close()

    closed = False

    def _close(self) -> None:
        self.closed = True
        self.stop.set()
        try:  # no "Exception ignored ... BrokenPipeError" when Python flushes stdout at exit
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.out.fileno())
        except (OSError, ValueError, AttributeError):
            pass


class _JsonLines:
    """Writes each update as one JSON line (the observer of the sync loop)."""

    def __init__(self, out: TextStream) -> None:
        self.out = out
        self.lock = threading.Lock()

    def __call__(self, update: PodUpdate) -> None:
        line = json.dumps(update.to_dict(), sort_keys=True, default=str)
        with self.lock:
            self.out.write(line + "\n")
            self.out.flush()


def _install_signals(stop: threading.Event) -> None:
    if threading.current_thread() is not threading.main_thread():
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():  # second signal: give up on a clean stop
            signal.signal(signum, signal.SIG_DFL)
            raise KeyboardInterrupt
        stop.set()

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)


def _stop_after(stop: threading.Event, seconds: float) -> None:
    def timer() -> None:
        if not REAL_CLOCK.wait_event(stop, seconds):
            stop.set()

    threading.Thread(target=timer, name="kubelet-pod-source-timer", daemon=True).start()


def _make_agent(args: argparse.Namespace, node_name: str, out: TextStream, *,
                pod_manifest_path: str | None, api_client: Any,
                file_check_frequency: float) -> NodeAgent:
    runtime = RecordingRuntime(stream=out if args.output == "pods" else None)
    observer = _JsonLines(out) if args.output == "json" else None
    return NodeAgent(
        node_name,
        pod_manifest_path=pod_manifest_path,
        manifest_url=args.manifest_url,
        manifest_url_headers=parse_headers(args.manifest_url_header),
        api_client=api_client,
        memory_tuning=MemoryTuning(),  # a process of our own: the opt-in tuning is on
        file_check_frequency=file_check_frequency,
        http_check_frequency=args.http_check_frequency,
        mode=MODES[args.mode],
        runtime=runtime,
        observer=observer,
    )


def _unsynced_sources(agent: NodeAgent) -> dict[str, BaseException | str | None]:
    """The configured sources the sync loop has not seen yet, with each one's last error."""
    seen = agent.sync_loop.seen_sources
    unsynced: dict[str, BaseException | str | None] = {}
    for name in agent.sources:
        if name in seen:
            continue
        error: BaseException | str | None = None
        if name == API_SOURCE and agent.api_source is not None:
            error = agent.api_source.reflector.metrics.last_error
        elif name == HTTP_SOURCE and agent.url_source is not None:
            error = agent.url_source.last_error
        elif name == FILE_SOURCE and agent.file_source is not None:
            error = "; ".join(agent.file_source.last_errors.values()) or None
        unsynced[name] = error
    return unsynced


def _exit_code(agent: NodeAgent) -> int:
    """:data:`EXIT_OK`, or :data:`EXIT_FAILURE` with an error line when a source never
    sent its first pods (checked after the agent stopped, so nothing changes any more)."""
    unsynced = _unsynced_sources(agent)
    if not unsynced:
        return EXIT_OK
    logger.error("pod sources never synced: %s", describe_unsynced(unsynced))
    return EXIT_FAILURE


def main(argv: Sequence[str] | None = None, *, out: IO[str] | None = None,
         err: IO[str] | None = None, stop: threading.Event | None = None) -> int:
    """Run the command; returns the exit status (:mod:`controllers.command_line`): 0 after a
    clean stop, 1 when a configured source never sent its first pods, 2 for a kubeconfig
    that cannot be loaded. A bad flag exits 2 from the parser.

    Args:
        argv: arguments (default ``sys.argv[1:]``).
        out: where the updates or pod sets go (default stdout).
        err: where the demonstration narrates (default stderr).
        stop: ends the run when set (default: SIGINT/SIGTERM or ``--duration``).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        parse_headers(args.manifest_url_header)
    except ValueError as exc:
        parser.error(str(exc))
    if args.node_name is None:
        try:
            args.node_name = node_name(socket.gethostname())
        except argparse.ArgumentTypeError as exc:
            parser.error(f"the host name is no node name, pass --node-name: {exc}")
    err = err if err is not None else sys.stderr
    configure_logging(args.log_level, args.log_format)
    api_client = None
    if args.kubeconfig:
        from kubernetes import client

        try:
            configuration = load_kubeconfig(args.kubeconfig)
        except KubeconfigError as exc:
            logger.error("%s", exc)
            return EXIT_USAGE
        api_client = client.ApiClient(configuration)
    if stop is None:
        stop = threading.Event()
        _install_signals(stop)
    if args.duration is not None:
        _stop_after(stop, args.duration)
    sink = _StopOnClosedOutput(out if out is not None else sys.stdout, stop)
    if not (args.pod_manifest_path or args.manifest_url or args.kubeconfig):
        return _demo(args, args.node_name, sink, err, stop)
    agent = _make_agent(args, args.node_name, sink, pod_manifest_path=args.pod_manifest_path,
                        api_client=api_client, file_check_frequency=args.file_check_frequency)
    agent.start()
    try:
        REAL_CLOCK.wait_event(stop, None)
    finally:
        agent.stop()
        if api_client is not None:
            api_client.close()
    return _exit_code(agent)


# -- demonstration ---------------------------------------------------------------------------

_DEMO_MANIFEST = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels:
    app: {name}
spec:
  containers:
  - name: main
    image: {image}
"""


def _api_pod(name: str, node: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": node, "containers": [{"name": "main", "image": "nginx:1.27"}]},
    }


def _demo(args: argparse.Namespace, node_name: str, out: TextStream, err: IO[str],
          stop: threading.Event) -> int:
    from informers.testing import ApiServer

    formatter = formatter_for(args.log_format)

    def say(text: str) -> None:
        # Formatted like the log lines beside it, but always shown: it is the demo's output.
        record = logger.makeRecord(logger.name, logging.INFO, __file__, 0, "demo: %s", (text,),
                                   None)
        err.write(formatter.format(record) + "\n")
        err.flush()

    def step() -> bool:
        return not REAL_CLOCK.sleep(args.demo_step, stop)

    with tempfile.TemporaryDirectory(prefix="kubelet-pod-source-") as manifests, \
            ApiServer() as server:
        api_client = server.api_client()
        say(f"embedded API server at {server.url}; manifest directory {manifests}; "
            f"node {node_name}")

        def write(name: str, image: str) -> None:
            # Written to a dot-file (ignored) and renamed into place, so the file source
            # never reads a half-written manifest.
            path = os.path.join(manifests, f"{name}.yaml")
            tmp = os.path.join(manifests, f".{name}.yaml.tmp")
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(_DEMO_MANIFEST.format(name=name, image=image))
            os.replace(tmp, path)
            say(f"wrote manifest {path} (image {image})")

        write("web", "nginx:1.27")
        agent = _make_agent(args, node_name, out, pod_manifest_path=manifests,
                            api_client=api_client,
                            file_check_frequency=min(args.file_check_frequency, 2.0))
        agent.start()
        try:
            def bind_ours() -> None:
                server.create(_api_pod("api-pod", node_name))
                say(f"created pod default/api-pod bound to {node_name}")

            def bind_elsewhere() -> None:
                server.create(_api_pod("elsewhere", "other-node"))
                say("created pod default/elsewhere bound to other-node (not ours)")

            def delete_ours() -> None:
                server.delete("pods", "default", "api-pod")
                say("deleted pod default/api-pod")

            def remove_cache() -> None:
                os.remove(os.path.join(manifests, "cache.yaml"))
                say("removed manifest cache.yaml")

            script: list[Callable[[], None]] = [
                bind_ours,
                bind_elsewhere,
                lambda: write("cache", "redis:7"),
                lambda: write("web", "nginx:1.28"),
                delete_ours,
                remove_cache,
            ]
            if step():
                for action in script:
                    action()
                    if not step():
                        break
            if args.duration is not None:
                REAL_CLOCK.wait_event(stop, None)
            running: list[str] = []
            if isinstance(agent.runtime, RecordingRuntime):
                running = agent.runtime.running_keys()
            say("done; the node runs: " + (", ".join(running) or "nothing"))
        finally:
            agent.stop()
            api_client.close()
    return _exit_code(agent)
