"""Tests for controllers.kubelet.pod_config: every merge rule and emission mode.

Expected sequences follow the kubelet's config_test.go; pods are compared sorted where the
order is unspecified (merged state, REMOVEs of a SET).
"""

from __future__ import annotations

import copy
import logging
import queue
import threading
from typing import Any

import pytest

from controllers.kubelet.pod_config import (
    UPDATES_CAPACITY,
    PodConfig,
    PodUpdateQueue,
    SourceChannel,
    format_timestamp,
)
from controllers.kubelet.pod_update import (
    ADD,
    ALL_SOURCE,
    CONFIG_FIRST_SEEN_ANNOTATION_KEY,
    CONFIG_HASH_ANNOTATION_KEY,
    CONFIG_MIRROR_ANNOTATION_KEY,
    CONFIG_SOURCE_ANNOTATION_KEY,
    DELETE,
    INCREMENTAL,
    RECONCILE,
    REMOVE,
    SET,
    SNAPSHOT,
    SNAPSHOT_AND_UPDATES,
    UPDATE,
    PodConfigNotificationMode,
    PodUpdate,
)
from informers.clock import FakeClock

SEEN = "2026-01-01T00:00:00.000000000Z"  # FakeClock's wall start, kubelet fixed-nanos format
TEST_SOURCE = "test"


def make_pod(uid: str, name: str | None = None, ns: str = "default", image: str = "busybox",
             **meta: Any) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "metadata": {"uid": uid, "name": name or f"pod-{uid}", "namespace": ns, **meta},
        "spec": {"containers": [{"name": "c", "image": image}]},
    }
    return pod


def annotated(pod: dict[str, Any], source: str = TEST_SOURCE, seen: str = SEEN) -> dict[str, Any]:
    """What PodConfig stores for ``pod``: source and first-seen annotations added."""
    out = copy.deepcopy(pod)
    annotations = out["metadata"].setdefault("annotations", {})
    annotations[CONFIG_SOURCE_ANNOTATION_KEY] = source
    annotations[CONFIG_FIRST_SEEN_ANNOTATION_KEY] = seen
    return out


def drain(config: PodConfig) -> list[PodUpdate]:
    out = []
    while True:
        try:
            out.append(config.updates.get_nowait())
        except queue.Empty:
            return out


def by_uid(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(pods, key=lambda p: p["metadata"]["uid"])


def summary(updates: list[PodUpdate]) -> list[tuple[str, str, list[str]]]:
    """(op, source, sorted uids) per update."""
    return [(u.op_name, u.source, sorted(p["metadata"]["uid"] for p in u.pods)) for u in updates]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def new_config(clock: FakeClock, mode: PodConfigNotificationMode = INCREMENTAL,
               **kwargs: Any) -> tuple[PodConfig, SourceChannel]:
    config = PodConfig(mode, clock=clock, **kwargs)
    return config, config.channel(TEST_SOURCE)


# -- channels and basics -------------------------------------------------------------------------


def test_channel_is_the_same_object_per_source_and_registers_it(clock):
    config = PodConfig(clock=clock)
    a = config.channel("file")
    assert config.channel("file") is a
    assert config.channel("api") is not a
    assert config.sources == frozenset({"file", "api"})
    assert isinstance(a, SourceChannel) and isinstance(a, queue.Queue)
    assert (a.qsize(), a.empty(), a.full()) == (0, True, False)
    a.put(PodUpdate([], SET, "file"))  # merged at once: the channel itself stays empty
    assert (a.qsize(), a.empty()) == (0, True)
    with pytest.raises(queue.Empty):
        a.get_nowait()
    a.join()  # nothing pending
    assert config.updates.qsize() == 1


def test_empty_source_name_is_refused(clock):
    with pytest.raises(ValueError, match="must not be empty"):
        PodConfig(clock=clock).channel("")


@pytest.mark.parametrize("mode", [PodConfigNotificationMode.UNKNOWN, 0, 7])
def test_unsupported_mode_is_refused(mode):
    with pytest.raises(ValueError, match="unsupported PodConfigNotificationMode"):
        PodConfig(mode)


def test_updates_is_a_bounded_queue_like_the_kubelets(clock):
    config = PodConfig(clock=clock)
    assert isinstance(config.updates, queue.Queue)
    assert isinstance(config.updates, PodUpdateQueue)
    assert config.updates.maxsize == UPDATES_CAPACITY == 50


def test_put_rejects_what_is_not_a_pod_update(clock):
    _, ch = new_config(clock)
    with pytest.raises(TypeError, match="expected a PodUpdate"):
        ch.put({"pods": []})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="a pod must be a mapping"):
        ch.put(PodUpdate(["not a pod"], SET, TEST_SOURCE))  # type: ignore[list-item]


