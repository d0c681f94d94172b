"""Tests for controllers.kubelet.inotify (Linux only), in tmp_path."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from controllers.kubelet.inotify import (
    IN_ATTRIB,
    IN_CLOSE_WRITE,
    IN_CREATE,
    IN_DELETE,
    IN_DELETE_SELF,
    IN_IGNORED,
    IN_MODIFY,
    IN_MOVED_FROM,
    IN_MOVED_TO,
    POD_ADD,
    POD_DELETE,
    POD_MODIFY,
    Inotify,
    InotifyEvent,
    inotify_available,
)

pytestmark = pytest.mark.skipif(not inotify_available(), reason="inotify needs Linux")


def read_until(watch: Inotify, predicate, limit: int = 20) -> list[InotifyEvent]:
    events: list[InotifyEvent] = []
    for _ in range(limit):
        batch = watch.read()
        assert batch is not None
        events.extend(batch)
        if predicate(events):
            return events
    raise AssertionError(f"condition not met by {events}")


def kinds(events: list[InotifyEvent]) -> list[tuple[str, str | None]]:
    return [(os.path.basename(e.path), e.kind) for e in events]


@pytest.mark.parametrize("mask,kind", [
    (IN_CREATE, POD_ADD), (IN_MOVED_TO, POD_ADD), (IN_MODIFY, POD_MODIFY),
    (IN_CLOSE_WRITE, POD_MODIFY), (IN_ATTRIB, POD_MODIFY), (IN_DELETE, POD_DELETE),
    (IN_MOVED_FROM, POD_DELETE), (IN_DELETE_SELF, POD_DELETE), (IN_IGNORED, None),
    (IN_CREATE | IN_MODIFY, POD_ADD),  # Create wins, as in the kubelet's switch
])
def test_event_kind_follows_the_kubelets_mapping(mask, kind):
    assert InotifyEvent("/x", mask).kind == kind


def test_directory_events(tmp_path: Path):
    watch = Inotify(str(tmp_path))
    try:
        (tmp_path / "a.yaml").write_text("x")
        events = read_until(watch, lambda ev: any(e.mask & IN_CLOSE_WRITE for e in ev))
        assert ("a.yaml", POD_ADD) in kinds(events)
        assert all(e.path == str(tmp_path / "a.yaml") for e in events)
        os.rename(tmp_path / "a.yaml", tmp_path / "b.yaml")
        events = read_until(watch, lambda ev: any(e.mask & IN_MOVED_TO for e in ev))
        assert kinds(events) == [("a.yaml", POD_DELETE), ("b.yaml", POD_ADD)]
        (tmp_path / "b.yaml").unlink()
        events = read_until(watch, lambda ev: any(e.mask & IN_DELETE for e in ev))
        assert kinds(events)[-1] == ("b.yaml", POD_DELETE)
        tmp_path.rmdir()
        events = read_until(watch, lambda ev: any(e.watch_lost for e in ev))
        assert any(e.path == str(tmp_path) and e.kind == POD_DELETE for e in events)
    finally:
        watch.close()


def test_single_file_events_carry_the_file_path(tmp_path: Path):
    path = tmp_path / "pod.yaml"
    path.write_text("x")
    watch = Inotify(str(path))
    try:
        with open(path, "a") as fh:
            fh.write("y")
        events = read_until(watch, lambda ev: any(e.kind == POD_MODIFY for e in ev))
        assert {e.path for e in events} == {str(path)}
    finally:
        watch.close()


def test_missing_path_cannot_be_watched(tmp_path: Path):
    with pytest.raises(OSError, match="unable to create inotify for path"):
        Inotify(str(tmp_path / "missing"))


def test_close_wakes_a_blocked_read_and_is_idempotent(tmp_path: Path):
    watch = Inotify(str(tmp_path))
    result: list[object] = []
    reader = threading.Thread(target=lambda: result.append(watch.read()))
    reader.start()
    watch.close()
    reader.join(5)
    assert not reader.is_alive()
    assert result == [None]
    watch.close()
    assert watch.read() is None
