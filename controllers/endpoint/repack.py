"""Repacks Endpoints subsets into their canonical layout and compares subsets like Kubernetes.

The Python counterpart of ``pkg/api/v1/endpoints/util.go`` (``RepackSubsets``, ``SortSubsets``,
``LessEndpointAddress``) and of the endpoints controller's
``endpointSubsetsEqualIgnoreResourceVersion``.

Subsets are plain dicts in the API's JSON form (``{"addresses": [...], "notReadyAddresses":
[...], "ports": [...]}``). Every function here returns them *normalized* the way Go's JSON
encoder writes a ``v1.EndpointSubset``: unknown keys dropped, empty lists and empty
``omitempty`` strings left out, ``nodeName`` and ``appProtocol`` present whenever they were set
(even to ``""``, as Go's pointers are), and ``port`` always present.

Ordering is reproduced exactly: addresses sort by IP bytes then target UID, and ports and
subsets sort by the 128-bit FNV-1a hash (Go's ``hash/fnv.New128a``, as util.go's
``portsByHash`` / ``subsetsByHash`` use since Kubernetes 1.36) of the Go ``spew`` dump (``%#v``
with ``k8s.io/utils/dump.ForHash``'s settings, fed by ``pkg/util/hash.DeepHashObject``) of the
Go struct, which this module builds byte for byte. So the subsets written by our controller are
in the very order kube-controller-manager v1.36 writes them, and a takeover from it causes no
rewrite.

All functions are pure and thread-safe; inputs are never mutated.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeGuard

from cachetools import LRUCache

__all__ = [
    "SENTINEL_PORT_RECORD",
    "AddressRecord",
    "PortRecord",
    "address_record",
    "address_sort_key",
    "normalize_address",
    "normalize_port",
    "normalize_subset",
    "port_record",
    "readiness_digest",
    "repack_normalized",
    "repack_records",
    "repack_subsets",
    "sort_subsets",
    "subsets_equal_ignore_resource_version",
]

# ObjectReference fields in Go struct order with their JSON names and spew type names
# (k8s.io/api core/v1 types.go ObjectReference).
_REF_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("kind", "Kind", "string"),
    ("namespace", "Namespace", "string"),
    ("name", "Name", "string"),
    ("uid", "UID", "types.UID"),
    ("apiVersion", "APIVersion", "string"),
    ("resourceVersion", "ResourceVersion", "string"),
    ("fieldPath", "FieldPath", "string"),
)

# The port of the sentinel a port-less subset is filed under (util.go: "Don't discard endpoints
# with no ports defined, use a sentinel"); ports <= 0 never make it into the output.
_SENTINEL_PORT = -1


def _is_map(value: Any) -> TypeGuard[Mapping[str, Any]]:
    # JSON decodes to dict; the ABC check is only the slow fallback for other mappings.
    return type(value) is dict or isinstance(value, Mapping)


def _text(value: Any) -> str:
    """A string field as Go would hold it: absent/null -> ``""``."""
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _optional_text(value: Any) -> str | None:
    """A ``*string`` field: absent/null -> ``None`` (nil), anything else -> the string."""
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def _int(value: Any) -> int:
    """An int32 field; anything that is not an integer counts as Go's zero value."""
    if isinstance(value, bool) or not isinstance(value, int):
        return 0
    return value