def test_format_timestamp_has_nine_fraction_digits(clock):
    assert format_timestamp(clock.wall()) == SEEN
    clock.step(1.5)
    assert format_timestamp(clock.wall()) == "2026-01-01T00:00:01.500000000Z"


# -- incremental mode ----------------------------------------------------------------------------


def test_first_set_with_a_pod_is_an_add(clock):
    config, ch = new_config(clock)
    p = make_pod("1")
    ch.put(PodUpdate([p], SET, TEST_SOURCE))
    assert drain(config) == [PodUpdate([annotated(p)], ADD, TEST_SOURCE)]


def test_first_empty_set_sends_an_empty_add_then_nothing(clock):
    config, ch = new_config(clock)
    ch.put(PodUpdate([], SET, TEST_SOURCE))
    assert drain(config) == [PodUpdate([], ADD, TEST_SOURCE)]
    ch.put(PodUpdate([], SET, TEST_SOURCE))
    assert drain(config) == []


def test_first_set_with_only_a_reconcile_sends_empty_add_before_reconcile(clock):
    config, ch = new_config(clock)
    p = make_pod("1")
    ch.put(PodUpdate([p], ADD, TEST_SOURCE))  # not a SET: the source is not seen yet
    assert summary(drain(config)) == [("ADD", TEST_SOURCE, ["1"])]
    changed = copy.deepcopy(p)
    changed["status"] = {"phase": "Running"}
    ch.put(PodUpdate([changed], SET, TEST_SOURCE))
    assert summary(drain(config)) == [("ADD", TEST_SOURCE, []), ("RECONCILE", TEST_SOURCE, ["1"])]


def test_unchanged_pod_sends_nothing_whatever_the_op(clock):
    config, ch = new_config(clock)
    p = make_pod("1")
    ch.put(PodUpdate([p], SET, TEST_SOURCE))
    drain(config)
    for op in (SET, ADD, UPDATE, DELETE):
        ch.put(PodUpdate([copy.deepcopy(p)], op, TEST_SOURCE))
    assert drain(config) == []


def test_new_uid_is_an_add_whatever_the_op(clock):
    config, ch = new_config(clock)
    ch.put(PodUpdate([], SET, TEST_SOURCE))
    drain(config)
    for i, op in enumerate((ADD, UPDATE, DELETE)):
        ch.put(PodUpdate([make_pod(str(i))], op, TEST_SOURCE))
    assert summary(drain(config)) == [
        ("ADD", TEST_SOURCE, ["0"]), ("ADD", TEST_SOURCE, ["1"]), ("ADD", TEST_SOURCE, ["2"]),
    ]


def test_new_pod_with_deletion_timestamp_is_still_an_add(clock):
    config, ch = new_config(clock)
    p = make_pod("1", deletionTimestamp="2026-01-01T00:00:00Z")
    ch.put(PodUpdate([p], ADD, TEST_SOURCE))
    assert drain(config) == [PodUpdate([annotated(p)], ADD, TEST_SOURCE)]


def test_spec_change_is_an_update_even_when_sent_as_add(clock):
    config, ch = new_config(clock)
    p = make_pod("1")
    ch.put(PodUpdate([p], SET, TEST_SOURCE))
    drain(config)
    clock.step(10)  # the first-seen time of the existing pod must be kept
    changed = make_pod("1", image="nginx")
    ch.put(PodUpdate([changed], ADD, TEST_SOURCE))
    assert drain(config) == [PodUpdate([annotated(changed)], UPDATE, TEST_SOURCE)]


