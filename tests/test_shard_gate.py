"""Controller.shard_check: asked before each reconcile, atomically with registering the key
in flight; a refused key is forgotten, not retried."""

from __future__ import annotations

import threading
import time

from informers.controller import Controller


def test_a_refused_key_is_skipped_and_an_allowed_one_is_in_flight() -> None:
    started = threading.Event()
    release = threading.Event()
    reconciled: list[str] = []
    asked: list[str] = []

    def reconcile(key: str) -> None:
        reconciled.append(key)
        if key == "a/slow":
            started.set()
            release.wait(5)

    controller = Controller("gated", reconcile, workers=2)

    def gate(key: str) -> bool:
        asked.append(key)
        return not key.startswith("b/")

    controller.shard_check = gate
    stop = threading.Event()
    thread = threading.Thread(target=controller.run, args=(stop,))
    thread.start()
    try:
        controller.enqueue("a/slow")
        assert started.wait(5)
        assert controller.in_flight_keys() == ("a/slow",)
        controller.enqueue("b/other")
        controller.enqueue("a/fast")
        deadline = time.monotonic() + 5
        while "a/fast" not in reconciled or "b/other" not in asked:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        release.set()
        while controller.in_flight_keys():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert sorted(reconciled) == ["a/fast", "a/slow"]
        assert controller.queue.num_requeues("b/other") == 0
        assert len(controller.queue) == 0
    finally:
        release.set()
        stop.set()
        thread.join(5)
    assert not thread.is_alive()
