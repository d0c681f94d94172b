"""Protobuf request bodies (informers/testing/protobuf.py): the wire reader, the decoder's
dicts (exactly what the same object's JSON decodes to), its 400s, the handler's use of it, and
kubectl's imperative creates against the embedded server and the real one.

Bodies are built by hand with the tiny encoder below, or are bytes kubectl v1.32 sent (captured
from the embedded server). With Go installed, the generator in tools/api-schema also writes
conformance cases: for every served kind, bodies made by the Go types' own Marshal and the JSON
Go's encoder makes of what their Unmarshal reads back; the decoder must match each exactly.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest

from informers.errors import StatusError
from informers.testing.protobuf import (
    MAGIC,
    ProtobufError,
    _format_time,
    _go_duration,
    decode_object,
    iter_fields,
    read_varint,
    schema,
)
from informers.testing.resources import BUILTIN_RESOURCES

REPO = Path(__file__).resolve().parent.parent
GENERATOR = REPO / "tools" / "api-schema"
SCHEMA_FILE = REPO / "informers" / "testing" / "api_schema.json"
PROTOBUF = "application/vnd.kubernetes.protobuf"


# -- a tiny protobuf encoder -----------------------------------------------------------------


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative numbers: two's complement, ten bytes
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def key(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def ld(number: int, data: bytes | str) -> bytes:
    """A length-delimited field (a string, bytes or a nested message)."""
    data = data.encode() if isinstance(data, str) else data
    return key(number, 2) + varint(len(data)) + data


def vi(number: int, value: int) -> bytes:
    """A varint field."""
    return key(number, 0) + varint(value)


def unknown(api_version: str, kind: str, raw: bytes) -> bytes:
    """``k8s\\x00`` + runtime.Unknown{typeMeta, raw, contentType}."""
    return (MAGIC + ld(1, ld(1, api_version) + ld(2, kind)) + ld(2, raw)
            + ld(4, PROTOBUF))


def meta(name: str = "", *extra: bytes) -> bytes:
    """An ObjectMeta message: name = 1, then ``extra`` fields."""
    return (ld(1, name) if name else b"") + b"".join(extra)


# -- bodies kubectl v1.32.4 sent (kubectl create ... -v=8) -------------------------------------

KUBECTL_BODIES = {
    "create configmap cm --from-literal=a=b": (
        "6b3873000a0f0a0276311209436f6e6669674d6170121c0a120a02636d12001a0022002a0032003800"
        "420012060a01611201621a002200",
        {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "cm"},
         "data": {"a": "b"}}),
    "create namespace ns1": (
        "6b3873000a0f0a02763112094e616d657370616365121b0a130a036e733112001a0022002a00320038"
        "00420012001a020a001a002200",
        {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "ns1"}, "spec": {},
         "status": {}}),
    "create service clusterip x --tcp=80:8080": (
        "6b3873000a0d0a02763112075365727669636512630a1b0a017812001a0022002a003200380042005a"
        "080a0361707012017812400a1b0a0738302d38303830120354435018502207080010903f1a00280012"
        "080a036170701201781a002209436c757374657249503a00420052005a00600068001a020a001a0022"
        "00",
        {"kind": "Service", "apiVersion": "v1",
         "metadata": {"name": "x", "labels": {"app": "x"}},
         "spec": {"ports": [{"name": "80-8080", "protocol": "TCP", "port": 80,
                             "targetPort": 8080}],
                  "selector": {"app": "x"}, "type": "ClusterIP"},
         "status": {"loadBalancer": {}}}),
    "create secret generic s --from-literal=k=v": (
        "6b3873000a0c0a0276311206536563726574121d0a110a017312001a0022002a003200380042001206"
        "0a016b1201761a001a002200",
        {"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "s"},
         "data": {"k": "dg=="}}),
    "create deployment d --image=nginx": (
        "6b3873000a150a07617070732f7631120a4465706c6f796d656e7412a3010a1b0a016412001a002200"
        "2a003200380042005a080a0361707012016412760801120a0a080a036170701201641a5e0a1a0a0012"
        "001a0022002a003200380042005a080a03617070120164124012220a056e67696e7812056e67696e78"
        "2a0042006a007200800100880100900100a201001a00320042004a0052005800600068008201008a01"
        "009a0100c2010022020a00280038001a0c0800100018002000280038001a002200",
        {"kind": "Deployment", "apiVersion": "apps/v1",
         "metadata": {"name": "d", "labels": {"app": "d"}},
         "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}},
                  "template": {"metadata": {"labels": {"app": "d"}},
                               "spec": {"containers": [{"name": "nginx", "image": "nginx",
                                                        "resources": {}}]}},
                  "strategy": {}},
         "status": {}}),
}


# -- the wire reader ---------------------------------------------------------------------------


def test_read_varint_reads_seven_bit_groups_low_first():
    assert read_varint(b"\x00", 0) == (0, 1)
    assert read_varint(b"\x96\x01", 0) == (150, 2)
    assert read_varint(b"xx\xac\x02", 2) == (300, 4)
    assert read_varint(b"\xff" * 9 + b"\x01", 0) == (2**64 - 1, 10)
    assert read_varint(varint(-2), 0) == (2**64 - 2, 10)


@pytest.mark.parametrize(("data", "message"), [
    (b"", "unexpected EOF"),
    (b"\x96", "unexpected EOF"),
    (b"\xff" * 10 + b"\x01", "proto: integer overflow"),
])
def test_read_varint_rejects_truncated_and_overlong_numbers(data, message):
    with pytest.raises(ProtobufError) as info:
        read_varint(data, 0)
    assert str(info.value) == message


def test_iter_fields_reads_every_wire_type_in_order():
    data = (vi(1, 7) + key(2, 1) + (2**63 + 5).to_bytes(8, "little") + ld(3, "abc")
            + key(4, 5) + (9).to_bytes(4, "little") + vi(1, 8))
    assert iter_fields(data) == [(1, 0, 7), (2, 1, 2**63 + 5), (3, 2, b"abc"), (4, 5, 9),
                                 (1, 0, 8)]
    assert iter_fields(b"") == []


@pytest.mark.parametrize(("data", "message"), [
    (key(1, 3), "proto: illegal wireType 3"),
    (key(1, 4), "proto: ConfigMap: wiretype end group for non-group"),
    (key(1, 6), "proto: illegal wireType 6"),
    (key(0, 0) + b"\x00", "proto: ConfigMap: illegal tag 0 (wire type 0)"),
    (key(1, 2) + varint(5) + b"abc", "unexpected EOF"),
    (key(1, 1) + b"\x00" * 7, "unexpected EOF"),
    (key(1, 5) + b"\x00" * 3, "unexpected EOF"),
    (key(1, 2) + varint(2**63), "proto: negative length found during unmarshaling"),
])
def test_iter_fields_rejects_groups_bad_tags_and_truncation(data, message):
    with pytest.raises(ProtobufError) as info:
        iter_fields(data, "ConfigMap")
    assert str(info.value) == message


# -- the decoder ---------------------------------------------------------------------------------


@pytest.mark.parametrize("command", sorted(KUBECTL_BODIES))
def test_kubectl_bodies_decode_to_what_kubectl_would_send_as_json(command):
    """The dicts ``kubectl <command> --dry-run=client -o json`` prints, except for kubectl
    v1.32's ``creationTimestamp: null``: the v1.36 ObjectMeta marks it ``omitzero``."""
    body, expected = KUBECTL_BODIES[command]
    assert decode_object(bytes.fromhex(body)) == expected


