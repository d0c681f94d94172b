"""Tests for controllers.endpoint.repack (RepackSubsets, SortSubsets, subset equality).

Expected orders and hashes were produced by Go: k8s.io/kubernetes v1.36.3
pkg/api/v1/endpoints RepackSubsets / SortSubsets (FNV-1a 128 over DeepHashObject's spew dump)
and hash/fnv, then pinned here.
"""

from __future__ import annotations

import copy
import random

import pytest

from controllers.endpoint import repack
from controllers.endpoint.repack import (
    address_sort_key,
    normalize_address,
    normalize_port,
    normalize_subset,
    repack_subsets,
    sort_subsets,
    subsets_equal_ignore_resource_version,
)


def addr(ip, name, uid=None, node="", ns="ns"):
    ref = {"kind": "Pod", "namespace": ns, "name": name}
    if uid:
        ref["uid"] = uid
    return {"ip": ip, "nodeName": node, "targetRef": ref}


P0 = {"name": "port0", "port": 8080, "protocol": "TCP"}
P1 = {"name": "port1", "port": 8088, "protocol": "TCP"}


# -- the Go spew dump and its FNV-1a 128 (pinned from Go) ------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [  # Go: hex.EncodeToString(fnv.New128a() after Write(data)).Sum(nil))
        (b"", "6c62272e07bb014262b821756295c58d"),
        (b"a", "d228cb696f1a8caf78912b704e4a8964"),
        (b"foobar", "343e1662793c64bf6f0d3597ba446f18"),
    ],
)
def test_fnv128a_matches_go_hash_fnv(data, expected):
    assert format(repack._fnv128a(data), "032x") == expected


def test_spew_dump_hash_of_subset_matches_go():
    subset = {
        "addresses": [
            {"ip": "10.0.0.1", "nodeName": "n1",
             "targetRef": {"kind": "Pod", "namespace": "ns", "name": "a", "uid": "u1"}}
        ],
        "notReadyAddresses": [{"ip": "10.0.0.2", "hostname": "h"}],
        "ports": [{"name": "port0", "port": 8080, "protocol": "TCP", "appProtocol": "http"}],
    }
    assert format(repack._subset_hash(subset), "032x") == "30ded8632586d66bf316232a66504380"
    assert format(repack._port_hash(subset["ports"][0]), "032x") == (
        "b003091a1abb32eb373da34580cdbb95"
    )
    assert format(repack._subset_hash({"addresses": [{"ip": "fd00::1"}]}), "032x") == (
        "2faba91a4d3ac50a4a12936ac5cda230"
    )


# -- normalization ----------------------------------------------------------------------------


def test_normalize_address_keeps_pointer_fields_and_drops_empty_strings():
    raw = {
        "ip": "1.2.3.4", "hostname": "", "nodeName": "", "extra": 1,
        "targetRef": {"kind": "Pod", "name": "p", "uid": "", "resourceVersion": "7"},
    }
    assert normalize_address(raw) == {
        "ip": "1.2.3.4", "nodeName": "",
        "targetRef": {"kind": "Pod", "name": "p", "resourceVersion": "7"},
    }
    assert normalize_address({"ip": "1.2.3.4", "nodeName": None}) == {"ip": "1.2.3.4"}
    assert normalize_address({"ip": "1.2.3.4", "targetRef": {}}) == {
        "ip": "1.2.3.4", "targetRef": {}
    }


def test_normalize_port_always_has_port_and_keeps_empty_app_protocol():
    assert normalize_port({"name": "", "protocol": "", "appProtocol": ""}) == {
        "port": 0, "appProtocol": ""
    }
    assert normalize_port({"name": "a", "port": 80, "protocol": "UDP"}) == {
        "name": "a", "port": 80, "protocol": "UDP"
    }
    assert normalize_port({"port": "80"}) == {"port": 0}
    assert normalize_port({"port": True}) == {"port": 0}


def test_normalize_subset_drops_empty_lists_and_non_dict_entries():
    assert normalize_subset({"addresses": [], "notReadyAddresses": None, "ports": []}) == {}
    assert normalize_subset({"addresses": ["x", {"ip": "1.1.1.1"}], "ports": "bad"}) == {
        "addresses": [{"ip": "1.1.1.1"}]
    }


# -- repacking ----------------------------------------------------------------------------------


def test_empty_input_gives_empty_list():
    assert repack_subsets([]) == []
    assert repack_subsets([{}]) == []
    assert repack_subsets([{"ports": [P0]}]) == []


