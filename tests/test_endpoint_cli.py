"""Tests of the endpoint-controller command: options, demo, kubeconfig, metrics, signals."""

from __future__ import annotations

import io
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from controllers.endpoint.cli import (
    EMBEDDED,
    IN_CLUSTER,
    KUBECONFIG,
    EndpointControllerCommand,
    Options,
    cluster_source,
    parse_args,
)
from controllers.endpoint.demo import render_table
from controllers.endpoint.repack import subsets_equal_ignore_resource_version
from controllers.endpoint.subsets import compute_subsets

ROOT = Path(__file__).resolve().parent.parent


# -- options ---------------------------------------------------------------------------------------


def test_defaults_are_kube_controller_manager_s():
    assert parse_args([]) == Options(
        kubeconfig=None, context=None, workers=5, batch_period=0.0, leader_elect=False,
        lease_name="endpoint-controller", lease_namespace="kube-system", identity=None,
        lease_duration=15.0, renew_deadline=10.0, retry_period=2.0, metrics_address=None,
        request_timeout=60.0, log_level="info", log_format="text", demo=None, demo_seed=1,
        demo_interval=1.0, duration=None,
    )


def test_every_option_and_the_kube_controller_manager_aliases():
    options = parse_args([
        "--kubeconfig", "/tmp/kc", "--context", "kind", "--concurrent-endpoint-syncs", "3",
        "--endpoint-updates-batch-period", "500ms", "--leader-elect",
        "--leader-elect-resource-name", "ep", "--leader-elect-resource-namespace", "ops",
        "--leader-elect-identity", "me", "--leader-elect-lease-duration", "1m30s",
        "--leader-elect-renew-deadline", "20s", "--leader-elect-retry-period", "4",
        "--metrics-bind-address", "127.0.0.1:9090", "--request-timeout", "5s",
        "--log-level", "DEBUG", "--log-format", "JSON", "--no-demo", "--demo-seed", "7",
        "--demo-interval", "250ms", "--duration", "2.5",
    ])
    assert options == Options(
        kubeconfig="/tmp/kc", context="kind", workers=3, batch_period=0.5, leader_elect=True,
        lease_name="ep", lease_namespace="ops", identity="me", lease_duration=90.0,
        renew_deadline=20.0, retry_period=4.0, metrics_address="127.0.0.1:9090",
        request_timeout=5.0, log_level="debug", log_format="json", demo=False, demo_seed=7,
        demo_interval=0.25, duration=2.5,
    )
    assert parse_args(["--workers", "2", "--batch-period", "1", "--demo"]).demo is True
    assert parse_args(["--metrics-address", ":9090"]).metrics_address == ":9090"


