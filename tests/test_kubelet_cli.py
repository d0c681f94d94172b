"""Tests for controllers.kubelet.cli (the ``kubelet-pod-source`` command)."""

from __future__ import annotations

import argparse
import configparser
import io
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from controllers.kubelet.cli import build_parser, main, node_name
from informers.testing import ApiServer

ROOT = Path(__file__).resolve().parent.parent


def manifest(name: str) -> str:
    return (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n"
            f"  containers:\n  - name: c\n    image: nginx:1.27\n")


def test_defaults_are_the_kubelets():
    args = build_parser().parse_args([])
    assert (args.file_check_frequency, args.http_check_frequency) == (20.0, 20.0)
    assert (args.mode, args.output, args.duration) == ("incremental", "json", None)
    assert args.manifest_url_header == []
    assert (args.log_level, args.log_format) == ("info", "text")


def test_durations_take_the_go_syntax():
    args = build_parser().parse_args(["--file-check-frequency", "1m30s",
                                      "--http-check-frequency", "500ms", "--duration", "2",
                                      "--log-level", "DEBUG", "--log-format", "json"])
    assert (args.file_check_frequency, args.http_check_frequency, args.duration) == (
        90.0, 0.5, 2.0)
    assert (args.log_level, args.log_format) == ("debug", "json")


@pytest.mark.parametrize(("text", "name"), [
    ("overridden", "overridden"), ("OVERRIDDEN", "overridden"), (" OVERRIDDEN ", "overridden"),
    (" ", None),
])
def test_get_hostname(text, name):
    """component-helpers node/util TestGetHostname (the override cases)."""
    if name is None:
        with pytest.raises(argparse.ArgumentTypeError, match=r"^empty node name is invalid$"):
            node_name(text)
    else:
        assert node_name(text) == name


@pytest.mark.parametrize(("text", "name"), [
    ("node-1", "node-1"), ("N1", "n1"), (" Worker.Example.COM ", "worker.example.com"),
    ("a" * 253, "a" * 253),
])
def test_node_name_is_the_kubelet_s(text, name):
    """Trimmed and lower-cased as nodeutil.GetHostname does; a DNS-1123 subdomain."""
    assert node_name(text) == name


def test_repeatable_header_flag():
    args = build_parser().parse_args(["--manifest-url-header", "A:1",
                                      "--manifest-url-header", "B:2"])
    assert args.manifest_url_header == ["A:1", "B:2"]


def test_bad_header_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--manifest-url", "http://x", "--manifest-url-header", "nocolon"])
    assert info.value.code == 2
    assert "not in the form key:value" in capsys.readouterr().err


def run_until(argv: list[str], done, timeout: float = 10.0) -> str:
    """Run main() on a thread until ``done(output)`` holds, then stop it."""
    out = io.StringIO()
    stop = threading.Event()
    result: list[int] = []
    t = threading.Thread(target=lambda: result.append(main(argv, out=out, err=io.StringIO(),
                                                           stop=stop)))
    t.start()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and not done(out.getvalue()):
            time.sleep(0.02)
    finally:
        stop.set()
        t.join(10)
    assert result == [0]
    return out.getvalue()


def test_manifest_path_with_json_output(tmp_path):
    (tmp_path / "web.yaml").write_text(manifest("web"))
    text = run_until(["--node-name", "N1", "--pod-manifest-path", str(tmp_path)],
                     lambda o: o.count("\n") >= 1)
    first = json.loads(text.splitlines()[0])
    assert (first["op"], first["source"]) == ("ADD", "file")
    assert [p["metadata"]["name"] for p in first["pods"]] == ["web-n1"]


def test_pods_output_and_kubeconfig(tmp_path):
    (tmp_path / "web.yaml").write_text(manifest("web"))
    with ApiServer() as server:
        server.create({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": "bound", "namespace": "default"},
                       "spec": {"nodeName": "n1",
                                "containers": [{"name": "c", "image": "x:1"}]}})
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        manifests = tmp_path / "m"
        manifests.mkdir()
        (manifests / "web.yaml").write_text(manifest("web"))
        want = {"running": ["default/bound", "default/web-n1"]}
        text = run_until(["--node-name", "n1", "--pod-manifest-path", str(manifests),
                          "--kubeconfig", kubeconfig, "--output", "pods"],
                         lambda o: json.dumps(want) in o)
    lines = [json.loads(line) for line in text.splitlines()]
    assert lines[-1] == want


def test_snapshot_mode_prints_sets(tmp_path):
    (tmp_path / "web.yaml").write_text(manifest("web"))
    text = run_until(["--node-name", "n1", "--pod-manifest-path", str(tmp_path),
                      "--mode", "snapshot"], lambda o: o.count("\n") >= 1)
    assert json.loads(text.splitlines()[0])["op"] == "SET"


def test_duration_ends_the_run(tmp_path):
    out = io.StringIO()
    started = time.monotonic()
    assert main(["--node-name", "n1", "--pod-manifest-path", str(tmp_path), "--duration", "0.3"],
                out=out, err=io.StringIO()) == 0
    assert time.monotonic() - started < 8
    assert json.loads(out.getvalue().splitlines()[0]) == {"op": "ADD", "pods": [],
                                                          "source": "file"}