def test_label_change_is_an_update_and_nil_labels_differ_from_empty(clock):
    config, ch = new_config(clock)
    p = make_pod("1", labels={"a": "b"})
    ch.put(PodUpdate([p], SET, TEST_SOURCE))
    drain(config)
    relabeled = make_pod("1", labels={})
    ch.put(PodUpdate([relabeled], UPDATE, TEST_SOURCE))
    assert drain(config) == [PodUpdate([annotated(relabeled)], UPDATE, TEST_SOURCE)]
    unlabeled = make_pod("1")
    ch.put(PodUpdate([unlabeled], UPDATE, TEST_SOURCE))
    assert drain(config) == [PodUpdate([annotated(unlabeled)], UPDATE, TEST_SOURCE)]


def test_status_only_change_is_a_reconcile_carrying_the_new_status(clock):
    config, ch = new_config(clock)
    p = make_pod("1")
    p["status"] = {"phase": "Pending"}
    ch.put(PodUpdate([p], SET, TEST_SOURCE))
    drain(config)
    running = copy.deepcopy(p)
    running["status"] = {"phase": "Running"}
    ch.put(PodUpdate([running], UPDATE, TEST_SOURCE))
    assert drain(config) == [PodUpdate([annotated(running)], RECONCILE, TEST_SOURCE)]
    assert config.merged_state() == [annotated(running)]


def test_deletion_timestamp_makes_a_delete_then_nothing(clock):
    config, ch = new_config(clock)
    p = make_pod("1")
    ch.put(PodUpdate([p], SET, TEST_SOURCE))
    drain(config)
    deleting = make_pod("1", deletionTimestamp="2026-01-01T00:01:00Z",
                        deletionGracePeriodSeconds=30)
    ch.put(PodUpdate([deleting], UPDATE, TEST_SOURCE))
    assert drain(config) == [PodUpdate([annotated(deleting)], DELETE, TEST_SOURCE)]
    ch.put(PodUpdate([copy.deepcopy(deleting)], SET, TEST_SOURCE))
    assert drain(config) == []


def test_grace_period_change_alone_is_an_update_or_delete(clock):
    config, ch = new_config(clock)
    deleting = make_pod("1", deletionTimestamp="2026-01-01T00:01:00Z",
                        deletionGracePeriodSeconds=30)
    ch.put(PodUpdate([deleting], SET, TEST_SOURCE))
    drain(config)
    shorter = make_pod("1", deletionTimestamp="2026-01-01T00:01:00Z",
                       deletionGracePeriodSeconds=0)
    ch.put(PodUpdate([shorter], SET, TEST_SOURCE))
    assert summary(drain(config)) == [("DELETE", TEST_SOURCE, ["1"])]


def test_remove_op_removes_known_uids_with_the_stored_pod(clock):
    config, ch = new_config(clock)
    p = make_pod("1", labels={"stored": "yes"})
    ch.put(PodUpdate([p, make_pod("2")], SET, TEST_SOURCE))
    drain(config)
    # Only the UID matters: the REMOVE carries the stored pod, not the one sent.
    ch.put(PodUpdate([{"metadata": {"uid": "1"}}, {"metadata": {"uid": "9"}}], REMOVE,
                     TEST_SOURCE))
    assert drain(config) == [PodUpdate([annotated(p)], REMOVE, TEST_SOURCE)]
    assert [x["metadata"]["uid"] for x in config.merged_state()] == ["2"]


def test_remove_of_unknown_uid_is_a_no_op(clock):
    config, ch = new_config(clock)
    ch.put(PodUpdate([{"metadata": {"uid": "x"}}], REMOVE, TEST_SOURCE))
    assert drain(config) == []


def test_set_emits_remove_add_update_delete_then_reconcile(clock):
    config, ch = new_config(clock)
    old = [make_pod(u) for u in ("a", "b", "c", "d", "e")]
    for p in old:
        p["status"] = {"phase": "Pending"}
    ch.put(PodUpdate(old, SET, TEST_SOURCE))
    drain(config)
    a = make_pod("a", image="changed")
    a["status"] = {"phase": "Pending"}
    b = make_pod("b", deletionTimestamp="2026-01-01T00:00:30Z")
    b["status"] = {"phase": "Pending"}
    c = make_pod("c")
    c["status"] = {"phase": "Running"}
    e = copy.deepcopy(old[4])
    f = make_pod("f")
    ch.put(PodUpdate([a, b, c, e, f], SET, TEST_SOURCE))
    assert summary(drain(config)) == [
        ("REMOVE", TEST_SOURCE, ["d"]),
        ("ADD", TEST_SOURCE, ["f"]),
        ("UPDATE", TEST_SOURCE, ["a"]),
        ("DELETE", TEST_SOURCE, ["b"]),
        ("RECONCILE", TEST_SOURCE, ["c"]),
    ]
    assert [p["metadata"]["uid"] for p in by_uid(config.merged_state())] == [
        "a", "b", "c", "e", "f"]


