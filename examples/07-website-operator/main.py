"""Runs the Website operator (``website.py``) with a Manager until Ctrl-C or ``--duration``.

    kubectl apply -f examples/07-website-operator/crd.yaml
    python examples/07-website-operator/main.py --kubeconfig ~/.kube/config

Without ``--kubeconfig`` it runs on an embedded API server (the CRD installed there too),
creates one Website and waits for its ConfigMap, Deployment and Service.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from website import CRD, MANAGER, WEBSITES, setup

from informers.client import Client
from informers.manager import Manager
from informers.testing import connect
from informers.testing.runner import eventually, run_manager


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A Website operator.")
    parser.add_argument("--kubeconfig", help="use this cluster (default: an embedded API server)")
    parser.add_argument("--duration", type=float, default=None,
                        help="seconds to run after the demo (default: until Ctrl-C)")
    args = parser.parse_args(argv)
    with connect(args.kubeconfig) as (api_client, server):
        client = Client(api_client, field_manager=MANAGER)
        if server is not None:  # the embedded server serves CRDs as kube-apiserver does
            client.create(CRD)
            eventually(lambda: client.list(WEBSITES, "default") is not None)
        manager = Manager(api_client, shutdown_timeout=5.0)
        setup(manager, client,
              cleanup=lambda site: print(f"cleaning up {site['metadata']['name']}"))
        with run_manager(manager):  # started, caches synced; stopped and joined on exit
            if server is not None:
                client.create({"apiVersion": WEBSITES.api_version, "kind": "Website",
                               "metadata": {"name": "demo", "namespace": "default"},
                               "spec": {"message": "hi", "replicas": 1}})
                eventually(lambda: client.get("services", "demo", "default"), timeout=10)
                print("Website default/demo: ConfigMap, Deployment and Service applied")
            threading.Event().wait(args.duration)
    return 0


if __name__ == "__main__":
    sys.exit(main())
