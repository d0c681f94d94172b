"""The embedded server's validation (informers/testing/validation.py) held to kube-apiserver's:
each case runs against both servers (``any_api_server``) with the same expected 422 causes.

Endpoints: the cases of ``TestValidateEndpointsCreate``, ``TestValidateEndpointsUpdate`` and the
``TestEndpointAddressNodeName*`` tests of kubernetes ``pkg/apis/core/validation/
validation_test.go`` (v1.36.3), sent over the wire: the cases that cannot be sent (a missing or
invalid namespace: the URL names it) are left out, and "Port missing protocol" is a success
here, as the v1 defaulting (``SetDefaults_Endpoints``) makes it ``TCP`` before validation.
Metadata: apimachinery ``ValidateLabels`` and ``ValidateAnnotations``, on every kind.
"""

from __future__ import annotations

import copy

import pytest

from informers.errors import StatusError

SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    r"used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL_KEY_NAME = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
LABEL_VALUE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
BAD_IP = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"


def endpoints(name: str = "mysvc", *subsets: dict) -> dict:
    body: dict = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": name}}
    if subsets:
        body["subsets"] = list(subsets)
    return body


def subset(ips: list[str], ports: list[dict] | None = None, **extra: object) -> dict:
    body: dict = {"addresses": [{"ip": ip} for ip in ips], **extra}
    if ports is not None:
        body["ports"] = ports
    return body


def invalid(field: str, value: str, detail: str) -> tuple[str, str, str]:
    return ("FieldValueInvalid", field, f"Invalid value: {value}: {detail}")


def causes_of(err: StatusError) -> list[tuple[str, str, str]]:
    assert (err.code, err.status["reason"]) == (422, "Invalid"), err.status
    return [(c["reason"], c["field"], c["message"]) for c in err.status["details"]["causes"]]


def create_error(server, obj: dict) -> StatusError:
    with pytest.raises(StatusError) as info:
        server.create(obj, namespace=server.namespace)
    return info.value


# -- TestValidateEndpointsCreate ----------------------------------------------------------------


SUCCESS_CASES = {
    "simple endpoint": endpoints(
        "mysvc",
        subset(["10.10.1.1", "10.10.2.2"], [{"name": "a", "port": 8675, "protocol": "TCP"},
                                            {"name": "b", "port": 309, "protocol": "TCP"}]),
        subset(["10.10.3.3"], [{"name": "a", "port": 93, "protocol": "TCP"},
                               {"name": "b", "port": 76, "protocol": "TCP"}])),
    "empty subsets": endpoints("mysvc"),
    "no name required for singleton port": endpoints(
        "mysvc", subset(["10.10.1.1"], [{"port": 8675, "protocol": "TCP"}])),
    "valid appProtocol": endpoints(
        "mysvc", subset(["10.10.1.1"], [{"port": 8675, "protocol": "TCP",
                                         "appProtocol": "HTTP"}])),
    "empty ports": endpoints("mysvc", subset(["10.10.3.3"])),
    # TestEndpointAddressNodeNameCanBeAnIPAddress
    "node name can be an IP address": endpoints("foo", subset(
        [], [{"name": "https", "port": 443, "protocol": "TCP"}],
        addresses=[{"ip": "8.8.8.8", "hostname": "zookeeper1", "nodeName": "10.10.1.1"}])),
}


@pytest.mark.parametrize("case", list(SUCCESS_CASES))
def test_validate_endpoints_create_success(any_api_server, case):
    body = SUCCESS_CASES[case]
    stored = any_api_server.create(copy.deepcopy(body), namespace=any_api_server.namespace)
    assert stored.get("subsets") == body.get("subsets")


def test_validate_endpoints_create_port_missing_protocol_is_defaulted(any_api_server):
    # upstream's "Port missing protocol" error case: unreachable over the wire
    s = any_api_server
    stored = s.create(endpoints("mysvc", subset(["10.10.1.1"], [{"name": "a", "port": 93}])),
                      namespace=s.namespace)
    assert stored["subsets"][0]["ports"] == [{"name": "a", "port": 93, "protocol": "TCP"}]
    stored["subsets"][0]["ports"].append({"name": "b", "port": 94})
    assert s.update(stored)["subsets"][0]["ports"][1] == {
        "name": "b", "port": 94, "protocol": "TCP"}


A0 = "subsets[0].addresses[0]"
P0 = "subsets[0].ports[0]"
TCP_A = [{"name": "a", "port": 93, "protocol": "TCP"}]
TCP_P = [{"name": "p", "port": 93, "protocol": "TCP"}]

