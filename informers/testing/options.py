"""List and watch query parameters: parsing, validation, selectors and continue tokens.

``ListOptions.parse`` decodes the query string the way ``metainternalversion.ListOptions``
decoding does, applies ``SetListOptionsDefaults`` (the WatchList feature, on by default since
Kubernetes 1.32) and ``ValidateListOptions``
(``apimachinery/pkg/apis/meta/internalversion/validation/validation.go``), raising the same
``422 Invalid`` Status on ``ListOptions.meta.k8s.io``.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from informers import fields, labels, sharding
from informers.errors import SelectorError, StatusError
from informers.testing import status
from informers.testing.codec import dumps, loads
from informers.testing.resources import ResourceType
from informers.testing.storage import Entry

__all__ = ["EXACT", "NOT_OLDER_THAN", "ListOptions", "Predicate", "decode_continue",
           "encode_continue", "parse_resource_version", "parse_shard_selector"]

EXACT = "Exact"
NOT_OLDER_THAN = "NotOlderThan"

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})  # Go strconv.ParseBool
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def parse_bool(name: str, value: str) -> bool:
    """Go's ``strconv.ParseBool``; anything else is a 400, as query decoding answers."""
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise status.bad_request(f'{name}: strconv.ParseBool: parsing "{value}": invalid syntax')


def parse_int(name: str, value: str) -> int:
    """Go's ``strconv.ParseInt(value, 10, 64)``."""
    try:
        number = int(value, 10)
    except ValueError:
        raise status.bad_request(
            f'{name}: strconv.ParseInt: parsing "{value}": invalid syntax'
        ) from None
    if not -(2**63) <= number < 2**63:
        raise status.bad_request(f'{name}: strconv.ParseInt: parsing "{value}": value out of range')
    return number


def parse_resource_version(value: str, *, for_list: bool = False) -> int:
    """A resourceVersion is an unsigned decimal (``APIObjectVersioner.ParseResourceVersion``).

    Its error reaches the client as the storage returns it: a list answers 400
    ``invalid resource version: <err>`` (``cacher.go`` ``GetList`` wraps it in
    ``NewBadRequest``), a get or a watch 500 with the bare error and no reason (a plain error,
    ``responsewriters.ErrorToAPIStatus``).
    """
    if not value.isdigit() or int(value) >= 2**64:
        why = "invalid syntax" if not value.isdigit() else "value out of range"
        message = (f'resourceVersion: Invalid value: "{value}": strconv.ParseUint: parsing '
                   f'"{value}": {why}')
        if for_list:
            raise status.bad_request(f"invalid resource version: {message}")
        raise status.plain_error(message)
    return int(value)


def parse_shard_selector(text: str, enabled: bool) -> sharding.ShardSelector | None:
    """The ``shardSelector`` of a list, watch or deletecollection: ``None`` when absent or when
    the server runs without ``ShardedListAndWatch`` (then, as on kube-apiserver without the
    gate, the parameter is ignored, even if invalid).

    Raises:
        StatusError: 500 ``invalid shard selector: <err>``: ``registry/generic/registry/
            store.go`` ``ListPredicate`` and ``Watch`` return the parse error unwrapped.
    """
    if not enabled or not text:
        return None
    try:
        return sharding.parse(text)
    except sharding.ShardSelectorError as err:
        raise status.plain_error(f"invalid shard selector: {err}") from None


@dataclass
class ListOptions:
    """The list/watch query parameters of one request (``metav1.ListOptions``)."""

    watch: bool = False
    resource_version: str = ""
    resource_version_match: str = ""
    limit: int = 0
    continue_token: str = ""
    label_selector: str = ""
    field_selector: str = ""
    allow_watch_bookmarks: bool = False
    send_initial_events: bool | None = None
    timeout_seconds: int | None = None
    shard_selector: str = ""

    @classmethod
    def parse(cls, query: dict[str, str], *, force_watch: bool = False) -> ListOptions:
        """Decode, default and validate ``query``.

        Raises:
            StatusError: 400 for undecodable values, 422 for invalid combinations.
        """
        opts = cls()
        watch = query.get("watch")
        opts.watch = parse_bool("watch", watch) if watch else False
        opts.watch = opts.watch or force_watch
        opts.resource_version = query.get("resourceVersion", "")
        opts.resource_version_match = query.get("resourceVersionMatch", "")
        if query.get("limit"):
            opts.limit = max(parse_int("limit", query["limit"]), 0)
        opts.continue_token = query.get("continue", "")
        opts.label_selector = query.get("labelSelector", "")
        opts.field_selector = query.get("fieldSelector", "")
        if query.get("allowWatchBookmarks"):
            opts.allow_watch_bookmarks = parse_bool(
                "allowWatchBookmarks", query["allowWatchBookmarks"]
            )
        if query.get("sendInitialEvents"):
            opts.send_initial_events = parse_bool("sendInitialEvents", query["sendInitialEvents"])
        if query.get("timeoutSeconds"):
            opts.timeout_seconds = parse_int("timeoutSeconds", query["timeoutSeconds"])
        opts.shard_selector = query.get("shardSelector", "")
        opts._set_defaults()
        opts.validate()
        return opts

    def _set_defaults(self) -> None:
        # SetListOptionsDefaults (apimachinery meta/internalversion/defaults.go) with the
        # WatchList feature enabled: a legacy watch from "" or "0" becomes a streaming watch.
        if self.send_initial_events is not None or self.resource_version_match:
            return
        if self.watch and self.resource_version in ("", "0"):
            self.send_initial_events = True
            self.resource_version_match = NOT_OLDER_THAN

    def validate(self) -> None:
        """``ValidateListOptions`` with the WatchList feature enabled."""
        forbidden = "FieldValueForbidden"
        causes: list[tuple[str, str, str]] = []
        match = self.resource_version_match
        field = "resourceVersionMatch"
        if self.watch:
            if self.send_initial_events is not None and match != NOT_OLDER_THAN:
                causes.append((forbidden, field, "Forbidden: sendInitialEvents requires setting "
                               "resourceVersionMatch to NotOlderThan"))
            if match:
                if self.send_initial_events is None:
                    causes.append((forbidden, field, "Forbidden: resourceVersionMatch is "
                                   "forbidden for watch unless sendInitialEvents is provided"))
                if match != NOT_OLDER_THAN:
                    causes.append(("FieldValueNotSupported", field,
                                   f'Unsupported value: "{match}": supported values: '
                                   '"NotOlderThan"'))
                if self.continue_token:
                    causes.append((forbidden, field, "Forbidden: resourceVersionMatch is "
                                   "forbidden when continue is provided"))
        else:
            if match:
                if not self.resource_version:
                    causes.append((forbidden, field, "Forbidden: resourceVersionMatch is "
                                   "forbidden unless resourceVersion is provided"))
                if self.continue_token:
                    causes.append((forbidden, field, "Forbidden: resourceVersionMatch is "
                                   "forbidden when continue is provided"))
                if match not in (EXACT, NOT_OLDER_THAN):
                    causes.append(("FieldValueNotSupported", field,
                                   f'Unsupported value: "{match}": supported values: "Exact", '
                                   '"NotOlderThan", ""'))
                if match == EXACT and self.resource_version == "0":
                    causes.append((forbidden, field, 'Forbidden: resourceVersionMatch "exact" '
                                   'is forbidden for resourceVersion "0"'))
            if self.send_initial_events is not None:
                causes.append((forbidden, "sendInitialEvents",
                               "Forbidden: sendInitialEvents is forbidden for list"))
        if causes:
            raise status.invalid("ListOptions", "meta.k8s.io", "", causes)