def test_set_with_several_removes_reports_them_all(clock):
    config, ch = new_config(clock)
    ch.put(PodUpdate([make_pod(u) for u in "123"], SET, TEST_SOURCE))
    drain(config)
    ch.put(PodUpdate([], SET, TEST_SOURCE))
    updates = drain(config)
    assert summary(updates) == [("REMOVE", TEST_SOURCE, ["1", "2", "3"])]
    assert config.merged_state() == []


def test_adds_and_updates_keep_input_order(clock):
    config, ch = new_config(clock)
    ch.put(PodUpdate([make_pod(u) for u in ("3", "1", "2")], SET, TEST_SOURCE))
    assert [p["metadata"]["uid"] for p in drain(config)[0].pods] == ["3", "1", "2"]
    ch.put(PodUpdate([make_pod(u, image="x") for u in ("2", "3", "1")], SET, TEST_SOURCE))
    assert [p["metadata"]["uid"] for p in drain(config)[0].pods] == ["2", "3", "1"]


def test_invalid_op_is_logged_and_ignored(clock, caplog):
    config, ch = new_config(clock)
    ch.put(PodUpdate([make_pod("1")], SET, TEST_SOURCE))
    drain(config)
    with caplog.at_level(logging.WARNING, logger="controllers.kubelet.pod_config"):
        ch.put(PodUpdate([make_pod("2")], 42, TEST_SOURCE))
    assert drain(config) == []
    assert "invalid update type 42" in caplog.text
    assert [p["metadata"]["uid"] for p in config.merged_state()] == ["1"]


# -- duplicate names -------------------------------------------------------------------------


class _Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []

    def event(self, obj, type, reason, message):
        self.events.append((obj["metadata"]["uid"], type, reason, message))


def test_duplicate_full_name_within_one_update_is_dropped_with_a_warning(clock, caplog):
    recorder = _Recorder()
    config, ch = new_config(clock, recorder=recorder)
    first = make_pod("1", name="same")
    dup = make_pod("2", name="same")
    other_ns = make_pod("3", name="same", ns="other")
    with caplog.at_level(logging.WARNING, logger="controllers.kubelet.pod_config"):
        ch.put(PodUpdate([first, dup, other_ns], SET, TEST_SOURCE))
    assert summary(drain(config)) == [("ADD", TEST_SOURCE, ["1", "3"])]
    assert "duplicate pod name" in caplog.text and "default/same" in caplog.text
    assert recorder.events == [(
        "2", "Warning", "FailedValidation",
        "Error validating pod same_default from test due to duplicate pod name 'same', ignoring",
    )]


def test_same_name_in_different_updates_is_accepted(clock):
    config, ch = new_config(clock)
    ch.put(PodUpdate([make_pod("1", name="same")], ADD, TEST_SOURCE))
    ch.put(PodUpdate([make_pod("2", name="same")], ADD, TEST_SOURCE))
    assert summary(drain(config)) == [("ADD", TEST_SOURCE, ["1"]), ("ADD", TEST_SOURCE, ["2"])]


# -- annotations -----------------------------------------------------------------------------


def test_local_annotations_are_ignored_when_comparing(clock):
    config, ch = new_config(clock)
    p = make_pod("1", annotations={"keep": "me"})
    ch.put(PodUpdate([p], SET, TEST_SOURCE))
    drain(config)
    same = make_pod("1", annotations={
        "keep": "me",
        CONFIG_SOURCE_ANNOTATION_KEY: "elsewhere",
        CONFIG_MIRROR_ANNOTATION_KEY: "mirror",
        CONFIG_FIRST_SEEN_ANNOTATION_KEY: "yesterday",
    })
    ch.put(PodUpdate([same], SET, TEST_SOURCE))
    assert drain(config) == []