ERROR_CASES = {
    "missing name": (endpoints(""), [
        ("FieldValueRequired", "metadata.name",
         "Required value: name or generateName is required")]),
    "invalid name": (endpoints("-_Invliad^&Characters"), [
        invalid("metadata.name", '"-_Invliad^&Characters"', SUBDOMAIN)]),
    "empty addresses": (endpoints("mysvc", {"ports": TCP_A}), [
        ("FieldValueRequired", "subsets[0]",
         "Required value: must specify `addresses` or `notReadyAddresses`")]),
    "invalid IP": (
        endpoints("mysvc", subset(["[2001:0db8:85a3:0042:1000:8a2e:0370:7334]"], TCP_A)), [
            invalid(f"{A0}.ip", '"[2001:0db8:85a3:0042:1000:8a2e:0370:7334]"', BAD_IP),
            invalid(f"{A0}.ip", '"[2001:0db8:85a3:0042:1000:8a2e:0370:7334]"',
                    "must be a valid IP address")]),
    "invalid legacy IP with strict validation": (
        endpoints("mysvc", subset(["001.002.003.004"], TCP_A)), [
            invalid(f"{A0}.ip", '"001.002.003.004"', "must not have leading 0s")]),
    "legacy IPs with legacy validation": (  # StrictIPCIDRValidation is on by default in 1.36
        endpoints("mysvc", subset(["010.010.001.001", "10.10.2.2"], TCP_A),
                  subset(["::ffff:10.10.3.3"], TCP_A)), [
            invalid(f"{A0}.ip", '"010.010.001.001"', "must not have leading 0s"),
            invalid("subsets[1].addresses[0].ip", '"::ffff:10.10.3.3"',
                    "must not be an IPv4-mapped IPv6 address")]),
    "Multiple ports, one without name": (
        endpoints("mysvc", subset(["10.10.1.1"], [{"port": 8675, "protocol": "TCP"},
                                                  {"name": "b", "port": 309, "protocol": "TCP"}])),
        [("FieldValueRequired", f"{P0}.name", "Required value")]),
    "Invalid port number": (
        endpoints("mysvc", subset(["10.10.1.1"], [{"name": "a", "port": 66000,
                                                   "protocol": "TCP"}])),
        [invalid(f"{P0}.port", "66000", "must be between 1 and 65535, inclusive")]),
    "Invalid protocol": (
        endpoints("mysvc", subset(["10.10.1.1"], [{"name": "a", "port": 93,
                                                   "protocol": "Protocol"}])),
        [("FieldValueNotSupported", f"{P0}.protocol",
          'Unsupported value: "Protocol": supported values: "SCTP", "TCP", "UDP"')]),
    "Address missing IP": (
        endpoints("mysvc", subset([], TCP_A, addresses=[{}])), [
            invalid(f"{A0}.ip", '""', BAD_IP),
            invalid(f"{A0}.ip", '""', "must be a valid IP address")]),
    "Port missing number": (
        endpoints("mysvc", subset(["10.10.1.1"], [{"name": "a", "protocol": "TCP"}])),
        [invalid(f"{P0}.port", "0", "must be between 1 and 65535, inclusive")]),
    "Address is loopback": (
        endpoints("mysvc", subset(["127.0.0.1"], TCP_P)),
        [invalid(f"{A0}.ip", '"127.0.0.1"',
                 "may not be in the loopback range (127.0.0.0/8, ::1/128)")]),
    "Address is link-local": (
        endpoints("mysvc", subset(["169.254.169.254"], TCP_P)),
        [invalid(f"{A0}.ip", '"169.254.169.254"',
                 "may not be in the link-local range (169.254.0.0/16, fe80::/10)")]),
    "Address is link-local multicast": (
        endpoints("mysvc", subset(["224.0.0.1"], TCP_P)),
        [invalid(f"{A0}.ip", '"224.0.0.1"',
                 "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")]),
    "Invalid AppProtocol": (
        endpoints("mysvc", subset(["10.10.1.1"], [{"name": "p", "port": 93, "protocol": "TCP",
                                                   "appProtocol": "lots-of[invalid]-{chars}"}])),
        [invalid(f"{P0}.appProtocol", '"lots-of[invalid]-{chars}"', LABEL_KEY_NAME)]),
    # TestEndpointAddressNodeNameInvalidDNSSubdomain, and the empty node name of issue 14
    "invalid node name": (
        endpoints("foo", subset([], [{"name": "https", "port": 443, "protocol": "TCP"}],
                                addresses=[{"ip": "8.8.8.8", "hostname": "zookeeper1",
                                            "nodeName": "illegal*.nodename"}])),
        [invalid(f"{A0}.nodeName", '"illegal*.nodename"', SUBDOMAIN)]),
    "empty node name": (
        endpoints("foo", subset([], TCP_A, notReadyAddresses=[{"ip": "10.1.0.2",
                                                               "nodeName": ""}])),
        [invalid("subsets[0].notReadyAddresses[0].nodeName", '""', SUBDOMAIN)]),
    # not upstream cases: the IPv6 ranges, an IPv4-mapped loopback, a zone
    "unusable IPv6 addresses": (
        endpoints("mysvc", subset(["::", "fe80::1", "ff02::1", "::ffff:127.0.0.1",
                                   "fe80::1%eth0", "2001:db8::1"], TCP_A)), [
            invalid(f"{A0}.ip", '"::"', "may not be unspecified (::)"),
            invalid("subsets[0].addresses[1].ip", '"fe80::1"',
                    "may not be in the link-local range (169.254.0.0/16, fe80::/10)"),
            invalid("subsets[0].addresses[2].ip", '"ff02::1"',
                    "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"),
            invalid("subsets[0].addresses[3].ip", '"::ffff:127.0.0.1"',
                    "must not be an IPv4-mapped IPv6 address"),
            invalid("subsets[0].addresses[3].ip", '"::ffff:127.0.0.1"',
                    "may not be in the loopback range (127.0.0.0/8, ::1/128)"),
            invalid("subsets[0].addresses[4].ip", '"fe80::1%eth0"', BAD_IP),
            invalid("subsets[0].addresses[4].ip", '"fe80::1%eth0"',
                    "must be a valid IP address")]),
    "invalid hostname": (
        endpoints("foo", subset([], TCP_A, addresses=[{"ip": "10.1.0.2", "hostname": "a.b"}])),
        [invalid(f"{A0}.hostname", '"a.b"', "must not contain dots")]),
}


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_validate_endpoints_create_errors(any_api_server, case):
    body, expected = ERROR_CASES[case]
    assert causes_of(create_error(any_api_server, copy.deepcopy(body))) == expected


