"""``python -m informers.testing`` (informers/testing/__main__.py): serves until interrupted
and writes a kubeconfig the official client can use."""

from __future__ import annotations

import signal
import subprocess
import sys

from kubernetes import client, config


def test_serves_until_interrupted(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    proc = subprocess.Popen(
        [sys.executable, "-m", "informers.testing", "--port", "0", "--kubeconfig",
         str(kubeconfig), "--bookmark-interval", "5"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("serving on http://127.0.0.1:")
        api = client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))
        assert api.read_namespace("default").metadata.name == "default"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close() if proc.stdout else None
        proc.stderr.close() if proc.stderr else None
