"""Tests for controllers.kubelet.file_source, in tmp_path.

Most tests call ``list_config`` / ``consume_watch_event`` directly (deterministic); the
threaded tests drive the rescan period with a FakeClock and, on Linux, real inotify events.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import drain, eventually

from controllers.kubelet.errors import ManifestError
from controllers.kubelet.file_source import FileSource
from controllers.kubelet.inotify import inotify_available
from controllers.kubelet.pod_update import FILE_SOURCE, SET, PodUpdate
from informers.clock import FakeClock

NODE = "node-1"
PERIOD = 20.0


def manifest(name: str, image: str = "nginx:1.27", namespace: str | None = None) -> str:
    ns = f"  namespace: {namespace}\n" if namespace else ""
    return (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n{ns}spec:\n"
            f"  containers:\n  - name: c\n    image: {image}\n")


def write(path: Path, text: str) -> Path:
    """Write atomically (a dot-file renamed into place), as careful tools do."""
    tmp = path.parent / f".{path.name}.tmp"
    tmp.write_text(text)
    os.replace(tmp, path)
    return path


def names(update: PodUpdate) -> list[str]:
    assert (update.op, update.source) == (SET, FILE_SOURCE)
    return sorted(p["metadata"]["name"] for p in update.pods)


def sets(q: queue.Queue[PodUpdate]) -> list[list[str]]:
    return [names(u) for u in drain(q)]


def pod_named(update: PodUpdate, name: str) -> dict[str, Any]:
    (pod,) = [p for p in update.pods if p["metadata"]["name"] == name]
    return pod


@pytest.fixture
def q() -> queue.Queue[PodUpdate]:
    return queue.Queue()


@pytest.fixture
def source(tmp_path: Path, q: queue.Queue[PodUpdate]) -> FileSource:
    return FileSource(str(tmp_path), NODE, PERIOD, q, watch=False)


# -- rescans -----------------------------------------------------------------------------------


def test_existing_files_are_read_and_dot_files_and_subdirectories_skipped(tmp_path, q, source):
    write(tmp_path / "b.yaml", manifest("b"))
    (tmp_path / "a.json").write_text(
        '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, '
        '"spec": {"containers": [{"name": "c", "image": "x:1"}]}}')
    (tmp_path / ".hidden.yaml").write_text(manifest("hidden"))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "nested.yaml").write_text(manifest("nested"))
    source.list_config()
    (update,) = drain(q)
    assert names(update) == ["a-node-1", "b-node-1"]
    pod = pod_named(update, "b-node-1")
    assert pod["spec"]["nodeName"] == NODE
    assert pod["spec"]["tolerations"] == [{"operator": "Exists", "effect": "NoExecute"}]


def test_uid_depends_on_the_file_path(tmp_path, q, source):
    write(tmp_path / "one.yaml", manifest("same", namespace="a"))
    write(tmp_path / "two.yaml", manifest("same", namespace="b"))
    source.list_config()
    (update,) = drain(q)
    uids = {p["metadata"]["uid"] for p in update.pods}
    assert len(uids) == 2


def test_added_changed_and_removed_files_on_rescan(tmp_path, q, source):
    write(tmp_path / "a.yaml", manifest("a"))
    source.list_config()
    (first,) = drain(q)
    old_uid = pod_named(first, "a-node-1")["metadata"]["uid"]
    write(tmp_path / "b.yaml", manifest("b"))
    source.list_config()
    assert sets(q) == [["a-node-1", "b-node-1"]]
    write(tmp_path / "a.yaml", manifest("a", image="nginx:1.28"))
    source.list_config()
    (changed,) = drain(q)
    a = pod_named(changed, "a-node-1")
    assert a["spec"]["containers"][0]["image"] == "nginx:1.28"
    assert a["metadata"]["uid"] != old_uid  # content changed: a new pod
    (tmp_path / "b.yaml").unlink()
    source.list_config()
    assert sets(q) == [["a-node-1"]]


def test_bad_file_beside_good_ones_is_logged_by_name_and_skipped(tmp_path, q, source, caplog):
    write(tmp_path / "good.yaml", manifest("good"))
    write(tmp_path / "broken.yaml", "apiVersion: v1\nkind: Pod\nmetadata: [oops\n")
    write(tmp_path / "nameless.yaml", manifest("x").replace("  name: x\n", ""))
    with caplog.at_level(logging.ERROR, logger="controllers.kubelet.file_source"):
        source.list_config()
    assert sets(q) == [["good-node-1"]]
    broken, nameless = str(tmp_path / "broken.yaml"), str(tmp_path / "nameless.yaml")
    assert sorted(source.last_errors) == [broken, nameless]
    assert source.last_errors[nameless] == "invalid pod: name is needed for the pod"
    assert source.last_errors[broken].startswith("couldn't parse as pod")
    assert f"can't process manifest file {broken}" in caplog.text
    assert f"can't process manifest file {nameless}" in caplog.text


def test_missing_path_sends_an_empty_set_and_says_so(tmp_path, q):
    missing = tmp_path / "nope"
    src = FileSource(str(missing), NODE, PERIOD, q, watch=False)
    with pytest.raises(ManifestError, match="path does not exist, ignoring") as info:
        src.list_config()
    assert info.value.source == str(missing)
    assert sets(q) == [[]]


def test_empty_directory_sends_an_empty_set(q, source):
    source.list_config()
    assert sets(q) == [[]]


def test_directory_emptied_clears_the_store(tmp_path, q, source):
    write(tmp_path / "a.yaml", manifest("a"))
    source.list_config()
    (tmp_path / "a.yaml").unlink()
    source.list_config()
    write(tmp_path / "b.yaml", manifest("b"))
    source.consume_watch_event(str(tmp_path / "b.yaml"), "add")
    # a's pod does not come back with the next event
    assert sets(q) == [["a-node-1"], [], ["b-node-1"]]


def test_single_file_path(tmp_path, q):
    path = write(tmp_path / "pod.yaml", manifest("solo"))
    src = FileSource(str(path), NODE, PERIOD, q, watch=False)
    src.list_config()
    assert sets(q) == [["solo-node-1"]]
    write(path, "not: [valid")
    with pytest.raises(ManifestError) as info:
        src.list_config()
    assert info.value.source == str(path)
    assert drain(q) == []  # nothing sent: the previous pods stay


def test_trailing_slash_is_stripped(tmp_path, q):
    src = FileSource(str(tmp_path) + "/", NODE, PERIOD, q, watch=False)
    assert src.path == str(tmp_path)


def test_symlinked_manifest_is_followed_but_a_symlinked_directory_is_not_entered(
        tmp_path, q, source):
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    target = write(outside / "target.yaml", manifest("linked"))
    (outside / "dir").mkdir()
    (outside / "dir" / "inner.yaml").write_text(manifest("inner"))
    (tmp_path / "link.yaml").symlink_to(target)
    (tmp_path / "dirlink").symlink_to(outside / "dir")
    (tmp_path / "dangling.yaml").symlink_to(outside / "missing.yaml")
    source.list_config()
    assert sets(q) == [["linked-node-1"]]
    assert list(source.last_errors) == [str(tmp_path / "dangling.yaml")]
    write(target, manifest("linked", image="nginx:2"))
    source.list_config()  # a changed target is seen by the rescan
    (update,) = drain(q)
    assert pod_named(update, "linked-node-1")["spec"]["containers"][0]["image"] == "nginx:2"


# -- events ------------------------------------------------------------------------------------


def test_events_add_modify_rename_and_delete(tmp_path, q, source):
    source.list_config()
    assert sets(q) == [[]]
    a = write(tmp_path / "a.yaml", manifest("a"))
    source.consume_watch_event(str(a), "add")
    assert sets(q) == [["a-node-1"]]
    write(a, manifest("a", image="nginx:9"))
    source.consume_watch_event(str(a), "modify")
    (update,) = drain(q)
    assert pod_named(update, "a-node-1")["spec"]["containers"][0]["image"] == "nginx:9"
    z = tmp_path / "z.yaml"
    os.rename(a, z)
    source.consume_watch_event(str(a), "delete")   # IN_MOVED_FROM
    source.consume_watch_event(str(z), "add")      # IN_MOVED_TO
    assert sets(q) == [[], ["a-node-1"]]
    z.unlink()
    source.consume_watch_event(str(z), "delete")
    assert sets(q) == [[]]


def test_event_for_a_bad_file_changes_nothing_and_names_the_file(tmp_path, q, source):
    a = write(tmp_path / "a.yaml", manifest("a"))
    source.list_config()
    drain(q)
    write(a, "kind: Pod\n")
    with pytest.raises(ManifestError) as info:
        source.consume_watch_event(str(a), "modify")
    assert info.value.source == str(a)
    assert "can't process config file" in str(info.value)
    assert drain(q) == []


def test_events_for_dot_files_and_unknown_deletions_are_ignored(tmp_path, q, source):
    hidden = write(tmp_path / ".a.swp", manifest("hidden"))
    source.consume_watch_event(str(hidden), "add")
    source.consume_watch_event(str(tmp_path / "never-seen.yaml"), "delete")
    assert drain(q) == []


def test_file_whose_pod_changes_name_replaces_its_pod_in_one_set(tmp_path, q, source):
    a = write(tmp_path / "a.yaml", manifest("first"))
    write(tmp_path / "b.yaml", manifest("other"))
    source.list_config()
    drain(q)
    write(a, manifest("second"))
    source.consume_watch_event(str(a), "modify")
    assert sets(q) == [["other-node-1", "second-node-1"]]


# -- threads -----------------------------------------------------------------------------------


def test_periodic_rescan_on_the_fake_clock(tmp_path, q):
    clock = FakeClock()
    src = FileSource(str(tmp_path), NODE, PERIOD, q, clock=clock, watch=False)
    stop = threading.Event()
    src.start(stop)
    try:
        assert names(q.get(timeout=5)) == []  # the immediate first scan
        write(tmp_path / "a.yaml", manifest("a"))
        assert clock.wait_for_waiters(1)
        assert clock.next_deadline() == PERIOD
        clock.step(PERIOD)
        assert names(q.get(timeout=5)) == ["a-node-1"]
    finally:
        stop.set()
        src.join(5)
    assert not any(t.is_alive() for t in src._threads)


needs_inotify = pytest.mark.skipif(not inotify_available(), reason="inotify needs Linux")


def next_names(q: queue.Queue[PodUpdate]) -> list[str]:
    return names(q.get(timeout=5))


@needs_inotify
def test_inotify_sees_changes_without_waiting_for_the_rescan(tmp_path, q):
    clock = FakeClock()  # the rescan never comes: only inotify can report the changes
    src = FileSource(str(tmp_path), NODE, PERIOD, q, clock=clock, watch=True)
    stop = threading.Event()
    src.start(stop)
    try:
        assert next_names(q) == []
        write(tmp_path / "a.yaml", manifest("a"))
        assert next_names(q) == ["a-node-1"]
        write(tmp_path / "b.yaml", manifest("b"))
        assert next_names(q) == ["a-node-1", "b-node-1"]
        os.rename(tmp_path / "a.yaml", tmp_path / "c.yaml")
        assert next_names(q) == ["b-node-1"]
        assert next_names(q) == ["a-node-1", "b-node-1"]
        (tmp_path / "b.yaml").unlink()
        assert next_names(q) == ["a-node-1"]
        (tmp_path / ".ignored.yaml").write_text(manifest("ignored"))
        write(tmp_path / "c.yaml", manifest("a", image="nginx:2"))
        update = q.get(timeout=5)
        assert names(update) == ["a-node-1"]
        assert update.pods[0]["spec"]["containers"][0]["image"] == "nginx:2"
    finally:
        stop.set()
        src.join(5)
    assert not any(t.is_alive() for t in src._threads)


@needs_inotify
def test_watch_is_set_up_again_after_the_directory_comes_back(tmp_path, q):
    clock = FakeClock()
    root = tmp_path / "manifests"
    root.mkdir()
    src = FileSource(str(root), NODE, PERIOD, q, clock=clock, watch=True)
    stop = threading.Event()
    src.start(stop)
    try:
        assert next_names(q) == []
        write(root / "a.yaml", manifest("a"))
        assert next_names(q) == ["a-node-1"]
        (root / "a.yaml").unlink()
        assert next_names(q) == []
        root.rmdir()  # the watch is lost; the source retries after 1 s (fake)
        assert eventually(lambda: src._inotify is None and clock.next_deadline() == 1.0)
        root.mkdir()
        write(root / "b.yaml", manifest("b"))
        clock.step(1.0)
        assert next_names(q) == ["b-node-1"]  # rescanned as soon as it watches again
        write(root / "c.yaml", manifest("c"))
        assert next_names(q) == ["b-node-1", "c-node-1"]
    finally:
        stop.set()
        src.join(5)


def test_file_replaced_by_a_rename_is_re_read_not_dropped(tmp_path, q, source):
    a = write(tmp_path / "a.yaml", manifest("a"))
    source.list_config()
    drain(q)
    write(a, manifest("a", image="nginx:3"))  # the old inode is removed, the path stays
    source.consume_watch_event(str(a), "delete")
    (update,) = drain(q)
    assert names(update) == ["a-node-1"]
    assert update.pods[0]["spec"]["containers"][0]["image"] == "nginx:3"


@needs_inotify
def test_single_file_path_replaced_atomically_does_not_flap(tmp_path, q):
    clock = FakeClock()
    path = write(tmp_path / "pod.yaml", manifest("solo"))
    src = FileSource(str(path), NODE, PERIOD, q, clock=clock, watch=True)
    stop = threading.Event()
    src.start(stop)
    try:
        assert next_names(q) == ["solo-node-1"]
        write(path, manifest("solo", image="nginx:2"))
        update = q.get(timeout=5)
        assert names(update) == ["solo-node-1"]
        assert update.pods[0]["spec"]["containers"][0]["image"] == "nginx:2"
        assert eventually(lambda: src._inotify is None)  # the old inode's watch ended
        assert all(names(u) == ["solo-node-1"] for u in drain(q))  # never an empty SET
        # Step only once the source waits for its 1 s re-watch backoff on the clock.
        assert eventually(lambda: clock.next_deadline() == 1.0)
        clock.step(1.0)  # watched again (and rescanned)
        assert next_names(q) == ["solo-node-1"]
    finally:
        stop.set()
        src.join(5)


# -- hostile files ------------------------------------------------------------------------------


def alias_bomb(levels: int = 8) -> str:
    """A static pod whose ``args`` is an alias nested ``levels`` deep (9**levels strings)."""
    names = "abcdefghijklmnop"
    lines = ["apiVersion: v1", "kind: Pod", "metadata:", "  name: bomb", "  annotations:",
             '    l0: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append(f"    l{i}: &{names[i]} [" + ",".join([f"*{names[i - 1]}"] * 9) + "]")
    lines += ["spec:", "  containers:", "  - name: c", "    image: busybox",
              f"    args: *{names[levels - 1]}"]
    return "\n".join(lines) + "\n"


@pytest.mark.timeout(20)
def test_alias_bomb_is_rejected_quickly_and_other_manifests_still_run(tmp_path, q, source):
    write(tmp_path / "good.yaml", manifest("good"))
    write(tmp_path / "bomb.yaml", alias_bomb(8))
    started = time.monotonic()
    source.list_config()
    assert time.monotonic() - started < 1.0
    assert sets(q) == [["good-node-1"]]
    reason = source.last_errors[str(tmp_path / "bomb.yaml")]
    assert reason.startswith("couldn't parse as pod: document contains excessive aliasing (line ")


def test_manifest_with_a_few_anchors_still_loads(tmp_path, q, source):
    write(tmp_path / "anchors.yaml", (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: anchors\n"
        "spec:\n  containers:\n  - &c {name: a, image: 'nginx:1.27', args: &args [one, two]}\n"
        "  - {<<: *c, name: b, args: *args}\n"))
    source.list_config()
    (update,) = drain(q)
    a, b = pod_named(update, "anchors-node-1")["spec"]["containers"]
    assert (a["name"], b["name"]) == ("a", "b")
    assert a["args"] == b["args"] == ["one", "two"] and a["args"] is not b["args"]
    assert b["image"] == "nginx:1.27" and b["imagePullPolicy"] == "IfNotPresent"


@pytest.mark.timeout(20)
def test_nine_mib_manifest_is_rejected_fast(tmp_path, q, source):
    write(tmp_path / "big.yaml", manifest("big").replace(
        "  name: big\n", "  name: big\n  annotations:\n    a: " + "x" * (9 << 20) + "\n"))
    started = time.process_time()
    source.list_config()
    assert time.process_time() - started < 0.6  # PyYAML's pure-Python parser: about 1.7 s
    assert source.last_errors[str(tmp_path / "big.yaml")] == (
        "invalid pod: [metadata.annotations: Too long: must have at most 262144 bytes]")


SECRET_VALUE = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.mark.parametrize(("content", "problem"), [
    (f"AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\nAWS_SECRET_ACCESS_KEY={SECRET_VALUE}\n",
     "couldn't parse as Pod: expected a Pod object, got a string, please check manifest file"),
    (f"- {SECRET_VALUE}\n", "couldn't parse as Pod: expected a Pod object, got a list, "
     "please check manifest file"),
    (f"aws_secret_access_key: '{SECRET_VALUE}\n", "couldn't parse as pod: while scanning a "
     "quoted scalar; found unexpected end of stream (line 2, column 1), please check "
     "manifest file"),
    (f"kind: {SECRET_VALUE}\napiVersion: {SECRET_VALUE}\n", "couldn't parse as Pod: got kind "
     "(not a valid name) of apiVersion (not a valid name), please check manifest file"),
    (f"{SECRET_VALUE}: [\n", "couldn't parse as pod: while parsing a flow node; did not find "
     "expected node content (line 2, column 1), please check manifest file"),
], ids=["env-file", "list", "unclosed-quote", "kind", "unclosed-flow"])
def test_symlink_to_a_file_of_secrets_never_logs_its_content(tmp_path, q, source, caplog,
                                                              content, problem):
    outside = tmp_path.parent / f"{tmp_path.name}-secrets"
    outside.mkdir()
    (outside / "credentials").write_text(content)
    (tmp_path / "creds").symlink_to(outside / "credentials")
    with caplog.at_level(logging.DEBUG):
        source.list_config()
        with pytest.raises(ManifestError) as info:
            source.consume_watch_event(str(tmp_path / "creds"), "modify")
    assert source.last_errors == {str(tmp_path / "creds"): problem}
    assert f"can't process manifest file {tmp_path / 'creds'}: {problem}" in caplog.text
    for text in (caplog.text, str(info.value), repr(source.last_errors)):
        assert SECRET_VALUE not in text and SECRET_VALUE[:8] not in text
        assert "AKIA" not in text
