"""Tests for controllers.kubelet.pod_update: the message and its vocabulary."""

from __future__ import annotations

import pytest

import controllers.kubelet as kubelet
from controllers.kubelet.pod_update import (
    ADD,
    ALL_SOURCE,
    API_SOURCE,
    CONFIG_FIRST_SEEN_ANNOTATION_KEY,
    CONFIG_HASH_ANNOTATION_KEY,
    CONFIG_MIRROR_ANNOTATION_KEY,
    CONFIG_SOURCE_ANNOTATION_KEY,
    DELETE,
    FILE_SOURCE,
    HTTP_SOURCE,
    INCREMENTAL,
    LOCAL_ANNOTATIONS,
    RECONCILE,
    REMOVE,
    SET,
    SNAPSHOT,
    SNAPSHOT_AND_UPDATES,
    UPDATE,
    PodUpdate,
    SyncPodType,
    get_pod_source,
    get_validated_sources,
    pod_full_name,
    pod_uid,
)


def test_values_are_the_kubelets():
    assert [int(op) for op in (SET, ADD, DELETE, REMOVE, UPDATE, RECONCILE)] == [0, 1, 2, 3, 4, 5]
    assert (FILE_SOURCE, HTTP_SOURCE, API_SOURCE, ALL_SOURCE) == ("file", "http", "api", "*")
    assert (int(SNAPSHOT), int(SNAPSHOT_AND_UPDATES), int(INCREMENTAL)) == (1, 2, 3)
    assert [int(t) for t in (SyncPodType.SYNC, SyncPodType.UPDATE, SyncPodType.CREATE,
                             SyncPodType.KILL)] == [0, 1, 2, 3]
    assert [str(t) for t in SyncPodType] == ["sync", "update", "create", "kill"]


def test_annotation_keys():
    assert CONFIG_SOURCE_ANNOTATION_KEY == "kubernetes.io/config.source"
    assert CONFIG_MIRROR_ANNOTATION_KEY == "kubernetes.io/config.mirror"
    assert CONFIG_FIRST_SEEN_ANNOTATION_KEY == "kubernetes.io/config.seen"
    assert CONFIG_HASH_ANNOTATION_KEY == "kubernetes.io/config.hash"
    assert CONFIG_HASH_ANNOTATION_KEY not in LOCAL_ANNOTATIONS
    assert len(LOCAL_ANNOTATIONS) == 3


def test_pod_update_normalises_pods_and_op():
    u = PodUpdate(None, 1, "file")  # type: ignore[arg-type]
    assert u.pods == [] and u.op is ADD and u.op_name == "ADD"
    unknown = PodUpdate([], 42, "file")
    assert unknown.op == 42 and unknown.op_name == "42"
    pods = [{"metadata": {"name": "b", "namespace": "x"}}, {"metadata": {"name": "a"}}]
    u = PodUpdate(pods, SET, "api")
    assert u.pods is not pods and u.pods == pods
    assert u.to_dict() == {"op": "SET", "source": "api", "pods": pods}
    assert [p["metadata"]["name"] for p in u.sorted_pods()] == ["a", "b"]
    assert PodUpdate() == PodUpdate([], SET, "")


def test_pod_helpers():
    pod = {"metadata": {"name": "n", "namespace": "ns", "uid": "u",
                        "annotations": {CONFIG_SOURCE_ANNOTATION_KEY: "file"}}}
    assert (pod_uid(pod), pod_full_name(pod), get_pod_source(pod)) == ("u", "n_ns", "file")
    assert (pod_uid({}), pod_full_name({})) == ("", "_")
    with pytest.raises(KeyError, match="cannot get source of pod 'u'"):
        get_pod_source({"metadata": {"uid": "u"}})


def test_get_validated_sources():
    assert get_validated_sources(["file", "", "api"]) == ["file", "api"]
    assert get_validated_sources(["http", "*"]) == ["file", "http", "api"]
    with pytest.raises(ValueError, match="unknown pod source 'ftp'"):
        get_validated_sources(["ftp"])


def test_package_exports():
    assert sorted(kubelet.__all__) == sorted(set(kubelet.__all__))
    for name in kubelet.__all__:
        assert hasattr(kubelet, name), name
    assert callable(kubelet.default_static_pod)
