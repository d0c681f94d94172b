"""Tests for controllers.endpoint.subsets: which pods count, their addresses, ports, subsets."""

from __future__ import annotations

import copy

import pytest

from controllers.endpoint.subsets import (
    canonical_ip,
    compute_subsets,
    endpoint_port_from_service_port,
    find_port,
    ip_family,
    is_ipv6_string,
    is_pod_ready,
    is_service_ip_set,
    pod_to_endpoint_address,
    should_pod_be_in_endpoints,
    should_set_hostname,
)

NS = "ns"


def make_pod(
    name="pod0",
    ips=("10.0.0.1",),
    ready=True,
    phase="Running",
    node="node-1",
    uid=None,
    ports=(("http", 8080, "TCP"),),
    deleting=False,
    hostname=None,
    subdomain=None,
    labels=None,
    namespace=NS,
):
    pod = {
        "metadata": {"name": name, "namespace": namespace, "uid": uid or f"uid-{name}",
                     "labels": labels if labels is not None else {"app": "web"}},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "ports": [
                {"name": n, "containerPort": p, "protocol": proto} for n, p, proto in ports
            ]}],
        },
        "status": {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }
    if ips:
        pod["status"]["podIP"] = ips[0]
        pod["status"]["podIPs"] = [{"ip": ip} for ip in ips]
    if deleting:
        pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if hostname is not None:
        pod["spec"]["hostname"] = hostname
    if subdomain is not None:
        pod["spec"]["subdomain"] = subdomain
    return pod


