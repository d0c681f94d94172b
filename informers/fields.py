"""Parses and matches Kubernetes field selectors, and lists the fields each kind exposes to them.

Field selectors follow ``k8s.io/apimachinery/pkg/fields`` (``selector.go``,
``requirements.go``): comma-separated terms ``field=value``, ``field==value`` (the same as
``=``) or ``field!=value``, ANDed together. A term is split at the first operator; the field
name is taken verbatim (no escaping, no trimming); in the value, ``\\``, ``,`` and ``=`` must be
escaped with a backslash (:func:`escape_value` / :func:`unescape_value`) and any other escape is
an error. Empty terms are skipped, and a term whose field and value are both empty (``=``) is
dropped, as ``ParseSelector``'s identity transform does. A field missing from the object's field
set matches as ``""`` (``fields.Set.Get``).

The field set of an object comes from :func:`object_fields`, which mirrors what the real API
server computes for each kind (the ``ToSelectableFields``/``GetAttrs`` functions of
``kubernetes/pkg/registry/...``), and :func:`convert_field_selector` rejects field labels the
real API server does not support for a kind (``pkg/apis/core/v1/conversion.go``).

Deliberate difference from Go: terms are kept sorted by their printed form, so the canonical
string and equality do not depend on term order (Go sorts the raw terms when parsing but keeps
the given order in ``AndSelectors``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Final, NamedTuple

from informers.errors import SelectorError

__all__ = [
    "EQUALS",
    "EVERYTHING",
    "NOTHING",
    "NOT_EQUALS",
    "SUPPORTED_FIELD_LABELS",
    "Requirement",
    "Selector",
    "and_selectors",
    "convert_field_selector",
    "escape_value",
    "everything",
    "nothing",
    "object_fields",
    "one_term_equal_selector",
    "one_term_not_equal_selector",
    "parse",
    "parse_selector",
    "requires_exact_match",
    "selector_from_set",
    "unescape_value",
]

EQUALS: Final = "="
NOT_EQUALS: Final = "!="
_TERM_OPERATORS: Final[dict[str, str]] = {"=": EQUALS, "==": EQUALS, "!=": NOT_EQUALS}


def _quote(text: object) -> str:
    if isinstance(text, str):
        return json.dumps(text, ensure_ascii=False)
    return repr(text)


class Requirement(NamedTuple):
    """One term of a field selector (apimachinery ``fields.Requirement``)."""

    field: str
    operator: str
    """``"="`` or ``"!="``."""
    value: str
    """The unescaped value."""


def escape_value(value: str) -> str:
    """Escape ``\\``, ``,`` and ``=`` for use as a field selector value (``EscapeValue``)."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def unescape_value(value: str) -> str:
    """Undo :func:`escape_value` (``UnescapeValue``).

    Raises:
        SelectorError: for an escape other than ``\\\\``, ``\\,`` and ``\\=``, a trailing
            backslash, or an unescaped ``,`` or ``=``; the message gives the position.
    """
    if "\\" not in value and "," not in value and "=" not in value:
        return value
    out: list[str] = []
    escaped = False
    for position, char in enumerate(value):
        if escaped:
            if char not in "\\,=":
                raise SelectorError(f"invalid field selector value {_quote(value)}: invalid "
                                    f"escape sequence {_quote(chr(92) + char)} at position "
                                    f"{position - 1}")
            out.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in ",=":
            raise SelectorError(f"invalid field selector value {_quote(value)}: unescaped "
                                f"{char!r} at position {position} (escape it as '\\{char}')")
        else:
            out.append(char)
    if escaped:
        raise SelectorError(f"invalid field selector value {_quote(value)}: invalid escape "
                            f"sequence \"\\\\\" at position {len(value) - 1} (trailing backslash)")
    return "".join(out)


