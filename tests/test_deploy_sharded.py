"""examples/deploy/sharded: the sharded endpoint-controller Deployment and its Lease RBAC."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from controllers.endpoint.cli import parse_args

SHARDED = Path(__file__).resolve().parents[1] / "examples" / "deploy" / "sharded"


def docs() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in sorted(SHARDED.glob("*.yaml")):
        out.extend(d for d in yaml.safe_load_all(path.read_text()) if d is not None)
    return out


def test_the_sharded_manifests() -> None:
    kinds = [(d["kind"], d["metadata"]["name"]) for d in docs()]
    assert kinds == [("Role", "endpoint-controller-shard-ring"),
                     ("RoleBinding", "endpoint-controller-shard-ring"),
                     ("Deployment", "endpoint-controller")]
    role, binding, deployment = docs()
    assert role["rules"] == [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                              "verbs": ["get", "list", "watch", "create", "update", "delete"]}]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"][0]["name"] == "endpoint-controller"
    assert deployment["spec"]["replicas"] == 3
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    args = [a.replace("$(POD_NAME)", "endpoint-controller-7d9f-abcde") for a in container["args"]]
    options = parse_args(args)
    assert options.shard_ring == "endpoint-controller"
    assert options.leader_elect is False
    assert options.lease_namespace == "endpoint-controller"
    assert options.identity == "endpoint-controller-7d9f-abcde"
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