def make_service(
    name="svc",
    ports=({"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},),
    cluster_ip="10.96.0.10",
    families=None,
    publish_not_ready=False,
    selector=None,
):
    spec = {"selector": selector if selector is not None else {"app": "web"},
            "ports": [dict(p) if isinstance(p, dict) else p for p in ports]}
    if cluster_ip is not None:
        spec["clusterIP"] = cluster_ip
    if families is not None:
        spec["ipFamilies"] = list(families)
    if publish_not_ready:
        spec["publishNotReadyAddresses"] = True
    return {"metadata": {"name": name, "namespace": NS}, "spec": spec}


def address(pod_name, ip, node="node-1", hostname=None, namespace=NS):
    out = {"ip": ip}
    if hostname:
        out["hostname"] = hostname
    out["nodeName"] = node
    out["targetRef"] = {"kind": "Pod", "namespace": namespace, "name": pod_name,
                        "uid": f"uid-{pod_name}"}
    return out


HTTP = {"name": "http", "port": 8080, "protocol": "TCP"}


# -- which pods count -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("phase", "deleting", "include_terminating", "expected"),
    [
        ("Running", False, False, True),
        ("Pending", False, False, True),
        ("Unknown", False, False, True),
        ("", False, False, True),
        ("Failed", False, False, False),
        ("Succeeded", False, False, False),
        ("Failed", False, True, False),
        ("Succeeded", False, True, False),
        ("Running", True, False, False),
        ("Running", True, True, True),
        ("Pending", True, True, True),
    ],
)
def test_should_pod_be_in_endpoints(phase, deleting, include_terminating, expected):
    pod = make_pod(phase=phase, deleting=deleting)
    assert should_pod_be_in_endpoints(pod, include_terminating) is expected


def test_pods_without_any_ip_do_not_count_but_pod_ip_alone_does():
    assert not should_pod_be_in_endpoints(make_pod(ips=()), True)
    pod = make_pod(ips=())
    pod["status"]["podIP"] = "10.0.0.9"
    assert should_pod_be_in_endpoints(pod, False)
    # ... yet only podIPs are scanned for the address, so it gets none
    assert pod_to_endpoint_address(make_service(), pod) is None


def test_is_pod_ready_uses_the_first_ready_condition():
    pod = make_pod()
    pod["status"]["conditions"] = [
        {"type": "ContainersReady", "status": "True"},
        {"type": "Ready", "status": "False"},
        {"type": "Ready", "status": "True"},
    ]
    assert not is_pod_ready(pod)
    assert not is_pod_ready({"status": {}})
    assert not is_pod_ready({"status": {"conditions": "junk"}})


# -- addresses and IP families ----------------------------------------------------------------


def test_address_shape_has_node_name_and_target_ref_without_resource_version():
    pod = make_pod(node="")
    pod["metadata"]["resourceVersion"] = "42"
    assert pod_to_endpoint_address(make_service(), pod) == {
        "ip": "10.0.0.1", "nodeName": "",
        "targetRef": {"kind": "Pod", "namespace": NS, "name": "pod0", "uid": "uid-pod0"},
    }


def test_target_ref_leaves_out_empty_fields():
    pod = make_pod()
    del pod["metadata"]["uid"]
    assert pod_to_endpoint_address(make_service(), pod)["targetRef"] == {
        "kind": "Pod", "namespace": NS, "name": "pod0"
    }


DUAL_V4_FIRST = ("10.0.0.1", "fd00::1")
DUAL_V6_FIRST = ("fd00::1", "10.0.0.1")


@pytest.mark.parametrize(
    ("pod_ips", "cluster_ip", "families", "expected"),
    [
        (("10.0.0.1",), "10.96.0.1", None, "10.0.0.1"),
        (DUAL_V4_FIRST, "10.96.0.1", None, "10.0.0.1"),
        (DUAL_V6_FIRST, "10.96.0.1", None, "10.0.0.1"),
        (DUAL_V4_FIRST, "fd00:96::1", None, "fd00::1"),
        (("10.0.0.1",), "fd00:96::1", None, None),  # v6 service, v4-only pod
        # headless without families: the pod's primary IP decides
        (DUAL_V4_FIRST, "None", None, "10.0.0.1"),
        (DUAL_V6_FIRST, "None", None, "fd00::1"),
        (DUAL_V6_FIRST, "", None, "fd00::1"),
        # ipFamilies[0] wins over everything
        (DUAL_V4_FIRST, "None", ["IPv6"], "fd00::1"),
        (DUAL_V4_FIRST, "10.96.0.1", ["IPv6", "IPv4"], "fd00::1"),
        (DUAL_V6_FIRST, "fd00:96::1", ["IPv4", "IPv6"], "10.0.0.1"),
        (("fd00::1",), "None", ["IPv4"], None),
        (DUAL_V6_FIRST, "None", ["bogus"], "10.0.0.1"),  # anything but IPv6 means IPv4
    ],
)
def test_ip_family_selection(pod_ips, cluster_ip, families, expected):
    svc = make_service(cluster_ip=cluster_ip, families=families)
    got = pod_to_endpoint_address(svc, make_pod(ips=pod_ips))
    assert (got["ip"] if got else None) == expected


def test_malformed_pod_ips_are_skipped(caplog):
    pod = make_pod(ips=("not-an-ip", "10.0.0.7"))
    assert pod_to_endpoint_address(make_service(), pod)["ip"] == "10.0.0.7"
    assert "malformed status.podIPs entry 'not-an-ip'" in caplog.text
    pod["status"]["podIPs"] = [{"ip": 7}, "junk", {"ip": "10.0.0.8"}]
    assert pod_to_endpoint_address(make_service(), pod)["ip"] == "10.0.0.8"


def test_ip_family_parsing_follows_go():
    assert ip_family("10.0.0.1") == 4
    assert ip_family("010.000.000.001") == 4  # ParseIPSloppy keeps leading zeros
    assert ip_family("::ffff:10.0.0.1") == 4  # IPv4-mapped counts as IPv4
    assert ip_family("fd00::1") == 6
    assert ip_family("fe80::1%eth0") is None
    assert ip_family("") is None
    assert ip_family("300.1.1.1") is None
    assert not is_ipv6_string("garbage") and is_ipv6_string("::1")


def test_canonical_ip_is_what_go_net_ip_string_prints():
    assert canonical_ip("FD00::0A") == "fd00::a"
    assert canonical_ip("fd00:0010:0244:0000:0000:0000:0000:0010") == "fd00:10:244::10"
    assert canonical_ip("2001:db8:0:0:1:0:0:1") == "2001:db8::1:0:0:1"  # first longest run
    assert canonical_ip("fd00:0:1:1:1:1:1:1") == "fd00:0:1:1:1:1:1:1"  # one zero group stays
    assert canonical_ip("::ffff:10.0.0.1") == "10.0.0.1"
    assert canonical_ip("010.000.000.001") == "10.0.0.1"
    assert canonical_ip("10.0.0.1") == "10.0.0.1"
    assert canonical_ip("fe80::1%eth0") is None
    assert canonical_ip("junk") is None


def test_the_address_ip_is_canonical_as_kube_controller_manager_writes_it():
    # Found by tests/test_endpoint_differential.py: the real API server accepts pod IPs such as
    # "fd00:10:244::004a"; kube-controller-manager v1.36 writes "fd00:10:244::4a".
    pod = make_pod(ips=("10.0.0.1", "FD00:0010:0244::004A"))
    got = pod_to_endpoint_address(make_service(families=["IPv6"]), pod)
    assert got["ip"] == "fd00:10:244::4a"
    subsets = compute_subsets(make_service(families=["IPv6"]), [pod]).subsets
    assert [a["ip"] for a in subsets[0]["addresses"]] == ["fd00:10:244::4a"]


@pytest.mark.parametrize(
    ("hostname", "subdomain", "pod_ns", "expected"),
    [
        ("web-0", "svc", NS, True),
        ("", "svc", NS, False),
        ("web-0", "other", NS, False),
        ("web-0", None, NS, False),
        ("web-0", "svc", "elsewhere", False),
    ],
)
def test_should_set_hostname(hostname, subdomain, pod_ns, expected):
    pod = make_pod(hostname=hostname, subdomain=subdomain, namespace=pod_ns)
    assert should_set_hostname(pod, make_service()) is expected


# -- ports --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("service_port", "expected"),
    [
        ({"port": 80, "targetPort": 9090, "protocol": "TCP"}, 9090),
        ({"port": 80, "protocol": "TCP"}, 0),  # unset targetPort is int 0
        ({"port": 80, "targetPort": 0}, 0),
        ({"port": 80, "targetPort": 70000}, 70000),  # unvalidated
        ({"port": 80, "targetPort": "http", "protocol": "TCP"}, 8080),
        ({"port": 80, "targetPort": "http", "protocol": "UDP"}, None),  # protocol must match
        ({"port": 80, "targetPort": "http"}, None),  # "" != "TCP"
        ({"port": 80, "targetPort": "metrics", "protocol": "TCP"}, 9100),
        ({"port": 80, "targetPort": "nope", "protocol": "TCP"}, None),
        ({"port": 80, "targetPort": "8080", "protocol": "TCP"}, None),  # a string is a name
        ({"port": 80, "targetPort": "sidecar", "protocol": "TCP"}, 7000),
        ({"port": 80, "targetPort": "init", "protocol": "TCP"}, None),
        ({"port": 80, "targetPort": True}, None),
        ({"port": 80, "targetPort": 1.5}, None),
        ({"port": 80, "targetPort": {"x": 1}}, None),
    ],
)
def test_find_port(service_port, expected):
    pod = make_pod(ports=(("http", 8080, "TCP"), ("metrics", 9100, "TCP")))
    pod["spec"]["containers"].append(
        {"name": "c2", "ports": [{"name": "http", "containerPort": 1111, "protocol": "TCP"}]}
    )
    pod["spec"]["initContainers"] = [
        {"name": "i", "ports": [{"name": "init", "containerPort": 6000, "protocol": "TCP"}]},
        {"name": "s", "restartPolicy": "Always",
         "ports": [{"name": "sidecar", "containerPort": 7000, "protocol": "TCP"}]},
    ]
    assert find_port(pod, service_port) == expected