def _normalize_ref(ref: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    if not _is_map(ref):
        return out
    for json_name, _go, _type in _REF_FIELDS:
        text = _text(ref.get(json_name))
        if text:
            out[json_name] = text
    return out


def normalize_address(address: Mapping[str, Any]) -> dict[str, Any]:
    """A ``v1.EndpointAddress`` dict exactly as Go's JSON encoder would write it."""
    out: dict[str, Any] = {"ip": _text(address.get("ip"))}
    hostname = _text(address.get("hostname"))
    if hostname:
        out["hostname"] = hostname
    node_name = _optional_text(address.get("nodeName"))
    if node_name is not None:
        out["nodeName"] = node_name
    ref = address.get("targetRef")
    if ref is not None:
        out["targetRef"] = _normalize_ref(ref)
    return out


def normalize_port(port: Mapping[str, Any]) -> dict[str, Any]:
    """A ``v1.EndpointPort`` dict exactly as Go's JSON encoder would write it."""
    out: dict[str, Any] = {}
    name = _text(port.get("name"))
    if name:
        out["name"] = name
    out["port"] = _int(port.get("port"))
    protocol = _text(port.get("protocol"))
    if protocol:
        out["protocol"] = protocol
    app_protocol = _optional_text(port.get("appProtocol"))
    if app_protocol is not None:
        out["appProtocol"] = app_protocol
    return out


def _dicts(value: Any) -> list[Mapping[str, Any]]:
    if not isinstance(value, list):
        return []
    return [item for item in value if _is_map(item)]


def normalize_subset(subset: Mapping[str, Any]) -> dict[str, Any]:
    """A ``v1.EndpointSubset`` dict as Go writes it (empty lists left out, order kept)."""
    out: dict[str, Any] = {}
    ready = [normalize_address(a) for a in _dicts(subset.get("addresses"))]
    if ready:
        out["addresses"] = ready
    not_ready = [normalize_address(a) for a in _dicts(subset.get("notReadyAddresses"))]
    if not_ready:
        out["notReadyAddresses"] = not_ready
    ports = [normalize_port(p) for p in _dicts(subset.get("ports"))]
    if ports:
        out["ports"] = ports
    return out


# -- ordering ---------------------------------------------------------------------------------


def address_sort_key(address: Mapping[str, Any]) -> tuple[bytes, int, bytes]:
    """Sort key of ``LessEndpointAddress``: IP bytes, then no-targetRef first, then UID bytes."""
    ip = _text(address.get("ip")).encode()
    ref = address.get("targetRef")
    if ref is None:
        return (ip, 0, b"")
    uid = _text(ref.get("uid")) if _is_map(ref) else ""
    return (ip, 1, uid.encode())


def _address_identity(address: Mapping[str, Any]) -> tuple[str, str]:
    """util.go ``addressKey``: (IP, targetRef UID or "")."""
    ref = address.get("targetRef")
    uid = _text(ref.get("uid")) if _is_map(ref) else ""
    return (_text(address.get("ip")), uid)


def _spew_address(address: Mapping[str, Any]) -> str:
    """spew ``%#v`` of a ``v1.EndpointAddress`` inside a slice (no leading type)."""
    node_name = address.get("nodeName")
    node = "(*string)<nil>" if node_name is None else "(*string)" + node_name
    ref = address.get("targetRef")
    if ref is None:
        target = "(*v1.ObjectReference)<nil>"
    else:
        fields = " ".join(
            f"{go}:({type_name}){ref.get(json_name, '')}"
            for json_name, go, type_name in _REF_FIELDS
        )
        target = "(*v1.ObjectReference){" + fields + "}"
    return (
        "{IP:(string)" + address.get("ip", "")
        + " Hostname:(string)" + address.get("hostname", "")
        + " NodeName:" + node + " TargetRef:" + target + "}"
    )


def _spew_port_fields(port: Mapping[str, Any]) -> str:
    app = port.get("appProtocol")
    app_text = "(*string)<nil>" if app is None else "(*string)" + app
    return (
        "{Name:(string)" + port.get("name", "")
        + " Port:(int32)" + str(port.get("port", 0))
        + " Protocol:(v1.Protocol)" + port.get("protocol", "")
        + " AppProtocol:" + app_text + "}"
    )


def _spew_list(items: Sequence[str]) -> str:
    # Repacked subsets hold nil slices where empty, which spew prints as <nil>.
    return "[" + " ".join(items) + "]" if items else "<nil>"


# FNV-1a, 128 bits (Go hash/fnv fnv.go: offset128Higher/Lower, prime128Shift/Lower).
_FNV128_OFFSET = 0x6C62272E07BB014262B821756295C58D
_FNV128_PRIME = 0x0000000001000000000000000000013B
_MASK128 = (1 << 128) - 1


def _fnv128a(data: bytes) -> int:
    """FNV-1a 128 of ``data`` as an int; ``Sum(nil)`` is its 16 big-endian bytes, so comparing
    these ints orders like Go's ``bytes.Compare`` of the sums."""
    h = _FNV128_OFFSET
    prime = _FNV128_PRIME
    mask = _MASK128
    for byte in data:
        h = ((h ^ byte) * prime) & mask
    return h


# Pure-Python FNV-128a costs about 130 ns a byte, and a subset's dump holds every address, so
# the hashes of recent dumps are kept: resyncs and repeated syncs of an unchanged Service
# rehash the same dumps. Bounded by the total size of the dumps kept (16 MiB).
_HASH_CACHE_BYTES = 16 * 1024 * 1024
# Values are (size of the dump, hash): cachetools sizes entries by their value.
_hash_cache: LRUCache[bytes, tuple[int, int]] = LRUCache(
    maxsize=_HASH_CACHE_BYTES, getsizeof=lambda entry: entry[0]
)
_hash_cache_lock = threading.Lock()


def _dump_hash(dump: str) -> int:
    """``_fnv128a`` of a spew dump, through the bounded cache. Thread-safe."""
    data = dump.encode()
    with _hash_cache_lock:
        cached = _hash_cache.get(data)
    if cached is not None:
        return cached[1]
    value = _fnv128a(data)
    if len(data) <= _HASH_CACHE_BYTES:
        with _hash_cache_lock:
            _hash_cache[data] = (len(data), value)
    return value


def _port_hash(port: Mapping[str, Any]) -> int:
    return _dump_hash("(v1.EndpointPort)" + _spew_port_fields(port))


def _subset_hash(subset: Mapping[str, Any]) -> int:
    dump = (
        "(v1.EndpointSubset){Addresses:([]v1.EndpointAddress)"
        + _spew_list([_spew_address(a) for a in subset.get("addresses", ())])
        + " NotReadyAddresses:([]v1.EndpointAddress)"
        + _spew_list([_spew_address(a) for a in subset.get("notReadyAddresses", ())])
        + " Ports:([]v1.EndpointPort)"
        + _spew_list([_spew_port_fields(p) for p in subset.get("ports", ())])
        + "}"
    )
    return _dump_hash(dump)


def sort_subsets(subsets: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``SortSubsets``: normalize, then sort addresses, ports and the subsets themselves.

    Addresses (ready and not ready) by :func:`address_sort_key`; ports and subsets by the
    FNV-1a 128 sum of their Go spew dump, compared as big-endian bytes, as util.go's
    ``portsByHash`` and ``subsetsByHash`` do. Returns a new list.
    """
    return _sort_normalized([normalize_subset(subset) for subset in subsets])


def _sort_normalized(out: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Sort normalized subsets in place (their lists too) and return them."""
    for norm in out:
        for field in ("addresses", "notReadyAddresses"):
            if field in norm:
                norm[field].sort(key=address_sort_key)
        ports = norm.get("ports")
        if ports is not None and len(ports) > 1:  # a lone entry needs no hash (Go: no Less call)
            ports.sort(key=_port_hash)
    if len(out) > 1:
        out.sort(key=_subset_hash)
    return out


# -- repacking --------------------------------------------------------------------------------


def _port_identity(port: Mapping[str, Any]) -> tuple[str, int, str, str | None]:
    return (port.get("name", ""), port["port"], port.get("protocol", ""), port.get("appProtocol"))


def repack_subsets(subsets: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``RepackSubsets``: expand subsets to (port, address, ready) and regroup canonically.

    * An address is identified by (IP, targetRef UID); the first occurrence's full address is
      kept and later duplicates are dropped.
    * Per port, an address that is not ready anywhere stays not ready ("not ready always
      trumps ready").
    * Ports offered by exactly the same (address, ready) set form one subset. A subset without
      ports is filed under a sentinel port -1; ports <= 0 (the sentinel, or a real 0) add no
      port entry, so such an address set yields a subset without ``ports``.
    * The result is sorted with :func:`sort_subsets`; empty input gives ``[]``.

    Returns new normalized dicts; the input is not modified.
    """
    return repack_normalized([normalize_subset(subset) for subset in subsets])


AddressRecord = tuple[tuple[str, str], tuple[bytes, int, bytes], dict[str, Any]]
"""A normalized address with its identity (util.go ``addressKey``: IP, targetRef UID) and its
:func:`address_sort_key`, worked out once."""

PortRecord = tuple[tuple[str, int, str, "str | None"], dict[str, Any]]
"""A normalized port with its identity (name, number, protocol, appProtocol)."""

SENTINEL_PORT_RECORD: PortRecord = (("", _SENTINEL_PORT, "", None), {"port": _SENTINEL_PORT})
"""What a subset without ports is filed under (util.go: "Don't discard endpoints with no ports
defined, use a sentinel"); it adds no port to the output."""


def address_record(address: dict[str, Any]) -> AddressRecord:
    """The :data:`AddressRecord` of a normalized address."""
    return (_address_identity(address), address_sort_key(address), address)


def port_record(port: dict[str, Any]) -> PortRecord:
    """The :data:`PortRecord` of a normalized port."""
    return (_port_identity(port), port)


def repack_normalized(subsets: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """:func:`repack_subsets` for subsets already in normalized form (as
    :func:`normalize_subset` returns them), skipping the normalization. Address and port dicts
    of the input are shared with the result, never modified."""
    records: list[tuple[AddressRecord, bool, PortRecord]] = []
    for norm in subsets:
        ports = [port_record(p) for p in norm.get("ports") or ()] or [SENTINEL_PORT_RECORD]
        addresses = [(address_record(a), True) for a in norm.get("addresses", ())]
        addresses += [(address_record(a), False) for a in norm.get("notReadyAddresses", ())]
        for port in ports:
            for address, ready in addresses:
                records.append((address, ready, port))
    return repack_records(records)


def repack_records(
    records: Iterable[tuple[AddressRecord, bool, PortRecord]],
) -> list[dict[str, Any]]:
    """The repacking of :func:`repack_subsets`, from the (address, ready, port) triples the
    subsets expand to, in the order they expand to them (ports in the outer loop, then ready
    addresses, then not-ready ones): the first occurrence of an address is the one kept.
    Address and port dicts are shared with the result, never modified."""
    all_addresses: dict[tuple[str, str], AddressRecord] = {}
    # port identity -> (normalized port, {address identity: ready})
    port_map: dict[tuple[str, int, str, str | None], tuple[dict[str, Any], dict[Any, bool]]] = {}
    for address, ready, (pid, port) in records:
        identity = address[0]
        if identity not in all_addresses:
            all_addresses[identity] = address
        entry = port_map.get(pid)
        if entry is None:
            entry = port_map[pid] = (port, {})
        readiness = entry[1]
        if readiness.get(identity, True):
            readiness[identity] = ready

    # Group ports by their exact (address, ready) set.
    groups: dict[frozenset[tuple[Any, bool]], list[dict[str, Any]]] = {}
    for port, readiness in port_map.values():
        ports_of_group = groups.setdefault(frozenset(readiness.items()), [])
        if port["port"] > 0:
            ports_of_group.append(port)

    def by_sort_key(record: AddressRecord) -> tuple[bytes, int, bytes]:
        return record[1]

    final = []
    for key, ports in groups.items():
        ready_records = sorted(
            (all_addresses[ident] for ident, ready in key if ready), key=by_sort_key)
        not_ready_records = sorted(
            (all_addresses[ident] for ident, ready in key if not ready), key=by_sort_key)
        subset_out: dict[str, Any] = {}
        if ready_records:
            subset_out["addresses"] = [record[2] for record in ready_records]
        if not_ready_records:
            subset_out["notReadyAddresses"] = [record[2] for record in not_ready_records]
        if ports:
            if len(ports) > 1:  # a lone entry needs no hash (Go: no Less call)
                ports.sort(key=_port_hash)
            subset_out["ports"] = ports
        final.append(subset_out)
    if len(final) > 1:
        final.sort(key=_subset_hash)
    return final


# -- equality ---------------------------------------------------------------------------------


_Digest = dict[tuple[str, tuple[str, int, str, str | None]], bool]


def readiness_digest(subsets: Any) -> _Digest | None:
    """What every form of ``subsets`` that repacks alike has in common: for each (IP, port)
    pair, whether it is ready (``False`` as soon as one occurrence is not ready, the rule of
    :func:`repack_subsets`); ``None`` for subsets it does not describe (not a list of
    mappings, or a subset without ports or with a port number <= 0, which repacking files
    under one sentinel).

    Normalization (:func:`normalize_subset`), repacking and ``targetRef.resourceVersion`` leave
    the digest unchanged, so two subset lists whose digests differ are not equal by
    :func:`subsets_equal_ignore_resource_version`, repacked or not. It costs a tenth of those
    comparisons or less, which is what a sync after a readiness change needs to learn that it
    must write.
    """
    if not isinstance(subsets, list):
        return None
    digest: _Digest = {}
    for subset in subsets:
        if not _is_map(subset):
            return None
        ports = []
        for port in _dicts(subset.get("ports")):
            number = _int(port.get("port"))
            if number <= 0:
                return None
            ports.append((_text(port.get("name")), number, _text(port.get("protocol")),
                          _optional_text(port.get("appProtocol"))))
        if not ports:
            return None
        for field, ready in (("addresses", True), ("notReadyAddresses", False)):
            for address in _dicts(subset.get(field)):
                ip = _text(address.get("ip"))
                for port_key in ports:
                    key = (ip, port_key)
                    if digest.get(key, True):
                        digest[key] = ready
    return digest



def _comparable(subsets: Iterable[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    if subsets is not None and not isinstance(subsets, (list, tuple)):
        return [{"<invalid>": repr(subsets)}]
    out = []
    for subset in subsets or ():
        if not _is_map(subset):
            out.append({"<invalid>": repr(subset)})
            continue
        norm = normalize_subset(subset)
        for field in ("addresses", "notReadyAddresses"):
            for address in norm.get(field, ()):
                ref = address.get("targetRef")
                if ref is not None:
                    ref.pop("resourceVersion", None)
        out.append(norm)
    return out


def subsets_equal_ignore_resource_version(
    a: Iterable[Mapping[str, Any]] | None, b: Iterable[Mapping[str, Any]] | None
) -> bool:
    """``endpointSubsetsEqualIgnoreResourceVersion``: semantic equality of ordered subset lists.

    Missing, ``null`` and empty lists are equal (Go's semantic DeepEqual treats nil and empty
    slices alike), ``targetRef.resourceVersion`` is ignored, and everything else counts: IPs,
    hostnames, ``nodeName`` (absent differs from ``""``), target references, ports and the
    order of subsets, addresses and ports.
    """
    return _comparable(a) == _comparable(b)