def test_demo_narrates_and_ends_with_the_static_pod(tmp_path):
    out, err = io.StringIO(), io.StringIO()
    assert main(["--node-name", "Demo", "--demo-step", "0.15", "--output", "pods"],
                out=out, err=err) == 0
    narration = err.getvalue()
    assert "embedded API server at http://127.0.0.1:" in narration
    assert "created pod default/api-pod bound to demo" in narration
    assert "demo: done; the node runs: default/web-demo" in narration
    sets = [json.loads(line)["running"] for line in out.getvalue().splitlines()]
    assert ["default/api-pod", "default/web-demo"] in sets
    assert any("default/cache-demo" in s for s in sets)
    assert not any("default/elsewhere" in s for s in sets)
    assert sets[-1] == ["default/web-demo"]


def test_python_dash_m_help():
    proc = subprocess.run([sys.executable, "-m", "controllers.kubelet", "--help"],
                          capture_output=True, text=True, cwd=ROOT, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0
    assert "usage: kubelet-pod-source" in proc.stdout
    assert "--manifest-url-header KEY:VALUE" in proc.stdout


def test_console_script_is_declared():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    scripts = cfg["options.entry_points"]["console_scripts"]
    assert "kubelet-pod-source = controllers.kubelet.__main__:main" in scripts
    from controllers.kubelet.__main__ import main as entry

    assert entry is main


# -- bad input and failures, as a user meets them (a real process) --------------------------------


def _run(args, timeout=30):
    return subprocess.run([sys.executable, "-m", "controllers.kubelet", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


_DNS_SUBDOMAIN = ("a lowercase RFC 1123 subdomain of at most 253 characters must consist of "
                  "lower case alphanumeric characters, '-' or '.', and must start and end with "
                  "an alphanumeric character")


@pytest.mark.parametrize(("argv", "message"), [
    (["--file-check-frequency", "0"],
     "argument --file-check-frequency: invalid duration '0': must be > 0"),
    (["--file-check-frequency", "-5"],
     "argument --file-check-frequency: invalid duration '-5': must be > 0"),
    (["--file-check-frequency=-5s"],
     "argument --file-check-frequency: invalid duration '-5s': must be > 0"),
    (["--http-check-frequency", "0"],
     "argument --http-check-frequency: invalid duration '0': must be > 0"),
    (["--duration", "-1"], "argument --duration: invalid duration '-1': must be > 0"),
    (["--duration", "1d"], "argument --duration: invalid duration '1d': use a Go duration such "
                           "as 1m30s, 500ms or 2h, or a number of seconds"),
    (["--node-name", "Foo_Bar"], f"argument --node-name: invalid node name 'Foo_Bar': "
                                 f"{_DNS_SUBDOMAIN}"),
    (["--node-name=-node"], f"argument --node-name: invalid node name '-node': "
                              f"{_DNS_SUBDOMAIN}"),
    (["--node-name", "a" * 254], f"argument --node-name: invalid node name '{'a' * 254}': "
                                 f"{_DNS_SUBDOMAIN}"),
    (["--node-name", " "], "argument --node-name: empty node name is invalid"),
    (["--log-level", "verbose"], "argument --log-level: invalid log level 'verbose': use "
                                 "debug, info, warning or error"),
    (["--log-format", "xml"], "argument --log-format: invalid log format 'xml': use text or "
                              "json"),
])
def test_a_bad_flag_is_one_line_and_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert capsys.readouterr() == ("", f"kubelet-pod-source: error: {message} (see --help)\n")


def test_a_bad_flag_from_the_shell():
    result = _run(["--node-name", "n1", "--file-check-frequency", "0"])
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == ("kubelet-pod-source: error: argument --file-check-frequency: "
                             "invalid duration '0': must be > 0 (see --help)\n")


def _one_error_line(stderr):
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_a_missing_kubeconfig_is_named_without_a_traceback(tmp_path):
    missing = tmp_path / "missing"
    result = _run(["--kubeconfig", str(missing), "--node-name", "n1"])
    assert (result.returncode, result.stdout) == (2, "")
    assert _one_error_line(result.stderr).endswith(
        f" ERROR   controllers.kubelet.cli: kubeconfig {missing}: no such file or directory")


def test_an_unreadable_kubeconfig_is_named_without_a_traceback(tmp_path):
    result = _run(["--kubeconfig", str(tmp_path), "--node-name", "n1", "--log-format", "json"])
    assert (result.returncode, result.stdout) == (2, "")
    entry = json.loads(_one_error_line(result.stderr))
    assert {k: entry[k] for k in ("level", "logger", "message")} == {
        "level": "ERROR", "logger": "controllers.kubelet.cli",
        "message": f"kubeconfig {tmp_path}: is a directory"}


def test_sources_that_never_sync_exit_1_naming_them_in_json_lines(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens once the socket is closed
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    result = _run(["--kubeconfig", str(kubeconfig), "--node-name", "n1", "--duration", "500ms",
                   "--log-format", "json"])
    assert (result.returncode, result.stdout) == (1, "")
    entries = [json.loads(line) for line in result.stderr.splitlines()]
    assert all(sorted(e) == ["fields", "level", "logger", "message", "timestamp"]
               for e in entries)
    # The library's lines are shown (its list progress comes from the same loggers).
    assert any(e["logger"] == "informers.reflector" for e in entries)
    errors = [e["message"] for e in entries if e["logger"] == "controllers.kubelet.cli"]
    assert len(errors) == 1 and entries[-1]["level"] == "ERROR"
    assert errors[0].startswith(
        "pod sources never synced: api (last error: failed to list Pod: list v1/pods: ")
    assert errors[0].endswith("Connection refused)")