def test_two_pods_two_ports_become_one_subset_in_go_port_order():
    got = repack_subsets([
        {"addresses": [addr("1.2.3.5", "pod1")], "ports": [P1]},
        {"addresses": [addr("1.2.3.4", "pod0")], "ports": [P0]},
        {"addresses": [addr("1.2.3.4", "pod0")], "ports": [P1]},
        {"addresses": [addr("1.2.3.5", "pod1")], "ports": [P0]},
    ])
    assert got == [{
        "addresses": [addr("1.2.3.4", "pod0"), addr("1.2.3.5", "pod1")],
        "ports": [P1, P0],
    }]


def test_different_port_sets_give_subsets_in_go_hash_order():
    got = repack_subsets([
        {"addresses": [addr("10.0.0.1", "a", "u1")], "ports": [P0]},
        {"addresses": [addr("10.0.0.1", "a", "u1")], "ports": [P1]},
        {"addresses": [addr("10.0.0.2", "b", "u2")], "ports": [P0]},
    ])
    assert got == [
        {"addresses": [addr("10.0.0.1", "a", "u1")], "ports": [P1]},
        {"addresses": [addr("10.0.0.1", "a", "u1"), addr("10.0.0.2", "b", "u2")], "ports": [P0]},
    ]


def test_ready_and_not_ready_share_a_subset_per_port_in_go_order():
    got = repack_subsets([
        {"addresses": [addr("10.0.0.1", "a", "u1")], "ports": [P0]},
        {"notReadyAddresses": [addr("10.0.0.2", "b", "u2")], "ports": [P0]},
        {"addresses": [addr("10.0.0.3", "c", "u3")], "ports": [P1]},
    ])
    assert got == [
        {"addresses": [addr("10.0.0.3", "c", "u3")], "ports": [P1]},
        {
            "addresses": [addr("10.0.0.1", "a", "u1")],
            "notReadyAddresses": [addr("10.0.0.2", "b", "u2")],
            "ports": [P0],
        },
    ]


def test_ports_sorted_by_go_hash_not_by_number():
    ports = [
        {"name": "http", "port": 80, "protocol": "TCP"},
        {"name": "https", "port": 443, "protocol": "TCP"},
        {"name": "dns", "port": 53, "protocol": "UDP"},
    ]
    a = addr("10.0.0.1", "a", "u1")
    got = repack_subsets([{"addresses": [a], "ports": [p]} for p in ports])
    assert got == [{"addresses": [a], "ports": [ports[0], ports[1], ports[2]]}]
    got = repack_subsets([{"addresses": [a], "ports": ports[::-1]}])
    assert got == [{"addresses": [a], "ports": [ports[0], ports[1], ports[2]]}]


def test_not_ready_wins_over_ready_for_the_same_port():
    a = addr("10.0.0.1", "a", "u1")
    got = repack_subsets([
        {"addresses": [a], "ports": [P0]},
        {"notReadyAddresses": [a], "ports": [P0]},
        {"addresses": [a], "ports": [P0]},
    ])
    assert got == [{"notReadyAddresses": [a], "ports": [P0]}]


def test_first_occurrence_of_an_address_identity_wins():
    first = {"ip": "10.0.0.1", "nodeName": "n1",
             "targetRef": {"kind": "Pod", "name": "x", "uid": "u"}}
    later = {"ip": "10.0.0.1", "nodeName": "n2",
             "targetRef": {"kind": "Pod", "name": "y", "uid": "u"}}
    got = repack_subsets(
        [{"addresses": [first], "ports": [P0]}, {"addresses": [later], "ports": [P1]}]
    )
    assert got == [{"addresses": [first], "ports": [P1, P0]}]


def test_same_ip_different_uid_are_two_addresses_sorted_by_uid():
    a = {"ip": "10.0.0.1", "targetRef": {"kind": "Pod", "uid": "b"}}
    b = {"ip": "10.0.0.1", "targetRef": {"kind": "Pod", "uid": "a"}}
    c = {"ip": "10.0.0.1"}
    got = repack_subsets([{"addresses": [a, b, c], "ports": [P0]}])
    assert got == [{"addresses": [c, b, a], "ports": [P0]}]


def test_portless_subsets_keep_their_addresses_without_ports():
    a, b = addr("10.0.0.2", "b"), addr("10.0.0.1", "a")
    got = repack_subsets([{"addresses": [a]}, {"addresses": [b]}])
    assert got == [{"addresses": [b, a]}]