class Predicate:
    """A label, field and shard selector for one request (``storage.SelectionPredicate``).

    Field labels are checked against what the real server supports for the kind
    (``field label not supported: x``, a 400), after its conversions (a pod's ``spec.host``).
    ``shard`` is a parsed ``shardSelector`` (:func:`parse_shard_selector`). ``empty`` is true
    when nothing filters; ``attributes_empty`` when no label or field selector does (the
    storage's ``Predicate.Empty()``, which ignores the shard selector: it decides whether a
    paginated list carries ``remainingItemCount``).
    """

    __slots__ = ("attributes_empty", "empty", "field", "label", "shard")

    def __init__(self, rt: ResourceType, label_selector: str, field_selector: str,
                 shard: sharding.ShardSelector | None = None) -> None:
        try:
            self.label = labels.parse(label_selector)
        except SelectorError as err:
            raise status.bad_request(f"unable to parse requirement: {err}") from None
        try:
            if rt.builtin:
                self.field = fields.convert_field_selector(fields.parse(field_selector), rt.kind)
            else:  # a custom resource: its name, namespace and the CRD's selectableFields
                supported = {"metadata.name", "metadata.namespace", *rt.extra_fields({})}

                def check(field: str, value: str) -> tuple[str, str]:
                    if field not in supported:
                        raise SelectorError(f"field label not supported: {field}")
                    return field, value

                self.field = fields.parse(field_selector).transform(check)
        except SelectorError as err:
            raise status.bad_request(str(err)) from None
        self.shard = shard if shard is not None and not shard.empty() else None
        self.attributes_empty = self.label.empty() and self.field.empty()
        self.empty = self.attributes_empty and self.shard is None

    def matches(self, entry: Entry) -> bool:
        if self.empty:
            return True
        if self.shard is not None and not self._shard_matches(entry):
            return False
        return self.label.matches(entry.labels) and self.field.matches(entry.fields)

    def _shard_matches(self, entry: Entry) -> bool:
        assert self.shard is not None
        key = self.shard.requirements[0].key
        value = entry.namespace if key == sharding.NAMESPACE_KEY else entry.uid
        return self.shard.matches_hash("0x" + sharding.hash_field(value))


# -- continue tokens (the shape of apiserver/pkg/storage/continue.go) ---------------------------

_CONTINUE_VERSION = "meta.k8s.io/v1"


def encode_continue(rv: int, last_key: str) -> str:
    """An opaque token: resume after ``last_key`` in the snapshot at ``rv`` (``-1``: latest)."""
    token = {"v": _CONTINUE_VERSION, "rv": rv, "start": last_key + "\x00"}
    return base64.urlsafe_b64encode(dumps(token)).rstrip(b"=").decode()


def decode_continue(token: str) -> tuple[int, str]:
    """``(rv, last_key)`` from a token made by :func:`encode_continue`.

    Raises:
        StatusError: 400 ``invalid continue token: continue key is not valid: ...``.
    """
    def invalid(why: str) -> StatusError:
        return status.bad_request(f"invalid continue token: continue key is not valid: {why}")

    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data: Any = loads(raw)
    except ValueError as err:  # binascii.Error and JSON decode errors are ValueErrors
        raise invalid(str(err)) from None
    if not isinstance(data, dict) or data.get("v") != _CONTINUE_VERSION:
        raise invalid("unknown continue token version")
    rv, start = data.get("rv"), data.get("start")
    if not isinstance(rv, int) or rv == 0:
        raise invalid("incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
    if not isinstance(start, str) or not start.endswith("\x00"):
        raise invalid("encoded start key empty (version meta.k8s.io/v1)")
    return rv, start[:-1]
