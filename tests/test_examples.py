"""The numbered examples (examples/NN-name/main.py) run against the embedded API server and do
what their README line says.

Each example's ``main(argv, stop)`` runs in this process: with no ``--kubeconfig`` it starts its
own embedded server and demo, and ``--duration 0`` makes it stop once the demo is done; with
``--kubeconfig`` it runs against a server this test owns, so the test can drive it and look at
the result (the standby takes over). The operators 04 and 07 have test modules of their own,
on both servers (test_example_widget.py, test_example_website.py).
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import ModuleType

import pytest

from informers.testing import ApiServer

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
NUMBERED = sorted(p.name for p in EXAMPLES.iterdir() if re.match(r"\d\d-", p.name))
OURS = ["01-pod-lister", "03-workqueue-controller", "04-custom-resource-controller",
        "05-leader-election", "06-testing-your-controller", "09-async-operator"]


def load(example: str) -> ModuleType:
    """Import examples/<example>/main.py under a unique module name."""
    name = "example_" + example.replace("-", "_")
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / example / "main.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def eventually(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        assert time.monotonic() < deadline, f"not reached within {timeout}s"
        time.sleep(0.01)
    return result


class Running:
    """An example's ``main`` on a thread, stopped (and its exit code checked) on exit."""

    def __init__(self, module: ModuleType, *argv: str) -> None:
        self.stop = threading.Event()
        self.code: int | None = None
        self.thread = threading.Thread(target=self._main, args=(module, list(argv)), daemon=True)

    def _main(self, module: ModuleType, argv: list[str]) -> None:
        self.code = module.main(argv, self.stop)

    def __enter__(self) -> Running:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(30)
        assert not self.thread.is_alive()
        if exc[0] is None:
            assert self.code == 0


@pytest.fixture
def server():
    with ApiServer() as srv:
        yield srv


@pytest.fixture
def kubeconfig(server, tmp_path):
    return server.write_kubeconfig(tmp_path / "kubeconfig")


def lines(text: str) -> list[str]:
    return text.splitlines()


# -- every example -----------------------------------------------------------------------------


def test_every_numbered_example_has_a_main_and_a_readme_line():
    readme = (EXAMPLES / "README.md").read_text()
    assert set(OURS) <= set(NUMBERED)
    for example in NUMBERED:
        assert (EXAMPLES / example / "main.py").is_file(), example
        assert f"[{example}]({example}/)" in readme, f"{example} has no line in examples/README.md"


@pytest.mark.parametrize("example", OURS)
def test_every_example_takes_kubeconfig_and_duration(example, capsys):
    with pytest.raises(SystemExit) as exit_info:
        load(example).main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "--kubeconfig" in out
    assert "--duration" in out


# -- 01: pod lister ----------------------------------------------------------------------------


def test_01_pod_lister_answers_from_the_cache_and_follows_changes(capsys):
    assert load("01-pod-lister").main(["--duration", "0"]) == 0

    out = lines(capsys.readouterr().out)
    events = [line for line in out if line.startswith(("added ", "deleted "))]
    assert sorted(events) == ["added default/web-2", "deleted default/db-0"]
    assert [line for line in out if line not in events] == [
        "5 pods cached",
        "node node-a: default/db-0, default/web-0",
        "node node-b: default/web-1, kube-system/dns-0",
        "app=web in default: web-0, web-1, web-pending",
        # after the demo created web-2 on node-b and deleted db-0:
        "5 pods cached",
        "node node-a: default/web-0",
        "node node-b: default/web-1, default/web-2, kube-system/dns-0",
        "app=web in default: web-0, web-1, web-2, web-pending",
    ]


def test_01_pod_lister_reads_the_cluster_of_a_kubeconfig(server, kubeconfig, capsys):
    example = load("01-pod-lister")
    server.create(example.new_pod("default", "api-0", "web", "node-x"))
    server.create(example.new_pod("kube-system", "proxy-0", "proxy", "node-y"))

    assert example.main(["--kubeconfig", kubeconfig, "--duration", "0"]) == 0

    assert lines(capsys.readouterr().out) == [
        "2 pods cached",
        "node node-x: default/api-0",
        "node node-y: kube-system/proxy-0",
        "app=web in default: api-0",
    ]