def test_port_zero_contributes_no_port_entry():
    a = addr("10.0.0.1", "a")
    assert repack_subsets([{"addresses": [a], "ports": [{"port": 0, "protocol": "TCP"}]}]) == [
        {"addresses": [a]}
    ]
    # merged with a real port offered by the same addresses, the 0 simply disappears
    assert repack_subsets([
        {"addresses": [a], "ports": [{"port": 0, "protocol": "TCP"}, P0]},
    ]) == [{"addresses": [a], "ports": [P0]}]


def test_addresses_sort_by_ip_bytes_not_numerically():
    ips = ["10.0.0.10", "10.0.0.9", "10.0.0.100", "fd00::1", "9.0.0.1"]
    got = repack_subsets([{"addresses": [addr(ip, ip)], "ports": [P0]} for ip in ips])
    assert [a["ip"] for a in got[0]["addresses"]] == [
        "10.0.0.10", "10.0.0.100", "10.0.0.9", "9.0.0.1", "fd00::1"
    ]


def test_input_is_not_mutated_and_output_is_order_independent():
    rng = random.Random(5)
    raw = []
    for i in range(30):
        field = "addresses" if i % 3 else "notReadyAddresses"
        raw.append({
            field: [addr(f"10.0.{i % 4}.{i}", f"p{i}", f"u{i}")],
            "ports": [P0 if i % 2 else P1],
        })
    before = copy.deepcopy(raw)
    expected = repack_subsets(raw)
    assert raw == before
    for _ in range(5):
        shuffled = raw[:]
        rng.shuffle(shuffled)
        assert repack_subsets(shuffled) == expected
    assert repack_subsets(expected) == expected  # idempotent


def test_sort_subsets_sorts_each_level_and_normalizes():
    subsets = [
        {"addresses": [addr("10.0.0.2", "b"), addr("10.0.0.1", "a")], "ports": [P0, P1]},
    ]
    assert sort_subsets(subsets) == [
        {"addresses": [addr("10.0.0.1", "a"), addr("10.0.0.2", "b")], "ports": [P1, P0]}
    ]


def test_address_sort_key_orders_missing_target_ref_first():
    with_ref = {"ip": "1.1.1.1", "targetRef": {"uid": ""}}
    without = {"ip": "1.1.1.1"}
    assert address_sort_key(without) < address_sort_key(with_ref)


# -- equality -----------------------------------------------------------------------------------


def test_equality_nil_and_empty_are_equal():
    assert subsets_equal_ignore_resource_version(None, [])
    assert subsets_equal_ignore_resource_version([], [])
    assert subsets_equal_ignore_resource_version(
        [{"addresses": [], "ports": [P0]}], [{"ports": [P0]}]
    )


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda s: s[0]["addresses"][0]["targetRef"].update(resourceVersion="100"), True),
        (lambda s: s[0]["addresses"][0]["targetRef"].pop("resourceVersion"), True),
        (lambda s: s[0]["addresses"][0].update(ip="1.1.1.10"), False),
        (lambda s: s[1]["notReadyAddresses"][0].update(ip="2.2.2.10"), False),
        (lambda s: s[0]["ports"][0].update(port=8082), False),
        (lambda s: s.pop(), False),
        (lambda s: s.reverse(), False),
        (lambda s: s[0]["addresses"][0].pop("nodeName"), False),
        (lambda s: s[0]["addresses"][0].update(nodeName="other"), False),
        (lambda s: s[0]["addresses"][0].update(hostname="h"), False),
        (lambda s: s[0]["addresses"][0]["targetRef"].update(uid="x"), False),
        (lambda s: s[0]["ports"][0].update(appProtocol=""), False),
    ],
)
def test_equality_ignores_only_target_resource_version(mutate, expected):
    es1 = {
        "addresses": [{"ip": "1.1.1.1", "nodeName": "",
                       "targetRef": {"kind": "Pod", "name": "pod1-1", "namespace": "ns",
                                     "resourceVersion": "1"}}],
        "notReadyAddresses": [{"ip": "1.1.1.2",
                               "targetRef": {"kind": "Pod", "name": "pod1-2", "namespace": "ns2",
                                             "resourceVersion": "2"}}],
        "ports": [{"port": 8081, "protocol": "TCP"}],
    }
    es2 = {
        "addresses": [{"ip": "2.2.2.1",
                       "targetRef": {"kind": "Pod", "name": "pod2-1", "namespace": "ns",
                                     "resourceVersion": "3"}}],
        "notReadyAddresses": [{"ip": "2.2.2.2",
                               "targetRef": {"kind": "Pod", "name": "pod2-2", "namespace": "ns2",
                                             "resourceVersion": "4"}}],
        "ports": [{"port": 8082, "protocol": "TCP"}],
    }
    a = [es1, es2]
    b = copy.deepcopy(a)
    mutate(b)
    assert subsets_equal_ignore_resource_version(a, b) is expected


