"""Runs the endpoint controller's demo: a small Service and Pod workload and what it shows.

``endpoint-controller`` without a cluster starts the embedded API server and this workload:
:class:`DemoWorkload` creates a few Services (a plain one, one with a named target port, a
headless one, and one that comes and goes) and their Pods through the API, then changes them
every ``interval`` seconds (pods become ready or not ready, come and go). The choices come from
a seeded random generator, so the same seed gives the same sequence of changes.

What the controller does is shown by :class:`ActivityLog` (a log line per Endpoints write
seen by the informer: ``synced endpoints default/web: 2 ready, 1 not ready``) and
:func:`run_table_reporter` (a compact table of every Service's ready and not-ready addresses,
read from the server). :func:`convergence_problems` compares the Endpoints at the server with
what the pure subset functions compute for the Services and Pods at the server.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO
from urllib.parse import quote

from controllers.endpoint.controller import LEADER_ELECTION_ANNOTATION
from controllers.endpoint.json_values import meta_of as _meta
from controllers.endpoint.repack import subsets_equal_ignore_resource_version
from controllers.endpoint.subsets import compute_subsets
from informers.client.api_call import api_call
from informers.clock import REAL_CLOCK, Clock
from informers.errors import ApiConnectionError, StatusError
from informers.keys import DeletedFinalStateUnknown

__all__ = [
    "DEFAULT_INTERVAL",
    "DEFAULT_SEED",
    "DEMO_NAMESPACE",
    "TABLE_PERIOD",
    "ActivityLog",
    "DemoWorkload",
    "convergence_problems",
    "endpoint_counts",
    "render_table",
    "run_table_reporter",
    "wait_converged",
]

logger = logging.getLogger(__name__)

DEMO_NAMESPACE = "default"
"""Where the demo's Services and Pods live."""

DEFAULT_SEED = 1
"""Seed of the workload's choices (``--demo-seed``)."""

DEFAULT_INTERVAL = 1.0
"""Seconds between two workload changes (``--demo-interval``): slow enough to follow."""

TABLE_PERIOD = 5.0
"""Seconds between two tables of the Endpoints at the server."""

_MAX_PODS_PER_APP = 4
_NODE = "demo-node"
_MERGE_PATCH = "application/merge-patch+json"


@dataclass(frozen=True)
class _App:
    """One demo Service and the shape of its Pods."""

    name: str
    cluster_ip: str  # "None": headless
    port: int
    target_port: int | str
    container_port: int
    port_name: str
    initial_pods: int
    headless_hostnames: bool = False


_APPS: tuple[_App, ...] = (
    _App("web", "10.96.0.10", 80, 8080, 8080, "http", 3),
    _App("api", "10.96.0.11", 9090, "grpc", 9000, "grpc", 2),  # a named target port
    _App("db", "None", 5432, 5432, 5432, "pg", 1, headless_hostnames=True),
    _App("cache", "10.96.0.12", 6379, 6379, 6379, "redis", 1),  # its Service comes and goes
)
_TOGGLED_SERVICE = "cache"


@dataclass
class _Pod:
    name: str
    app: str
    ip: str
    ready: bool


