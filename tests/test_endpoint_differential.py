"""Differential test: our EndpointController against kube-controller-manager's, on a real
kube-apiserver.

Random scenarios, one per seed and each in a namespace of its own (``diff-<seed>``), are
applied to a real dual-stack kube-apiserver all at once: Services with and without selectors
(an empty selector is dropped by the server and so is no selector), ExternalName Services,
ClusterIP and headless Services with and without ports, named (also on sidecars) and numeric
target ports of several protocols, ``publishNotReadyAddresses``, ``ipFamilies`` of either
order; pods in every phase, Ready true / false / unknown / absent, terminating (a finalizer
keeps them; deleted after their status is written), without IPs, with one IP of either family
or both in either order (IPv6 ones sometimes written non-canonically, as the server accepts),
duplicate IPs, hostname / subdomain.

Phase A runs kube-controller-manager with only its endpoints controller until every
expected Endpoints exists and none changed for a while, and takes a snapshot; then it is
stopped and every Endpoints deleted. Phase B does the same with our controller (our
SharedInformerFactory). The two snapshots must be identical per namespace, subsets, addresses
and ports in the very order written (kube-controller-manager 1.36 orders subsets and ports by
the FNV-1a 128 of their spew dump), ignoring server-set metadata (resourceVersion, uid,
creationTimestamp, managedFields, generation) and the value, not the presence, of the
last-change-trigger-time annotation. A mismatch fails with the seed, the scenario and a
unified diff; one that is only a matter of subset or port order is marked so.

Every scenario pod is bound to a node (``spec.nodeName``): kube-controller-manager writes
``nodeName: ""`` for an unbound pod and the real server rejects such Endpoints (so does
ours, which copies that), so a selected unbound pod would only leave both controllers unable
to write the Endpoints.

The test starts a control plane of its own (same binaries as ``real_api_server``) with a
dual-stack service CIDR (``10.0.0.0/16,fd00:10:96::/112``): the shared one is single-stack
IPv4 with a /24, which refuses IPv6 Services and runs out of cluster IPs at a few hundred
Services. The seeds are ``range(200)``; ``KUBE_INFORMERS_DIFF_SEEDS=N`` runs seeds
``0..N-1`` instead (in batches of 200 scenarios, each batch a full A/B round).
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import random
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from controllers.endpoint import TRIGGER_TIME_ANNOTATION, EndpointController
from informers.factory import SharedInformerFactory
from informers.testing.control_plane import ControlPlane

pytestmark = [pytest.mark.real_apiserver, pytest.mark.slow]

SEEDS_ENV = "KUBE_INFORMERS_DIFF_SEEDS"
DEFAULT_SEEDS = 200
BATCH = 200  # scenarios applied at once (one A/B round)
NAMESPACE_PREFIX = "diff-"
FINALIZER = "kube-informers.test/keep"  # keeps deleted pods terminating
THREADS = 8  # concurrent API requests while applying scenarios
POLL = 0.25  # seconds between Endpoints snapshots while waiting for convergence
QUIET = 2.0  # seconds without any Endpoints change that count as converged
CONVERGE_TIMEOUT = 120.0
SERVICE_CIDRS = "10.0.0.0/16,fd00:10:96::/112"
KCM_ARGS = ("--kube-api-qps=1000", "--kube-api-burst=1000")
IGNORED_METADATA = ("resourceVersion", "uid", "creationTimestamp", "managedFields",
                    "generation", "selfLink")


def seeds() -> list[int]:
    raw = os.environ.get(SEEDS_ENV, "")
    count = int(raw) if raw.strip() else DEFAULT_SEEDS
    return list(range(count))


# -- scenarios --------------------------------------------------------------------------------

LABEL_CHOICES = {"app": ("web", "db", None), "tier": ("front", "back", None)}
SELECTORS = ({"app": "web"}, {"app": "db"}, {"app": "web", "tier": "front"}, {"tier": "back"})
PORT_NAMES = ("http", "dns", "metrics", "grpc")  # container port names targetPorts may name
PROTOCOLS = ("TCP", "TCP", "TCP", "UDP", "SCTP")
FAMILY_CHOICES: tuple[tuple[list[str] | None, str | None], ...] = (
    (None, None), (["IPv4"], None), (["IPv6"], None), (["IPv4", "IPv6"], "PreferDualStack"),
    (["IPv6", "IPv4"], "RequireDualStack"),
)


@dataclass
class Scenario:
    """One seed's objects: Services, pods (spec), and per pod the status to write and whether
    to delete it afterwards."""

    seed: int
    namespace: str
    services: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    statuses: dict[str, dict[str, Any]] = field(default_factory=dict)
    terminating: list[str] = field(default_factory=list)

    def expected_endpoints(self) -> set[str]:
        """Names of the Services both controllers must give Endpoints (non-empty selector,
        not ExternalName)."""
        return {s["metadata"]["name"] for s in self.services
                if s["spec"].get("selector") and s["spec"].get("type") != "ExternalName"}

    def describe(self) -> str:
        lines = [f"seed {self.seed} (namespace {self.namespace}):"]
        for service in self.services:
            lines.append(f"  service {json.dumps(service, sort_keys=True)}")
        for pod in self.pods:
            name = pod["metadata"]["name"]
            deleting = " (deleted, terminating)" if name in self.terminating else ""
            lines.append(f"  pod {json.dumps(pod, sort_keys=True)}")
            lines.append(f"    status{deleting} {json.dumps(self.statuses[name], sort_keys=True)}")
        return "\n".join(lines)


def _v6_text(rng: random.Random, host: int) -> str:
    """An IPv6 pod address, sometimes in a non-canonical spelling the server accepts."""
    canonical = f"fd00:10:244::{host:x}"
    form = rng.random()
    if form < 0.15:
        return canonical.upper()
    if form < 0.3:
        return f"fd00:10:244::{host:04x}"
    if form < 0.4:
        return f"fd00:0010:0244:0000:0000:0000:0000:{host:04x}"
    return canonical


def _pod_ips(rng: random.Random, hosts: list[int]) -> list[str]:
    kind = rng.choices(("none", "v4", "v6", "v4v6", "v6v4"), (1, 4, 2, 2, 2))[0]
    host = rng.choice(hosts)  # a small pool: duplicate IPs happen
    v4, v6 = f"10.244.{host // 256}.{host % 256}", _v6_text(rng, host)
    return {"none": [], "v4": [v4], "v6": [v6], "v4v6": [v4, v6], "v6v4": [v6, v4]}[kind]


def _service_port(rng: random.Random, index: int, multi: bool) -> dict[str, Any]:
    port: dict[str, Any] = {"port": 80 + index * 10 + rng.randint(0, 5)}
    if multi or rng.random() < 0.4:
        port["name"] = f"p{index}-{rng.choice(('a', 'b'))}"
    protocol = rng.choice(PROTOCOLS)
    if protocol != "TCP" or rng.random() < 0.5:
        port["protocol"] = protocol
    target = rng.random()
    if target < 0.45:
        port["targetPort"] = rng.choice((*PORT_NAMES, "missing"))
    elif target < 0.8:
        port["targetPort"] = rng.choice((8080, 9090, 53, port["port"]))
    # else: absent, defaults to port
    if rng.random() < 0.15:
        port["appProtocol"] = rng.choice(("http", "kubernetes.io/h2c"))
    return port


def _service(rng: random.Random, name: str) -> dict[str, Any]:
    kind = rng.choices(("cluster", "headless", "external", "noselector", "emptyselector"),
                       (5, 4, 1, 1, 1))[0]
    meta: dict[str, Any] = {"name": name}
    labels = {k: v for k, v in (("team", rng.choice(("x", "y", None))),
                                 ("app", rng.choice(("web", None)))) if v}
    if labels:
        meta["labels"] = labels
    spec: dict[str, Any] = {}
    if kind == "external":
        spec = {"type": "ExternalName", "externalName": "svc.example.com"}
        if rng.random() < 0.5:
            spec["selector"] = dict(rng.choice(SELECTORS))
        return {"metadata": meta, "spec": spec}
    if kind == "emptyselector":
        spec["selector"] = {}
    elif kind != "noselector":
        spec["selector"] = dict(rng.choice(SELECTORS))
    port_count = rng.choice((0, 1, 1, 2, 3)) if kind == "headless" else rng.choice((1, 1, 2, 3))
    ports: list[dict[str, Any]] = []
    seen: set[tuple[int, str]] = set()
    for i in range(port_count):
        port = _service_port(rng, i, port_count > 1)
        if (port["port"], port.get("protocol", "TCP")) not in seen:
            seen.add((port["port"], port.get("protocol", "TCP")))
            ports.append(port)
    if ports:
        spec["ports"] = ports
    if kind == "headless":
        spec["clusterIP"] = "None"
    families, policy = rng.choice(FAMILY_CHOICES)
    if families is not None:
        spec["ipFamilies"] = list(families)
    if policy is not None:
        spec["ipFamilyPolicy"] = policy
    if rng.random() < 0.3:
        spec["publishNotReadyAddresses"] = True
    return {"metadata": meta, "spec": spec}


def _container_ports(rng: random.Random, names: Iterable[str]) -> list[dict[str, Any]]:
    ports = []
    for name in names:
        port: dict[str, Any] = {"name": name, "containerPort": rng.choice((8080, 8081, 9090, 53))}
        protocol = rng.choice(PROTOCOLS)
        if protocol != "TCP" or rng.random() < 0.5:
            port["protocol"] = protocol
        ports.append(port)
    # containerPort+protocol pairs must be unique within a container
    unique: dict[tuple[int, str], dict[str, Any]] = {}
    for port in ports:
        unique.setdefault((port["containerPort"], port.get("protocol", "TCP")), port)
    return list(unique.values())


def _pod(rng: random.Random, name: str, service_names: list[str]) -> dict[str, Any]:
    labels = {k: v for k, choices in LABEL_CHOICES.items() if (v := rng.choice(choices))}
    names = [n for n in PORT_NAMES if rng.random() < 0.5]
    rng.shuffle(names)
    split = rng.randint(0, len(names))
    containers = [{"name": "main", "image": "registry.invalid/pause:1"}]
    if ports := _container_ports(rng, names[:split]):
        containers[0]["ports"] = ports
    spec: dict[str, Any] = {"nodeName": f"node-{rng.randint(1, 3)}", "containers": containers}
    rest = names[split:]
    if rest:
        sidecar = rng.random() < 0.5
        extra: dict[str, Any] = {"name": "side", "image": "registry.invalid/pause:1"}
        if ports := _container_ports(rng, rest):
            extra["ports"] = ports
        if sidecar:
            extra["restartPolicy"] = "Always"  # a sidecar: its ports count
            spec["initContainers"] = [extra]
        else:
            spec["containers"].append(extra)
    if rng.random() < 0.35:
        spec["hostname"] = rng.choice(("h1", "h2", name))
    if rng.random() < 0.35:
        spec["subdomain"] = rng.choice([*service_names, "other"])
    meta: dict[str, Any] = {"name": name, "finalizers": [FINALIZER]}
    if labels:
        meta["labels"] = labels
    return {"metadata": meta, "spec": spec}


def _status(rng: random.Random, hosts: list[int]) -> dict[str, Any]:
    phase = rng.choices(("Pending", "Running", "Succeeded", "Failed"), (2, 6, 1, 1))[0]
    status: dict[str, Any] = {"phase": phase}
    ips = _pod_ips(rng, hosts)
    if ips:
        status["podIP"] = ips[0]
        status["podIPs"] = [{"ip": ip} for ip in ips]
    ready = rng.choices(("True", "False", "Unknown", None), (5, 3, 1, 1))[0]
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": ready}]
    return status


def make_scenario(seed: int) -> Scenario:
    """The scenario of ``seed`` (deterministic)."""
    rng = random.Random(seed)
    scenario = Scenario(seed, f"{NAMESPACE_PREFIX}{seed}")
    service_names = [f"s{i}" for i in range(rng.randint(1, 4))]
    scenario.services = [_service(rng, name) for name in service_names]
    hosts = rng.sample(range(1, 500), 6)
    for i in range(rng.randint(0, 8)):
        pod = _pod(rng, f"p{i}", service_names)
        name = pod["metadata"]["name"]
        scenario.pods.append(pod)
        scenario.statuses[name] = _status(rng, hosts)
        if rng.random() < 0.2:
            scenario.terminating.append(name)
    return scenario


# -- applying scenarios -----------------------------------------------------------------------


def _parallel(fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(fn, items))


def apply_scenarios(core: client.CoreV1Api, scenarios: list[Scenario]) -> None:
    """Create namespaces, then Services and pods, then write pod statuses, then delete the
    terminating pods (their finalizer keeps them)."""
    _parallel(lambda s: core.create_namespace({"metadata": {"name": s.namespace}},
                                              _preload_content=False), scenarios)

    def create(item: tuple[str, str, dict[str, Any]]) -> None:
        kind, namespace, body = item
        try:
            if kind == "service":
                core.create_namespaced_service(namespace, body, _preload_content=False)
            else:
                core.create_namespaced_pod(namespace, body, _preload_content=False)
        except ApiException as exc:
            raise AssertionError(f"creating {kind} {namespace}/{body['metadata']['name']} "
                                 f"{json.dumps(body)}: {exc.status} {exc.body}") from None

    _parallel(create, [("service", s.namespace, body) for s in scenarios for body in s.services]
              + [("pod", s.namespace, body) for s in scenarios for body in s.pods])

    def write_status(item: tuple[str, str, dict[str, Any]]) -> None:
        namespace, name, status = item
        try:
            core.patch_namespaced_pod_status(name, namespace, {"status": status},
                                             _preload_content=False)
        except ApiException as exc:
            raise AssertionError(f"status of pod {namespace}/{name} {json.dumps(status)}: "
                                 f"{exc.status} {exc.body}") from None

    _parallel(write_status, [(s.namespace, name, status) for s in scenarios
                             for name, status in s.statuses.items()])
    _parallel(lambda item: core.delete_namespaced_pod(item[1], item[0], _preload_content=False),
              [(s.namespace, name) for s in scenarios for name in s.terminating])


def endpoints_snapshot(core: client.CoreV1Api, namespaces: set[str]) -> dict[str, dict[str, Any]]:
    """``{"namespace/name": Endpoints}`` of every Endpoints in ``namespaces``."""
    response = core.list_endpoints_for_all_namespaces(_preload_content=False)
    items = json.loads(response.data)["items"]
    return {f"{e['metadata']['namespace']}/{e['metadata']['name']}": e for e in items
            if e["metadata"]["namespace"] in namespaces}


def wait_converged(core: client.CoreV1Api, scenarios: list[Scenario],
                   who: str) -> dict[str, dict[str, Any]]:
    """Poll until every expected Endpoints exists and nothing changed for ``QUIET`` seconds;
    the last snapshot."""
    namespaces = {s.namespace for s in scenarios}
    expected = {f"{s.namespace}/{name}" for s in scenarios for name in s.expected_endpoints()}
    deadline = time.monotonic() + CONVERGE_TIMEOUT
    last_versions: dict[str, str] | None = None
    quiet_since = time.monotonic()
    while True:
        snapshot = endpoints_snapshot(core, namespaces)
        versions = {k: e["metadata"]["resourceVersion"] for k, e in snapshot.items()}
        now = time.monotonic()
        if versions != last_versions:
            last_versions, quiet_since = versions, now
        elif expected <= versions.keys() and now - quiet_since >= QUIET:
            return snapshot
        if now > deadline:
            missing = sorted(expected - versions.keys())
            raise AssertionError(
                f"{who}: Endpoints not converged after {CONVERGE_TIMEOUT:.0f} s; "
                f"{len(missing)} missing: {missing[:20]}")
        time.sleep(POLL)


def delete_all_endpoints(core: client.CoreV1Api, scenarios: list[Scenario]) -> None:
    _parallel(lambda s: core.delete_collection_namespaced_endpoints(
        s.namespace, _preload_content=False), scenarios)
    left = endpoints_snapshot(core, {s.namespace for s in scenarios})
    assert left == {}, f"Endpoints left after deleting them: {sorted(left)}"


def run_our_controller(plane: ControlPlane, core: client.CoreV1Api,
                       scenarios: list[Scenario]) -> dict[str, dict[str, Any]]:
    api = plane.api_client()
    factory = SharedInformerFactory(api)
    informers = factory.core().v1()
    controller = EndpointController(informers.pods(), informers.services(),
                                    informers.endpoints(), api)
    stop = threading.Event()
    factory.start(stop)
    runner = threading.Thread(target=controller.run, args=(5, stop),
                              name="differential-endpoint-controller", daemon=True)
    runner.start()
    try:
        return wait_converged(core, scenarios, "our EndpointController")
    finally:
        stop.set()
        runner.join(30)
        factory.shutdown()
        api.close()


# -- comparing --------------------------------------------------------------------------------


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def normalize(endpoints: dict[str, Any], *, reorder: bool = False) -> dict[str, Any]:
    """What must be identical: server-set metadata dropped, the trigger time's value replaced
    by a marker. With ``reorder``, subsets and each subset's ports are put in a canonical
    order (addresses untouched), to tell an order-only difference from a real one."""
    out = copy.deepcopy(endpoints)
    meta = out.setdefault("metadata", {})
    for key in IGNORED_METADATA:
        meta.pop(key, None)
    annotations = meta.get("annotations") or {}
    if TRIGGER_TIME_ANNOTATION in annotations:
        annotations[TRIGGER_TIME_ANNOTATION] = "<present>"
    subsets = out.get("subsets") or []
    if not reorder:
        return out
    for subset in subsets:
        if "ports" in subset:
            subset["ports"] = sorted(subset["ports"], key=_dumps)
    if subsets:
        out["subsets"] = sorted(subsets, key=_dumps)
    return out


@dataclass
class Comparison:
    mismatches: list[str] = field(default_factory=list)
    compared: int = 0
    trigger_times_equal: int = 0
    trigger_times_present: int = 0
    order_differs: int = 0  # Endpoints equal only once subsets and ports are reordered (fails)
    phases: dict[str, float] = field(default_factory=dict)  # seconds per phase

    def add(self, other: Comparison) -> None:
        self.mismatches += other.mismatches
        self.compared += other.compared
        self.trigger_times_equal += other.trigger_times_equal
        self.trigger_times_present += other.trigger_times_present
        self.order_differs += other.order_differs
        for phase, seconds in other.phases.items():
            self.phases[phase] = self.phases.get(phase, 0.0) + seconds


def compare(scenarios: list[Scenario], theirs: dict[str, dict[str, Any]],
            ours: dict[str, dict[str, Any]]) -> Comparison:
    result = Comparison()
    for scenario in scenarios:
        prefix = f"{scenario.namespace}/"
        kcm = {k: normalize(v) for k, v in theirs.items() if k.startswith(prefix)}
        mine = {k: normalize(v) for k, v in ours.items() if k.startswith(prefix)}
        result.compared += len(kcm)
        order_only = []
        for key in kcm.keys() & mine.keys():
            a = (theirs[key]["metadata"].get("annotations") or {}).get(TRIGGER_TIME_ANNOTATION)
            b = (ours[key]["metadata"].get("annotations") or {}).get(TRIGGER_TIME_ANNOTATION)
            if a is not None:
                result.trigger_times_present += 1
                result.trigger_times_equal += a == b
            if kcm[key] != mine[key] and (normalize(theirs[key], reorder=True)
                                          == normalize(ours[key], reorder=True)):
                result.order_differs += 1
                order_only.append(key)
        if kcm == mine:
            continue
        left = json.dumps(kcm, indent=1, sort_keys=True).splitlines()
        right = json.dumps(mine, indent=1, sort_keys=True).splitlines()
        diff = "\n".join(difflib.unified_diff(left, right, "kube-controller-manager",
                                              "ours", lineterm="", n=4))
        note = f"subset or port order only differs in {sorted(order_only)}\n" if order_only else ""
        result.mismatches.append(f"{scenario.describe()}\n{note}{diff}")
    return result


# -- the test ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dual_stack_plane(real_api_server, tmp_path_factory):
    """A control plane of this module's own, dual-stack, from the session's binaries."""
    plane = ControlPlane(real_api_server.binaries,
                         work_dir=tmp_path_factory.mktemp("control-plane-dual-stack"),
                         apiserver_args=[f"--service-cluster-ip-range={SERVICE_CIDRS}"])
    with plane:
        yield plane


def run_batch(plane: ControlPlane, scenarios: list[Scenario]) -> Comparison:
    api = plane.api_client()
    phases: dict[str, float] = {}
    mark = time.monotonic()

    def lap(phase: str) -> None:
        nonlocal mark
        now = time.monotonic()
        phases[phase] = now - mark
        mark = now

    try:
        core = client.CoreV1Api(api)
        apply_scenarios(core, scenarios)
        lap("apply")
        # Its client's default 20 qps would make creating a few hundred Endpoints take ~20 s.
        plane.start_controller_manager(extra_args=KCM_ARGS)
        try:
            theirs = wait_converged(core, scenarios, "kube-controller-manager")
        finally:
            plane.stop_controller_manager()
        lap("kube-controller-manager")
        delete_all_endpoints(core, scenarios)
        lap("delete")
        ours = run_our_controller(plane, core, scenarios)
        lap("ours")
        result = compare(scenarios, theirs, ours)
        result.phases = phases
        return result
    finally:
        api.close()


@pytest.mark.timeout(600 + 3 * len(seeds()))
def test_endpoints_equal_kube_controller_manager(dual_stack_plane):
    started = time.monotonic()
    all_seeds = seeds()
    total = Comparison()
    for first in range(0, len(all_seeds), BATCH):
        scenarios = [make_scenario(seed) for seed in all_seeds[first:first + BATCH]]
        total.add(run_batch(dual_stack_plane, scenarios))
    elapsed = time.monotonic() - started
    phases = ", ".join(f"{k} {v:.1f} s" for k, v in total.phases.items())
    print(f"\ndifferential: {len(all_seeds)} scenarios, {total.compared} Endpoints compared, "
          f"{len(total.mismatches)} mismatching scenarios, trigger times equal "
          f"{total.trigger_times_equal}/{total.trigger_times_present}, subset or port order "
          f"differing {total.order_differs}, {elapsed:.1f} s ({phases})")
    assert total.compared > len(all_seeds)  # the scenarios do produce Endpoints
    if total.mismatches:
        shown = "\n\n".join(total.mismatches[:5])
        pytest.fail(f"{len(total.mismatches)} of {len(all_seeds)} scenarios differ "
                    f"(first {min(5, len(total.mismatches))} below; rerun one with "
                    f"{SEEDS_ENV}):\n\n{shown}", pytrace=False)


# -- the generator itself (no server) ------------------------------------------------------------


def test_scenarios_are_deterministic_and_cover_the_cases():
    assert make_scenario(7).describe() == make_scenario(7).describe()
    assert make_scenario(7).describe() != make_scenario(8).describe()
    scenarios = [make_scenario(seed) for seed in range(DEFAULT_SEEDS)]
    services = [s for sc in scenarios for s in sc.services]
    pods = [p for sc in scenarios for p in sc.pods]
    statuses = [st for sc in scenarios for st in sc.statuses.values()]
    specs = [s["spec"] for s in services]
    seen = {
        "headless": any(s.get("clusterIP") == "None" for s in specs),
        "headless without ports": any(s.get("clusterIP") == "None" and "ports" not in s
                                      for s in specs),
        "external name": any(s.get("type") == "ExternalName" for s in specs),
        "no selector": any("selector" not in s for s in specs),
        "publishNotReadyAddresses": any(s.get("publishNotReadyAddresses") for s in specs),
        "IPv6 first": any((s.get("ipFamilies") or [""])[0] == "IPv6" for s in specs),
        "named target port": any(isinstance(p.get("targetPort"), str)
                                 for s in specs for p in s.get("ports", ())),
        "several ports": any(len(s.get("ports", ())) > 1 for s in specs),
        "sidecar": any("initContainers" in p["spec"] for p in pods),
        "hostname": any("hostname" in p["spec"] for p in pods),
        "no IP": any("podIP" not in st for st in statuses),
        "dual-stack pod": any(len(st.get("podIPs", ())) == 2 for st in statuses),
        "non-canonical IPv6": any(ip["ip"] != ip["ip"].lower() or ":0" in ip["ip"]
                                  for st in statuses for ip in st.get("podIPs", ())),
        "terminating": any(sc.terminating for sc in scenarios),
    }
    assert [k for k, v in seen.items() if not v] == []
    phases = {st["phase"] for st in statuses}
    assert phases == {"Pending", "Running", "Succeeded", "Failed"}
    for pod in pods:
        assert pod["spec"]["nodeName"].startswith("node-")


def test_normalize_keeps_order_unless_asked_to_reorder_subsets_and_ports():
    a = {"metadata": {"name": "s", "resourceVersion": "5", "uid": "u",
                      "annotations": {TRIGGER_TIME_ANNOTATION: "2026-01-01T00:00:00Z"}},
         "subsets": [{"addresses": [{"ip": "10.0.0.2"}, {"ip": "10.0.0.1"}],
                      "ports": [{"port": 2}, {"port": 1}]},
                     {"addresses": [{"ip": "10.0.0.9"}], "ports": [{"port": 3}]}]}
    b = {"metadata": {"name": "s", "resourceVersion": "9",
                      "annotations": {TRIGGER_TIME_ANNOTATION: "2026-02-02T00:00:00Z"}},
         "subsets": [{"addresses": [{"ip": "10.0.0.9"}], "ports": [{"port": 3}]},
                     {"addresses": [{"ip": "10.0.0.2"}, {"ip": "10.0.0.1"}],
                      "ports": [{"port": 1}, {"port": 2}]}]}
    assert normalize(a) != normalize(b)  # order counts
    assert normalize(a, reorder=True) == normalize(b, reorder=True)
    in_order = copy.deepcopy(b)
    in_order["subsets"].reverse()
    in_order["subsets"][0]["ports"].reverse()
    assert normalize(a) == normalize(in_order)
    swapped = copy.deepcopy(b)
    swapped["subsets"][1]["addresses"].reverse()
    assert normalize(a, reorder=True) != normalize(swapped, reorder=True)
    without = copy.deepcopy(b)
    del without["metadata"]["annotations"]
    assert normalize(a, reorder=True) != normalize(without, reorder=True)