def test_zero_scalars_drop_under_omitempty_pointers_present_on_the_wire_stay():
    # ConfigMap: name "" and generation 0 are on the wire but omitempty; immutable is *bool.
    body = unknown("v1", "ConfigMap", ld(1, ld(1, "") + vi(7, 0)) + vi(4, 0))
    assert decode_object(body) == {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {},
                                   "immutable": False}
    # Pod: terminationGracePeriodSeconds (*int64) 0 stays, hostNetwork (bool) false goes;
    # a container's name and a port's containerPort have no omitempty; resources is a
    # struct, which omitempty never drops.
    container = ld(6, b"") + ld(2, "nginx")
    spec = ld(2, container) + vi(4, 0) + vi(11, 0)
    assert decode_object(unknown("v1", "Pod", ld(1, meta("p")) + ld(2, spec))) == {
        "kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "", "image": "nginx",
                                 "ports": [{"containerPort": 0}], "resources": {}}],
                 "terminationGracePeriodSeconds": 0},
        "status": {}}


def test_nil_slices_and_maps_without_omitempty_are_null():
    assert decode_object(unknown("discovery.k8s.io/v1", "EndpointSlice", b"")) == {
        "kind": "EndpointSlice", "apiVersion": "discovery.k8s.io/v1", "metadata": {},
        "endpoints": None, "ports": None, "addressType": ""}
    # An endpoint's addresses ([]string, no omitempty) and its conditions' *bool fields.
    endpoint = ld(2, vi(1, 1) + vi(3, 0))
    body = unknown("discovery.k8s.io/v1", "EndpointSlice",
                   ld(2, endpoint) + ld(4, "IPv4"))
    assert decode_object(body)["endpoints"] == [
        {"addresses": None, "conditions": {"ready": True, "terminating": False}}]


