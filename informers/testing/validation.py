"""kube-apiserver's validation of the objects the embedded server stores, as pure functions.

Each check answers the field errors upstream's validation returns, as ``(cause type, field,
error body)`` triples for :func:`informers.testing.status.invalid`, with upstream's exact
messages (``k8s.io/apimachinery/pkg/util/validation/field`` ``Error.ErrorBody``):

* object names (:func:`name_causes`: ``util/validation`` ``IsDNS1123Subdomain``,
  ``IsDNS1123Label``, ``IsDNS1035Label``);
* every object's labels and annotations (:func:`metadata_errors`: apimachinery
  ``ValidateLabels`` and ``ValidateAnnotations``, with the label key and value rules of
  ``pkg/api/validate/content/kube.go``, and the 256 KiB ``TotalAnnotationSizeLimitB``);
* an Endpoints' subsets (:func:`endpoints_errors`: ``ValidateEndpoints``,
  ``validateEndpointSubsets``, ``validateEndpointAddress``, ``ValidateEndpointIP`` and
  ``validateEndpointPort`` of kubernetes ``pkg/apis/core/validation/validation.go``, with the
  ``StrictIPCIDRValidation`` feature on, its v1.36 default).

The values are those of a decoded v1 JSON body after defaulting (a missing ``port`` is 0, a
missing ``ip`` is ""). They read plain dicts and never change them.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable
from typing import Any, Final

from informers.name_validation import (
    DNS1035_LABEL_MAX_LENGTH,
    DNS1035_LABEL_RE,
    DNS1123_LABEL_MAX_LENGTH,
    DNS1123_LABEL_RE,
    DNS1123_SUBDOMAIN_MAX_LENGTH,
    DNS1123_SUBDOMAIN_RE,
)

__all__ = [
    "TOTAL_ANNOTATION_SIZE_LIMIT",
    "Cause",
    "dns1123_label_errors",
    "endpoints_errors",
    "label_key_errors",
    "label_value_errors",
    "metadata_errors",
    "name_causes",
    "quote",
]

Cause = tuple[str, str, str]
"""``(cause type, field path, error body)``: one ``metav1.StatusCause`` of a 422."""

TOTAL_ANNOTATION_SIZE_LIMIT: Final = 256 * (1 << 10)
"""apimachinery ``TotalAnnotationSizeLimitB``: keys and values together, in bytes."""

# -- messages (apimachinery pkg/util/validation and pkg/api/validate/content) ------------------


def _regex_error(message: str, pattern: str, *examples: str) -> str:
    """``RegexError``: the message, its examples and the pattern."""
    if not examples:
        return f"{message} (regex used for validation is '{pattern}')"
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{pattern}')"


def _quote(value: object) -> str:
    """Go's ``%q`` of a string (``%v`` of anything else)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (dict, list)) or value is None:  # json.Marshal; map keys sorted
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return str(value)


def quote(value: object) -> str:
    """A bad value as ``field.Error.ErrorBody`` writes it: Go's ``%q`` of a string, ``%v``
    of a number or bool, ``json.Marshal`` of anything else."""
    return _quote(value)


def _invalid(field: str, value: object, detail: str) -> Cause:
    return ("FieldValueInvalid", field, f"Invalid value: {_quote(value)}: {detail}")


def _required(field: str, detail: str = "") -> Cause:
    return ("FieldValueRequired", field, "Required value" + (f": {detail}" if detail else ""))


_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = rf"{_DNS1123_LABEL_FMT}(\.{_DNS1123_LABEL_FMT})*"
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_MSG = _regex_error(
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character",
    _DNS1123_LABEL_FMT, "my-name", "123-abc")
_DNS1123_SUBDOMAIN_MSG = _regex_error(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character",
    _DNS1123_SUBDOMAIN_FMT, "example.com")
_DNS1035_LABEL_MSG = _regex_error(
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
    "an alphabetic character, and end with an alphanumeric character",
    _DNS1035_LABEL_FMT, "my-name", "abc-123")


