"""Runs examples/02-node-agent against the embedded API server and checks what it printed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "02-node-agent" / "main.py"


def load_example():
    spec = importlib.util.spec_from_file_location("example_node_agent", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_node_agent_example(capsys):
    example = load_example()
    assert example.main(["--step", "0.2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    per_pod: dict[str, list[str]] = {}
    for line in lines:
        key = line.split()[1]
        per_pod.setdefault(key, []).append(line)
    assert per_pod["default/web"] == [
        "start  default/web (nginx:1)",
        "update default/web (nginx:1)",
        "stop   default/web",
    ]
    etcd = per_pod["default/etcd-node-1"]
    assert etcd[0] == "start  default/etcd-node-1 (etcd:3.5)"
    # the changed manifest is a new pod (new UID): the old one stops, the new one starts
    assert sorted(etcd[1:3]) == ["start  default/etcd-node-1 (etcd:3.6)",
                                 "stop   default/etcd-node-1"]
    assert etcd[3:] == ["stop   default/etcd-node-1"]
    assert len(lines) == 7