def test_negative_numbers_and_packed_or_unpacked_repeated_scalars():
    packed = ld(4, varint(1) + varint(-2) + varint(3))
    unpacked = vi(4, 1) + vi(4, -2) + vi(4, 3)
    for groups in (packed, unpacked, vi(4, 1) + ld(4, varint(-2) + varint(3))):
        spec = ld(14, vi(2, -1) + groups) + vi(25, -5)  # runAsUser, priority (*int32)
        decoded = decode_object(unknown("v1", "Pod", ld(2, spec)))
        assert decoded["spec"] == {
            "containers": None, "securityContext": {"runAsUser": -1,
                                                    "supplementalGroups": [1, -2, 3]},
            "priority": -5}


def test_times_are_rfc3339_seconds_or_null_and_micro_times_keep_microseconds():
    stamp = ld(8, vi(1, 1700000000) + vi(2, 999_999_999))  # creationTimestamp: nanos dropped
    deletion = ld(9, b"")  # *Time present but empty: a zero time, null
    event = unknown("v1", "Event", ld(1, meta("e", stamp, deletion)))
    decoded = decode_object(event)
    assert decoded["metadata"] == {"name": "e", "creationTimestamp": "2023-11-14T22:13:20Z",
                                   "deletionTimestamp": None}
    # Non-pointer times are never dropped by omitempty: null when zero.
    assert (decoded["firstTimestamp"], decoded["lastTimestamp"], decoded["eventTime"]) == (
        None, None, None)
    # The zero time (January 1 of year 1) on the wire is still zero: omitzero drops it.
    zero = ld(8, vi(1, -62135596800))
    assert decode_object(unknown("v1", "ConfigMap", ld(1, meta("c", zero))))["metadata"] == {
        "name": "c"}
    lease = ld(2, ld(3, vi(1, 1700000000) + vi(2, 123_456_789))
               + ld(4, vi(1, -1) + vi(2, 1500)))
    assert decode_object(unknown("coordination.k8s.io/v1", "Lease", lease))["spec"] == {
        "acquireTime": "2023-11-14T22:13:20.123456Z",
        "renewTime": "1969-12-31T23:59:59.000001Z"}


def test_go_time_and_duration_formats():
    assert _format_time(0) == "1970-01-01T00:00:00Z"
    assert _format_time(253402300800) == "10000-01-01T00:00:00Z"
    assert _format_time(-62198755200) == "-0001-01-01T00:00:00Z"
    assert _format_time(951782400, 5) == "2000-02-29T00:00:00.000005Z"
    assert [_go_duration(ns) for ns in (0, 1, 1500, 1_100_000, 10**9, 3_723_500_000_000,
                                        -90 * 10**9, 3600 * 10**9)] == [
        "0s", "1ns", "1.5µs", "1.1ms", "1s", "1h2m3.5s", "-1m30s", "1h0m0s"]


