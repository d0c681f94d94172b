"""Tests for controllers.kubelet.cli (the ``kubelet-pod-source`` command)."""

from __future__ import annotations

import configparser
import io
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from controllers.kubelet.cli import build_parser, main
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
    assert "created pod default/api-pod bound to Demo" in narration
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