class Selector:
    """An AND of field requirements (apimachinery ``andTerm`` of ``hasTerm``/``notHasTerm``).

    Immutable and therefore thread-safe. Terms are kept sorted by their printed form; equality
    and hashing use the canonical string, except that :data:`NOTHING` (which prints as ``""``)
    equals only itself. Truthiness is not defined: use :meth:`empty`.

    ``matches(fields)`` compares ``fields.get(field, "")`` with each term's value; the empty
    selector returns at once.
    """

    __slots__ = ("_checks", "_hash", "_nothing", "_str", "_terms")

    def __init__(self, requirements: Iterable[Requirement | tuple[str, str, str]] = ()) -> None:
        rendered: list[tuple[str, Requirement]] = []
        for item in requirements:
            field, operator, value = item
            op = _TERM_OPERATORS.get(operator) if isinstance(operator, str) else None
            if op is None:
                raise SelectorError(f"invalid field selector operator {_quote(operator)}: "
                                    "expected =, == or !=")
            if not isinstance(field, str) or not isinstance(value, str):
                raise SelectorError(f"invalid field selector term {item!r}: field and value "
                                    "must be strings")
            rendered.append((field + op + escape_value(value), Requirement(field, op, value)))
        rendered.sort(key=lambda pair: pair[0])
        self._init(tuple(req for _, req in rendered), ",".join(text for text, _ in rendered),
                   nothing=False)

    def _init(self, terms: tuple[Requirement, ...], text: str, *, nothing: bool) -> None:
        self._terms = terms
        self._checks = tuple((t.field, t.value, t.operator == EQUALS) for t in terms)
        self._str = text
        self._nothing = nothing
        self._hash = hash((nothing, text))

    @classmethod
    def _nothing_selector(cls) -> Selector:
        sel = cls.__new__(cls)
        sel._init((), "", nothing=True)
        return sel

    def matches(self, fields: Mapping[str, str] | None) -> bool:
        """Whether ``fields`` (an object's field set; ``None`` means none) satisfy every term."""
        checks = self._checks
        if not checks:
            return not self._nothing
        get = (fields if fields is not None else _NO_FIELDS).get
        for field, value, equal in checks:  # noqa: SIM110 - a plain loop is faster than all()
            if (get(field, "") == value) is not equal:
                return False
        return True

    def empty(self) -> bool:
        """Whether this selector does not restrict anything (``False`` for :data:`NOTHING`)."""
        return not self._terms and not self._nothing

    def requirements(self) -> tuple[Requirement, ...]:
        """The terms as ``(field, operator, value)`` triples, in canonical order."""
        return self._terms

    def requires_exact_match(self, field: str) -> str | None:
        """The value of the first ``field=value`` term, or ``None`` (``RequiresExactMatch``)."""
        for term in self._terms:
            if term.field == field and term.operator == EQUALS:
                return term.value
        return None

    def transform(self, fn: Callable[[str, str], tuple[str, str]]) -> Selector:
        """A new selector with ``fn(field, value)`` applied to every term (``Transform``).

        Terms whose field and value both become empty are dropped; exceptions from ``fn``
        propagate. :data:`NOTHING` stays :data:`NOTHING`.
        """
        if self._nothing:
            return self
        terms = []
        for field, op, value in self._terms:
            new_field, new_value = fn(field, value)
            if new_field or new_value:
                terms.append(Requirement(new_field, op, new_value))
        return Selector(terms) if terms else EVERYTHING

    def __str__(self) -> str:
        """The canonical string: escaped terms, sorted, joined by ``,``; ``==`` prints as ``=``."""
        return self._str

    def __repr__(self) -> str:
        if self._nothing:
            return "fields.NOTHING"
        return f"fields.parse({self._str!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Selector):
            return NotImplemented
        return self._nothing == other._nothing and self._str == other._str

    def __hash__(self) -> int:
        return self._hash


_NO_FIELDS: Mapping[str, str] = {}

EVERYTHING: Final[Selector] = Selector()
"""The field selector that matches everything (``fields.Everything()``); prints as ``""``."""