def test_int_or_string_quantity_bytes_and_fields_v1():
    ports = (ld(1, vi(3, 80) + ld(4, vi(1, 0) + vi(2, 8080)))
             + ld(1, vi(3, 81) + ld(4, vi(1, 1) + ld(3, "http"))) + ld(1, vi(3, 82)))
    decoded = decode_object(unknown("v1", "Service", ld(2, ports)))
    assert decoded["spec"]["ports"] == [{"port": 80, "targetPort": 8080},
                                        {"port": 81, "targetPort": "http"},
                                        {"port": 82, "targetPort": 0}]
    strategy = ld(4, ld(2, ld(1, vi(1, 1) + ld(3, "25%"))))  # rollingUpdate.maxUnavailable
    assert decode_object(unknown("apps/v1", "Deployment", ld(2, strategy)))["spec"][
        "strategy"] == {"rollingUpdate": {"maxUnavailable": "25%"}}
    resources = ld(8, ld(1, ld(1, "cpu") + ld(2, ld(1, "100m"))) + ld(2, ld(1, "memory")))
    pod = decode_object(unknown("v1", "Pod", ld(2, ld(2, ld(1, "c") + resources))))
    assert pod["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "100m"},
                                                         "requests": {"memory": "0"}}
    secret = ld(2, ld(1, "k") + ld(2, b"\x00\xff")) + ld(2, ld(1, "empty"))
    assert decode_object(unknown("v1", "Secret", secret))["data"] == {"k": "AP8=", "empty": ""}
    managed = ld(17, ld(1, "kubectl") + ld(6, "FieldsV1") + ld(7, ld(1, b'{"f:data":{}}')))
    assert decode_object(unknown("v1", "ConfigMap", ld(1, managed)))["metadata"] == {
        "managedFields": [{"manager": "kubectl", "fieldsType": "FieldsV1",
                           "fieldsV1": {"f:data": {}}}]}


def test_inline_structs_join_their_parent_object():
    volume = ld(1, "v") + ld(2, ld(2, b""))  # Volume{name, VolumeSource{emptyDir: {}}}
    pod = decode_object(unknown("v1", "Pod", ld(2, ld(1, volume))))
    assert pod["spec"]["volumes"] == [{"name": "v", "emptyDir": {}}]


def test_unknown_fields_are_skipped_and_a_repeated_message_field_merges():
    body = unknown("v1", "ConfigMap", ld(1, meta("a")) + vi(99, 1) + ld(98, "x")
                   + ld(1, ld(11, ld(1, "k") + ld(2, "v"))) + ld(2, ld(1, "d") + ld(2, "1")))
    assert decode_object(body) == {"kind": "ConfigMap", "apiVersion": "v1",
                                   "metadata": {"name": "a", "labels": {"k": "v"}},
                                   "data": {"d": "1"}}


def test_invalid_utf8_becomes_one_replacement_character_per_byte():
    body = unknown("v1", "ConfigMap", ld(1, ld(1, b"\xc3\xa9\xff\xe2\x82x")))
    assert decode_object(body)["metadata"]["name"] == "é\ufffd\ufffd\ufffdx"


def test_delete_options_decode_in_any_group_version():
    options = vi(1, 0) + ld(2, ld(1, "uid-1")) + ld(4, "Foreground") + ld(5, "All")
    for api_version in ("v1", "apps/v1", "meta.k8s.io/v1"):
        assert decode_object(unknown(api_version, "DeleteOptions", options)) == {
            "kind": "DeleteOptions", "apiVersion": api_version, "gracePeriodSeconds": 0,
            "preconditions": {"uid": "uid-1"}, "propagationPolicy": "Foreground",
            "dryRun": ["All"]}
    empty = MAGIC + ld(2, vi(3, 1))  # no TypeMeta: the defaults name the kind
    assert decode_object(empty, ("meta.k8s.io/v1", "DeleteOptions")) == {
        "kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", "orphanDependents": True}


