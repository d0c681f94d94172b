"""Runs the webhook operator's Website controller (``controller.py``) until Ctrl-C or
``--duration``, on the API of ``api/`` (the CRD in ``config/crd/``, written by
``informers-gen``).

    kubectl apply -f examples/08-webhook-operator/config/crd/
    python examples/08-webhook-operator/main.py --kubeconfig ~/.kube/config

Without ``--kubeconfig`` it runs on an embedded API server with the generated CRD installed,
creates a Website (the schema fills in its defaults), shows the CEL rule refusing a free
site with five replicas, and prints the status the controller wrote.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from controller import MANAGER, WEBSITES, build_manager

from informers.client import Client
from informers.errors import Invalid
from informers.testing import connect
from informers.testing.runner import eventually, run_manager
from informers.yaml_loader import load_all_yaml

HERE = Path(__file__).resolve().parent


def demo(client: Client) -> None:
    """Create a Website, show a refused one, and print what the controller reported."""
    site = client.create({"apiVersion": WEBSITES.api_version, "kind": "Website",
                          "metadata": {"name": "demo", "namespace": "default"},
                          "spec": {"image": "nginx:1.27", "content": {"message": "hi"}}})
    print(f"created Website default/demo with the schema's defaults: {site['spec']}")
    try:
        client.create({"apiVersion": WEBSITES.api_version, "kind": "Website",
                       "metadata": {"name": "big", "namespace": "default"},
                       "spec": {"image": "nginx:1.27", "replicas": 5}})
    except Invalid as err:
        print(f"refused Website default/big: {err.status['details']['causes'][0]['message']}")

    def reported() -> dict:
        status = (client.get(WEBSITES, "demo", "default") or {}).get("status") or {}
        assert status.get("conditions"), status
        return status

    status = eventually(reported)
    ready = status["conditions"][0]["status"]
    print(f"status: {status['replicas']} replica(s), selector {status['selector']}, "
          f"Ready={ready}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The webhook operator's Website controller.")
    parser.add_argument("--kubeconfig", help="use this cluster (default: an embedded API server)")
    parser.add_argument("--duration", type=float, default=None,
                        help="seconds to run after the demo (default: until Ctrl-C)")
    args = parser.parse_args(argv)
    with connect(args.kubeconfig) as (api_client, server):
        if server is not None:
            for path in sorted((HERE / "config" / "crd").glob("*.yaml")):
                for crd in load_all_yaml(path.read_text()):
                    server.create(crd)
        manager = build_manager(api_client, leader_election=server is None)
        with run_manager(manager):
            if server is not None:
                demo(Client(api_client, field_manager=MANAGER))
            threading.Event().wait(args.duration)
    return 0


if __name__ == "__main__":
    sys.exit(main())