@dataclass
class DemoWorkload:
    """Creates the demo's Services and Pods and changes them, deterministically per seed.

    Writes go through the API (``api_client``), like any client's: pods are created, then
    their status is patched to Running with an IP and a ``Ready`` condition, as a kubelet
    would. The workload keeps its own model of what it created; the seeded generator picks
    each change from that model, so a given seed always makes the same changes in the same
    order (the timing of the controller's reaction varies, the workload does not).

    Thread safety: :meth:`setup` and :meth:`step` from one thread (:meth:`run` does both).

    Args:
        api_client: a ``kubernetes.client.ApiClient``.
        namespace: where to create everything (must exist).
        seed: seed of the random choices.
        interval: seconds between changes in :meth:`run`.
        clock: time source of :meth:`run`'s pauses.
    """

    api_client: Any
    namespace: str = DEMO_NAMESPACE
    seed: int = DEFAULT_SEED
    interval: float = DEFAULT_INTERVAL
    clock: Clock = REAL_CLOCK
    pods: dict[str, _Pod] = field(default_factory=dict, init=False)
    services: set[str] = field(default_factory=set, init=False)
    changes: list[str] = field(default_factory=list, init=False)
    """Every change made, in order (``"pod web-2 ready"``, ``"service cache deleted"``, ...)."""

    def __post_init__(self) -> None:
        if self.interval <= 0:
            raise ValueError(f"interval must be > 0, got {self.interval!r}")
        self._rng = random.Random(self.seed)
        self._next_ip = 2
        self._next_index: dict[str, int] = {}

    # -- API ------------------------------------------------------------------------------------

    def _path(self, plural: str, name: str | None = None, subresource: str | None = None) -> str:
        path = f"/api/v1/namespaces/{quote(self.namespace, safe='')}/{plural}"
        if name is not None:
            path += f"/{quote(name, safe='')}"
        if subresource is not None:
            path += f"/{subresource}"
        return path

    def _service(self, app: _App) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": app.name, "labels": {"app": app.name, "demo": "endpoints"}},
            "spec": {
                "clusterIP": app.cluster_ip,
                "selector": {"app": app.name},
                "ports": [{"name": app.port_name, "port": app.port,
                           "targetPort": app.target_port, "protocol": "TCP"}],
            },
        }

    def _pod_manifest(self, app: _App, name: str) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "nodeName": _NODE,
            "containers": [{
                "name": app.name,
                "image": f"registry.example.com/{app.name}:1.0",
                "ports": [{"name": app.port_name, "containerPort": app.container_port,
                           "protocol": "TCP"}],
            }],
        }
        if app.headless_hostnames:
            spec["hostname"] = name
            spec["subdomain"] = app.name
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": app.name, "demo": "endpoints"}},
            "spec": spec,
        }

    def _patch_status(self, pod: _Pod, ready: bool) -> None:
        status = {
            "phase": "Running",
            "hostIP": "192.168.0.10",
            "podIP": pod.ip,
            "podIPs": [{"ip": pod.ip}],
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        }
        api_call(self.api_client, "PATCH", self._path("pods", pod.name, "status"),
                 {"status": status}, content_type=_MERGE_PATCH)

    # -- changes ----------------------------------------------------------------------------------

    def _app(self, name: str) -> _App:
        return next(a for a in _APPS if a.name == name)

    def _create_service(self, app: _App) -> str:
        api_call(self.api_client, "POST", self._path("services"), self._service(app))
        self.services.add(app.name)
        return f"service {app.name} created"

    def _delete_service(self, name: str) -> str:
        api_call(self.api_client, "DELETE", self._path("services", name))
        self.services.discard(name)
        return f"service {name} deleted"

    def _create_pod(self, app: _App, ready: bool) -> str:
        index = self._next_index.get(app.name, 0)
        self._next_index[app.name] = index + 1
        name = f"{app.name}-{index}"
        pod = _Pod(name, app.name, f"10.244.0.{self._next_ip}", ready)
        self._next_ip += 1
        api_call(self.api_client, "POST", self._path("pods"), self._pod_manifest(app, name))
        self.pods[name] = pod
        self._patch_status(pod, ready)
        return f"pod {name} created ({'ready' if ready else 'not ready'}, {pod.ip})"

    def _delete_pod(self, name: str) -> str:
        # No kubelet finishes a graceful deletion (a bound pod's default 30 s): remove it now.
        api_call(self.api_client, "DELETE", self._path("pods", name), {"gracePeriodSeconds": 0})
        del self.pods[name]
        return f"pod {name} deleted"

    def _flip(self, name: str) -> str:
        pod = self.pods[name]
        self._patch_status(pod, not pod.ready)
        pod.ready = not pod.ready
        return f"pod {name} {'ready' if pod.ready else 'not ready'}"

    def setup(self) -> list[str]:
        """Create every Service and its initial Pods (the last pod of ``api`` not ready)."""
        done: list[str] = []
        for app in _APPS:
            done.append(self._create_service(app))
            for i in range(app.initial_pods):
                ready = not (app.name == "api" and i == app.initial_pods - 1)
                done.append(self._create_pod(app, ready))
        self.changes.extend(done)
        return done

    def step(self) -> str:
        """Make one change chosen by the seeded generator; returns what it did."""
        per_app: dict[str, list[str]] = {}
        for pod in self.pods.values():
            per_app.setdefault(pod.app, []).append(pod.name)
        choices: list[tuple[str, int]] = [("service", 1)]
        if self.pods:
            choices.append(("flip", 5))
        if any(len(per_app.get(a.name, [])) < _MAX_PODS_PER_APP for a in _APPS):
            choices.append(("add", 2))
        if any(len(names) > 1 for names in per_app.values()):
            choices.append(("delete", 2))
        kinds, weights = zip(*choices, strict=True)
        kind = self._rng.choices(kinds, weights)[0]
        if kind == "flip":
            change = self._flip(self._rng.choice(sorted(self.pods)))
        elif kind == "add":
            apps = [a for a in _APPS if len(per_app.get(a.name, [])) < _MAX_PODS_PER_APP]
            change = self._create_pod(self._rng.choice(apps), ready=False)
        elif kind == "delete":
            victims = sorted(n for names in per_app.values() if len(names) > 1 for n in names)
            change = self._delete_pod(self._rng.choice(victims))
        elif _TOGGLED_SERVICE in self.services:
            change = self._delete_service(_TOGGLED_SERVICE)
        else:
            change = self._create_service(self._app(_TOGGLED_SERVICE))
        self.changes.append(change)
        return change

    def run(self, stop: threading.Event) -> None:
        """:meth:`setup`, then one :meth:`step` every ``interval`` seconds until ``stop``.

        API errors are logged and the workload carries on (its model may then differ from
        the server; the convergence check reads the server, not the model).
        """
        try:
            for change in self.setup():
                logger.info("demo: %s", change)
        except (StatusError, ApiConnectionError) as err:
            logger.error("demo: setting up the workload failed: %s", err)
            return
        while not self.clock.sleep(self.interval, stop):
            try:
                logger.info("demo: %s", self.step())
            except (StatusError, ApiConnectionError) as err:
                logger.warning("demo: change failed: %s", err)