def test_equality_tolerates_malformed_subsets():
    assert not subsets_equal_ignore_resource_version(["junk"], [])
    assert not subsets_equal_ignore_resource_version({"not": "a list"}, [])
    assert subsets_equal_ignore_resource_version([{"addresses": "junk"}], [{}])


def test_dump_hashes_are_cached_and_equal_to_the_plain_hash() -> None:
    from controllers.endpoint import repack

    dump = "(v1.EndpointPort){Name:(string)a Port:(int32)80}"
    expected = repack._fnv128a(dump.encode())
    assert repack._dump_hash(dump) == expected
    assert repack._hash_cache[dump.encode()] == (len(dump), expected)
    assert repack._dump_hash(dump) == expected  # served from the cache
    assert repack._hash_cache.maxsize == 16 * 1024 * 1024


def test_readiness_digest_maps_ip_and_port_to_readiness_with_not_ready_winning():
    from controllers.endpoint.repack import readiness_digest

    http = {"name": "http", "port": 80, "protocol": "TCP"}
    subsets = [
        {"addresses": [addr("10.0.0.1", "a"), addr("10.0.0.2", "b")], "ports": [http]},
        {"addresses": [addr("10.0.0.2", "b")], "notReadyAddresses": [addr("10.0.0.3", "c")],
         "ports": [http, {"port": 90, "appProtocol": "h2c"}]},
        {"notReadyAddresses": [addr("10.0.0.1", "a")], "ports": [http]},
    ]
    assert readiness_digest(subsets) == {
        ("10.0.0.1", ("http", 80, "TCP", None)): False,  # not ready in the last subset
        ("10.0.0.2", ("http", 80, "TCP", None)): True,
        ("10.0.0.2", ("", 90, "", "h2c")): True,
        ("10.0.0.3", ("http", 80, "TCP", None)): False,
        ("10.0.0.3", ("", 90, "", "h2c")): False,
    }


@pytest.mark.parametrize("subsets", [
    None, {"addresses": []}, [1], [{"addresses": [{"ip": "10.0.0.1"}]}],
    [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 0}]}],
])
def test_readiness_digest_declines_what_repacking_files_under_the_sentinel(subsets):
    from controllers.endpoint.repack import readiness_digest

    assert readiness_digest(subsets) is None


@pytest.mark.parametrize("seed", range(40))
def test_readiness_digest_is_the_same_for_subsets_that_compare_equal(seed):
    import random

    from controllers.endpoint.repack import readiness_digest

    rng = random.Random(seed)
    ports = [{"name": n, "port": p, "protocol": "TCP"} for n, p in (("a", 80), ("b", 81))]
    subsets = []
    for _ in range(rng.randint(1, 4)):
        subset = {"ports": rng.sample(ports, rng.randint(1, 2))}
        for field in ("addresses", "notReadyAddresses"):
            picked = [addr(f"10.0.0.{i}", f"p{i}", uid=f"u{i}")
                      for i in rng.sample(range(6), rng.randint(0, 3))]
            if picked:
                subset[field] = picked
        subsets.append(subset)
    repacked = repack_subsets(subsets)
    # Repacking, reordering and normalizing keep the digest (the shortcut's premise) ...
    assert readiness_digest(repacked) == readiness_digest(subsets)
    assert readiness_digest(list(reversed(subsets))) == readiness_digest(subsets)
    assert readiness_digest(sort_subsets(subsets)) == readiness_digest(subsets)
    # ... and a readiness flip changes it (one address per IP: the repacked form holds each
    # (IP, port) once).
    flipped = [dict(s) for s in repacked]
    first = flipped[0]
    if first.get("addresses"):
        moved, rest = first["addresses"][0], first["addresses"][1:]
        first["addresses"] = rest
        first["notReadyAddresses"] = [moved, *first.get("notReadyAddresses", [])]
        assert readiness_digest(flipped) != readiness_digest(subsets)