NOTHING: Final[Selector] = Selector._nothing_selector()
"""The field selector that matches nothing (``fields.Nothing()``); also prints as ``""``."""


def everything() -> Selector:
    """The shared selector that matches everything (``fields.Everything``)."""
    return EVERYTHING


def nothing() -> Selector:
    """The shared selector that matches nothing (``fields.Nothing``)."""
    return NOTHING


def _split_terms(text: str) -> list[str]:
    """Split at commas not escaped by a backslash, keeping escapes (``splitTerms``)."""
    if "\\" not in text:
        return text.split(",")
    terms: list[str] = []
    start = 0
    escaped = False
    for index, char in enumerate(text):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            terms.append(text[start:index])
            start = index + 1
    terms.append(text[start:])
    return terms


# The first operator wins; at one position "!=" before "==" before "=" (splitTerm).
_OPERATOR_RE = re.compile(r"!=|==|=")


def parse(text: str) -> Selector:
    """Parse field selector text (``fields.ParseSelector``); ``""`` gives :data:`EVERYTHING`.

    Raises:
        SelectorError: naming the term without an operator, or the bad escape in a value.
    """
    if not isinstance(text, str):
        raise TypeError(f"field selector must be a string, not {type(text).__name__}")
    if not text:
        return EVERYTHING
    terms: list[Requirement] = []
    for term in _split_terms(text):
        if not term:
            continue
        match = _OPERATOR_RE.search(term)
        if match is None:
            raise SelectorError(f"invalid field selector {_quote(text)}: can't understand "
                                f"{_quote(term)}: expected field=value, field==value or "
                                "field!=value")
        field, raw_value = term[: match.start()], term[match.end() :]
        try:
            value = unescape_value(raw_value)
        except SelectorError as err:
            raise SelectorError(f"invalid field selector {_quote(text)}: term {_quote(term)}: "
                                f"{err}") from None
        if field or value:
            terms.append(Requirement(field, _TERM_OPERATORS[match.group()], value))
    return Selector(terms) if terms else EVERYTHING


parse_selector = parse


def selector_from_set(fields: Mapping[str, str] | None) -> Selector:
    """A selector requiring ``field=value`` for every item (``fields.SelectorFromSet``).

    ``None`` and ``{}`` give :data:`EVERYTHING`. Values are escaped when printed; nothing is
    validated, as in Go.
    """
    if not fields:
        return EVERYTHING
    return Selector((field, EQUALS, value) for field, value in fields.items())


def one_term_equal_selector(field: str, value: str) -> Selector:
    """``field=value`` (``fields.OneTermEqualSelector``); the kubelet's ``spec.nodeName``."""
    return Selector(((field, EQUALS, value),))


def one_term_not_equal_selector(field: str, value: str) -> Selector:
    """``field!=value`` (``fields.OneTermNotEqualSelector``)."""
    return Selector(((field, NOT_EQUALS, value),))


def and_selectors(*selectors: Selector) -> Selector:
    """The AND of ``selectors`` (``fields.AndSelectors``); any :data:`NOTHING` gives NOTHING."""
    if any(sel._nothing for sel in selectors):
        return NOTHING
    terms = [term for sel in selectors for term in sel._terms]
    return Selector(terms) if terms else EVERYTHING


def requires_exact_match(selector: Selector, field: str) -> str | None:
    """The value ``selector`` requires for ``field`` (a ``field=value`` term), or ``None``.

    Servers and listers use it to answer from an index (``spec.nodeName``, ``metadata.name``)
    instead of scanning.
    """
    return selector.requires_exact_match(field)


# ---------------------------------------------------------------------------------------------
# Selectable fields per kind
# ---------------------------------------------------------------------------------------------

_KIND_NAMES: Final[dict[str, str]] = {
    name.lower(): resource
    for resource, names in {
        "pods": ("Pod",),
        "events": ("Event",),
        "secrets": ("Secret",),
        "nodes": ("Node",),
        "namespaces": ("Namespace",),
        "services": ("Service",),
        "replicationcontrollers": ("ReplicationController",),
        "replicasets": ("ReplicaSet",),
    }.items()
    for name in (resource, *names)
}

