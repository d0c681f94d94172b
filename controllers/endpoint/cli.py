"""Parses the ``endpoint-controller`` command line and runs the controller it describes.

``endpoint-controller`` (also ``python -m controllers.endpoint``) runs the
:class:`~controllers.endpoint.controller.EndpointController` the way kube-controller-manager
runs its endpoints controller: on a shared informer factory, optionally behind a Lease, with a
``/metrics``, ``/healthz`` and ``/readyz`` server, all held by an
:class:`~informers.manager.Manager` that starts and stops them in order. SIGTERM or SIGINT
stops it cleanly (stop taking work, finish the syncs in flight, release the lease, exit 0); a
second signal exits at once with 1.

Where the cluster comes from (:func:`cluster_source`): ``--kubeconfig``, else ``$KUBECONFIG``,
else the in-cluster service account (``$KUBERNETES_SERVICE_HOST``), else the embedded API
server (:class:`informers.testing.ApiServer`) with the demo workload of
:mod:`controllers.endpoint.demo`. ``~/.kube/config`` is deliberately not read unless named, so
``make run`` never touches a cluster by accident.

Where ``/metrics``, ``/healthz`` and ``/readyz`` are served (``--metrics-bind-address``): on
every interface at port 8080 against a cluster, where the kubelet's probes need the port on the
pod's IP; on loopback at a free port on the embedded server, so a demo is reachable only from
this machine and a second demo starts beside the first.

Flags, logging, kubeconfig errors and exit codes follow :mod:`controllers.command_line`, which
``kubelet-pod-source`` shares.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

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
    load_kubeconfig,
    parse_duration,
    positive_duration,
    positive_int,
)
from controllers.endpoint.controller import CONTROLLER_NAME, EndpointController
from controllers.endpoint.demo import (
    DEFAULT_INTERVAL,
    DEFAULT_SEED,
    DEMO_NAMESPACE,
    ActivityLog,
    DemoWorkload,
    run_table_reporter,
    wait_converged,
    write_table,
)
from controllers.endpoint.exporter import EndpointControllerCollector
from controllers.endpoint.metrics import SyncMetrics
from informers.clock import REAL_CLOCK
from informers.errors import LeaderElectionConfigError, LeaderElectionLostError
from informers.events import EventRecorder
from informers.factory import SharedInformerFactory
from informers.health_server import parse_address
from informers.leaderelection import (
    DEFAULT_LEASE_DURATION,
    DEFAULT_RENEW_DEADLINE,
    DEFAULT_RETRY_PERIOD,
)
from informers.leaderelection import PrometheusMetricsProvider as LeaderMetricsProvider
from informers.manager import LeaderElectionConfig, Manager
from informers.memory import MemoryTuning
from informers.shard.coordinator import ShardingConfig
from informers.sharding import NAMESPACE_KEY
from informers.signals import SignalHandler
from informers.workqueue import PrometheusMetricsProvider as QueueMetricsProvider

__all__ = [
    "DEFAULT_BATCH_PERIOD",
    "DEFAULT_LEASE_NAME",
    "DEFAULT_LEASE_NAMESPACE",
    "DEFAULT_METRICS_ADDRESS",
    "DEFAULT_REQUEST_TIMEOUT",
    "DEFAULT_WORKERS",
    "DEMO_METRICS_ADDRESS",
    "DEMO_SETTLE_TIMEOUT",
    "EMBEDDED",
    "IN_CLUSTER",
    "KUBECONFIG",
    "EndpointControllerCommand",
    "Options",
    "bind_address",
    "build_parser",
    "cluster_source",
    "main",
    "parse_args",
]

logger = logging.getLogger(__name__)

DEFAULT_WORKERS = 5
"""kube-controller-manager ``--concurrent-endpoint-syncs`` (endpoint config defaults.go)."""

DEFAULT_BATCH_PERIOD = 0.0
"""kube-controller-manager ``--endpoint-updates-batch-period``: 0, no batching."""

DEFAULT_LEASE_NAME = CONTROLLER_NAME
"""The Lease every replica competes for (the controller's name, ``endpoint-controller``)."""

DEFAULT_LEASE_NAMESPACE = "kube-system"
"""kube-controller-manager ``--leader-elect-resource-namespace`` default."""

DEFAULT_METRICS_ADDRESS = ":8080"
"""Where ``/metrics``, ``/healthz`` and ``/readyz`` are served against a cluster: every
interface, port 8080 (controller-runtime's ``--metrics-bind-address`` default), so the
kubelet's probes reach it on the pod's IP."""

DEMO_METRICS_ADDRESS = "127.0.0.1:0"
"""The same on the embedded API server (the demo): loopback only, at a free port."""

DEFAULT_REQUEST_TIMEOUT = 60.0
"""Seconds per write request: kube-apiserver ends a non-watch request after its
``--request-timeout`` (1 min) anyway; the bound also lets shutdown finish syncs in flight."""

DEMO_SETTLE_TIMEOUT = 10.0
"""Seconds the controller gets to converge after the demo workload stops at ``--duration``."""

KUBECONFIG = "kubeconfig"
IN_CLUSTER = "in-cluster"
EMBEDDED = "embedded"

_SUPERVISE_POLL = 0.1  # real seconds between checks of --duration and of the manager's end
_POOL_HEADROOM = 16  # connections beyond the workers: 3 watches, lease, events, demo, table


def bind_address(text: str) -> str:
    """A ``--metrics-bind-address`` value: ``[HOST]:PORT`` as
    :func:`~informers.health_server.parse_address` takes it, or ``0`` (serve nothing).

    Raises:
        argparse.ArgumentTypeError: neither.
    """
    if text.strip() == "0":
        return text
    try:
        parse_address(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


@dataclass(frozen=True)
class Options:
    """Everything the command line says; field defaults are the flags' defaults."""

    kubeconfig: str | None = None
    context: str | None = None
    workers: int = DEFAULT_WORKERS
    batch_period: float = DEFAULT_BATCH_PERIOD
    leader_elect: bool = False
    lease_name: str = DEFAULT_LEASE_NAME
    lease_namespace: str = DEFAULT_LEASE_NAMESPACE
    identity: str | None = None
    lease_duration: float = DEFAULT_LEASE_DURATION
    renew_deadline: float = DEFAULT_RENEW_DEADLINE
    retry_period: float = DEFAULT_RETRY_PERIOD
    shard_ring: str | None = None
    metrics_address: str | None = None  # None: DEFAULT_METRICS_ADDRESS, or the demo's
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    log_level: str = "info"
    log_format: str = "text"
    demo: bool | None = None
    demo_seed: int = DEFAULT_SEED
    demo_interval: float = DEFAULT_INTERVAL
    duration: float | None = None


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (kube-controller-manager's flag names are accepted as aliases)."""
    parser = CommandParser(
        prog="endpoint-controller",
        description=(
            "Keep every selector Service's core/v1 Endpoints equal to its pods, like "
            "kube-controller-manager's endpoints controller. Without --kubeconfig, $KUBECONFIG "
            "or an in-cluster service account it runs on an embedded API server with a demo "
            "workload."
        ),
        epilog=DURATION_HELP,
    )
    add = parser.add_argument
    cluster = parser.add_argument_group("cluster")
    cluster.add_argument("--kubeconfig", metavar="PATH",
                         help="kubeconfig file (default: $KUBECONFIG, else in-cluster, else "
                              "the embedded API server)")
    cluster.add_argument("--context", help="kubeconfig context (default: its current one)")
    add("--workers", "--concurrent-endpoint-syncs", type=positive_int, default=DEFAULT_WORKERS,
        metavar="N", help="Services synced at once (default %(default)s)")
    add("--batch-period", "--endpoint-updates-batch-period", type=parse_duration,
        default=DEFAULT_BATCH_PERIOD, metavar="DURATION",
        help="wait this long after a pod change before syncing, coalescing pod changes "
             "(default 0: none)")
    add("--request-timeout", type=positive_duration, default=DEFAULT_REQUEST_TIMEOUT,
        metavar="DURATION", help="timeout of each write request (default 60s)")
    election = parser.add_argument_group("leader election")
    election.add_argument("--leader-elect", action=argparse.BooleanOptionalAction, default=False,
                          help="run only while holding a coordination.k8s.io Lease "
                               "(default: off)")
    election.add_argument("--leader-elect-lease-name", "--leader-elect-resource-name",
                          dest="lease_name", default=DEFAULT_LEASE_NAME, metavar="NAME",
                          help="the Lease's name (default %(default)s)")
    election.add_argument("--leader-elect-namespace", "--leader-elect-resource-namespace",
                          dest="lease_namespace", default=DEFAULT_LEASE_NAMESPACE,
                          metavar="NAMESPACE", help="the Lease's namespace (default %(default)s)")
    election.add_argument("--leader-elect-identity", dest="identity", metavar="ID",
                          help="this replica's identity (default: <hostname>_<random uuid>)")
    election.add_argument("--leader-elect-lease-duration", dest="lease_duration",
                          type=positive_duration, default=DEFAULT_LEASE_DURATION,
                          metavar="DURATION", help="how long a standby waits before taking over "
                          "an unrenewed lease (default 15s)")
    election.add_argument("--leader-elect-renew-deadline", dest="renew_deadline",
                          type=positive_duration, default=DEFAULT_RENEW_DEADLINE,
                          metavar="DURATION", help="how long the leader retries renewing "
                          "before it steps down (default 10s)")
    election.add_argument("--leader-elect-retry-period", dest="retry_period",
                          type=positive_duration, default=DEFAULT_RETRY_PERIOD,
                          metavar="DURATION", help="time between attempts (default 2s)")
    sharding = parser.add_argument_group("sharding")
    sharding.add_argument("--shard-ring", metavar="NAME",
                          help="run as one replica of ring NAME: Services are split between "
                               "the replicas by the hash of their namespace, each replica "
                               "holding a Lease labelled sharding.informers.io/ring=NAME in "
                               "the --leader-elect-namespace, with the --leader-elect-* "
                               "timings and, with --leader-elect-identity, that name "
                               "(docs/sharding.md); not with --leader-elect")
    add("--metrics-bind-address", "--metrics-address", dest="metrics_address", default=None,
        type=bind_address, metavar="[HOST]:PORT",
        help=f"serve /metrics, /healthz and /readyz here; no HOST: every interface; port 0: a "
             f"free port; 0 alone: not at all (default {DEFAULT_METRICS_ADDRESS}, the port the "
             f"probes use; on the embedded API server {DEMO_METRICS_ADDRESS}: loopback, a free "
             f"port)")
    add_logging_flags(parser)
    demo = parser.add_argument_group("demo and scripting")
    demo.add_argument("--demo", action=argparse.BooleanOptionalAction, default=None,
                      help="run the demo workload (services and pods that come and go) and show "
                           "the endpoints as they change (default: only on the embedded server; "
                           "against a cluster it creates demo services and pods in "
                           f"namespace {DEMO_NAMESPACE}: test clusters only)")
    demo.add_argument("--demo-seed", type=int, default=DEFAULT_SEED, metavar="N",
                      help="seed of the demo's changes (default %(default)s)")
    demo.add_argument("--demo-interval", type=positive_duration, default=DEFAULT_INTERVAL,
                      metavar="DURATION", help="time between demo changes (default 1s)")
    demo.add_argument("--duration", type=positive_duration, default=None, metavar="DURATION",
                      help="stop after this long (the demo workload stops first and the "
                           "controller gets up to 10s to converge); default: run until "
                           "signalled")
    return parser


def parse_args(argv: Sequence[str] | None = None) -> Options:
    """Parse ``argv`` (default ``sys.argv[1:]``); exits with 2 and a usage message on errors."""
    parser = build_parser()
    ns = parser.parse_args(argv)
    if ns.leader_elect and not ns.lease_name:
        parser.error("--leader-elect-lease-name must not be empty")
    if ns.shard_ring is not None and not ns.shard_ring:
        parser.error("--shard-ring must not be empty")
    if ns.shard_ring and ns.leader_elect:
        parser.error("--shard-ring and --leader-elect exclude each other: every replica of a "
                     "ring works")
    return Options(**{f: getattr(ns, f) for f in Options.__dataclass_fields__})


def cluster_source(options: Options, environ: Mapping[str, str] | None = None) -> str:
    """:data:`KUBECONFIG` (``--kubeconfig`` or ``$KUBECONFIG``), :data:`IN_CLUSTER`
    (``$KUBERNETES_SERVICE_HOST`` and ``_PORT`` set, as ``rest.InClusterConfig`` requires) or
    :data:`EMBEDDED`."""
    env = os.environ if environ is None else environ
    if options.kubeconfig or env.get("KUBECONFIG"):
        return KUBECONFIG
    if env.get("KUBERNETES_SERVICE_HOST") and env.get("KUBERNETES_SERVICE_PORT"):
        return IN_CLUSTER
    return EMBEDDED


class EndpointControllerCommand:
    """One run of the command: connects, wires the pieces, runs until stopped, cleans up.

    :meth:`run` builds an informer factory, the :class:`EndpointController` (its queue's
    metrics named ``endpoint``), an :class:`~informers.events.EventRecorder` and a
    :class:`~informers.manager.Manager` holding the factory, the controller (leader-only when
    ``--leader-elect``) and the health and metrics server, on a ``prometheus_client`` registry
    of its own. In demo mode it also runs the :class:`~controllers.endpoint.demo.DemoWorkload`,
    the :class:`~controllers.endpoint.demo.ActivityLog` and the table reporter.

    Stop order: the first SIGTERM/SIGINT (or :attr:`stop_event`) stops the demo workload, then
    the manager (controller workers finish their syncs, the lease is released, informers and
    the health server stop); then the event recorder writes what is queued, and the client and
    an embedded server are closed. ``--duration`` does the same after that many seconds, but
    first gives the controller :data:`DEMO_SETTLE_TIMEOUT` to converge on the demo's last
    changes.

    The attributes (``server``, ``api_client``, ``factory``, ``controller``, ``manager``,
    ``workload``, ``registry``) are set as :meth:`run` builds them, for tests and embedding;
    :attr:`built` is set once they all exist.

    Args:
        options: the parsed command line.
        stop_event: stops the run when set; also set by the first signal.
        handle_signals: install the SIGTERM/SIGINT handler (only from the main thread).
        out: where the demo's tables go (default ``sys.stdout``).
        environ: the environment :func:`cluster_source` reads (default ``os.environ``).
    """

    def __init__(
        self,
        options: Options,
        *,
        stop_event: threading.Event | None = None,
        handle_signals: bool = True,
        out: TextIO | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.options = options
        self.stop_event = stop_event if stop_event is not None else threading.Event()
        self.handle_signals = handle_signals
        self.out = out if out is not None else sys.stdout
        self._environ = os.environ if environ is None else environ
        self.source = cluster_source(options, environ)
        self.demo = options.demo if options.demo is not None else self.source == EMBEDDED
        self.metrics_address = options.metrics_address
        if self.metrics_address is None:
            self.metrics_address = (DEMO_METRICS_ADDRESS if self.source == EMBEDDED
                                    else DEFAULT_METRICS_ADDRESS)
        self.server: Any = None
        self.api_client: Any = None
        self.factory: SharedInformerFactory | None = None
        self.controller: EndpointController | None = None
        self.manager: Manager | None = None
        self.recorder: EventRecorder | None = None
        self.workload: DemoWorkload | None = None
        self.registry: Any = None
        self.built = threading.Event()
        self._tempdir: str | None = None
        self._done = threading.Event()
        self._demo_stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._workload_thread: threading.Thread | None = None

    # -- connecting ------------------------------------------------------------------------------

    def _configuration(self) -> Any:
        from kubernetes import client, config

        configuration = client.Configuration()
        if self.source == KUBECONFIG:
            configuration = load_kubeconfig(self.options.kubeconfig, self.options.context,
                                            environ=self._environ)
            logger.info("using the cluster at %s (kubeconfig %s)", configuration.host,
                        self.options.kubeconfig or self._environ.get("KUBECONFIG"))
        elif self.source == IN_CLUSTER:
            config.load_incluster_config(client_configuration=configuration)
            logger.info("using the in-cluster configuration (%s)", configuration.host)
        else:
            from informers.testing import ApiServer

            self.server = ApiServer().start()
            self._tempdir = tempfile.mkdtemp(prefix="endpoint-controller-")
            path = self.server.write_kubeconfig(os.path.join(self._tempdir, "kubeconfig"))
            configuration.host = self.server.url
            configuration.api_key = {"BearerToken": self.server.token}
            configuration.api_key_prefix = {"BearerToken": "Bearer"}
            logger.info("no cluster configured: embedded API server at %s; watch it with: "
                        "kubectl --kubeconfig %s get endpoints -w", self.server.url, path)
        configuration.connection_pool_maxsize = max(
            configuration.connection_pool_maxsize, self.options.workers + _POOL_HEADROOM
        )
        return client.ApiClient(configuration)

    # -- wiring ----------------------------------------------------------------------------------

    def _metrics_registry(self, sync_metrics: SyncMetrics, factory: SharedInformerFactory) -> Any:
        try:
            import prometheus_client
        except ImportError:
            logger.warning("prometheus_client is not installed: /metrics answers 501 "
                           "(pip install 'kube-informers[metrics]')")
            return None
        registry = prometheus_client.CollectorRegistry()
        prometheus_client.ProcessCollector(registry=registry)
        prometheus_client.PlatformCollector(registry=registry)
        prometheus_client.GCCollector(registry=registry)
        registry.register(EndpointControllerCollector(sync_metrics, factory.informers))
        return registry

    def _build(self) -> None:
        opts = self.options
        # A process of our own: the opt-in GC and C-heap tuning for large caches is on.
        factory = SharedInformerFactory(self.api_client, memory_tuning=MemoryTuning())
        logger.info("memory tuning on: GC paused while lists are decoded, frozen after the "
                    "first sync (informers.MemoryTuning)")
        sync_metrics = SyncMetrics()
        self.registry = registry = self._metrics_registry(sync_metrics, factory)
        queue_metrics = None
        leader_metrics = None
        if registry is not None:
            queue_metrics = QueueMetricsProvider(registry)
            leader_metrics = LeaderMetricsProvider(registry)
        self.recorder = EventRecorder(self.api_client, CONTROLLER_NAME,
                                      request_timeout=opts.request_timeout)
        election = None
        if opts.leader_elect:
            election = LeaderElectionConfig(
                opts.lease_name, opts.lease_namespace, identity=opts.identity,
                lease_duration=opts.lease_duration, renew_deadline=opts.renew_deadline,
                retry_period=opts.retry_period, release_on_cancel=True,
            )
        sharding = None
        if opts.shard_ring:
            sharding = ShardingConfig(
                opts.shard_ring, namespace=opts.lease_namespace, key=NAMESPACE_KEY,
                name=opts.identity, lease_duration=opts.lease_duration,
                renew_deadline=opts.renew_deadline, retry_period=opts.retry_period)
        # Before the informers exist: with sharding, the manager filters their ListWatches.
        self.manager = Manager(
            self.api_client, factory=factory, leader_election=election,
            leader_election_metrics_provider=leader_metrics,
            health_address=self.metrics_address, metrics_registry=registry,
            sharding=sharding,
        )
        core = factory.core().v1()
        self.controller = controller = EndpointController(
            core.pods(), core.services(), core.endpoints(), self.api_client, opts.batch_period,
            event_recorder=self.recorder, metrics=sync_metrics, metrics_provider=queue_metrics,
            request_timeout=opts.request_timeout,
        )
        core.endpoints().informer().add_event_handler(
            ActivityLog(logging.INFO if self.demo else logging.DEBUG)
        )
        if self.manager.shard is not None:
            self.manager.shard.gate(controller)
        self.factory = factory
        # No sync or write while this replica's leadership is in doubt (e.g. after a pause).
        controller.leader_check = self.manager.is_leader
        workers = opts.workers
        self.manager.add_runnable(lambda stop: controller.run(workers, stop),
                                  needs_leader=True, name=CONTROLLER_NAME)
        if self.demo:
            self.workload = DemoWorkload(self.api_client, seed=opts.demo_seed,
                                         interval=opts.demo_interval)
        self.built.set()

    # -- running ---------------------------------------------------------------------------------

    def _start_thread(self, target: Any, name: str) -> threading.Thread:
        thread = threading.Thread(target=target, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()
        return thread

    def _finish_demo(self) -> None:
        """Stop the workload; give the controller time to converge on its last changes."""
        self._demo_stop.set()
        if self._workload_thread is not None:
            self._workload_thread.join()
        if self.workload is None:
            return
        problems = wait_converged(self.api_client, DEMO_SETTLE_TIMEOUT, stop=self.stop_event)
        if problems:
            logger.warning("demo: not converged after %ss: %s", DEMO_SETTLE_TIMEOUT,
                           "; ".join(problems))
        else:
            logger.info("demo: converged after %d changes: every Service's endpoints match "
                        "its pods", len(self.workload.changes))

    def _supervise(self, manager_stop: threading.Event) -> None:
        """Turn a signal, ``stop_event`` or ``--duration`` into the manager's stop."""
        duration = self.options.duration
        deadline = None if duration is None else REAL_CLOCK.now() + duration
        while not self._done.is_set():
            timeout = _SUPERVISE_POLL
            if deadline is not None:
                timeout = min(timeout, max(deadline - REAL_CLOCK.now(), 0.0))
            if REAL_CLOCK.wait_event(self.stop_event, timeout):
                self._demo_stop.set()
                break
            if deadline is not None and REAL_CLOCK.now() >= deadline:
                logger.info("--duration %ss elapsed: stopping", duration)
                self._finish_demo()
                break
        manager_stop.set()

    def run(self) -> int:
        """Run until stopped; returns the exit code (:mod:`controllers.command_line`): 0 after
        a clean stop; 1 when the in-cluster configuration cannot be loaded, the caches never
        synced, the metrics address cannot be bound, the lease was lost or the controller
        failed; 2 for a kubeconfig that cannot be loaded and leader-election durations
        client-go refuses."""
        handler = None
        if self.handle_signals and threading.current_thread() is threading.main_thread():
            handler = SignalHandler(self.stop_event).install()
        try:
            return self._run()
        finally:
            if handler is not None:
                handler.uninstall()
            self._close()

    def _run(self) -> int:
        try:
            self.api_client = self._configuration()
        except KubeconfigError as err:
            logger.error("%s", err)
            return EXIT_USAGE
        except Exception as err:
            logger.error("cannot load the cluster configuration (%s): %s", self.source, err)
            return EXIT_FAILURE
        try:
            self._build()
        except LeaderElectionConfigError as err:
            logger.error("invalid leader election durations: %s", err)
            return EXIT_USAGE
        except ValueError as err:
            logger.error("invalid options: %s", err)
            return EXIT_USAGE
        assert self.manager is not None
        assert self.recorder is not None
        self.recorder.start()
        workload = self.workload
        if workload is not None:
            self._workload_thread = self._start_thread(
                lambda: workload.run(self._demo_stop), "endpoint-demo-workload"
            )
            self._start_thread(
                lambda: run_table_reporter(self.api_client, self.out, self._demo_stop),
                "endpoint-demo-table",
            )
        manager_stop = threading.Event()
        self._start_thread(lambda: self._supervise(manager_stop), "endpoint-controller-supervisor")
        code = EXIT_OK
        try:
            self.manager.start(manager_stop)
        except LeaderElectionLostError as err:
            logger.error("%s; exiting", err)
            code = EXIT_FAILURE
        except OSError as err:
            logger.error("cannot serve metrics on %s: %s (choose another "
                         "--metrics-bind-address, or 0 to disable)", self.metrics_address, err)
            code = EXIT_FAILURE
        except Exception:
            logger.exception("the endpoint controller failed")
            code = EXIT_FAILURE
        else:
            if not self.manager.caches_synced():
                code = EXIT_FAILURE
                self._report_unsynced()
        finally:
            self._done.set()
            self._demo_stop.set()
            for thread in self._threads:
                thread.join()
        if self.workload is not None:
            write_table(self.api_client, self.out, title="endpoints at exit")
        logger.info("endpoint controller stopped (exit code %d)", code)
        return code

    def _report_unsynced(self) -> None:
        """Log which informers never synced, with each one's last list or watch error."""
        assert self.factory is not None
        last_errors: dict[str, BaseException | None] = {}
        for name, informer in self.factory.informers().items():
            if not informer.has_synced():
                metrics = informer.reflector_metrics()
                last_errors[name] = None if metrics is None else metrics.last_error
        logger.error("caches never synced: %s", describe_unsynced(last_errors))

    def _close(self) -> None:
        if self.recorder is not None:
            self.recorder.stop()
        if self.api_client is not None:
            self.api_client.close()
        if self.server is not None:
            self.server.stop()
        if self._tempdir is not None:
            shutil.rmtree(self._tempdir, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    """The ``endpoint-controller`` entry point; returns the exit code."""
    options = parse_args(argv)
    configure_logging(options.log_level, options.log_format)
    return EndpointControllerCommand(options).run()