def test_nil_and_empty_annotations_are_equal(clock):
    config, ch = new_config(clock)
    ch.put(PodUpdate([make_pod("1")], SET, TEST_SOURCE))
    drain(config)
    ch.put(PodUpdate([make_pod("1", annotations={})], SET, TEST_SOURCE))
    assert drain(config) == []


@pytest.mark.parametrize("before,after", [
    ({"a": "1"}, {"a": "2"}),          # changed value
    ({"a": "1"}, {}),                  # removed key
    ({}, {"b": "1"}),                  # added key
    ({CONFIG_HASH_ANNOTATION_KEY: "x"}, {CONFIG_HASH_ANNOTATION_KEY: "y"}),  # hash is not local
])
def test_non_local_annotation_change_is_an_update(clock, before, after):
    config, ch = new_config(clock)
    ch.put(PodUpdate([make_pod("1", annotations=dict(before))], SET, TEST_SOURCE))
    drain(config)
    ch.put(PodUpdate([make_pod("1", annotations=dict(after))], SET, TEST_SOURCE))
    updates = drain(config)
    assert summary(updates) == [("UPDATE", TEST_SOURCE, ["1"])]
    assert updates[0].pods[0]["metadata"]["annotations"] == {
        **after, CONFIG_SOURCE_ANNOTATION_KEY: TEST_SOURCE, CONFIG_FIRST_SEEN_ANNOTATION_KEY: SEEN,
    }


def test_update_keeps_stored_local_annotations_and_takes_new_mirror(clock):
    config, ch = new_config(clock)
    ch.put(PodUpdate([make_pod("1", annotations={"v": "1"})], SET, TEST_SOURCE))
    drain(config)
    clock.step(60)
    ch.put(PodUpdate([make_pod("1", annotations={
        "v": "2", CONFIG_FIRST_SEEN_ANNOTATION_KEY: "other", CONFIG_MIRROR_ANNOTATION_KEY: "m",
    })], SET, TEST_SOURCE))
    (update,) = drain(config)
    assert update.pods[0]["metadata"]["annotations"] == {
        "v": "2", CONFIG_MIRROR_ANNOTATION_KEY: "m",
        CONFIG_SOURCE_ANNOTATION_KEY: TEST_SOURCE, CONFIG_FIRST_SEEN_ANNOTATION_KEY: SEEN,
    }


def test_update_copies_only_spec_labels_deletion_fields_status_and_annotations(clock):
    config, ch = new_config(clock)
    p = make_pod("1", resourceVersion="10", generation=1)
    ch.put(PodUpdate([p], SET, TEST_SOURCE))
    drain(config)
    q = make_pod("1", image="new", resourceVersion="11", generation=2)
    ch.put(PodUpdate([q], SET, TEST_SOURCE))
    (update,) = drain(config)
    meta = update.pods[0]["metadata"]
    assert (meta["resourceVersion"], meta["generation"]) == ("10", 1)  # kept, as the kubelet does
    assert update.pods[0]["spec"] == q["spec"]


# -- copies ----------------------------------------------------------------------------------


def test_inputs_are_not_mutated_and_outputs_are_copies(clock):
    config, ch = new_config(clock)
    p = make_pod("1")
    sent = copy.deepcopy(p)
    ch.put(PodUpdate([sent], SET, TEST_SOURCE))
    assert sent == p  # no annotation written into the sender's object
    (update,) = drain(config)
    update.pods[0]["spec"]["containers"][0]["image"] = "mutated"
    assert config.merged_state()[0]["spec"] == p["spec"]
    config.merged_state()[0]["metadata"]["name"] = "mutated"
    assert config.merged_state()[0]["metadata"]["name"] == "pod-1"


# -- snapshot modes --------------------------------------------------------------------------