def test_endpoint_port_from_service_port():
    assert endpoint_port_from_service_port({"name": "test", "port": 80}, 8080) == {
        "name": "test", "port": 8080
    }
    assert endpoint_port_from_service_port(
        {"name": "test", "protocol": "TCP", "appProtocol": "http"}, 80
    ) == {"name": "test", "port": 80, "protocol": "TCP", "appProtocol": "http"}
    assert endpoint_port_from_service_port({"appProtocol": ""}, 80) == {
        "port": 80, "appProtocol": ""
    }


def test_is_service_ip_set():
    assert is_service_ip_set(make_service(cluster_ip="10.0.0.1"))
    assert not is_service_ip_set(make_service(cluster_ip="None"))
    assert not is_service_ip_set(make_service(cluster_ip=""))
    assert not is_service_ip_set(make_service(cluster_ip=None))


# -- whole subsets ------------------------------------------------------------------------------


def test_ready_and_not_ready_pods():
    pods = [make_pod("pod0", ("10.0.0.1",)), make_pod("pod1", ("10.0.0.2",), ready=False)]
    got = compute_subsets(make_service(), pods)
    assert got.subsets == [{
        "addresses": [address("pod0", "10.0.0.1")],
        "notReadyAddresses": [address("pod1", "10.0.0.2")],
        "ports": [HTTP],
    }]
    assert (got.ready, got.not_ready) == (1, 1)