# Cluster-scoped kinds get no metadata.namespace field (generic.ObjectMetaFieldsSet(meta, false)).
_CLUSTER_SCOPED: Final = frozenset(
    name.lower()
    for pair in (
        ("Node", "nodes"), ("Namespace", "namespaces"), ("PersistentVolume", "persistentvolumes"),
        ("ClusterRole", "clusterroles"), ("ClusterRoleBinding", "clusterrolebindings"),
        ("StorageClass", "storageclasses"), ("PriorityClass", "priorityclasses"),
        ("CustomResourceDefinition", "customresourcedefinitions"), ("CSIDriver", "csidrivers"),
        ("CSINode", "csinodes"), ("IngressClass", "ingressclasses"),
        ("RuntimeClass", "runtimeclasses"), ("APIService", "apiservices"),
        ("CertificateSigningRequest", "certificatesigningrequests"),
        ("VolumeAttachment", "volumeattachments"),
        ("MutatingWebhookConfiguration", "mutatingwebhookconfigurations"),
        ("ValidatingWebhookConfiguration", "validatingwebhookconfigurations"),
    )
    for name in pair
)

_METADATA_ONLY: Final = frozenset({"metadata.name", "metadata.namespace"})

SUPPORTED_FIELD_LABELS: Final[Mapping[str, frozenset[str]]] = {
    # kubernetes pkg/apis/core/v1/conversion.go addConversionFuncs and AddFieldLabelConversionsFor*;
    # every other kind uses runtime.DefaultMetaV1FieldSelectorConversion (metadata only).
    "pods": frozenset({
        "metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy",
        "spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork", "status.phase",
        "status.podIP", "status.podIPs", "status.nominatedNodeName",
    }),
    "nodes": frozenset({"metadata.name", "spec.unschedulable"}),
    "replicationcontrollers": frozenset({"metadata.name", "metadata.namespace", "status.replicas"}),
    "events": frozenset({
        "involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
        "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
        "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type",
        "metadata.namespace", "metadata.name",
    }),
    "namespaces": frozenset({"status.phase", "metadata.name"}),
    "secrets": frozenset({"type", "metadata.namespace", "metadata.name"}),
    "services": frozenset({"metadata.namespace", "metadata.name", "spec.clusterIP", "spec.type"}),
}
"""The field labels the real API server accepts per resource (others get a 400)."""


def _resource(kind: str) -> str:
    lowered = kind.lower()
    return _KIND_NAMES.get(lowered, lowered)


def convert_field_selector(selector: Selector, kind: str) -> Selector:
    """Check ``selector`` against the field labels the API server supports for ``kind``.

    Applies the API server's field label conversions (a pod's legacy ``spec.host`` becomes
    ``spec.nodeName``) and rejects any other label, as ``scheme.ConvertFieldLabel`` does.

    Raises:
        SelectorError: ``field label not supported: <label>``.
    """
    resource = _resource(kind)
    supported = SUPPORTED_FIELD_LABELS.get(resource, _METADATA_ONLY)

    def convert(field: str, value: str) -> tuple[str, str]:
        if resource == "pods" and field == "spec.host":
            return "spec.nodeName", value
        if field not in supported:
            raise SelectorError(f"field label not supported: {field}")
        return field, value

    return selector.transform(convert)


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _bool(value: object) -> str:
    return "true" if value is True else "false"  # strconv.FormatBool of a JSON bool


def _int(value: object) -> str:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else "0"