def test_snapshot_mode_sends_the_merged_state_on_every_change_but_status(clock):
    config = PodConfig(SNAPSHOT, clock=clock)
    file_ch, api_ch = config.channel("file"), config.channel("api")
    file_ch.put(PodUpdate([], SET, "file"))
    assert summary(drain(config)) == [("SET", "file", [])]  # first SET
    api_ch.put(PodUpdate([make_pod("1")], SET, "api"))
    assert summary(drain(config)) == [("SET", "api", ["1"])]
    file_ch.put(PodUpdate([make_pod("2")], SET, "file"))
    assert summary(drain(config)) == [("SET", "file", ["1", "2"])]
    api_ch.put(PodUpdate([make_pod("1", image="x")], SET, "api"))  # update
    assert summary(drain(config)) == [("SET", "api", ["1", "2"])]
    deleting = make_pod("1", image="x", deletionTimestamp="2026-01-01T00:00:00Z")
    api_ch.put(PodUpdate([deleting], SET, "api"))  # graceful delete
    assert summary(drain(config)) == [("SET", "api", ["1", "2"])]
    status_only = copy.deepcopy(deleting)
    status_only["status"] = {"phase": "Running"}
    api_ch.put(PodUpdate([status_only], SET, "api"))  # reconcile: nothing
    assert drain(config) == []
    api_ch.put(PodUpdate([], SET, "api"))  # remove
    assert summary(drain(config)) == [("SET", "api", ["2"])]
    file_ch.put(PodUpdate([make_pod("2")], SET, "file"))  # unchanged: nothing
    assert drain(config) == []


def test_snapshot_and_updates_mode(clock):
    config = PodConfig(SNAPSHOT_AND_UPDATES, clock=clock)
    ch = config.channel(TEST_SOURCE)
    ch.put(PodUpdate([], SET, TEST_SOURCE))
    assert summary(drain(config)) == [("SET", TEST_SOURCE, [])]  # first SET
    ch.put(PodUpdate([make_pod("1"), make_pod("2")], SET, TEST_SOURCE))
    assert summary(drain(config)) == [("SET", TEST_SOURCE, ["1", "2"])]  # adds
    ch.put(PodUpdate([make_pod("1", image="x"), make_pod("2")], SET, TEST_SOURCE))
    assert summary(drain(config)) == [("UPDATE", TEST_SOURCE, ["1"])]
    deleting = make_pod("2", deletionTimestamp="2026-01-01T00:00:00Z")
    ch.put(PodUpdate([make_pod("1", image="x"), deleting], SET, TEST_SOURCE))
    assert summary(drain(config)) == [("DELETE", TEST_SOURCE, ["2"])]
    running = make_pod("1", image="x")
    running["status"] = {"phase": "Running"}
    ch.put(PodUpdate([running, deleting], SET, TEST_SOURCE))
    assert drain(config) == []  # reconcile is never emitted
    # add + update + removal in one merge: SET first, then UPDATE
    ch.put(PodUpdate([make_pod("1", image="y"), make_pod("3")], SET, TEST_SOURCE))
    assert summary(drain(config)) == [
        ("SET", TEST_SOURCE, ["1", "3"]), ("UPDATE", TEST_SOURCE, ["1"]),
    ]


def test_snapshot_modes_first_set_after_non_set_updates(clock):
    config = PodConfig(SNAPSHOT, clock=clock)
    ch = config.channel(TEST_SOURCE)
    ch.put(PodUpdate([make_pod("1")], ADD, TEST_SOURCE))
    assert summary(drain(config)) == [("SET", TEST_SOURCE, ["1"])]
    ch.put(PodUpdate([make_pod("1")], SET, TEST_SOURCE))  # no change, but the first SET
    assert summary(drain(config)) == [("SET", TEST_SOURCE, ["1"])]


# -- sources seen and sync -----------------------------------------------------------------------


def test_seen_all_sources_needs_every_configured_source_seen_and_set(clock):
    config = PodConfig(clock=clock)
    file_ch, api_ch = config.channel("file"), config.channel("api")
    assert not config.seen_all_sources({"file", "api"})
    file_ch.put(PodUpdate([], SET, "file"))
    api_ch.put(PodUpdate([make_pod("1")], ADD, "api"))  # an ADD does not count
    assert not config.seen_all_sources({"file", "api"})
    api_ch.put(PodUpdate([make_pod("1")], SET, "api"))
    assert config.seen_all_sources({"file", "api"})
    assert config.seen_all_sources({"file", "api", "*"})
    assert not config.seen_all_sources({"file"})  # the consumer has not seen "api"
    config.channel("http")  # a new configured source
    assert not config.seen_all_sources({"file", "api", "http"})


