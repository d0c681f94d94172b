"""Tests for controllers.endpoint.desired: the object a sync writes and when it writes none."""

from __future__ import annotations

import copy

from controllers.endpoint.desired import (
    HEADLESS_SERVICE_LABEL,
    MANAGED_BY_LABEL,
    MANAGED_BY_VALUE,
    desired_endpoints,
    endpoints_up_to_date,
    labels_correct_for_endpoints,
    string_map,
)
from controllers.endpoint.repack import repack_subsets
from controllers.endpoint.trigger_time import TRIGGER_TIME_ANNOTATION, parse_rfc3339
from controllers.endpoint.truncate import OVER_CAPACITY_ANNOTATION

MANAGED = {MANAGED_BY_LABEL: MANAGED_BY_VALUE}

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
        "metadata": {"name": "foo", "labels": {HEADLESS_SERVICE_LABEL: "", **MANAGED}},
        "subsets": SUBSETS,
    }
    assert desired_endpoints(None, "foo", service(), [], None) == {
        "apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "foo", "labels": MANAGED},
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
                     "labels": {"baz": "blah", **MANAGED},
                     "annotations": {"keep": "me",
                                     TRIGGER_TIME_ANNOTATION: "2018-01-01T00:00:00Z"}},
        "subsets": SUBSETS,
    }


def test_zero_trigger_time_clears_the_annotation_and_empty_maps_are_left_out():
    cur = current(labels={}, annotations={TRIGGER_TIME_ANNOTATION: "2018-01-01T00:00:00Z"})
    new = desired_endpoints(cur, "foo", service(), [], None)
    assert "annotations" not in new["metadata"]
    assert new["metadata"]["labels"] == MANAGED  # never empty: the managed-by label
    assert "subsets" not in new


def test_the_managed_by_label_overrides_a_service_label_of_that_key():
    # kube-controller-manager v1.36 (endpoints_controller.go: Labels[LabelManagedBy] = ...)
    new = desired_endpoints(None, "foo", service(labels={MANAGED_BY_LABEL: "someone"}),
                            [], None)
    assert new["metadata"]["labels"] == MANAGED


def test_truncation_sets_the_over_capacity_annotation():
    many = [{"addresses": [{"ip": f"10.0.{i // 250}.{i % 250}"} for i in range(1001)],
             "ports": [{"port": 80}]}]
    new = desired_endpoints(current(), "foo", service(), many, None)
    assert new["metadata"]["annotations"] == {OVER_CAPACITY_ANNOTATION: "truncated"}
    assert len(new["subsets"][0]["addresses"]) == 1000


def test_up_to_date_rules():
    svc_labels = {"a": "b"}
    assert endpoints_up_to_date(current(labels={"a": "b", **MANAGED}), SUBSETS, svc_labels)
    # the headless label alone never triggers a write, present or missing
    assert endpoints_up_to_date(current(labels={"a": "b", HEADLESS_SERVICE_LABEL: "", **MANAGED}),
                                SUBSETS, svc_labels)
    assert endpoints_up_to_date(current(labels=MANAGED), SUBSETS, {})
    # a missing or foreign managed-by label does (Endpoints written before v1.33, or by others)
    assert not endpoints_up_to_date(current(), SUBSETS, {})
    assert not endpoints_up_to_date(current(labels={"a": "b"}), SUBSETS, svc_labels)
    assert not endpoints_up_to_date(current(labels={MANAGED_BY_LABEL: "other"}), SUBSETS, {})
    assert not endpoints_up_to_date(current(labels={"a": "b", "x": "y", **MANAGED}), SUBSETS,
                                    svc_labels)
    assert not endpoints_up_to_date(current(labels="junk"), SUBSETS, {})
    assert not endpoints_up_to_date(current(labels=MANAGED), [], {})
    # nil and empty subsets are equal
    assert endpoints_up_to_date(current(labels=MANAGED, subsets=None), [], {})
    assert endpoints_up_to_date(current(labels=MANAGED, subsets=[]), [], {})
    # the over-capacity annotation, with any value, forces a write
    assert not endpoints_up_to_date(
        current(labels=MANAGED, annotations={OVER_CAPACITY_ANNOTATION: "x"}), SUBSETS, {})
    # other annotations, including a stale trigger time, do not
    assert endpoints_up_to_date(
        current(labels=MANAGED, annotations={TRIGGER_TIME_ANNOTATION: "old"}), SUBSETS, {})
    # a pod resourceVersion in a target reference is ignored
    with_rv = copy.deepcopy(SUBSETS)
    with_rv[0]["addresses"][0]["targetRef"]["resourceVersion"] = "7"
    assert endpoints_up_to_date(current(labels=MANAGED, subsets=with_rv), SUBSETS, {})


def test_subsets_in_another_order_are_up_to_date_once_repacked():
    # kube-controller-manager v1.33+ orders subsets and ports by another hash (FNV-128a) and
    # compares again after repacking the current subsets: a takeover causes no rewrite.
    two = repack_subsets([
        {"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}, {"port": 81}]},
        {"notReadyAddresses": [{"ip": "10.0.0.2"}], "ports": [{"port": 90}]},
    ])
    assert sorted(len(subset["ports"]) for subset in two) == [1, 2]
    reordered = [{**subset, "ports": subset["ports"][::-1]} for subset in two[::-1]]
    assert endpoints_up_to_date(current(labels=MANAGED, subsets=reordered), two, {})
    # what repacking cannot fix still counts
    moved = copy.deepcopy(reordered)
    moved[0]["ports"][0]["port"] += 1
    assert not endpoints_up_to_date(current(labels=MANAGED, subsets=moved), two, {})
    assert not endpoints_up_to_date(current(labels=MANAGED, subsets=[*reordered, "junk"]),
                                    two, {})


def test_labels_correct_for_endpoints():
    assert labels_correct_for_endpoints(MANAGED, {})
    assert labels_correct_for_endpoints({"a": "b", HEADLESS_SERVICE_LABEL: "", **MANAGED},
                                        {"a": "b"})
    assert not labels_correct_for_endpoints({"a": "c", **MANAGED}, {"a": "b"})
    assert not labels_correct_for_endpoints(MANAGED, {"a": "b"})  # a service label missing
    assert not labels_correct_for_endpoints(None, {})
    # a Service carrying the managed-by key itself never matches (upstream counts it skipped
    # on the Endpoints only), so its Endpoints is rewritten on every sync, as upstream
    assert not labels_correct_for_endpoints(MANAGED, {MANAGED_BY_LABEL: MANAGED_BY_VALUE})


def test_string_map():
    assert string_map({"a": "b", "c": 1, 2: "d"}) == {"a": "b"}
    assert string_map(None) == {}
    assert string_map(["a"]) == {}