def test_terminal_and_ip_less_pods_are_left_out():
    pods = [
        make_pod("failed", ("10.0.0.1",), phase="Failed"),
        make_pod("done", ("10.0.0.2",), phase="Succeeded", ready=False),
        make_pod("noip", ()),
        make_pod("ok", ("10.0.0.4",)),
    ]
    assert compute_subsets(make_service(), pods).subsets == [
        {"addresses": [address("ok", "10.0.0.4")], "ports": [HTTP]}
    ]
    assert compute_subsets(make_service(publish_not_ready=True), pods[:3]).subsets == []


def test_terminating_pods_without_publish_not_ready_are_left_out():
    pods = [make_pod("t", ("10.0.0.1",), deleting=True), make_pod("u", ("10.0.0.2",), ready=False,
                                                                   deleting=True)]
    assert compute_subsets(make_service(), pods).subsets == []


def test_publish_not_ready_makes_every_counted_pod_ready_even_terminating():
    pods = [
        make_pod("t", ("10.0.0.1",), deleting=True),
        make_pod("u", ("10.0.0.2",), ready=False),
        make_pod("v", ("10.0.0.3",), ready=False, deleting=True),
    ]
    got = compute_subsets(make_service(publish_not_ready=True), pods)
    assert got.subsets == [{
        "addresses": [address("t", "10.0.0.1"), address("u", "10.0.0.2"), address("v", "10.0.0.3")],
        "ports": [HTTP],
    }]


def test_named_ports_that_match_and_that_do_not():
    svc = make_service(ports=(
        {"name": "web", "port": 80, "targetPort": "http", "protocol": "TCP"},
        {"name": "metrics", "port": 9100, "targetPort": "metrics", "protocol": "TCP"},
    ))
    pods = [
        make_pod("a", ("10.0.0.1",), ports=(("http", 8080, "TCP"), ("metrics", 9100, "TCP"))),
        make_pod("b", ("10.0.0.2",), ports=(("http", 8081, "TCP"),)),
        make_pod("c", ("10.0.0.3",), ports=()),
    ]
    web = lambda n: {"name": "web", "port": n, "protocol": "TCP"}  # noqa: E731
    metrics = {"name": "metrics", "port": 9100, "protocol": "TCP"}
    # pinned Go order (FNV-1a 128 of spew dumps, kube-controller-manager v1.36.3)
    assert compute_subsets(svc, pods).subsets == [
        {"addresses": [address("a", "10.0.0.1")], "ports": [metrics, web(8080)]},
        {"addresses": [address("b", "10.0.0.2")], "ports": [web(8081)]},
    ]