# -- 03: the hand-written work-queue controller ------------------------------------------------


def test_03_workqueue_controller_syncs_forgets_and_drops_after_5_retries(capsys):
    assert load("03-workqueue-controller").main(["--duration", "0", "--workers", "3"]) == 0

    out = lines(capsys.readouterr().out)
    assert out[0] == "Starting Pod controller"
    assert out[-1] == "Stopping Pod controller"
    fail = "pod default/broken asks to fail"
    assert sorted(out[1:-1]) == sorted([
        "Sync/Add/Update for Pod web-0",
        "Sync/Add/Update for Pod web-1",
        "Pod default/web-0 does not exist anymore",
        *[f"Error syncing pod default/broken: {fail}"] * 5,
        f"Dropping pod default/broken out of the queue: {fail}",
    ])
    # The retries come before the drop, and the pod's sync happened before its deletion.
    assert out.index(f"Dropping pod default/broken out of the queue: {fail}") > max(
        i for i, line in enumerate(out) if line.startswith("Error syncing"))
    assert out.index("Sync/Add/Update for Pod web-0") < out.index(
        "Pod default/web-0 does not exist anymore")


def test_03_workqueue_controller_on_a_kubeconfig_namespace(server, kubeconfig, capsys):
    example = load("03-workqueue-controller")
    server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    for i in range(6):
        server.create(example.pod(f"p-{i}"), namespace="team")
    server.create(example.pod("elsewhere"))  # in default: not watched

    seen: list[str] = []

    def all_synced():
        seen.extend(lines(capsys.readouterr().out))
        return sum(line.startswith("Sync/") for line in seen) >= 6

    with Running(example, "--kubeconfig", kubeconfig, "--namespace", "team", "--workers", "4"):
        eventually(all_synced)
    seen.extend(lines(capsys.readouterr().out))

    assert sorted(line for line in seen if line.startswith("Sync/")) == [
        f"Sync/Add/Update for Pod p-{i}" for i in range(6)]
    assert seen[-1] == "Stopping Pod controller"


# -- 04: custom resource controller ------------------------------------------------------------


def test_04_custom_resource_controller_demo(capsys):
    assert load("04-custom-resource-controller").main(["--duration", "0"]) == 0

    out = lines(capsys.readouterr().out)
    assert [line for line in out if ": ConfigMap default/blue" in line] == [
        "widget created: ConfigMap default/blue {'color': 'blue', 'size': '3'}",
        "widget spec changed: ConfigMap default/blue {'color': 'blue', 'size': '5'}",
        "ConfigMap edited by hand: ConfigMap default/blue {'color': 'blue', 'size': '5'}",
        "defaults set: ConfigMap default/blue {'color': 'blue', 'shape': 'round', 'size': '5'}",
        "widget deleted: ConfigMap default/blue is gone",
    ]
    assert "created ConfigMap default/blue: {'color': 'blue', 'size': '3'}" in out
    assert "deleted ConfigMap default/blue" in out
    # its tests on both servers: tests/test_example_widget.py


# -- 05: leader election -----------------------------------------------------------------------


def test_05_the_standby_takes_over(capsys):
    assert load("05-leader-election").main(["--duration", "0"]) == 0

    out = lines(capsys.readouterr().out)
    assert [line for line in out if "lease" in line or "took over" in line] == [
        "replica-a leads, replica-b stands by; lease holder: replica-a",
        "replica-a stopped and released the lease",
        "replica-b took over; lease holder: replica-b",
    ]
    stamps = [line for line in out if " stamped " in line]
    assert stamps[0] == "replica-a stamped default/first"
    assert sorted(stamps[1:]) == ["replica-b stamped default/first",
                                  "replica-b stamped default/second"]