CM = unknown("v1", "ConfigMap", ld(1, meta("cm")))


@pytest.mark.parametrize(("body", "message"), [
    (b"", "the object provided is unrecognized (must be of type ConfigMap): empty data "
          "(<empty>)"),
    (b"xyz", "the object provided is unrecognized (must be of type ConfigMap): provided data "
             "does not appear to be a protobuf message, expected prefix [107 56 115 0] "
             "(78797a)"),
    (MAGIC, "the object provided is unrecognized (must be of type ConfigMap): empty body "
            "(6b387300)"),
    (CM[:-5], "the object provided is unrecognized (must be of type ConfigMap): unexpected "
              f"EOF ({CM[:30].hex()} ...)"),
    (MAGIC + ld(1, vi(1, 1)), "the object provided is unrecognized (must be of type "
                              "ConfigMap): proto: wrong wireType = 0 for field APIVersion "
                              "(6b3873000a020801)"),
    (unknown("v1", "ConfigMop", b""), 'ConfigMop in version "v1" cannot be handled as a '
                                      'ConfigMap: no kind "ConfigMop" is registered for '
                                      'version "v1" in scheme "pkg/runtime/scheme.go:111"'),
    (unknown("apps/v1", "ConfigMap", b""), 'ConfigMap in version "v1" cannot be handled as a '
                                           'ConfigMap: no kind "ConfigMap" is registered for '
                                           'version "apps/v1" in scheme '
                                           '"pkg/runtime/scheme.go:111"'),
    (unknown("v1", "ConfigMap", ld(1, b"\x0a\x05ab")), 'ConfigMap in version "v1" cannot be '
                                                      "handled as a ConfigMap: unexpected EOF"),
    (unknown("v1", "ConfigMap", vi(1, 1)), 'ConfigMap in version "v1" cannot be handled as a '
                                           "ConfigMap: proto: wrong wireType = 0 for field "
                                           "ObjectMeta"),
    (unknown("v1", "Service", ld(2, ld(1, ld(4, vi(1, 2))))),
     'Service in version "v1" cannot be handled as a ConfigMap: json: error calling '
     "MarshalJSON for type intstr.IntOrString: impossible IntOrString.Type"),
    (unknown("v1", "Pod", ld(2, ld(2, ld(8, ld(1, ld(1, "cpu") + ld(2, ld(1, "1x"))))))),
     'Pod in version "v1" cannot be handled as a ConfigMap: quantities must match the '
     "regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    (unknown("v1", "ConfigMap", ld(1, ld(17, ld(7, ld(1, b"{nope"))))),
     'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: error calling '
     "MarshalJSON for type v1.FieldsV1: Expecting property name enclosed in double quotes: "
     "line 1 column 2 (char 1)"),
])
def test_malformed_bodies_are_400s_worded_as_kube_apiserver_words_them(body, message):
    with pytest.raises(StatusError) as info:
        decode_object(body, ("v1", "ConfigMap"), "ConfigMap")
    assert (info.value.code, info.value.reason) == (400, "BadRequest")
    assert info.value.status["message"] == message


def test_without_an_expected_kind_errors_are_the_bare_decoder_messages():
    with pytest.raises(StatusError) as info:
        decode_object(b"garbage")
    assert info.value.status["message"] == (
        "provided data does not appear to be a protobuf message, expected prefix "
        "[107 56 115 0]")
    with pytest.raises(StatusError) as info:
        decode_object(CM, ("meta.k8s.io/v1", "DeleteOptions"), registered=("DeleteOptions",))
    assert info.value.status["message"] == (
        'no kind "ConfigMap" is registered for version "v1" in scheme '
        '"pkg/runtime/scheme.go:111"')
    with pytest.raises(StatusError) as info:
        decode_object(MAGIC + ld(2, b""))
    assert info.value.status["message"] == (
        "Object 'Kind' is missing in 'runtime.TypeMeta{APIVersion:\"\", Kind:\"\"}'")


def test_the_schema_covers_every_served_builtin_and_is_compact_sorted_json():
    for rt in BUILTIN_RESOURCES:
        name = schema().type_of(rt.api_version, rt.kind)
        assert name is not None, rt
        assert schema().types[name][1][0].json == "metadata"
    text = SCHEMA_FILE.read_text()
    assert text == json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"),
                              ensure_ascii=False) + "\n"
    assert schema().source == {"k8s.io/api": "v0.36.3", "k8s.io/apimachinery": "v0.36.3"}