def test_multiple_numeric_ports_pack_into_one_subset():
    svc = make_service(ports=(
        {"name": "port0", "port": 80, "targetPort": 8080, "protocol": "TCP"},
        {"name": "port1", "port": 88, "targetPort": 8088, "protocol": "TCP"},
    ))
    pods = [make_pod(f"pod{i}", (f"1.2.3.{4 + i}",), node="") for i in range(3)]
    assert compute_subsets(svc, pods).subsets == [{
        "addresses": [address(f"pod{i}", f"1.2.3.{4 + i}", node="") for i in range(3)],
        "ports": [{"name": "port1", "port": 8088, "protocol": "TCP"},
                  {"name": "port0", "port": 8080, "protocol": "TCP"}],
    }]


def test_headless_without_ports_gives_portless_subset():
    svc = make_service(ports=(), cluster_ip="None")
    pods = [make_pod("a", ("10.0.0.1",)), make_pod("b", ("10.0.0.2",), ready=False)]
    assert compute_subsets(svc, pods).subsets == [{
        "addresses": [address("a", "10.0.0.1")],
        "notReadyAddresses": [address("b", "10.0.0.2")],
    }]


def test_headless_with_ports_uses_the_ports():
    svc = make_service(cluster_ip="None")
    assert compute_subsets(svc, [make_pod("a", ("10.0.0.1",))]).subsets == [
        {"addresses": [address("a", "10.0.0.1")], "ports": [HTTP]}
    ]


def test_non_headless_service_without_ports_gets_nothing():
    for cluster_ip in ("10.96.0.1", "", None):
        svc = make_service(ports=(), cluster_ip=cluster_ip)
        assert compute_subsets(svc, [make_pod("a", ("10.0.0.1",))]).subsets == []


def test_dual_stack_service_uses_its_primary_family():
    pods = [make_pod("a", ("10.0.0.1", "fd00::1")), make_pod("b", ("fd00::2", "10.0.0.2"))]
    v6 = make_service(families=["IPv6", "IPv4"], cluster_ip="fd00:96::1")
    assert compute_subsets(v6, pods).subsets == [{
        "addresses": [address("a", "fd00::1"), address("b", "fd00::2")], "ports": [HTTP]
    }]
    v4 = make_service(families=["IPv4", "IPv6"])
    v4_only_pod = make_pod("c", ("fd00::3",))
    got = compute_subsets(v4, [*pods, v4_only_pod])
    assert got.subsets == [{
        "addresses": [address("a", "10.0.0.1"), address("b", "10.0.0.2")], "ports": [HTTP]
    }]
    assert got.skipped_pods == ["ns/c"]


def test_hostname_only_for_pods_in_the_services_subdomain():
    svc = make_service(name="svc", cluster_ip="None")
    pods = [
        make_pod("a", ("10.0.0.1",), hostname="web-0", subdomain="svc"),
        make_pod("b", ("10.0.0.2",), hostname="web-1", subdomain="other"),
        make_pod("c", ("10.0.0.3",), subdomain="svc"),
    ]
    assert compute_subsets(svc, pods).subsets == [{
        "addresses": [address("a", "10.0.0.1", hostname="web-0"), address("b", "10.0.0.2"),
                      address("c", "10.0.0.3")],
        "ports": [HTTP],
    }]


def test_app_protocol_is_copied():
    svc = make_service(ports=({"name": "h", "port": 80, "targetPort": 8080, "protocol": "TCP",
                               "appProtocol": "kubernetes.io/h2c"},))
    assert compute_subsets(svc, [make_pod()]).subsets[0]["ports"] == [
        {"name": "h", "port": 8080, "protocol": "TCP", "appProtocol": "kubernetes.io/h2c"}
    ]


