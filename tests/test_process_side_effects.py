"""A library has manners: importing it and running an informer leaves the process's garbage
collector alone unless :class:`informers.MemoryTuning` is asked for.

Each case runs in a fresh interpreter, so nothing another test did to the collector counts.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = textwrap.dedent('''
    import gc, json, sys
    calls = []
    for name in ("freeze", "disable", "set_threshold"):
        real = getattr(gc, name)
        def spy(*args, _real=real, _name=name):
            calls.append(_name)
            return _real(*args)
        setattr(gc, name, spy)
    before = [gc.get_threshold(), gc.isenabled()]

    from informers import MemoryTuning, SharedInformerFactory
    from informers.testing import ApiServer

    tuning = MemoryTuning() if sys.argv[1] == "tuned" else None
    with ApiServer() as server:
        for i in range(50):
            server.create({"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": f"p{i}", "namespace": "default"},
                           "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
        factory = SharedInformerFactory(server.api_client(), memory_tuning=tuning)
        pods = factory.core().v1().pods()
        pods.informer()
        factory.start()
        synced = factory.wait_for_cache_sync(timeout=30)
        count = len(pods.lister().list())
        factory.shutdown()
    after = [gc.get_threshold(), gc.isenabled()]
    print(json.dumps({"before": before, "after": after, "calls": sorted(set(calls)),
                      "frozen": gc.get_freeze_count() > 0, "synced": synced,
                      "count": count}))
''')


def run(mode: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", SCRIPT, mode], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, check=True)
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_an_informer_without_tuning_leaves_the_collector_alone():
    result = run("default")
    assert result["synced"] == {"pods": True} and result["count"] == 50
    assert result["calls"] == []
    assert result["frozen"] is False
    assert result["after"] == result["before"]


def test_memory_tuning_pauses_freezes_and_raises_the_threshold():
    result = run("tuned")
    assert result["synced"] == {"pods": True} and result["count"] == 50
    assert result["calls"] == ["disable", "freeze", "set_threshold"]
    assert result["frozen"] is True
    before, after = result["before"], result["after"]
    assert isinstance(before, list) and isinstance(after, list)
    assert after[0][:2] == before[0][:2] and after[0][2] == max(before[0][2], 100)
    assert after[1] is True  # the collector runs again after the pause