def _dns1123_subdomain(value: str, unit: str) -> list[str]:
    """``IsDNS1123Subdomain``; ``unit`` is "characters" (``util/validation``) or "bytes"
    (``validate/content``), the two packages' ``MaxLenError``."""
    errors = []
    if len(value.encode()) > DNS1123_SUBDOMAIN_MAX_LENGTH:  # Go's len: bytes
        errors.append(f"must be no more than {DNS1123_SUBDOMAIN_MAX_LENGTH} {unit}")
    if not DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errors.append(_DNS1123_SUBDOMAIN_MSG)
    return errors


def _dns1123_label(value: str) -> list[str]:
    """``util/validation`` ``IsDNS1123Label``."""
    errors = []
    if len(value.encode()) > DNS1123_LABEL_MAX_LENGTH:
        errors.append(f"must be no more than {DNS1123_LABEL_MAX_LENGTH} characters")
    if not DNS1123_LABEL_RE.fullmatch(value):
        errors.append("must not contain dots" if DNS1123_SUBDOMAIN_RE.fullmatch(value)
                      else _DNS1123_LABEL_MSG)
    return errors


def _dns1035_label(value: str) -> list[str]:
    """``util/validation`` ``IsDNS1035Label``."""
    errors = []
    if len(value.encode()) > DNS1035_LABEL_MAX_LENGTH:
        errors.append(f"must be no more than {DNS1035_LABEL_MAX_LENGTH} characters")
    if not DNS1035_LABEL_RE.fullmatch(value):
        errors.append(_DNS1035_LABEL_MSG)
    return errors


def dns1123_label_errors(value: str) -> list[str]:
    """``util/validation`` ``IsDNS1123Label``'s messages."""
    return _dns1123_label(value)


def name_causes(rule: str, name: str) -> list[Cause]:
    """The ``metadata.name`` errors of ``name`` under the name rule ``rule`` (``"subdomain"``,
    the default, ``"label"`` or ``"dns1035"``: ``ResourceType.name_rule``; apimachinery
    ``NameIsDNSSubdomain``, ``NameIsDNSLabel``, ``NameIsDNS1035Label``)."""
    if rule == "label":
        errors = _dns1123_label(name)
    elif rule == "dns1035":
        errors = _dns1035_label(name)
    else:
        errors = _dns1123_subdomain(name, "characters")
    return [_invalid("metadata.name", name, e) for e in errors]


_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_RE = re.compile(_LABEL_KEY_FMT)
_LABEL_KEY_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start "
                  "and end with an alphanumeric character")
_LABEL_KEY_MAX_LENGTH = 63
_LABEL_VALUE_FMT = f"({_LABEL_KEY_FMT})?"
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)
_LABEL_VALUE_MAX_LENGTH = 63
_LABEL_VALUE_MSG = _regex_error(
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character",
    _LABEL_VALUE_FMT, "MyValue", "my_value", "12345")