def test_malformed_objects_never_raise_and_never_get_mutated():
    svc = make_service(ports=(
        {"port": 80, "targetPort": True},
        "junk",
        {"port": 81, "targetPort": 81, "protocol": "TCP"},
    ))
    pods = [
        {"metadata": {"name": "x", "namespace": NS}, "status": "junk"},
        {"metadata": {"name": "y", "namespace": NS},
         "status": {"podIPs": "junk", "podIP": 5, "conditions": [None, "x"]}},
        {"metadata": None, "spec": None, "status": {"podIPs": [{"ip": "10.0.0.9"}]}},
        "not a pod",
        make_pod("ok", ("10.0.0.1",)),
    ]
    before = copy.deepcopy(pods)
    got = compute_subsets(svc, pods)
    assert pods == before
    assert got.subsets == [{
        "addresses": [address("ok", "10.0.0.1")],
        "notReadyAddresses": [{"ip": "10.0.0.9", "nodeName": "", "targetRef": {"kind": "Pod"}}],
        "ports": [{"port": 81, "protocol": "TCP"}],
    }]


def test_memo_reuses_unchanged_pods_and_gives_the_same_result(monkeypatch):
    from controllers.endpoint import subsets as module
    from controllers.endpoint.subsets import PodEntryMemo

    service = make_service()
    pods = [make_pod(f"p{i}", ips=(f"10.0.0.{i + 1}",), ready=i != 1) for i in range(3)]
    pods.append(make_pod("noip", ips=()))
    pods.append(make_pod("v6", ips=("fd00::1",)))  # no IPv4: skipped
    computed_for: list[str] = []
    real = module.pod_to_endpoint_address

    def counting(svc, pod):
        computed_for.append(pod["metadata"]["name"])
        return real(svc, pod)

    monkeypatch.setattr(module, "pod_to_endpoint_address", counting)
    memo = PodEntryMemo()
    first = compute_subsets(service, pods, memo)
    assert computed_for == ["p0", "p1", "p2", "v6"]
    assert first == compute_subsets(service, pods)  # same as without a memo
    computed_for.clear()

    # p1 became ready: a new object (informers never modify a cached one); p2 is gone.
    pods[1] = make_pod("p1", ips=("10.0.0.2",), ready=True)
    del pods[2]
    second = compute_subsets(service, pods, memo)
    assert computed_for == ["p1"]
    assert second == compute_subsets(service, pods)
    assert (second.ready, second.not_ready, second.skipped_pods) == (2, 0, [f"{NS}/v6"])
    assert [entry[0] for entry in memo.entries.values()] == pods  # only the current pods kept
    computed_for.clear()

    # Another Service object (it changed): nothing is reused.
    third = compute_subsets(copy.deepcopy(service), pods, memo)
    assert computed_for == ["p0", "p1", "v6"]
    assert third == second


# -- kubernetes v1.36.3 pkg/controller/endpoint/endpoints_controller_test.go --------------------


def _test_pod(namespace, pod_id, families):
    """``testPod(namespace, id, 1, true, ipFamilies)``."""
    ips = [f"1.2.{3 + (4 + pod_id) // 256}.{(4 + pod_id) % 256}" if f == "IPv4"
           else f"2000::{4 + pod_id:x}" for f in families]
    return {
        "apiVersion": "v1",
        "metadata": {"namespace": namespace, "name": f"pod{pod_id}", "labels": {"foo": "bar"},
                     "resourceVersion": str(pod_id)},
        "spec": {"containers": [{"ports": [{"name": "port0", "containerPort": 8080}]}]},
        "status": {"conditions": [{"type": "Ready", "status": "True"}],
                   "podIPs": [{"ip": ip} for ip in ips], "podIP": ips[0]},
    }