# -- against the Go types themselves (needs Go) ------------------------------------------------


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """The generator's schema and conformance cases, written to a temporary directory."""
    if shutil.which("go") is None:
        pytest.skip("Go is not installed")
    out = tmp_path_factory.mktemp("api-schema")
    result = subprocess.run(
        ["go", "run", ".", "-o", str(out / "api_schema.json"),
         "-conformance", str(out / "conformance.json")],
        cwd=GENERATOR, capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "GOFLAGS": "-mod=mod"})
    assert result.returncode == 0, result.stderr
    return out


@pytest.mark.slow
def test_api_schema_json_is_what_the_generator_writes(generated):
    assert (generated / "api_schema.json").read_bytes() == SCHEMA_FILE.read_bytes()


@pytest.mark.slow
def test_the_decoder_matches_go_on_every_served_kind(generated):
    """For each kind: the empty object; every field set ("full"); every field present with
    zero values ("zeros"); negative numbers, invalid UTF-8, year 10000 ("odd")."""
    cases = json.loads((generated / "conformance.json").read_text())
    kinds = {f"{rt.api_version}/{rt.kind}" for rt in BUILTIN_RESOURCES}
    assert {name.rpartition("/")[0] for name in cases} == kinds | {"meta.k8s.io/v1/DeleteOptions"}
    assert len(cases) == 4 * (len(kinds) + 1)
    for name, case in sorted(cases.items()):
        assert decode_object(base64.b64decode(case["body"])) == case["json"], name


# -- over HTTP ---------------------------------------------------------------------------------


@pytest.fixture
def raw(api_server: Any, api_client: Any):
    pool = api_client.rest_client.pool_manager

    def request(method: str, path: str, body: bytes | None = None,
                content_type: str | None = PROTOBUF) -> tuple[int, Any, str]:
        headers = {"Authorization": f"Bearer {api_server.token}",
                   "Accept": f"{PROTOBUF},application/json"}
        if content_type is not None:
            headers["Content-Type"] = content_type
        resp = pool.request(method, api_server.url + path, body=body, headers=headers,
                            retries=False)
        return resp.status, json.loads(resp.data), resp.headers["Content-Type"]
    return request


def test_protobuf_creates_and_updates_answer_json(raw, api_server):
    code, created, content_type = raw("POST", "/api/v1/namespaces/default/configmaps",
                                      unknown("v1", "ConfigMap", ld(1, meta("cm"))
                                              + ld(2, ld(1, "a") + ld(2, "b"))))
    assert (code, content_type) == (201, "application/json")
    assert (created["metadata"]["name"], created["data"]) == ("cm", {"a": "b"})
    rv = created["metadata"]["resourceVersion"]
    update = unknown("v1", "ConfigMap", ld(1, meta("cm", ld(6, rv)))
                     + ld(2, ld(1, "a") + ld(2, "c")))
    code, updated, _ = raw("PUT", "/api/v1/namespaces/default/configmaps/cm", update)
    assert (code, updated["data"]) == (200, {"a": "c"})
    assert api_server.get("configmaps", "default", "cm")["data"] == {"a": "c"}
    code, status, _ = raw("PUT", "/api/v1/namespaces/default/configmaps/cm", update)
    assert (code, status["reason"]) == (409, "Conflict")