def label_key_errors(value: str) -> list[str]:
    """``content.IsLabelKey`` (also ``IsQualifiedName``): an optional DNS-1123 subdomain
    prefix and ``/``, then a name of at most 63 bytes."""
    errors: list[str] = []
    parts = value.split("/")
    if len(parts) > 2:
        return ["a valid label key " + _regex_error(
            _LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend("prefix part " + e for e in _dns1123_subdomain(prefix, "bytes"))
    name = parts[-1]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name.encode()) > _LABEL_KEY_MAX_LENGTH:
        errors.append(f"name part must be no more than {_LABEL_KEY_MAX_LENGTH} bytes")
    if not _LABEL_KEY_RE.fullmatch(name):
        errors.append("name part " + _regex_error(
            _LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc"))
    return errors


def label_value_errors(value: str) -> list[str]:
    """``content.IsLabelValue``: empty, or at most 63 bytes of the label key's name form."""
    errors = []
    if len(value.encode()) > _LABEL_VALUE_MAX_LENGTH:
        errors.append(f"must be no more than {_LABEL_VALUE_MAX_LENGTH} bytes")
    if not _LABEL_VALUE_RE.fullmatch(value):
        errors.append(_LABEL_VALUE_MSG)
    return errors


# -- metadata ------------------------------------------------------------------------------------


def _string_map(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


def metadata_errors(meta: dict[str, Any]) -> list[Cause]:
    """``ValidateLabels`` then ``ValidateAnnotations`` of ``metadata`` (the part of
    ``ValidateObjectMeta`` and ``ValidateObjectMetaUpdate`` that checks content, for every
    kind): each label key and value, each annotation key (lower-cased first: "case doesn't
    matter") and the annotations' total size, keys and values in bytes."""
    causes: list[Cause] = []
    for key, value in _string_map(meta.get("labels")).items():
        causes.extend(_invalid("metadata.labels", key, e) for e in label_key_errors(key))
        causes.extend(_invalid("metadata.labels", value, e) for e in label_value_errors(value))
    annotations = _string_map(meta.get("annotations"))
    for key in annotations:
        causes.extend(_invalid("metadata.annotations", key, e)
                      for e in label_key_errors(key.lower()))
    size = sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items())
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        causes.append(("FieldValueTooLong", "metadata.annotations",
                       f"Too long: may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT} bytes"))
    return causes


# -- endpoints -----------------------------------------------------------------------------------

_SUPPORTED_PROTOCOLS = ("SCTP", "TCP", "UDP")  # supportedPortProtocols, sorted as listed
_IP = ipaddress.IPv4Address | ipaddress.IPv6Address


def _parse_ipv4_sloppy(text: str) -> ipaddress.IPv4Address | None:
    """Go 1.16's ``net.ParseIP`` of dotted IPv4 (``netutils.ParseIPSloppy``): four decimal
    parts of at most 255, leading zeros allowed (and read as decimal)."""
    parts = text.split(".")
    if len(parts) != 4 or not all(p.isascii() and p.isdigit() for p in parts):
        return None
    numbers = [int(p) for p in parts]
    if any(n > 255 for n in numbers):
        return None
    return ipaddress.IPv4Address(".".join(map(str, numbers)))


def _parse_ip_sloppy(text: str) -> _IP | None:
    """``netutils.ParseIPSloppy``: IPv4 as :func:`_parse_ipv4_sloppy`, IPv6 (no zone) whose
    trailing IPv4 part may be sloppy too."""
    if ":" not in text:
        return _parse_ipv4_sloppy(text)
    if "%" in text:
        return None
    head, _, tail = text.rpartition(":")
    if "." in tail:
        v4 = _parse_ipv4_sloppy(tail)
        if v4 is None:
            return None
        text = f"{head}:{v4}"
    try:
        return ipaddress.IPv6Address(text)
    except ValueError:
        return None


def _parse_ip_strict(text: str) -> _IP | None:
    """Go's ``netip.ParseAddr`` (without zones, which the sloppy parse already refused)."""
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _legacy_ip_errors(field: str, value: str) -> list[Cause]:
    """``IsValidIPForLegacyField`` with strict validation."""
    if _parse_ip_sloppy(value) is None:
        return [_invalid(field, value,
                         "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")]
    causes = []
    strict = _parse_ip_strict(value)
    if strict is None:
        causes.append(_invalid(field, value, "must not have leading 0s"))
    elif isinstance(strict, ipaddress.IPv6Address) and strict.ipv4_mapped is not None:
        causes.append(_invalid(field, value, "must not be an IPv4-mapped IPv6 address"))
    return causes


def _endpoint_ip_errors(field: str, value: str) -> list[Cause]:
    """``ValidateEndpointIP``: addresses that make no sense as an endpoint (Go's ``net.IP``
    methods, which treat an IPv4-mapped IPv6 address as IPv4)."""
    ip = _parse_ip_sloppy(value)
    if ip is None:
        return [_invalid(field, value, "must be a valid IP address")]
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    causes = []
    if ip.is_unspecified:
        causes.append(_invalid(field, value, f"may not be unspecified ({value})"))
    if ip.is_loopback:
        causes.append(_invalid(field, value,
                               "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
    if ip in (ipaddress.ip_network("169.254.0.0/16") if ip.version == 4
              else ipaddress.ip_network("fe80::/10")):
        causes.append(_invalid(
            field, value, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
    packed = ip.packed
    if (packed[:3] == b"\xe0\x00\x00" if ip.version == 4
            else packed[0] == 0xFF and packed[1] & 0x0F == 0x02):
        causes.append(_invalid(field, value, "may not be in the link-local multicast range "
                                             "(224.0.0.0/24, ff02::/10)"))
    return causes


def _address_errors(address: dict[str, Any], path: str) -> list[Cause]:
    """``validateEndpointAddress``."""
    ip = address.get("ip")
    ip = ip if isinstance(ip, str) else ""
    causes = _legacy_ip_errors(f"{path}.ip", ip)
    hostname = address.get("hostname")
    if isinstance(hostname, str) and hostname:
        causes.extend(_invalid(f"{path}.hostname", hostname, e)
                      for e in _dns1123_label(hostname))
    node_name = address.get("nodeName")
    if isinstance(node_name, str):  # a pointer: validated whenever set, "" included
        causes.extend(_invalid(f"{path}.nodeName", node_name, e)
                      for e in _dns1123_subdomain(node_name, "characters"))
    causes.extend(_endpoint_ip_errors(f"{path}.ip", ip))
    return causes


def _port_errors(port: dict[str, Any], require_name: bool, path: str) -> list[Cause]:
    """``validateEndpointPort``."""
    causes = []
    name = port.get("name")
    name = name if isinstance(name, str) else ""
    if require_name and not name:
        causes.append(_required(f"{path}.name"))
    elif name:
        causes.extend(_invalid(f"{path}.name", name, e) for e in _dns1123_label(name))
    number = port.get("port")
    number = number if isinstance(number, int) and not isinstance(number, bool) else 0
    if not 1 <= number <= 65535:
        causes.append(_invalid(f"{path}.port", number, "must be between 1 and 65535, inclusive"))
    protocol = port.get("protocol")
    protocol = protocol if isinstance(protocol, str) else ""
    if not protocol:
        causes.append(_required(f"{path}.protocol"))
    elif protocol not in _SUPPORTED_PROTOCOLS:
        supported = ", ".join(f'"{p}"' for p in _SUPPORTED_PROTOCOLS)
        causes.append(("FieldValueNotSupported", f"{path}.protocol",
                       f"Unsupported value: {_quote(protocol)}: supported values: {supported}"))
    app_protocol = port.get("appProtocol")
    if isinstance(app_protocol, str):
        causes.extend(_invalid(f"{path}.appProtocol", app_protocol, e)
                      for e in label_key_errors(app_protocol))
    return causes


def _dicts(value: Any) -> Iterable[dict[str, Any]]:
    items = value if isinstance(value, list) else []
    return [item if isinstance(item, dict) else {} for item in items]


def _subsets_errors(subsets: Any) -> list[Cause]:
    """``validateEndpointSubsets``."""
    causes: list[Cause] = []
    for i, subset in enumerate(_dicts(subsets)):
        path = f"subsets[{i}]"
        addresses = list(_dicts(subset.get("addresses")))
        not_ready = list(_dicts(subset.get("notReadyAddresses")))
        if not addresses and not not_ready:
            causes.append(_required(path, "must specify `addresses` or `notReadyAddresses`"))
        for j, address in enumerate(addresses):
            causes.extend(_address_errors(address, f"{path}.addresses[{j}]"))
        for j, address in enumerate(not_ready):
            causes.extend(_address_errors(address, f"{path}.notReadyAddresses[{j}]"))
        ports = list(_dicts(subset.get("ports")))
        for j, port in enumerate(ports):
            causes.extend(_port_errors(port, len(ports) > 1, f"{path}.ports[{j}]"))
    return causes


def endpoints_errors(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[Cause]:
    """``ValidateEndpoints``' check of ``subsets`` (after the metadata's). On an update
    (``old`` given) whose subsets are unchanged their errors are ignored, "since apparently
    older versions of Kubernetes considered the data valid"."""
    causes = _subsets_errors(obj.get("subsets"))
    if causes and old is not None and old.get("subsets") == obj.get("subsets"):
        return []
    return causes