def test_an_invalid_endpoints_is_answered_with_every_cause_in_one_message(any_api_server):
    err = create_error(any_api_server, endpoints("ep", subset(["127.0.0.1"], [
        {"port": 0, "protocol": "TCP"}, {"name": "b", "port": 1, "protocol": "TCP"}])))
    assert err.status["message"] == (
        'Endpoints "ep" is invalid: [subsets[0].addresses[0].ip: Invalid value: "127.0.0.1": '
        "may not be in the loopback range (127.0.0.0/8, ::1/128), subsets[0].ports[0].name: "
        "Required value, subsets[0].ports[0].port: Invalid value: 0: must be between 1 and "
        "65535, inclusive]")
    assert err.status["details"]["kind"] == "Endpoints"
    assert any_api_server.get("endpoints", any_api_server.namespace, "ep") is None


# -- TestValidateEndpointsUpdate and TestEndpointAddressNodeNameUpdateRestrictions --------------


def test_validate_endpoints_update(any_api_server):
    s, ns = any_api_server, any_api_server.namespace
    base = endpoints("mysvc", subset(["10.1.2.3"], [{"name": "a", "port": 8675,
                                                     "protocol": "TCP"}]))
    stored = s.create(base, namespace=ns)
    stored["subsets"][0]["ports"][0]["appProtocol"] = "https"  # update to valid app protocol
    stored = s.update(stored)
    stored["subsets"][0]["ports"][0]["appProtocol"] = "~https"  # update to invalid app protocol
    with pytest.raises(StatusError) as info:
        s.update(stored)
    assert causes_of(info.value) == [invalid(f"{P0}.appProtocol", '"~https"', LABEL_KEY_NAME)]
    # NodeName changes are allowed (a node's IP or pod CIDR may be reused)
    node = s.create(endpoints("foo", subset([], [{"name": "https", "port": 443,
                                                  "protocol": "TCP"}], addresses=[{
        "ip": "8.8.8.8", "hostname": "zookeeper1",
        "nodeName": "kubernetes-node-setup-by-backend"}])), namespace=ns)
    node["subsets"][0]["addresses"][0]["nodeName"] = "kubernetes-changed-nodename"
    assert s.update(node)["subsets"][0]["addresses"][0]["nodeName"] == (
        "kubernetes-changed-nodename")


