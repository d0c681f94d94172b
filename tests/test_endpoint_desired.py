"""Tests for controllers.endpoint.desired: the object a sync writes and when it writes none."""

from __future__ import annotations

import copy

from controllers.endpoint.desired import (
    HEADLESS_SERVICE_LABEL,
    desired_endpoints,
    endpoints_up_to_date,
    string_map,
)
from controllers.endpoint.trigger_time import TRIGGER_TIME_ANNOTATION, parse_rfc3339
from controllers.endpoint.truncate import OVER_CAPACITY_ANNOTATION

SUBSETS = [{"addresses": [{"ip": "1.2.3.4", "nodeName": "",
                           "targetRef": {"kind": "Pod", "namespace": "ns", "name": "pod0"}}],
            "ports": [{"port": 8080, "protocol": "TCP"}]}]


def service(labels=None, cluster_ip="10.0.0.1"):
    meta = {"name": "foo", "namespace": "ns"}
    if labels is not None:
        meta["labels"] = labels
    spec = {"selector": {"foo": "bar"}}
    if cluster_ip is not None:
        spec["clusterIP"] = cluster_ip
    return {"metadata": meta, "spec": spec}


def current(labels=None, annotations=None, subsets=SUBSETS, rv="1"):
    meta = {"name": "foo", "namespace": "ns", "resourceVersion": rv, "uid": "u"}
    if labels is not None:
        meta["labels"] = labels
    if annotations is not None:
        meta["annotations"] = annotations
    out = {"metadata": meta}
    if subsets is not None:
        out["subsets"] = copy.deepcopy(subsets)
    return out


def test_create_body_has_only_name_labels_and_subsets():
    assert desired_endpoints(None, "foo", service(cluster_ip="None"), SUBSETS, None) == {
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": "foo", "labels": {HEADLESS_SERVICE_LABEL: ""}},
        "subsets": SUBSETS,
    }
    assert desired_endpoints(None, "foo", service(), [], None) == {
        "apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "foo"},
    }


def test_update_keeps_metadata_and_other_annotations_and_replaces_labels():
    cur = current(labels={"stale": "x", HEADLESS_SERVICE_LABEL: ""},
                  annotations={"keep": "me", TRIGGER_TIME_ANNOTATION: "2000-01-01T00:00:00Z",
                               OVER_CAPACITY_ANNOTATION: "warning"})
    before = copy.deepcopy(cur)
    new = desired_endpoints(cur, "foo", service(labels={"baz": "blah"}), SUBSETS,
                            parse_rfc3339("2018-01-01T00:00:00Z"))
    assert cur == before
    assert new == {
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": "foo", "namespace": "ns", "resourceVersion": "1", "uid": "u",
                     "labels": {"baz": "blah"},
                     "annotations": {"keep": "me",
                                     TRIGGER_TIME_ANNOTATION: "2018-01-01T00:00:00Z"}},
        "subsets": SUBSETS,
    }


def test_zero_trigger_time_clears_the_annotation_and_empty_maps_are_left_out():
    cur = current(labels={}, annotations={TRIGGER_TIME_ANNOTATION: "2018-01-01T00:00:00Z"})
    new = desired_endpoints(cur, "foo", service(), [], None)
    assert "annotations" not in new["metadata"]
    assert "labels" not in new["metadata"]
    assert "subsets" not in new


def test_truncation_sets_the_over_capacity_annotation():
    many = [{"addresses": [{"ip": f"10.0.{i // 250}.{i % 250}"} for i in range(1001)],
             "ports": [{"port": 80}]}]
    new = desired_endpoints(current(), "foo", service(), many, None)
    assert new["metadata"]["annotations"] == {OVER_CAPACITY_ANNOTATION: "truncated"}
    assert len(new["subsets"][0]["addresses"]) == 1000


def test_up_to_date_rules():
    svc_labels = {"a": "b"}
    assert endpoints_up_to_date(current(labels={"a": "b"}), SUBSETS, svc_labels)
    # the headless label alone never triggers a write, present or missing
    assert endpoints_up_to_date(current(labels={"a": "b", HEADLESS_SERVICE_LABEL: ""}), SUBSETS,
                                svc_labels)
    assert endpoints_up_to_date(current(), SUBSETS, {})  # nil labels == {}
    assert not endpoints_up_to_date(current(labels={"a": "b", "x": "y"}), SUBSETS, svc_labels)
    assert not endpoints_up_to_date(current(labels="junk"), SUBSETS, {})
    assert not endpoints_up_to_date(current(), [], {})
    # nil and empty subsets are equal
    assert endpoints_up_to_date(current(subsets=None), [], {})
    assert endpoints_up_to_date(current(subsets=[]), [], {})
    # the over-capacity annotation, with any value, forces a write
    assert not endpoints_up_to_date(current(annotations={OVER_CAPACITY_ANNOTATION: "x"}),
                                    SUBSETS, {})
    # other annotations, including a stale trigger time, do not
    assert endpoints_up_to_date(current(annotations={TRIGGER_TIME_ANNOTATION: "old"}),
                                SUBSETS, {})
    # a pod resourceVersion in a target reference is ignored
    with_rv = copy.deepcopy(SUBSETS)
    with_rv[0]["addresses"][0]["targetRef"]["resourceVersion"] = "7"
    assert endpoints_up_to_date(current(subsets=with_rv), SUBSETS, {})


def test_string_map():
    assert string_map({"a": "b", "c": 1, 2: "d"}) == {"a": "b"}
    assert string_map(None) == {}
    assert string_map(["a"]) == {}