# -- what the controller should have written -------------------------------------------------------


def _items(api_client: Any, namespace: str, plural: str) -> list[dict[str, Any]]:
    answer = api_call(api_client, "GET", f"/api/v1/namespaces/{quote(namespace, safe='')}/{plural}")
    return [i for i in answer.get("items") or [] if isinstance(i, dict)]


def convergence_problems(api_client: Any, namespace: str = DEMO_NAMESPACE) -> list[str]:
    """What differs between the Endpoints at the server and their Services' pods; ``[]`` when
    the controller has converged.

    Reads Services, Pods and Endpoints of ``namespace`` from the server. A Service with a
    selector (and not ExternalName) must have an Endpoints whose subsets equal
    :func:`~controllers.endpoint.subsets.compute_subsets` of the pods its selector matches;
    an Endpoints without a Service (and not a leader-election record) must be gone.
    """
    services = {_meta(s).get("name"): s for s in _items(api_client, namespace, "services")}
    pods = _items(api_client, namespace, "pods")
    endpoints = {_meta(e).get("name"): e for e in _items(api_client, namespace, "endpoints")}
    problems: list[str] = []
    for name, service in sorted(services.items(), key=lambda kv: str(kv[0])):
        spec = service.get("spec") or {}
        selector = spec.get("selector")
        if spec.get("type") == "ExternalName" or not isinstance(selector, Mapping):
            continue
        selected = [
            p for p in pods
            if all((_meta(p).get("labels") or {}).get(k) == v for k, v in selector.items())
        ]
        expected = compute_subsets(service, selected).subsets
        current = endpoints.get(name)
        if current is None:
            problems.append(f"endpoints {namespace}/{name} missing")
        elif not subsets_equal_ignore_resource_version(current.get("subsets"), expected):
            problems.append(f"endpoints {namespace}/{name} differ from its pods")
    for name, current in sorted(endpoints.items(), key=lambda kv: str(kv[0])):
        if name not in services and LEADER_ELECTION_ANNOTATION not in (
            _meta(current).get("annotations") or {}
        ):
            problems.append(f"endpoints {namespace}/{name} has no service")
    return problems


def wait_converged(
    api_client: Any, timeout: float, namespace: str = DEMO_NAMESPACE, *,
    clock: Clock = REAL_CLOCK, poll: float = 0.1, stop: threading.Event | None = None,
) -> list[str]:
    """Poll :func:`convergence_problems` until there are none, ``timeout`` passes or ``stop``
    is set; returns the last problems (``[]``: converged)."""
    deadline = clock.now() + timeout
    stop = stop if stop is not None else threading.Event()
    while True:
        try:
            problems = convergence_problems(api_client, namespace)
        except (StatusError, ApiConnectionError) as err:
            problems = [f"reading the server failed: {err}"]
        if not problems or clock.now() >= deadline or clock.sleep(poll, stop):
            return problems


# -- showing what happens ------------------------------------------------------------------------