# -- labels and annotations ---------------------------------------------------------------------


def config_map(name: str, **meta: object) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}}


@pytest.mark.parametrize(("labels", "expected"), [
    ({"app": "bad value!"}, [invalid("metadata.labels", '"bad value!"', LABEL_VALUE)]),
    ({"app": "x" * 64}, [invalid("metadata.labels", '"' + "x" * 64 + '"',
                                 "must be no more than 63 bytes")]),
    ({"bad key!": "v"}, [invalid("metadata.labels", '"bad key!"', LABEL_KEY_NAME)]),
    ({"Example.com/a": "v"}, [invalid("metadata.labels", '"Example.com/a"',
                                      f"prefix part {SUBDOMAIN}")]),
    ({"a/b/c": "v"}, [invalid(
        "metadata.labels", '"a/b/c"',
        "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must "
        "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
        "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') "
        "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")]),
    ({"/a": "v"}, [invalid("metadata.labels", '"/a"', "prefix part must be non-empty")]),
    ({"k" * 64: ""}, [invalid("metadata.labels", '"' + "k" * 64 + '"',
                              "name part must be no more than 63 bytes")]),
])
def test_invalid_labels_are_422(any_api_server, labels, expected):
    err = create_error(any_api_server, config_map("c", labels=labels))
    assert causes_of(err) == expected
    assert err.status["message"] == f'ConfigMap "c" is invalid: {expected[0][1]}: {expected[0][2]}'


def test_valid_labels_and_an_empty_value_are_stored(any_api_server):
    labels = {"example.com/My_Name.1": "", "a": "A-b_c.9", "k" * 63: "v" * 63}
    stored = any_api_server.create(config_map("c", labels=labels),
                                   namespace=any_api_server.namespace)
    assert stored["metadata"]["labels"] == labels


def test_annotations_over_256_kib_in_total_are_422_on_create_and_update(any_api_server):
    s, ns = any_api_server, any_api_server.namespace
    too_long = ("FieldValueTooLong", "metadata.annotations",
                "Too long: may not be more than 262144 bytes")
    # keys and values count: exactly the limit is accepted, one byte more is not
    at_limit = {"a": "x" * (262144 - 1 - 1), "b": ""}
    stored = s.create(config_map("c", annotations=at_limit), namespace=ns)
    assert len(stored["metadata"]["annotations"]["a"]) == 262142
    stored["metadata"]["annotations"]["b"] = "y"
    with pytest.raises(StatusError) as info:
        s.update(stored)
    # an update checks the metadata four times and lists each cause that often
    assert causes_of(info.value) == [too_long] * 4
    assert info.value.status["message"] == (
        'ConfigMap "c" is invalid: metadata.annotations: Too long: may not be more than '
        "262144 bytes")
    with pytest.raises(StatusError) as info:
        s.patch("configmaps", ns, "c", {"metadata": {"annotations": {"b": "y"}}})
    assert causes_of(info.value) == [too_long] * 4
    err = create_error(s, config_map("d", annotations={"note": "é" * 131073}))  # 2 bytes each
    assert causes_of(err) == [too_long]


def test_invalid_annotation_keys_are_422_and_case_does_not_matter(any_api_server):
    s = any_api_server
    err = create_error(s, config_map("c", annotations={"bad key": "v"}))
    assert causes_of(err) == [invalid("metadata.annotations", '"bad key"', LABEL_KEY_NAME)]
    stored = s.create(config_map("d", annotations={"Example.COM/Note": "any value at all!"}),
                      namespace=s.namespace)
    assert stored["metadata"]["annotations"] == {"Example.COM/Note": "any value at all!"}


def test_invalid_labels_are_422_on_update_and_patch_of_any_kind(any_api_server):
    s, ns = any_api_server, any_api_server.namespace
    pod = s.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                    "spec": {"containers": [{"name": "c", "image": "registry.invalid/x:1"}]}},
                   namespace=ns)
    expected = [invalid("metadata.labels", '"-bad"', LABEL_VALUE)] * 4  # as above
    with pytest.raises(StatusError) as info:
        s.patch("pods", ns, "p", {"metadata": {"labels": {"app": "-bad"}}})
    assert causes_of(info.value) == expected
    pod["metadata"]["labels"] = {"app": "-bad"}
    with pytest.raises(StatusError) as info:
        s.update(pod)
    assert causes_of(info.value) == expected
    assert "labels" not in s.get("pods", ns, "p")["metadata"]