def test_05_on_a_cluster_the_lease_changes_hands(server, kubeconfig, capsys):
    assert load("05-leader-election").main(["--kubeconfig", kubeconfig, "--duration", "0"]) == 0

    lease = server.get("leases", "default", "leader-election-example")
    assert lease["spec"]["leaseTransitions"] >= 1
    assert lease["spec"].get("holderIdentity", "") == ""  # the last leader released it
    for name in ("first", "second"):
        annotations = server.get("configmaps", "default", name)["metadata"]["annotations"]
        assert annotations == {"example.com/reconciled-by": "replica-b"}
    assert "replica-b took over; lease holder: replica-b" in capsys.readouterr().out


def test_05_a_single_replica_leads_alone(server, kubeconfig):
    example = load("05-leader-election")
    with Running(example, "--kubeconfig", kubeconfig, "--identity", "solo"):
        eventually(lambda: (server.get("leases", "default", "leader-election-example") or {})
                   .get("spec", {}).get("holderIdentity") == "solo")


# -- 06: testing your controller ---------------------------------------------------------------


def test_06_team_info_demo(capsys):
    assert load("06-testing-your-controller").main(["--duration", "0"]) == 0

    assert lines(capsys.readouterr().out) == [
        "namespace created: team-info says team=payments",
        "label changed: team-info says team=shop",
        "ConfigMap deleted by hand: team-info says team=shop",
    ]


def test_06_the_tests_users_copy_pass():
    directory = EXAMPLES / "06-testing-your-controller"
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(directory)],
        capture_output=True, text=True, timeout=60, env=env, cwd=directory,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"^5 passed", result.stdout.splitlines()[-1]), result.stdout


# -- 09: the Widget operator on the async API, on asyncio and trio -----------------------------

DEMO_09 = [
    "widget created: ConfigMap default/blue {'color': 'blue', 'size': '3'}",
    "widget spec changed: ConfigMap default/blue {'color': 'blue', 'size': '5'}",
    "ConfigMap edited by hand: ConfigMap default/blue {'color': 'blue', 'size': '5'}",
    "defaults set: ConfigMap default/blue {'color': 'blue', 'shape': 'round', 'size': '5'}",
    "widget deleted: ConfigMap default/blue is gone",
]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_09_async_operator_plays_example_04s_demo(backend, capsys):
    assert load("09-async-operator").main(["--duration", "0", "--backend", backend]) == 0

    out = lines(capsys.readouterr().out)
    assert [line for line in out if ": ConfigMap default/blue" in line] == DEMO_09
    assert "created ConfigMap default/blue: {'color': 'blue', 'size': '3'}" in out
    assert "deleted ConfigMap default/blue" in out


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_09_async_operator_on_a_cluster_owns_configmaps_and_refuses_a_foreign_one(
        backend, server, kubeconfig):
    crd = EXAMPLES / "04-custom-resource-controller" / "crd.yaml"
    from informers.yaml_loader import load_yaml

    server.create(load_yaml(crd.read_text()))
    widget = {"apiVersion": "example.com/v1", "kind": "Widget",
              "metadata": {"name": "w", "namespace": "default"}, "spec": {"color": "green"}}
    server.create({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "foreign", "namespace": "default"}, "data": {"a": "1"}})
    with Running(load("09-async-operator"), "--kubeconfig", kubeconfig, "--backend", backend):
        server.create(widget)
        cm = eventually(lambda: server.get("configmaps", "default", "w"))
        assert cm["data"] == {"color": "green"}
        owner = cm["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("Widget", "w", True)
        status = eventually(lambda: (server.get("widgets.example.com", "default", "w")
                                     or {}).get("status"))
        assert status == {"observedGeneration": 1, "configMap": "w"}
        # a Widget whose ConfigMap name is taken by someone else's: a terminal error, the
        # foreign ConfigMap left as it was
        server.create({**widget, "metadata": {"name": "foreign", "namespace": "default"}})
        eventually(lambda: any(  # create_or_update read the live ConfigMap, then refused
            (r.verb, r.resource, r.name) == ("get", "configmaps", "foreign")
            for r in server.requests))
        time.sleep(0.1)
        assert server.get("configmaps", "default", "foreign")["data"] == {"a": "1"}
        assert "ownerReferences" not in server.get("configmaps", "default",
                                                   "foreign")["metadata"]