def test_a_malformed_body_is_400_and_the_server_keeps_serving(raw, api_server):
    code, status, _ = raw("POST", "/api/v1/namespaces/default/configmaps", MAGIC + b"\x0a\x09")
    assert (code, status["reason"], status["message"]) == (
        400, "BadRequest", "the object provided is unrecognized (must be of type ConfigMap): "
        "unexpected EOF (6b3873000a09)")
    code, status, _ = raw("POST", "/api/v1/namespaces/default/configmaps",
                          unknown("v1", "Secret", ld(1, meta("s"))))
    assert (code, status["reason"]) == (400, "BadRequest")
    assert api_server.list("configmaps", "default") == []
    code, _, _ = raw("POST", "/api/v1/namespaces/default/configmaps",
                     unknown("v1", "ConfigMap", ld(1, meta("ok"))))
    assert code == 201


def test_custom_resources_answer_415_to_protobuf(raw, api_server):
    api_server.register_resource("example.com", "v1", "widgets", "Widget")
    code, status, _ = raw("POST", "/apis/example.com/v1/namespaces/default/widgets",
                          unknown("example.com/v1", "Widget", ld(1, meta("w"))))
    assert (code, status["reason"], status["message"]) == (
        415, "UnsupportedMediaType", "the body of the request was in an unknown format - "
        "accepted media types include: application/json, application/yaml")
    code, status, _ = raw("POST", "/api/v1/namespaces/default/configmaps", b"a: b",
                          "text/plain")
    assert (code, status["message"]) == (
        415, "the body of the request was in an unknown format - accepted media types "
        "include: application/json, application/yaml, application/vnd.kubernetes.protobuf")


def test_protobuf_delete_options_are_honoured(raw, api_server):
    api_server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}},
                      namespace="default")
    wrong_uid = unknown("v1", "DeleteOptions", ld(2, ld(1, "not-the-uid")))
    code, status, _ = raw("DELETE", "/api/v1/namespaces/default/configmaps/cm", wrong_uid)
    assert (code, status["reason"]) == (409, "Conflict")
    code, status, _ = raw("DELETE", "/api/v1/namespaces/default/configmaps/cm",
                          unknown("v1", "ConfigMap", b""))
    assert (code, status["message"]) == (400, 'no kind "ConfigMap" is registered for version '
                                              '"v1" in scheme "pkg/runtime/scheme.go:111"')
    code, status, _ = raw("DELETE", "/api/v1/namespaces/default/configmaps/cm",
                          unknown("v1", "DeleteOptions", ld(4, "Background")))
    assert (code, status["status"]) == (200, "Success")
    assert api_server.get("configmaps", "default", "cm") is None


# -- kubectl -----------------------------------------------------------------------------------

needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None,
                                   reason="kubectl is not installed")
SERVER_SET = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")


def kubectl(kubeconfig: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kubectl", "--kubeconfig", kubeconfig, *args], capture_output=True,
                          text=True, timeout=60, check=False)


def without_server_fields(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in obj["metadata"].items() if k not in SERVER_SET}
    return {**obj, "metadata": meta}