def endpoint_counts(endpoints: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The distinct ready and not-ready IPs of an Endpoints, each in first-seen order."""
    ready: dict[str, None] = {}
    not_ready: dict[str, None] = {}
    for subset in endpoints.get("subsets") or []:
        if not isinstance(subset, Mapping):
            continue
        for key, out in (("addresses", ready), ("notReadyAddresses", not_ready)):
            for address in subset.get(key) or []:
                if isinstance(address, Mapping) and isinstance(address.get("ip"), str):
                    out[address["ip"]] = None
    return list(ready), list(not_ready)


def _ports(endpoints: Mapping[str, Any]) -> str:
    ports: dict[str, None] = {}
    for subset in endpoints.get("subsets") or []:
        for port in (subset.get("ports") or []) if isinstance(subset, Mapping) else []:
            if isinstance(port, Mapping):
                ports[f"{port.get('port')}/{port.get('protocol') or 'TCP'}"] = None
    return ",".join(ports) or "-"


def render_table(
    services: Sequence[Mapping[str, Any]], endpoints: Sequence[Mapping[str, Any]]
) -> str:
    """A compact table: one row per Service (and per Endpoints without one), sorted by key,
    with its ready and not-ready address counts, ports and addresses."""
    by_key: dict[str, Mapping[str, Any] | None] = {}
    for service in services:
        by_key[f"{_meta(service).get('namespace')}/{_meta(service).get('name')}"] = None
    for item in endpoints:
        by_key[f"{_meta(item).get('namespace')}/{_meta(item).get('name')}"] = item
    rows = [("SERVICE", "READY", "NOT READY", "PORTS", "ADDRESSES")]
    for key in sorted(by_key):
        found = by_key[key]
        if found is None:
            rows.append((key, "-", "-", "-", "(no endpoints)"))
            continue
        ready, not_ready = endpoint_counts(found)
        addresses = " ".join(ready) or "-"
        if not_ready:
            addresses += " | not ready: " + " ".join(not_ready)
        rows.append((key, str(len(ready)), str(len(not_ready)), _ports(found), addresses))
    w = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join(
        f"{r[0]:<{w[0]}}  {r[1]:>{w[1]}}  {r[2]:>{w[2]}}  {r[3]:<{w[3]}}  {r[4]}".rstrip()
        for r in rows
    )


def write_table(api_client: Any, out: TextIO, namespace: str = DEMO_NAMESPACE,
                title: str = "endpoints at the server") -> None:
    """Read the Services and Endpoints of ``namespace`` and write the table to ``out``."""
    try:
        table = render_table(_items(api_client, namespace, "services"),
                             _items(api_client, namespace, "endpoints"))
    except (StatusError, ApiConnectionError) as err:
        logger.warning("demo: reading endpoints for the table failed: %s", err)
        return
    out.write(f"--- {title} ---\n{table}\n")
    out.flush()


def run_table_reporter(
    api_client: Any, out: TextIO, stop: threading.Event, *, namespace: str = DEMO_NAMESPACE,
    period: float = TABLE_PERIOD, clock: Clock = REAL_CLOCK,
) -> None:
    """Write the table to ``out`` every ``period`` seconds until ``stop`` is set."""
    while not clock.sleep(period, stop):
        write_table(api_client, out, namespace)


class ActivityLog:
    """An Endpoints informer handler that logs every change of an Endpoints as it is seen.

    ``synced endpoints default/web: 2 ready, 1 not ready`` for an add or an update (a new
    resourceVersion), ``deleted endpoints default/cache`` for a delete. Objects of the
    informer's initial list are not logged. Quick, never raises, never mutates.

    Args:
        level: the logging level of the lines (INFO in the demo, DEBUG against a cluster).
    """

    def __init__(self, level: int = logging.INFO) -> None:
        self.level = level

    @staticmethod
    def _key(obj: Mapping[str, Any]) -> str:
        meta = _meta(obj)
        return f"{meta.get('namespace')}/{meta.get('name')}"

    def _synced(self, obj: Any) -> None:
        if isinstance(obj, Mapping):
            ready, not_ready = endpoint_counts(obj)
            logger.log(self.level, "synced endpoints %s: %d ready, %d not ready",
                       self._key(obj), len(ready), len(not_ready))

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        if not is_in_initial_list:
            self._synced(obj)

    def on_update(self, old: Any, new: Any) -> None:
        if _meta(old).get("resourceVersion") != _meta(new).get("resourceVersion"):
            self._synced(new)

    def on_delete(self, obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        if isinstance(obj, Mapping):
            logger.log(self.level, "deleted endpoints %s", self._key(obj))
