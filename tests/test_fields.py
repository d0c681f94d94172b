"""Tests for informers.fields, with cases ported from apimachinery pkg/fields/selector_test.go."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from informers import fields
from informers.errors import SelectorError
from informers.fields import EVERYTHING, NOTHING, Requirement, Selector

# --------------------------------------------------------------------------------------------
# Escaping (TestEscapeValue)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("", ""),
        ("a", "a"),
        ("=", r"\="),
        (",", r"\,"),
        ("\\", r"\\"),
        (r"\=\,\ ", r"\\\=\\\,\\ "),
        ("a!b", "a!b"),
        ("함=수", r"함\=수"),
    ],
)
def test_escape_round_trip(raw: str, escaped: str) -> None:
    assert fields.escape_value(raw) == escaped
    assert fields.unescape_value(escaped) == raw


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("\\", 'invalid escape sequence "\\\\" at position 0 (trailing backslash)'),
        ("\\\\\\", 'invalid escape sequence "\\\\" at position 2 (trailing backslash)'),
        ("\\a", 'invalid escape sequence "\\\\a" at position 0'),
        ("ab\\!", 'invalid escape sequence "\\\\!" at position 2'),
        ("a=b", "unescaped '=' at position 1"),
        ("a,b", "unescaped ',' at position 1"),
    ],
)
def test_unescape_errors(value: str, expected: str) -> None:
    with pytest.raises(SelectorError) as info:
        fields.unescape_value(value)
    assert expected in str(info.value)
    assert str(info.value).startswith(f"invalid field selector value {_go_quote(value)}")


def _go_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab=,\\! é")), max_size=12))
def test_property_escape_round_trip(value: str) -> None:
    escaped = fields.escape_value(value)
    assert fields.unescape_value(escaped) == value
    selector = fields.parse(f"f={escaped}")
    assert selector.requirements() == (Requirement("f", "=", value),)
    assert fields.parse(str(selector)) == selector
    assert selector.matches({"f": value}) is True
    assert selector.matches({"f": value + "x"}) is False


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "canonical", "requirements"),
    [
        # TestSelectorParse good strings (the restring is the input).
        ("x=a,y=b,z=c", "x=a,y=b,z=c", [("x", "=", "a"), ("y", "=", "b"), ("z", "=", "c")]),
        ("", "", []),
        ("x!=a,y=b", "x!=a,y=b", [("x", "!=", "a"), ("y", "=", "b")]),
        (r"x=a||y\=b", r"x=a||y\=b", [("x", "=", "a||y=b")]),
        (r"x=a\=\=b", r"x=a\=\=b", [("x", "=", "a==b")]),
        # Deterministic: sorted.
        ("x=a,a=x", "a=x,x=a", [("a", "=", "x"), ("x", "=", "a")]),
        ("a=x,x=a", "a=x,x=a", [("a", "=", "x"), ("x", "=", "a")]),
        # "==" means "=" and prints as "=".
        ("b==value", "b=value", [("b", "=", "value")]),
        ("a==b,a=a", "a=a,a=b", [("a", "=", "a"), ("a", "=", "b")]),
        # Empty terms are skipped; "=" alone is dropped (both sides empty).
        ("a=a,", "a=a", [("a", "=", "a")]),
        (",a=a", "a=a", [("a", "=", "a")]),
        (",", "", []),
        ("=", "", []),
        ("==,!=", "", []),
        ("a=b,,c=d", "a=b,c=d", [("a", "=", "b"), ("c", "=", "d")]),
        # Empty values and empty field names are kept.
        ("x=", "x=", [("x", "=", "")]),
        ("x!=", "x!=", [("x", "!=", "")]),
        ("=b", "=b", [("", "=", "b")]),
        # Split at the first operator; "!=" wins over "=" at the same position.
        ("a!=b", "a!=b", [("a", "!=", "b")]),
        ("a!b=c", "a!b=c", [("a!b", "=", "c")]),
        ("a=!b", "a=!b", [("a", "=", "!b")]),
        # No trimming of field or value.
        ("a = b", "a = b", [("a ", "=", " b")]),
        # Escapes (TestSplitTerms / TestSplitTerm).
        (r"k=\,,k2=v2", r"k2=v2,k=\,", [("k2", "=", "v2"), ("k", "=", ",")]),
        (r"k=\\,k2=v2", r"k2=v2,k=\\", [("k2", "=", "v2"), ("k", "=", "\\")]),
        (r"k=\\\,,k2=v2", r"k2=v2,k=\\\,", [("k2", "=", "v2"), ("k", "=", "\\,")]),
        (r"k=\=", r"k=\=", [("k", "=", "=")]),
        ("함=수,목=록", "목=록,함=수", [("목", "=", "록"), ("함", "=", "수")]),
        # The usual ones.
        ("spec.nodeName=node-1", "spec.nodeName=node-1", [("spec.nodeName", "=", "node-1")]),
        (
            "metadata.namespace!=kube-system,status.phase=Running",
            "metadata.namespace!=kube-system,status.phase=Running",
            [("metadata.namespace", "!=", "kube-system"), ("status.phase", "=", "Running")],
        ),
    ],
)
def test_parse(text: str, canonical: str, requirements: list[tuple[str, str, str]]) -> None:
    selector = fields.parse(text)
    assert str(selector) == canonical
    assert selector.requirements() == tuple(Requirement(*r) for r in requirements)
    assert fields.parse(canonical) == selector
    assert fields.parse_selector(text) == selector


def test_parse_empty_is_everything() -> None:
    assert fields.parse("") is EVERYTHING
    assert fields.parse(",,") is EVERYTHING
    assert fields.everything() is EVERYTHING
    assert fields.nothing() is NOTHING
    with pytest.raises(TypeError, match="must be a string"):
        fields.parse(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # TestSelectorParse bad strings.
        ("x=a||y=b", 'term "x=a||y=b": invalid field selector value "a||y=b": unescaped \'=\''),
        ("x==a==b", 'term "x==a==b": invalid field selector value "a==b": unescaped \'=\' at'),
        ("x=a,b", 'can\'t understand "b": expected field=value, field==value or field!=value'),
        ("x in (a)", 'can\'t understand "x in (a)"'),
        ("x in (a,b,c)", 'can\'t understand "x in (a"'),
        ("x", 'can\'t understand "x"'),
        # Escapes.
        (r"x=\a", 'term "x=\\\\a": invalid field selector value "\\\\a": invalid escape sequence'),
        ("x=a\\", "(trailing backslash)"),
        (r"x=\!", 'invalid escape sequence "\\\\!"'),
        ("a!b", 'can\'t understand "a!b"'),
        ("x=a,y", 'can\'t understand "y"'),
    ],
)
def test_parse_errors_name_the_offending_term(text: str, expected: str) -> None:
    with pytest.raises(SelectorError) as info:
        fields.parse(text)
    message = str(info.value)
    assert expected in message
    assert message.startswith(f"invalid field selector {_go_quote(text)}: ")


# --------------------------------------------------------------------------------------------
# Matching (TestSelectorMatches, TestSetMatches)
# --------------------------------------------------------------------------------------------

FIELDSET = {"foo": "bar", "baz": "blah", "complex": "=value\\,\\"}


@pytest.mark.parametrize(
    ("text", "field_set", "expected"),
    [
        ("", {"x": "y"}, True),
        ("x=y", {"x": "y"}, True),
        ("x=y,z=w", {"x": "y", "z": "w"}, True),
        ("x!=y,z!=w", {"x": "z", "z": "a"}, True),
        ("notin=in", {"notin": "in"}, True),
        ("x=y", {"x": "z"}, False),
        ("x=y,z=w", {"x": "w", "z": "w"}, False),
        ("x!=y,z!=w", {"x": "z", "z": "w"}, False),
        ("foo=bar", FIELDSET, True),
        ("baz=blah", FIELDSET, True),
        ("foo=bar,baz=blah", FIELDSET, True),
        (r"foo=bar,baz=blah,complex=\=value\\\,\\", FIELDSET, True),
        ("foo=blah", FIELDSET, False),
        ("baz=bar", FIELDSET, False),
        ("foo=bar,foobar=bar,baz=blah", FIELDSET, False),
        # A missing field is "" (fields.Set.Get).
        ("missing=", {}, True),
        ("missing!=", {}, False),
        ("missing=x", {}, False),
        ("missing!=x", {}, True),
        ("x==y", {"x": "y"}, True),
    ],
)
def test_matches(text: str, field_set: dict[str, str], expected: bool) -> None:
    assert fields.parse(text).matches(field_set) is expected


def test_matches_none_and_singletons() -> None:
    assert EVERYTHING.matches(None) is True
    assert EVERYTHING.matches({"a": "b"}) is True
    assert NOTHING.matches({"a": "b"}) is False
    assert NOTHING.matches(None) is False
    assert fields.parse("a!=b").matches(None) is True
    assert fields.parse("a=b").matches(None) is False


def test_selector_from_set() -> None:
    assert fields.selector_from_set(None) is EVERYTHING
    assert fields.selector_from_set({}) is EVERYTHING
    selector = fields.selector_from_set({"b": "x,y", "a": "1"})
    assert str(selector) == r"a=1,b=x\,y"
    assert selector.matches({"a": "1", "b": "x,y"}) is True
    labelset = {"foo": "bar", "baz": "blah"}
    for subset in ({}, {"foo": "bar"}, {"baz": "blah"}, {"foo": "bar", "baz": "blah"}):
        assert fields.selector_from_set(subset).matches(labelset) is True
    for subset in ({"foo": "=blah"}, {"baz": "=bar"}, {"foo": "=bar", "foobar": "bar"}):
        assert fields.selector_from_set(subset).matches(labelset) is False


def test_one_term_and_and_selectors() -> None:
    node = fields.one_term_equal_selector("spec.nodeName", "n1")
    assert str(node) == "spec.nodeName=n1"
    assert node.matches({"spec.nodeName": "n1"}) is True
    assert node.matches({"spec.nodeName": "n2"}) is False
    not_failed = fields.one_term_not_equal_selector("status.phase", "Failed")
    assert str(not_failed) == "status.phase!=Failed"
    both = fields.and_selectors(not_failed, node)
    assert str(both) == "spec.nodeName=n1,status.phase!=Failed"
    assert both == fields.parse("status.phase!=Failed,spec.nodeName=n1")
    assert fields.and_selectors() is EVERYTHING
    assert fields.and_selectors(EVERYTHING, EVERYTHING) is EVERYTHING
    assert fields.and_selectors(node, NOTHING) is NOTHING


def test_empty_equality_and_repr() -> None:
    assert EVERYTHING.empty() is True
    assert NOTHING.empty() is False
    assert fields.parse("a=b").empty() is False
    assert str(NOTHING) == "" and NOTHING != EVERYTHING
    assert Selector() == EVERYTHING
    assert hash(fields.parse("a=1,b=2")) == hash(fields.parse("b=2,a=1"))
    assert len({fields.parse("a=1"), fields.parse("a==1"), EVERYTHING, NOTHING}) == 3
    assert fields.parse("a=1") != "a=1"
    assert repr(fields.parse("a=1")) == "fields.parse('a=1')"
    assert repr(NOTHING) == "fields.NOTHING"


def test_selector_constructor_validates_terms() -> None:
    assert str(Selector([("a", "==", "1"), Requirement("b", "!=", "2")])) == "a=1,b!=2"
    with pytest.raises(SelectorError, match='invalid field selector operator "in"'):
        Selector([("a", "in", "1")])
    with pytest.raises(SelectorError, match="must be strings"):
        Selector([("a", "=", 1)])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("selector", "field", "expected"),
    [
        (fields.selector_from_set({}), "test", None),
        (Selector([("", "=", "")]), "test", None),
        (fields.parse("a=b"), "test", None),
        (fields.parse("test=b"), "test", "b"),
        (fields.parse("test="), "test", ""),
        (fields.parse("test!=b"), "test", None),
        (fields.parse("test!="), "test", None),
        (fields.parse("a=b,test=b"), "test", "b"),
        (fields.parse("test!=a,test=b"), "test", "b"),
        (NOTHING, "test", None),
    ],
)
def test_requires_exact_match(selector: Selector, field: str, expected: str | None) -> None:
    assert fields.requires_exact_match(selector, field) == expected
    assert selector.requires_exact_match(field) == expected


@pytest.mark.parametrize(
    ("text", "result", "empty"),
    [
        ("", "", True),
        ("a=b,c=d", "a=b,c=d", False),
        ("a=b,c=d", "c=d,e=f", False),  # "transform one field" (sorted here)
        ("a=b", "", True),
        ("a=b,c=d,e=f", "a=b,e=f", False),
    ],
)
def test_transform(text: str, result: str, empty: bool) -> None:
    def fn(field: str, value: str) -> tuple[str, str]:
        if result == "":
            return "", ""
        if result == "c=d,e=f" and field == "a":
            return "e", "f"
        if result == "a=b,e=f" and field == "c":
            return "", ""
        return field, value

    transformed = fields.parse(text).transform(fn)
    assert str(transformed) == result
    assert transformed.empty() is empty
    assert NOTHING.transform(fn) is NOTHING


# --------------------------------------------------------------------------------------------
# Field labels the API server supports
# --------------------------------------------------------------------------------------------


def test_convert_field_selector() -> None:
    converted = fields.convert_field_selector(fields.parse("spec.host=n1"), "pods")
    assert str(converted) == "spec.nodeName=n1"
    pod_selector = fields.parse("spec.nodeName=n1,status.phase!=Failed,metadata.name=p")
    assert fields.convert_field_selector(pod_selector, "Pod") == pod_selector
    with pytest.raises(SelectorError, match=r"field label not supported: spec\.host$"):
        fields.convert_field_selector(fields.parse("spec.host=n1"), "nodes")
    with pytest.raises(SelectorError, match=r"field label not supported: status\.replicas$"):
        fields.convert_field_selector(fields.parse("status.replicas=1"), "replicasets")
    assert str(fields.convert_field_selector(fields.parse("status.replicas=1"),
                                             "replicationcontrollers")) == "status.replicas=1"
    with pytest.raises(SelectorError, match=r"field label not supported: metadata\.namespace$"):
        fields.convert_field_selector(fields.parse("metadata.namespace=a"), "Node")
    with pytest.raises(SelectorError, match=r"field label not supported: spec\.selector$"):
        fields.convert_field_selector(fields.parse("spec.selector=a"), "configmaps")
    assert fields.convert_field_selector(EVERYTHING, "configmaps") is EVERYTHING
    assert str(fields.convert_field_selector(fields.parse("type=Opaque"), "secrets")) == (
        "type=Opaque"
    )


# --------------------------------------------------------------------------------------------
# object_fields
# --------------------------------------------------------------------------------------------

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web-1", "namespace": "prod", "labels": {"app": "web"}},
    "spec": {
        "nodeName": "node-a",
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "serviceAccountName": "default",
        "hostNetwork": True,
        "containers": [{"name": "c", "image": "nginx"}],
    },
    "status": {
        "phase": "Running",
        "podIP": "10.0.0.5",
        "podIPs": [{"ip": "10.0.0.5"}, {"ip": "fd00::5"}],
        "nominatedNodeName": "node-b",
    },
}


def test_object_fields_pod() -> None:
    expected = {
        "metadata.name": "web-1",
        "metadata.namespace": "prod",
        "spec.nodeName": "node-a",
        "spec.restartPolicy": "Always",
        "spec.schedulerName": "default-scheduler",
        "spec.serviceAccountName": "default",
        "spec.hostNetwork": "true",
        "status.phase": "Running",
        "status.podIP": "10.0.0.5",
        "status.nominatedNodeName": "node-b",
    }
    assert fields.object_fields(POD, "pods") == expected
    assert fields.object_fields(POD, "Pod") == expected
    assert fields.object_fields(POD, "pod") == expected
    assert fields.parse("spec.nodeName=node-a,status.phase!=Failed").matches(
        fields.object_fields(POD, "pods")
    ) is True


def test_object_fields_sparse_pod_uses_go_zero_values() -> None:
    pod = {"metadata": {"name": "p"}, "status": {"podIPs": [{"ip": "10.1.1.1"}]}}
    assert fields.object_fields(pod, "pods") == {
        "metadata.name": "p",
        "metadata.namespace": "",
        "spec.nodeName": "",
        "spec.restartPolicy": "",
        "spec.schedulerName": "",
        "spec.serviceAccountName": "",
        "spec.hostNetwork": "false",
        "status.phase": "",
        "status.podIP": "10.1.1.1",
        "status.nominatedNodeName": "",
    }
    # status.podIP is authoritative when set (Convert_v1_PodStatus_To_core_PodStatus).
    pod = {"metadata": {"name": "p"}, "status": {"podIP": "1.1.1.1", "podIPs": [{"ip": "2.2.2.2"}]}}
    assert fields.object_fields(pod, "pods")["status.podIP"] == "1.1.1.1"
    assert fields.object_fields({}, "pods")["metadata.name"] == ""


def test_object_fields_event() -> None:
    event = {
        "metadata": {"name": "web-1.17a", "namespace": "prod"},
        "involvedObject": {
            "kind": "Pod", "namespace": "prod", "name": "web-1", "uid": "u-1",
            "apiVersion": "v1", "resourceVersion": "42", "fieldPath": "spec.containers{c}",
        },
        "reason": "Started",
        "source": {"component": "kubelet", "host": "node-a"},
        "reportingComponent": "kubelet-x",
        "type": "Normal",
    }
    assert fields.object_fields(event, "events") == {
        "metadata.name": "web-1.17a",
        "metadata.namespace": "prod",
        "involvedObject.kind": "Pod",
        "involvedObject.namespace": "prod",
        "involvedObject.name": "web-1",
        "involvedObject.uid": "u-1",
        "involvedObject.apiVersion": "v1",
        "involvedObject.resourceVersion": "42",
        "involvedObject.fieldPath": "spec.containers{c}",
        "reason": "Started",
        "reportingComponent": "kubelet-x",
        "source": "kubelet",
        "type": "Normal",
    }
    # "source" falls back to reportingComponent (core/event/strategy.go).
    event = {"metadata": {"name": "e"}, "reportingComponent": "my-controller"}
    got = fields.object_fields(event, "Event")
    assert got["source"] == "my-controller"
    assert got["involvedObject.name"] == ""


def test_object_fields_other_kinds() -> None:
    secret = {"metadata": {"name": "s", "namespace": "ns"}, "type": "kubernetes.io/tls"}
    assert fields.object_fields(secret, "secrets") == {
        "metadata.name": "s", "metadata.namespace": "ns", "type": "kubernetes.io/tls",
    }
    node = {"metadata": {"name": "n"}, "spec": {"unschedulable": True}}
    assert fields.object_fields(node, "nodes") == {
        "metadata.name": "n", "spec.unschedulable": "true",
    }
    assert fields.object_fields({"metadata": {"name": "n"}}, "Node") == {
        "metadata.name": "n", "spec.unschedulable": "false",
    }
    namespace = {"metadata": {"name": "prod"}, "status": {"phase": "Terminating"}}
    assert fields.object_fields(namespace, "namespaces") == {
        "metadata.name": "prod", "status.phase": "Terminating", "name": "prod",
    }
    service = {"metadata": {"name": "web", "namespace": "prod"},
               "spec": {"clusterIP": "10.96.0.10", "type": "ClusterIP"}}
    assert fields.object_fields(service, "services") == {
        "metadata.name": "web", "metadata.namespace": "prod",
        "spec.clusterIP": "10.96.0.10", "spec.type": "ClusterIP",
    }
    rs = {"metadata": {"name": "web-5d", "namespace": "prod"}, "status": {"replicas": 3}}
    assert fields.object_fields(rs, "replicasets") == {
        "metadata.name": "web-5d", "metadata.namespace": "prod", "status.replicas": "3",
    }
    assert fields.object_fields({"metadata": {"name": "rc"}}, "ReplicationController")[
        "status.replicas"
    ] == "0"
    configmap = {"metadata": {"name": "cm", "namespace": "prod"}, "data": {"a": "b"}}
    assert fields.object_fields(configmap, "configmaps") == {
        "metadata.name": "cm", "metadata.namespace": "prod",
    }
    pv = {"metadata": {"name": "pv-1"}}
    assert fields.object_fields(pv, "persistentvolumes") == {"metadata.name": "pv-1"}
    assert fields.object_fields(pv, "PersistentVolume") == {"metadata.name": "pv-1"}
    assert fields.object_fields(pv, "widgets", namespaced=False) == {"metadata.name": "pv-1"}
    assert fields.object_fields(configmap, "Node", namespaced=True)["metadata.namespace"] == "prod"