@pytest.mark.parametrize("argv", [
    ["--workers", "0"], ["--workers", "two"], ["--log-level", "verbose"],
    ["--log-format", "xml"], ["--batch-period", "-1s"], ["--batch-period", "1d"],
    ["--duration", "0"], ["--leader-elect-retry-period", "0s"],
    ["--leader-elect", "--leader-elect-lease-name", ""], ["--unknown"], ["--work", "3"],
])
def test_bad_options_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        parse_args(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("endpoint-controller: error: ")
    assert err.endswith(" (see --help)\n") and err.count("\n") == 1


@pytest.mark.parametrize(("argv", "environ", "source"), [
    ([], {}, EMBEDDED),
    (["--kubeconfig", "/k"], {}, KUBECONFIG),
    ([], {"KUBECONFIG": "/k"}, KUBECONFIG),
    ([], {"KUBECONFIG": ""}, EMBEDDED),
    ([], {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}, IN_CLUSTER),
    ([], {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, EMBEDDED),
    (["--kubeconfig", "/k"], {"KUBERNETES_SERVICE_HOST": "h", "KUBERNETES_SERVICE_PORT": "1"},
     KUBECONFIG),
])
def test_cluster_source(argv, environ, source):
    assert cluster_source(parse_args(argv), environ) == source


def test_demo_defaults_to_on_only_for_the_embedded_server():
    embedded = EndpointControllerCommand(parse_args([]), environ={})
    cluster = EndpointControllerCommand(parse_args(["--kubeconfig", "/k"]), environ={})
    forced = EndpointControllerCommand(parse_args(["--kubeconfig", "/k", "--demo"]), environ={})
    off = EndpointControllerCommand(parse_args(["--no-demo"]), environ={})
    assert (embedded.demo, cluster.demo, forced.demo, off.demo) == (True, False, True, False)


@pytest.mark.parametrize(("argv", "environ", "address"), [
    ([], {}, "127.0.0.1:0"),  # the demo: loopback, a free port
    (["--kubeconfig", "/k"], {}, ":8080"),
    ([], {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}, ":8080"),
    (["--metrics-bind-address", ":8080"], {}, ":8080"),
    (["--kubeconfig", "/k", "--metrics-bind-address", "10.1.2.3:9090"], {}, "10.1.2.3:9090"),
    (["--metrics-address", "0"], {}, "0"),
])
def test_metrics_bind_address_defaults(argv, environ, address):
    command = EndpointControllerCommand(parse_args(argv), environ=environ)
    assert command.metrics_address == address


def test_bad_leader_election_durations_exit_2(tmp_path, api_server):
    path = api_server.write_kubeconfig(tmp_path / "kubeconfig")
    options = parse_args(["--kubeconfig", path, "--leader-elect", "--metrics-address", "0",
                          "--leader-elect-lease-duration", "5s",
                          "--leader-elect-renew-deadline", "10s"])
    assert EndpointControllerCommand(options, handle_signals=False).run() == 2


# -- bad input and failures, as a user meets them (a real process) --------------------------------


def _run(args, timeout=30, **env):
    environ = {k: v for k, v in os.environ.items()
               if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    return subprocess.run([sys.executable, "-m", "controllers.endpoint", *args], cwd=ROOT,
                          env={**environ, **env}, capture_output=True, text=True,
                          timeout=timeout)


def _closed_port():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nothing listens once the socket is closed


def _kubeconfig_to(path, server):
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: c, cluster: {{server: '{server}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    return str(path)


@pytest.mark.parametrize(("argv", "message"), [
    (["--duration", "1d"], "argument --duration: invalid duration '1d': use a Go duration such "
                           "as 1m30s, 500ms or 2h, or a number of seconds"),
    (["--request-timeout", "-5"], "argument --request-timeout: invalid duration '-5': must be "
                                  "> 0"),
    (["--log-level", "verbose"], "argument --log-level: invalid log level 'verbose': use "
                                 "debug, info, warning or error"),
    (["--log-format", "xml"], "argument --log-format: invalid log format 'xml': use text or "
                              "json"),
    (["--metrics-bind-address", "localhost"], "argument --metrics-bind-address/--metrics-address:"
                                              " invalid address 'localhost': the port is not a "
                                              "number"),
])
def test_a_bad_flag_is_one_line_and_exit_2(argv, message):
    result = _run(argv)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == f"endpoint-controller: error: {message} (see --help)\n"


def _one_error_line(stderr):
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_a_missing_kubeconfig_is_named_without_a_traceback(tmp_path):
    missing = tmp_path / "missing"
    result = _run(["--kubeconfig", str(missing)])
    assert result.returncode == 2
    assert _one_error_line(result.stderr).endswith(
        f" ERROR   controllers.endpoint.cli: kubeconfig {missing}: no such file or directory")


def test_a_missing_kubeconfig_from_the_environment(tmp_path):
    missing = tmp_path / "missing"
    result = _run([], KUBECONFIG=str(missing))
    assert result.returncode == 2
    assert _one_error_line(result.stderr).endswith(
        f" ERROR   controllers.endpoint.cli: $KUBECONFIG names no file that exists: {missing}")


@pytest.mark.parametrize(("content", "reason"), [
    (None, "is a directory"),
    ("hello", "not a kubeconfig (TypeError: 'str' object does not support item assignment)"),
])
def test_an_unreadable_kubeconfig_is_named_without_a_traceback(tmp_path, content, reason):
    path = tmp_path / "kubeconfig"
    if content is None:
        path.mkdir()
    else:
        path.write_text(content)
    result = _run(["--kubeconfig", str(path), "--log-format", "json"])
    assert result.returncode == 2
    entry = json.loads(_one_error_line(result.stderr))
    assert {k: entry[k] for k in ("level", "logger", "message")} == {
        "level": "ERROR", "logger": "controllers.endpoint.cli",
        "message": f"kubeconfig {path}: {reason}"}


def test_caches_that_never_sync_exit_1_naming_the_informers(tmp_path):
    server = f"http://127.0.0.1:{_closed_port()}"
    path = _kubeconfig_to(tmp_path / "kubeconfig", server)
    result = _run(["--kubeconfig", path, "--duration", "500ms", "--metrics-address", "0"])
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    # The library's INFO lines are shown (the list progress comes from the same loggers).
    assert " INFO    informers.manager: manager: starting informers and waiting for their " \
        "caches\n" in result.stderr
    errors = [line.split(" ERROR   ", 1)[1] for line in result.stderr.splitlines()
              if " ERROR   controllers.endpoint.cli: " in line]
    assert len(errors) == 1, result.stderr
    prefix = "controllers.endpoint.cli: caches never synced: "
    assert errors[0].startswith(prefix)
    named = [part.split(" (", 1)[0] for part in errors[0][len(prefix):].split("), ")]
    assert named == ["endpoints", "pods", "services"]
    for kind, plural in (("Endpoints", "endpoints"), ("Pod", "pods"), ("Service", "services")):
        assert f"(last error: failed to list {kind}: list v1/{plural}: " in errors[0]
    assert errors[0].count("Connection refused") == 3
    assert result.stderr.splitlines()[-1].endswith("endpoint controller stopped (exit code 1)")


def test_json_log_lines(tmp_path):
    server = f"http://127.0.0.1:{_closed_port()}"
    path = _kubeconfig_to(tmp_path / "kubeconfig", server)
    result = _run(["--kubeconfig", path, "--duration", "300ms", "--metrics-address", "0",
                   "--log-format", "json"])
    assert result.returncode == 1
    entries = [json.loads(line) for line in result.stderr.splitlines()]
    assert entries and all(sorted(e) == ["fields", "level", "logger", "message", "timestamp"]
                           for e in entries)
    assert {e["logger"] for e in entries} >= {"controllers.endpoint.cli", "informers.manager"}
    assert entries[-2]["message"].startswith("caches never synced: endpoints (last error: ")


def test_two_demos_run_side_by_side():
    """Each demo serves its metrics on loopback at a free port, so the second one starts."""
    args = [sys.executable, "-m", "controllers.endpoint", "--duration", "1s",
            "--demo-interval", "200ms"]
    env = {k: v for k, v in os.environ.items()
           if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    demos = [subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        errs = [demo.communicate(timeout=60)[1] for demo in demos]
    finally:
        for demo in demos:
            demo.kill()
    assert [demo.returncode for demo in demos] == [0, 0], errs
    urls = []
    for err in errs:
        lines = [line for line in err.splitlines()
                 if "serving /metrics, /healthz and /readyz on " in line]
        assert len(lines) == 1, err
        urls.append(lines[0].rsplit(" ", 1)[1])
    assert all(url.startswith("http://127.0.0.1:") for url in urls)
    assert urls[0] != urls[1]


# -- running in-process ----------------------------------------------------------------------------


def _expected_subsets(server, service):
    selector = service["spec"]["selector"]
    pods = [p for p in server.list("pods", service["metadata"]["namespace"])
            if all(p["metadata"].get("labels", {}).get(k) == v for k, v in selector.items())]
    return compute_subsets(service, pods).subsets


def test_demo_runs_on_the_embedded_server_converges_and_exits_0(caplog):
    caplog.set_level(logging.INFO, logger="controllers.endpoint")
    out = io.StringIO()
    options = parse_args(["--duration", "1.5", "--demo-interval", "0.1",
                          "--metrics-address", "0"])
    command = EndpointControllerCommand(options, handle_signals=False, out=out, environ={})
    assert command.run() == 0

    server = command.server
    # default/kubernetes (the server's own, without a selector) gets no Endpoints
    all_services = server.list("services")
    services = [s for s in all_services if s["metadata"]["name"] != "kubernetes"]
    assert {s["metadata"]["name"] for s in services} <= {"web", "api", "db", "cache"}
    assert {"web", "api", "db"} <= {s["metadata"]["name"] for s in services}
    endpoints = {e["metadata"]["name"]: e for e in server.list("endpoints")}
    assert sorted(endpoints) == sorted(s["metadata"]["name"] for s in services)
    for service in services:
        current = endpoints[service["metadata"]["name"]]
        assert subsets_equal_ignore_resource_version(
            current.get("subsets"), _expected_subsets(server, service)
        ), service["metadata"]["name"]
    assert len(command.workload.changes) > 10  # the setup plus some changes
    assert out.getvalue().endswith(
        "--- endpoints at exit ---\n"
        + render_table(all_services, list(endpoints.values())) + "\n"
    )
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("synced endpoints default/web: ") for m in messages)
    assert any(m.startswith("demo: converged after ") for m in messages)


def test_main_runs_and_restores_the_signal_handlers(monkeypatch):
    from controllers.endpoint.__main__ import main

    for name in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST"):
        monkeypatch.delenv(name, raising=False)
    before = (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT))
    assert main(["--no-demo", "--duration", "0.3", "--metrics-address", "0"]) == 0
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


def _start(options, **kwargs):
    stop = threading.Event()
    command = EndpointControllerCommand(options, stop_event=stop, handle_signals=False, **kwargs)
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("code", command.run()))
    thread.start()
    assert command.built.wait(10)
    assert command.manager.elected.wait(10)
    return command, stop, thread, result


def _seed_web(server, ready=True):
    server.create({"apiVersion": "v1", "kind": "Service",
                   "metadata": {"name": "web", "namespace": "default"},
                   "spec": {"clusterIP": "10.96.0.1", "selector": {"app": "web"},
                            "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}})
    server.create({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": "web-0", "namespace": "default",
                                "labels": {"app": "web"}},
                   "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]},
                   "status": {"phase": "Running", "podIP": "10.0.0.5",
                              "podIPs": [{"ip": "10.0.0.5"}],
                              "conditions": [{"type": "Ready",
                                              "status": "True" if ready else "False"}]}})


def _wait(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _web_synced(server):
    current = server.get("endpoints", "default", "web")
    service = server.get("services", "default", "web")
    return current is not None and bool(current.get("subsets")) and (
        subsets_equal_ignore_resource_version(current["subsets"],
                                              _expected_subsets(server, service)))


def test_kubeconfig_of_an_embedded_server(tmp_path, api_server):
    _seed_web(api_server)
    path = api_server.write_kubeconfig(tmp_path / "kubeconfig")
    command, stop, thread, result = _start(
        parse_args(["--kubeconfig", path, "--metrics-address", "0", "--workers", "2"]),
        environ={},
    )
    try:
        assert command.server is None and command.workload is None
        assert _wait(lambda: _web_synced(api_server))
        pod = api_server.get("pods", "default", "web-0")
        uid = pod["metadata"]["uid"]
        assert api_server.get("endpoints", "default", "web")["subsets"][0]["addresses"][0][
            "targetRef"]["uid"] == uid
    finally:
        stop.set()
        thread.join(10)
    assert result == {"code": 0}
    # The writes came through the kubeconfig's token: the server answered them.
    assert [r.status for r in api_server.request_log("create", "endpoints")] == [201]


def _get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def _samples(text):
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def test_metrics_healthz_and_readyz(tmp_path, api_server):
    _seed_web(api_server)
    path = api_server.write_kubeconfig(tmp_path / "kubeconfig")
    command, stop, thread, result = _start(parse_args([
        "--kubeconfig", path, "--metrics-address", "127.0.0.1:0", "--leader-elect",
        "--leader-elect-namespace", "default", "--leader-elect-identity", "replica-a",
    ]))
    try:
        assert _wait(lambda: _web_synced(api_server))
        url = command.manager.health_server.url
        assert _wait(lambda: 'endpoint_controller_syncs_total{result="created"} 1.0'
                     in _get(url + "/metrics")[1])
        code, text = _get(url + "/metrics")
        assert code == 200
        samples = _samples(text)
        expected = {
            'workqueue_depth{name="endpoint"}': 0.0,
            'endpoint_controller_syncs_total{result="error"}': 0.0,
            'endpoint_controller_sync_retries_total': 0.0,
            'endpoint_controller_sync_dropped_total': 0.0,
            'reflector_lists_total{name="pods"}': 1.0,
            'reflector_lists_total{name="services"}': 1.0,
            'reflector_lists_total{name="endpoints"}': 1.0,
            'reflector_watches_total{name="pods"}': 1.0,
            'reflector_watches_total{name="services"}': 1.0,
            'reflector_watches_total{name="endpoints"}': 1.0,
            'reflector_list_errors_total{name="pods"}': 0.0,
            'reflector_watch_errors_total{name="pods"}': 0.0,
            'leader_election_master_status{name="endpoint-controller"}': 1.0,
        }
        assert {k: samples.get(k) for k in expected} == expected
        # Exactly one sync created the Endpoints. The number of "unchanged" syncs is not fixed
        # here: a pod's initial add may enqueue the Service again after that first sync ran
        # (upstream does the same). That our own write's echo causes no sync is asserted
        # deterministically in test_endpoint_controller.py (held writes).
        assert samples['endpoint_controller_syncs_total{result="created"}'] == 1.0
        syncs = sum(v for k, v in samples.items()
                    if k.startswith("endpoint_controller_syncs_total{"))
        assert samples["endpoint_controller_sync_duration_seconds_count"] == syncs
        assert samples['endpoint_controller_syncs_total{result="error"}'] == 0.0
        assert samples['workqueue_adds_total{name="endpoint"}'] >= 1.0
        assert samples['workqueue_retries_total{name="endpoint"}'] in (0.0, 1.0)
        lines = set(text.splitlines())
        assert any(line.startswith("workqueue_queue_duration_seconds_bucket{") for line in lines)
        assert any(line.startswith("process_cpu_seconds_total ") for line in lines)
        assert _get(url + "/healthz") == (200, "ok")
        assert _get(url + "/readyz") == (200, "ok")
        assert _get(url + "/readyz?verbose")[1].splitlines()[0] == "[+]caches-synced ok"
        assert _get(url + "/healthz?verbose")[1].splitlines()[:2] == [
            "[+]ping ok", "[+]leader-election ok"]
    finally:
        stop.set()
        thread.join(10)
    assert result == {"code": 0}
    lease = api_server.get("leases", "default", "endpoint-controller")
    assert lease["spec"]["holderIdentity"] == ""


def test_stop_finishes_the_sync_in_flight(tmp_path, api_server, monkeypatch):
    _seed_web(api_server)
    entered = threading.Event()
    original = api_server.faults.delay_for

    def delay_for(verb, resource):  # hold the controller's create for 0.5 s, and tell us
        if (verb, resource) == ("create", "endpoints"):
            entered.set()
            return 0.5
        return original(verb, resource)

    monkeypatch.setattr(api_server.faults, "delay_for", delay_for)
    path = api_server.write_kubeconfig(tmp_path / "kubeconfig")
    command, stop, thread, result = _start(parse_args(["--kubeconfig", path,
                                                       "--metrics-address", "0"]))
    try:
        assert entered.wait(5)
        stop.set()  # what the first SIGTERM does
    finally:
        stop.set()
        thread.join(10)
    assert result == {"code": 0}
    # The worker waited for the answer and finished the sync before run() returned.
    assert command.controller.metrics.snapshot().syncs["created"] == 1
    assert [r.status for r in api_server.request_log("create", "endpoints")] == [201]
    assert _web_synced(api_server)


def test_busy_metrics_address_exits_1(tmp_path, api_server):
    import socket

    path = api_server.write_kubeconfig(tmp_path / "kubeconfig")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        options = parse_args(["--kubeconfig", path, "--metrics-address", f"127.0.0.1:{port}"])
        assert EndpointControllerCommand(options, handle_signals=False).run() == 1


# -- signals (a real process) ----------------------------------------------------------------------


def _spawn(args):
    env = {k: v for k, v in os.environ.items()
           if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    return subprocess.Popen(
        [sys.executable, "-m", "controllers.endpoint", *args], cwd=ROOT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _holder(server):
    lease = server.get("leases", "default", "endpoint-controller")
    return None if lease is None else lease["spec"].get("holderIdentity")


def test_sigterm_finishes_releases_the_lease_and_exits_0(tmp_path, api_server):
    _seed_web(api_server)
    path = api_server.write_kubeconfig(tmp_path / "kubeconfig")
    process = _spawn(["--kubeconfig", path, "--leader-elect", "--leader-elect-namespace",
                      "default", "--leader-elect-identity", "replica-a",
                      "--metrics-address", "127.0.0.1:0"])
    try:
        assert _wait(lambda: _holder(api_server) == "replica-a", timeout=15)
        assert _wait(lambda: _web_synced(api_server))
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=15)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert _holder(api_server) == ""
    assert "received SIGTERM, shutting down" in err
    assert "endpoint controller stopped (exit code 0)" in err


@pytest.mark.slow
def test_a_second_signal_forces_exit_1(tmp_path, api_server):
    path = api_server.write_kubeconfig(tmp_path / "kubeconfig")
    process = _spawn(["--kubeconfig", path, "--metrics-address", "0"])
    try:
        assert _wait(lambda: api_server.watch_count("endpoints") == 1, timeout=15)
        process.send_signal(signal.SIGTERM)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=15)
    finally:
        process.kill()
    assert process.returncode == 1, err
    # Either signal may be handled first, and the second handler may interrupt the first
    # one's log line (os._exit does not flush): only the forced exit is certain.
    assert any(f"received {s} again, forcing exit with code 1" in err
               for s in ("SIGTERM", "SIGINT")), err
    assert "endpoint controller stopped" not in err


def _endpoints_writes(server):
    return [(r.verb, r.name, r.status) for r in server.request_log(resource="endpoints")
            if r.verb in ("create", "update", "delete")]


class _PodChurn:
    """Adds a ready pod selected by the Service ``web`` every ``interval`` seconds, on a
    thread, so that whoever leads has Endpoints to write."""

    def __init__(self, server, interval=0.1):
        self.server = server
        self.interval = interval
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="pod-churn", daemon=True)
        self.count = 0

    def _run(self):
        while not self.stop.wait(self.interval):
            self.count += 1
            ip = f"10.0.{self.count // 250}.{self.count % 250 + 1}"
            self.server.create({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"web-churn-{self.count}", "namespace": "default",
                             "labels": {"app": "web"}},
                "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]},
                "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                           "conditions": [{"type": "Ready", "status": "True"}]}})

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


@pytest.mark.slow
def test_a_paused_leader_writes_nothing_after_it_resumes(tmp_path, api_server):
    """SIGSTOP the leader past its lease, let the standby take over and write, freeze the new
    leader too and SIGCONT the old one: every Endpoints write the server gets from then on
    would be the old leader's, and there must be none. It steps down at once and exits 1."""
    _seed_web(api_server)
    path = api_server.write_kubeconfig(tmp_path / "kubeconfig")

    def spawn(identity):
        return _spawn(["--kubeconfig", path, "--leader-elect", "--leader-elect-namespace",
                       "default", "--leader-elect-identity", identity, "--metrics-address", "0",
                       "--leader-elect-lease-duration", "2s", "--leader-elect-renew-deadline",
                       "1.5s", "--leader-elect-retry-period", "0.25s"])

    a = spawn("replica-a")
    b = None
    try:
        assert _wait(lambda: _holder(api_server) == "replica-a", timeout=15)
        assert _wait(lambda: _web_synced(api_server))
        gets = len(api_server.request_log("get", "leases"))
        b = spawn("replica-b")
        # The leader renews without reading the Lease: a read is b's, once its caches synced.
        assert _wait(lambda: len(api_server.request_log("get", "leases")) > gets, timeout=15)
        # a has nothing to sync when it freezes, so no write of its is on its way.
        a.send_signal(signal.SIGSTOP)
        writes_before = len(_endpoints_writes(api_server))
        with _PodChurn(api_server):
            assert _wait(lambda: _holder(api_server) == "replica-b", timeout=10)
            assert _wait(lambda: len(_endpoints_writes(api_server)) > writes_before)  # b's
            b.send_signal(signal.SIGSTOP)
            time.sleep(0.5)  # b's requests already sent are answered
            marker = len(_endpoints_writes(api_server))
            a.send_signal(signal.SIGCONT)  # with the pod events of 3 s to sync
            _, err_a = a.communicate(timeout=15)
            after_resume = _endpoints_writes(api_server)[marker:]
        assert after_resume == [], err_a
        assert a.returncode == 1, err_a
        assert ("lease default/endpoint-controller is held by replica-b: stopping leading at "
                "once") in err_a
        assert _holder(api_server) == "replica-b"
        # b, paused past its renew deadline but without a rival, renews and leads on.
        b.send_signal(signal.SIGCONT)
        assert _wait(lambda: _web_synced(api_server), timeout=10)
        b.send_signal(signal.SIGTERM)
        _, err_b = b.communicate(timeout=15)
        assert b.returncode == 0, err_b
        assert _holder(api_server) == ""  # released on the clean stop
    finally:
        for p in (a, b):
            if p is not None:
                p.send_signal(signal.SIGCONT)
                p.kill()
                p.communicate()