def _add_bad_ip_pod(namespace, families):
    """``addBadIPPod``: a leading "0" on the first pod IP (``01.2.3.4``, ``02000::4``)."""
    pod = _test_pod(namespace, 0, families)
    pod["status"]["podIPs"][0]["ip"] = "0" + pod["status"]["podIPs"][0]["ip"]
    pod["status"]["podIP"] = pod["status"]["podIPs"][0]["ip"]
    return pod


V4, V6 = ["IPv4"], ["IPv6"]
V4V6, V6V4 = ["IPv4", "IPv6"], ["IPv6", "IPv4"]


@pytest.mark.parametrize(
    ("name", "ip_families", "cluster_ip", "service_families", "expected_family"),
    [
        ("v4 service, in a single stack cluster", V4, "10.0.0.1", V4, "IPv4"),
        ("v4 service, in a dual stack cluster", V4V6, "10.0.0.1", V4, "IPv4"),
        ("v4 service, in a dual stack ipv6-primary cluster", V6V4, "10.0.0.1", V4, "IPv4"),
        ("v4 headless service, in a single stack cluster", V4, "None", V4, "IPv4"),
        ("v4 headless service, in a dual stack cluster", V4V6, "None", V4, "IPv4"),
        ("v6 service, in a dual stack cluster", V4V6, "3000::1", V6, "IPv6"),
        ("v6 headless service, in a single stack cluster", V6, "None", V6, "IPv6"),
        ("v6 headless service, in a dual stack cluster", V4V6, "None", V6, "IPv6"),
        ("v6 service, in a v4 only cluster", V4, "3000::1", V6, None),  # expectError
    ],
)
def test_PodToEndpointAddressForService(name, ip_families, cluster_ip, service_families,
                                        expected_family):
    pod = _add_bad_ip_pod("test", ip_families)
    service = {"spec": {"clusterIP": cluster_ip, "ipFamilies": service_families}}
    epa = pod_to_endpoint_address(service, pod)
    if expected_family is None:
        assert epa is None  # Go: "failed to find a matching endpoint for service"
        return
    assert is_ipv6_string(epa["ip"]) == (expected_family == "IPv6")
    assert not epa["ip"].startswith("0")
    # the bad IP was fixed up, as Go's ParseIPSloppy + IP.String() do
    assert epa["ip"] == {"IPv4": "1.2.3.4", "IPv6": "2000::4"}[expected_family]
    assert epa["nodeName"] == ""
    assert epa["targetRef"] == {"kind": "Pod", "namespace": "test", "name": "pod0"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("02000::4", (6, "2000::4")),
        ("0002000::0004", (6, "2000::4")),
        ("::ffff:01.2.3.4", (4, "1.2.3.4")),
        ("1:2:3:4:5:6:1.2.3.4", (6, "1:2:3:4:5:6:102:304")),
        ("::", (6, "::")),
        ("1::", (6, "1::")),
        ("1:2:3:4:5:6:7:8", (6, "1:2:3:4:5:6:7:8")),
        ("0001.0002.0003.0004", (4, "1.2.3.4")),
        ("10000::1", None),  # a group over 0xFFFF
        ("1:2:3:4:5:6:7:8::", None),  # an ellipsis standing for no group
        ("1::2::3", None),
        ("1:2:3:4:5:6:7", None),
        ("1.2.3", None),
        ("1.2.3.4.", None),
        ("256.1.1.1", None),
        ("1:2:3:4:5:1.2.3.4", None),  # a trailing IPv4 in the wrong place
        ("fe80::1%eth0", None),
        ("12345", None),
        ("", None),
    ],
)
def test_parse_ip_sloppy_follows_go_1_16_net_parse_ip(text, expected):
    from controllers.endpoint.ip_sloppy import parse_ip_sloppy

    assert parse_ip_sloppy(text) == expected