@needs_kubectl
def test_kubectl_imperative_creates_store_the_objects(api_server, tmp_path):
    path = api_server.write_kubeconfig(tmp_path / "kubeconfig")
    for args, out in [
        (("create", "configmap", "cm", "--from-literal=a=b"), "configmap/cm created\n"),
        (("create", "secret", "generic", "s", "--from-literal=k=v"), "secret/s created\n"),
        (("create", "namespace", "ns1"), "namespace/ns1 created\n"),
        (("create", "service", "clusterip", "x", "--tcp=80:8080"), "service/x created\n"),
        (("run", "p", "--image=nginx"), "pod/p created\n"),
    ]:
        result = kubectl(path, *args)
        assert (result.returncode, result.stdout, result.stderr) == (0, out, "")
    assert without_server_fields(api_server.get("configmaps", "default", "cm")) == {
        "kind": "ConfigMap", "apiVersion": "v1",
        "metadata": {"name": "cm", "namespace": "default"}, "data": {"a": "b"}}
    assert without_server_fields(api_server.get("secrets", "default", "s")) == {
        "kind": "Secret", "apiVersion": "v1",
        "metadata": {"name": "s", "namespace": "default"}, "data": {"k": "dg=="},
        "type": "Opaque"}
    assert without_server_fields(api_server.get("namespaces", None, "ns1")) == {
        "kind": "Namespace", "apiVersion": "v1",
        "metadata": {"name": "ns1", "labels": {"kubernetes.io/metadata.name": "ns1"}},
        "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}
    service = without_server_fields(api_server.get("services", "default", "x"))
    cluster_ip = service["spec"]["clusterIP"]
    assert service == {
        "kind": "Service", "apiVersion": "v1",
        "metadata": {"name": "x", "namespace": "default", "labels": {"app": "x"}},
        "spec": {"ports": [{"name": "80-8080", "protocol": "TCP", "port": 80,
                            "targetPort": 8080}],
                 "selector": {"app": "x"}, "type": "ClusterIP", "clusterIP": cluster_ip,
                 "clusterIPs": [cluster_ip], "sessionAffinity": "None",
                 "internalTrafficPolicy": "Cluster", "ipFamilies": ["IPv4"],
                 "ipFamilyPolicy": "SingleStack"},
        "status": {"loadBalancer": {}}}
    assert cluster_ip.startswith("10.0.0.")
    # kubectl run sends JSON (its Pod goes through the dynamic client), stored the same way.
    assert without_server_fields(api_server.get("pods", "default", "p")) == {
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": "p", "namespace": "default", "labels": {"run": "p"}},
        "spec": {"containers": [{"name": "p", "image": "nginx", "resources": {},
                                 "imagePullPolicy": "Always",
                                 "terminationMessagePath": "/dev/termination-log",
                                 "terminationMessagePolicy": "File"}],
                 "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
                 "terminationGracePeriodSeconds": 30, "schedulerName": "default-scheduler",
                 "securityContext": {}, "enableServiceLinks": True, "priority": 0,
                 "preemptionPolicy": "PreemptLowerPriority", "tolerations": [
                     {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                      "effect": "NoExecute", "tolerationSeconds": 300},
                     {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                      "effect": "NoExecute", "tolerationSeconds": 300}]},
        "status": {"phase": "Pending", "qosClass": "BestEffort"}}


@needs_kubectl
def test_kubectl_create_configmap_and_namespace_store_the_same_on_both_servers(
        any_api_server, tmp_path):
    server = any_api_server
    path = server.write_kubeconfig(tmp_path / "kubeconfig")
    result = kubectl(path, "create", "configmap", "cm", "--from-literal=a=b",
                     "--from-literal=empty=")
    assert (result.returncode, result.stderr) == (0, "")
    assert without_server_fields(server.get("configmaps", server.namespace, "cm")) == {
        "kind": "ConfigMap", "apiVersion": "v1",
        "metadata": {"name": "cm", "namespace": server.namespace},
        "data": {"a": "b", "empty": ""}}
    name = f"{server.namespace}-kubectl"
    result = kubectl(path, "create", "namespace", name)
    assert (result.returncode, result.stderr) == (0, "")
    try:
        assert without_server_fields(server.get("namespaces", None, name)) == {
            "kind": "Namespace", "apiVersion": "v1",
            "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}
    finally:
        kubectl(path, "delete", "namespace", name, "--wait=false")


def test_scalar_forms_no_served_type_uses_yet():
    """zigzag varints, and floats as encoding/json writes them (shortest round trip)."""
    from informers.testing.protobuf import _scalar

    def bits(fmt: str, number: float) -> int:
        return int.from_bytes(struct.pack(fmt, number), "little")

    assert [_scalar("int32", "zigzag32", n) for n in (0, 1, 2, 3)] == [0, -1, 1, -2]
    assert _scalar("int64", "zigzag64", 2**64 - 1) == -(2**63)
    assert _scalar("float32", "fixed32", bits("<f", 0.1)) == 0.1
    assert _scalar("float64", "fixed64", bits("<d", 2.0)) == 2
    assert type(_scalar("float64", "fixed64", bits("<d", 2.0))) is int
    with pytest.raises(ProtobufError):
        _scalar("float64", "fixed64", bits("<d", float("nan")))