def test_no_configured_source_is_trivially_all_seen(clock):
    assert PodConfig(clock=clock).seen_all_sources(set())


def test_sync_sends_the_merged_state_of_all_sources_as_source_star(clock):
    config = PodConfig(clock=clock)
    config.channel("file").put(PodUpdate([make_pod("1")], SET, "file"))
    config.channel("api").put(PodUpdate([make_pod("2")], SET, "api"))
    drain(config)
    config.sync()
    (update,) = drain(config)
    assert update.op == SET and update.source == ALL_SOURCE
    assert by_uid(update.pods) == [annotated(make_pod("1"), "file"),
                                   annotated(make_pod("2"), "api")]


def test_same_uid_in_two_sources_is_kept_per_source(clock):
    config = PodConfig(clock=clock)
    config.channel("file").put(PodUpdate([make_pod("1")], SET, "file"))
    config.channel("api").put(PodUpdate([make_pod("1")], SET, "api"))
    assert summary(drain(config)) == [("ADD", "file", ["1"]), ("ADD", "api", ["1"])]
    assert len(config.merged_state()) == 2


# -- serialisation -------------------------------------------------------------------------------


def test_concurrent_sources_get_contiguous_strictly_ordered_output(clock):
    config = PodConfig(clock=clock, capacity=10_000)
    sources = [f"s{i}" for i in range(4)]
    rounds = 50

    def run(source: str) -> None:
        ch = config.channel(source)
        for r in range(rounds):
            # each SET replaces the previous pod: one REMOVE then one ADD per merge
            ch.put(PodUpdate([make_pod(f"{source}-{r}")], SET, source))

    threads = [threading.Thread(target=run, args=(s,)) for s in sources]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    updates = drain(config)
    assert len(updates) == len(sources) * (2 * rounds - 1)
    last_round = {s: -1 for s in sources}
    i = 0
    while i < len(updates):
        u = updates[i]
        r = int(u.pods[0]["metadata"]["uid"].split("-")[1])
        if u.op == REMOVE:  # must be followed by the ADD of the same merge
            nxt = updates[i + 1]
            assert (nxt.op, nxt.source) == (ADD, u.source)
            r = int(nxt.pods[0]["metadata"]["uid"].split("-")[1])
            assert r == last_round[u.source] + 1
            i += 2
        else:
            assert u.op == ADD and r == 0
            i += 1
        assert r == last_round[u.source] + 1
        last_round[u.source] = r
    assert last_round == {s: rounds - 1 for s in sources}


def test_put_waits_while_updates_is_full(clock):
    config = PodConfig(clock=clock, capacity=1)
    ch = config.channel(TEST_SOURCE)
    ch.put(PodUpdate([make_pod("1")], SET, TEST_SOURCE))  # fills the queue
    done = threading.Event()

    def second() -> None:
        ch.put(PodUpdate([make_pod("1"), make_pod("2")], SET, TEST_SOURCE))
        done.set()

    t = threading.Thread(target=second)
    t.start()
    assert not done.wait(0.2)  # blocked behind the full queue
    assert summary([config.updates.get(timeout=5)]) == [("ADD", TEST_SOURCE, ["1"])]
    assert done.wait(5)
    t.join()
    assert summary(drain(config)) == [("ADD", TEST_SOURCE, ["2"])]


def test_wait_not_empty_follows_the_fake_clock(clock):
    updates = PodUpdateQueue(maxsize=5)
    result: list[bool] = []
    t = threading.Thread(target=lambda: result.append(updates.wait_not_empty(clock, 5.0)))
    t.start()
    assert clock.wait_for_waiters(1)
    clock.step(5.0)
    t.join(5)
    assert result == [False]
    updates.put(PodUpdate([], SET, "x"))
    assert updates.wait_not_empty(clock, 5.0) is True


def test_wait_not_empty_returns_at_once_when_stopped(clock):
    updates = PodUpdateQueue()
    stop = threading.Event()
    stop.set()
    assert updates.wait_not_empty(clock, 100.0, stop) is False
    assert not clock.has_waiters()