def _dict(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else _NO_FIELDS


def _pod_ip(status: Mapping[str, object]) -> str:
    # The internal PodIPs[0]: v1 status.podIP is authoritative when set (Convert_v1_PodStatus).
    pod_ip = _str(status.get("podIP"))
    if pod_ip:
        return pod_ip
    pod_ips = status.get("podIPs")
    if isinstance(pod_ips, list) and pod_ips:
        return _str(_dict(pod_ips[0]).get("ip"))
    return ""


def object_fields(
    obj: Mapping[str, object], kind: str, *, namespaced: bool | None = None
) -> dict[str, str]:
    """The field set the API server matches field selectors against for ``obj``.

    ``kind`` is a resource (``"pods"``) or a kind (``"Pod"``). Every kind has
    ``metadata.name``, and namespaced kinds ``metadata.namespace`` (``namespaced`` overrides the
    built-in list of cluster-scoped kinds). Kind-specific fields, from kubernetes
    ``pkg/registry``:

    * pods (``core/pod/strategy.go`` ``ToSelectableFields``): ``spec.nodeName``,
      ``spec.restartPolicy``, ``spec.schedulerName``, ``spec.serviceAccountName``,
      ``spec.hostNetwork`` (``"true"``/``"false"``), ``status.phase``, ``status.podIP`` (the
      primary IP), ``status.nominatedNodeName``;
    * events (``core/event/strategy.go``): ``involvedObject.{kind,namespace,name,uid,
      apiVersion,resourceVersion,fieldPath}``, ``reason``, ``reportingComponent``, ``source``
      (``source.component``, else ``reportingComponent``), ``type``;
    * secrets (``core/secret/strategy.go``): ``type``;
    * nodes (``core/node/strategy.go``): ``spec.unschedulable`` (``"true"``/``"false"``);
    * namespaces (``core/namespace/strategy.go``): ``status.phase`` and the legacy ``name``;
    * services (``core/service/strategy.go``): ``spec.clusterIP``, ``spec.type``;
    * replicationcontrollers and replicasets: ``status.replicas``.

    Missing fields give ``""`` (or ``"false"``/``"0"``), as Go's zero values do.
    """
    resource = _resource(kind)
    meta = _dict(obj.get("metadata"))
    result = {"metadata.name": _str(meta.get("name"))}
    if namespaced is None:
        namespaced = resource not in _CLUSTER_SCOPED
    if namespaced:
        result["metadata.namespace"] = _str(meta.get("namespace"))
    if resource == "pods":
        spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
        result["spec.nodeName"] = _str(spec.get("nodeName"))
        result["spec.restartPolicy"] = _str(spec.get("restartPolicy"))
        result["spec.schedulerName"] = _str(spec.get("schedulerName"))
        result["spec.serviceAccountName"] = _str(spec.get("serviceAccountName"))
        result["spec.hostNetwork"] = _bool(spec.get("hostNetwork"))
        result["status.phase"] = _str(status.get("phase"))
        result["status.podIP"] = _pod_ip(status)
        result["status.nominatedNodeName"] = _str(status.get("nominatedNodeName"))
    elif resource == "events":
        involved = _dict(obj.get("involvedObject"))
        for name in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion",
                     "fieldPath"):
            result["involvedObject." + name] = _str(involved.get(name))
        reporting = _str(obj.get("reportingComponent"))
        result["reason"] = _str(obj.get("reason"))
        result["reportingComponent"] = reporting
        result["source"] = _str(_dict(obj.get("source")).get("component")) or reporting
        result["type"] = _str(obj.get("type"))
    elif resource == "secrets":
        result["type"] = _str(obj.get("type"))
    elif resource == "nodes":
        result["spec.unschedulable"] = _bool(_dict(obj.get("spec")).get("unschedulable"))
    elif resource == "namespaces":
        result["status.phase"] = _str(_dict(obj.get("status")).get("phase"))
        result["name"] = result["metadata.name"]  # "a bug, but ... backward compatibility"
    elif resource == "services":
        spec = _dict(obj.get("spec"))
        result["spec.clusterIP"] = _str(spec.get("clusterIP"))
        result["spec.type"] = _str(spec.get("type"))
    elif resource in ("replicationcontrollers", "replicasets"):
        result["status.replicas"] = _int(_dict(obj.get("status")).get("replicas"))
    return result
