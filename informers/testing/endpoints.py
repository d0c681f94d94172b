"""The verbs of the embedded API server: get, list, create, update, patch, delete,
deletecollection, watch setup, discovery and ``/version``.

Each method takes a resolved :class:`RequestInfo` and returns a :class:`Response` (or, for a
watch, a prepared :class:`WatchStream`) or raises a ``StatusError``; the HTTP handler does the
I/O. List semantics follow the "Semantics for get and list" table of the Kubernetes API
Concepts page and ``storage/cacher/delegator.go`` ``shouldDelegateList``.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml

from informers.clock import Clock
from informers.errors import StatusError
from informers.testing import status
from informers.testing.apply import undeclared_fields
from informers.testing.codec import JSONDecodeError, dumps, loads
from informers.testing.faults import Faults
from informers.testing.options import (
    EXACT,
    ListOptions,
    Predicate,
    decode_continue,
    encode_continue,
    parse_bool,
    parse_int,
    parse_resource_version,
    parse_shard_selector,
)
from informers.testing.request_info import RequestInfo
from informers.testing.resources import ResourceRegistry, ResourceType
from informers.testing.schemas import Fields
from informers.testing.storage import Entry, Snapshot, Storage, object_key, splice
from informers.testing.strategy import (
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    Strategy,
)
from informers.testing.watch import WatchStream

__all__ = [
    "APPLY_PATCH",
    "KUBERNETES_VERSION",
    "VERSION_INFO",
    "Endpoints",
    "Response",
    "Settings",
    "decode_body",
    "media_type",
    "status_response",
]

KUBERNETES_VERSION = "v1.36.3"
"""The Kubernetes release whose kube-apiserver the server claims to be: the one the project
builds its real control plane from (``tools/control-plane/build.sh`` ``K8S_VERSION``)."""

_MAJOR, _MINOR = KUBERNETES_VERSION[1:].split(".")[:2]

VERSION_INFO: dict[str, str] = {
    "major": _MAJOR,
    "minor": _MINOR,
    "emulationMajor": _MAJOR,
    "emulationMinor": _MINOR,
    "minCompatibilityMajor": _MAJOR,
    "minCompatibilityMinor": str(int(_MINOR) - 1),
    "gitVersion": KUBERNETES_VERSION,
    "gitCommit": "$Format:%H$",
    "gitTreeState": "clean",
    "buildDate": "1970-01-01T00:00:00Z",
    "goVersion": "go1.26.8",
    "compiler": "gc",
    "platform": "linux/amd64",
}
"""What ``/version`` answers: field for field what the kube-apiserver built by
``tools/control-plane/build.sh`` answers (``component-base/version``: an emulation version
equal to the binary's, a minimum compatibility version one minor lower; ``gitCommit`` is
left at its unstamped default and ``buildDate`` at the date the script stamps)."""

# etcd3 store.go: the messages of a list or continue token past compaction.
LIST_TOO_OLD = "The resourceVersion for the provided list is too old."
CONTINUE_TOO_OLD = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted "
    "between the time the first chunk was returned and now may show up in the list."
)

_WRITE_TYPES = ("application/json", "application/yaml")
_PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH)
APPLY_PATCH = "application/apply-patch+yaml"


def _yaml_object(raw: bytes) -> Any:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(raw.decode("utf-8"), Loader=loader)
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise status.bad_request(f"error decoding YAML: {err}") from None


def decode_apply(query: dict[str, str], raw: bytes) -> tuple[str, bool, dict[str, Any]]:
    """An apply request's field manager, ``force`` and configuration (JSON or YAML).

    Raises:
        StatusError: 422 without a ``fieldManager``, 400 for a body that is not an object.
    """
    manager = query.get("fieldManager", "")
    if not manager:
        raise status.invalid("PatchOptions", "meta.k8s.io", "", [
            ("FieldValueRequired", "fieldManager", "Required value: is required for "
             "apply patch")])
    force = query.get("force", "") == "true"
    try:  # JSON (what kubectl sends) is YAML; the JSON decoder is the fast path
        config = loads(raw) if raw.strip() else None
    except JSONDecodeError:
        config = _yaml_object(raw)
    if not isinstance(config, dict):
        raise status.bad_request("the body of an apply patch must be an object")
    return manager, force, config


@dataclass
class Response:
    """An HTTP answer with a JSON body."""

    code: int
    body: bytes
    headers: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Settings:
    """Server behaviour knobs (see ``ApiServer`` for their meaning and defaults)."""

    bookmark_interval: float = 60.0
    min_request_timeout: float = 1800.0
    fresh_wait: float = 3.0
    watch_cache: bool = True
    sharded_list_and_watch: bool = True


def _json(obj: Any, code: int = 200) -> Response:
    return Response(code, dumps(obj))


def media_type(content_type: str | None) -> str:
    """``application/json; charset=utf-8`` -> ``application/json``."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def decode_body(raw: bytes, content_type: str) -> Any:
    """Decode a JSON (or YAML) request body; malformed input is a 400."""
    if content_type == "application/yaml":
        from informers.yaml_loader import YAMLLoadError, load_yaml

        try:
            return load_yaml(raw)
        except YAMLLoadError as err:
            raise status.bad_request(f"error converting YAML to JSON: yaml: {err}") from None
    try:
        return loads(raw)
    except JSONDecodeError as err:
        raise status.bad_request(f"couldn't get version/kind; json parse error: {err}") from None


class Endpoints:
    """Implements each verb against the storage. Thread-safe (state lives in the storage)."""

    def __init__(
        self, *, storage: Storage, registry: ResourceRegistry, strategy: Strategy,
        clock: Clock, faults: Faults, settings: Settings,
    ) -> None:
        self.storage = storage
        self.registry = registry
        self.strategy = strategy
        self.clock = clock
        self.faults = faults
        self.settings = settings

    # -- non-resource paths --------------------------------------------------------------------

    def discovery(self, path: str, server_address: str) -> Response:
        parts = [p for p in path.strip("/").split("/") if p]
        doc: dict[str, Any] | None = None
        if parts == ["version"]:
            doc = dict(VERSION_INFO)
        elif parts == ["api"]:
            doc = self.registry.api_versions(server_address)
        elif parts == ["apis"]:
            doc = self.registry.api_group_list()
        elif len(parts) == 2 and parts[0] == "api":
            doc = self.registry.api_resource_list("", parts[1])
        elif len(parts) == 2 and parts[0] == "apis":
            doc = self.registry.api_group(parts[1])
        elif len(parts) == 3 and parts[0] == "apis":
            doc = self.registry.api_resource_list(parts[1], parts[2])
        if doc is None:
            raise status.not_found_path()
        return _json(doc)

    # -- reads ---------------------------------------------------------------------------------

    def _fresh(self, wanted: int) -> None:
        """Wait, like the watch cache, for a resourceVersion the server does not have yet."""
        if self.storage.rv < wanted and not self.storage.wait_for_rv(
            wanted, self.settings.fresh_wait
        ):
            raise status.too_large_resource_version(wanted, self.storage.rv)

    def get(self, info: RequestInfo, query: dict[str, str]) -> Response:
        rt = info.rt
        assert rt is not None
        rv_text = query.get("resourceVersion", "")
        if rv_text:
            wanted = parse_resource_version(rv_text)
            if wanted:
                self._fresh(wanted)
        entry = self.storage.get(rt, object_key(rt, info.namespace or "", info.name))
        if entry is None:
            raise status.not_found(rt.plural, rt.group, info.name)
        return Response(200, entry.typed(rt))

    def _snapshot(self, rt: ResourceType, opts: ListOptions) -> tuple[Snapshot, str | None, int]:
        """The state to list from, the key to resume after, and the effective limit."""
        storage = self.storage
        limit = opts.limit
        rv_text = opts.resource_version
        if opts.continue_token:
            if rv_text not in ("", "0"):
                raise status.bad_request(
                    "specifying resource version is not allowed when using continue"
                )
            snap_rv, last_key = decode_continue(opts.continue_token)
            with storage.lock:
                coll = storage.collection(rt)
                if snap_rv == -1:  # an inconsistent continuation, from the latest state
                    return coll.snapshot(storage.rv), last_key, limit
                if snap_rv > storage.rv:
                    raise status.bad_request(
                        "invalid continue token: continue key is not valid: "
                        "resourceVersion is in the future"
                    )
                if snap_rv < coll.oldest_rv:
                    err = status.expired(CONTINUE_TOO_OLD)
                    err.status["metadata"] = {"continue": encode_continue(-1, last_key)}
                    raise err
                return coll.snapshot(snap_rv), last_key, limit
        match = opts.resource_version_match
        if rv_text == "":  # Most Recent
            with storage.lock:
                return storage.collection(rt).snapshot(storage.rv), None, limit
        if rv_text == "0":  # Any: the watch cache answers and ignores the limit
            if self.settings.watch_cache:
                limit = 0
            with storage.lock:
                return storage.collection(rt).snapshot(storage.rv), None, limit
        wanted = int(rv_text)
        if match == EXACT or (not match and limit > 0):  # Exact (legacy exact when paginated)
            self._fresh(wanted)  # the watch cache waits for it first, as for NotOlderThan
            with storage.lock:
                coll = storage.collection(rt)
                if wanted > storage.rv:
                    raise status.too_large_resource_version(wanted, storage.rv)
                if wanted < coll.oldest_rv:
                    raise status.expired(LIST_TOO_OLD)
                return coll.snapshot(wanted), None, limit
        self._fresh(wanted)  # Not older than
        with storage.lock:
            return storage.collection(rt).snapshot(storage.rv), None, limit

    def list(self, info: RequestInfo, opts: ListOptions) -> Response:
        rt = info.rt
        assert rt is not None
        shard = parse_shard_selector(opts.shard_selector, self.settings.sharded_list_and_watch)
        if opts.resource_version:
            parse_resource_version(opts.resource_version, for_list=True)
        predicate = Predicate(rt, opts.label_selector, opts.field_selector, shard)
        snap, last_key, limit = self._snapshot(rt, opts)
        keys, objects = snap.keys, snap.objects
        lo, hi = 0, len(keys)
        if info.namespace is not None and rt.namespaced:
            lo = bisect.bisect_left(keys, info.namespace + "/")
            hi = bisect.bisect_left(keys, info.namespace + "0")  # "0" sorts right after "/"
        if last_key is not None:
            lo = max(lo, bisect.bisect_right(keys, last_key))
        start = lo
        items: list[Entry] = []
        index = lo
        if predicate.empty:
            stop = hi if not limit else min(hi, lo + limit)
            items = [objects[k] for k in keys[lo:stop]]
            index = stop
        else:
            while index < hi and (not limit or len(items) < limit):
                entry = objects[keys[index]]
                if predicate.matches(entry):
                    items.append(entry)
                index += 1
        meta: dict[str, Any] = {"resourceVersion": str(snap.rv)}
        if limit and len(items) == limit and index < hi:
            if predicate.attributes_empty:
                # cacher.go GetList: the items in range less the limit, and a continue token
                # whenever items are left, matching the shard selector or not.
                remaining = hi - start - limit
            else:
                remaining = sum(1 for k in keys[index:hi] if predicate.matches(objects[k]))
            if remaining:
                meta["continue"] = encode_continue(snap.rv, items[-1].key)
                if predicate.attributes_empty:  # only without label and field selectors
                    meta["remainingItemCount"] = remaining
        if predicate.shard is not None and rt.builtin:
            # selection_predicate.go SetShardInfoOnList sets it on lists implementing
            # metav1.ShardedListInterface; a custom resource's UnstructuredList does not, so
            # kube-apiserver v1.36.3 filters custom resources but answers no shardInfo.
            meta["shardInfo"] = {"selector": str(predicate.shard)}
        if rt.builtin:
            bodies = [e.body for e in items]
        else:
            prefix = rt.type_prefix
            bodies = [splice(prefix, e.body) for e in items]
        head = (
            f'{{"kind":"{rt.list_kind}","apiVersion":"{rt.api_version}","metadata":'.encode()
            + dumps(meta) + b',"items":['
        )
        return Response(200, b"".join((head, b",".join(bodies), b"]}")))

    def watch(self, info: RequestInfo, opts: ListOptions) -> WatchStream:
        """A prepared stream (its start fixed), for the handler to serve after the 200."""
        rt = info.rt
        assert rt is not None
        field_selector = opts.field_selector
        if info.name:  # a watch on one object (legacy /watch/.../<name>)
            name_term = f"metadata.name={info.name}"
            field_selector = f"{name_term},{field_selector}" if field_selector else name_term
        shard = parse_shard_selector(opts.shard_selector, self.settings.sharded_list_and_watch)
        if opts.resource_version:
            parse_resource_version(opts.resource_version)
        predicate = Predicate(rt, opts.label_selector, field_selector, shard)
        stream = WatchStream(
            storage=self.storage, rt=rt,
            namespace=info.namespace if rt.namespaced else None,
            predicate=predicate, opts=opts, clock=self.clock, faults=self.faults,
            bookmark_interval=self.settings.bookmark_interval,
            min_request_timeout=self.settings.min_request_timeout,
            fresh_wait=self.settings.fresh_wait,
        )
        stream.prepare()
        return stream

    # -- writes --------------------------------------------------------------------------------

    @staticmethod
    def _dry_run(query: dict[str, str], options_kind: str = "CreateOptions") -> bool:
        """``dryRun=All`` or none; anything else is a 422 on the verb's options kind
        (``apimachinery/pkg/apis/meta/v1/validation`` ``ValidateDryRun``)."""
        value = query.get("dryRun", "")
        if value and value != "All":
            raise status.invalid(options_kind, "meta.k8s.io", "", [(
                "FieldValueNotSupported", "dryRun",
                f'Unsupported value: ["{value}"]: supported values: "All"')])
        return value == "All"

    def create(self, info: RequestInfo, query: dict[str, str], body: Any,
               manager: str = "") -> Response:
        """``manager``: whose ``Update`` managed-fields entry records the write (the
        ``fieldManager`` parameter, else the User-Agent's product; empty: none)."""
        rt = info.rt
        assert rt is not None
        if rt.namespaced and info.namespace is None:
            raise status.method_not_allowed()
        entry = self.strategy.create(
            rt, info.namespace or "", body, dry_run=self._dry_run(query), manager=manager
        )
        return Response(201, entry.typed(rt))

    def update(self, info: RequestInfo, query: dict[str, str], body: Any,
               manager: str = "") -> Response:
        rt = info.rt
        assert rt is not None
        entry = self.strategy.update(
            rt, info.namespace or "", info.name, body, subresource=info.subresource,
            dry_run=self._dry_run(query, "UpdateOptions"), manager=manager,
        )
        return Response(200, entry.typed(rt))

    @staticmethod
    def check_patch_type(content_type: str) -> None:
        if content_type not in (*_PATCH_TYPES, APPLY_PATCH):
            raise status.unsupported_media_type(
                f"the body of the request was in an unknown format - accepted media types "
                f"include: {JSON_PATCH}, {MERGE_PATCH}, {STRATEGIC_MERGE_PATCH}, {APPLY_PATCH}"
            )

    def apply(self, info: RequestInfo, query: dict[str, str], raw: bytes,
              fields: Fields | None = None) -> Response:
        """Server-side apply (:mod:`informers.testing.apply`): 201 when it created. A
        configuration with fields ``fields`` (the kind's field tree; ``None``: not checked)
        lacks is kube-apiserver's 500, whatever the ``fieldValidation``."""
        rt = info.rt
        assert rt is not None
        manager, force, config = decode_apply(query, raw)
        error = undeclared_fields(config, fields, f"{rt.group}/{rt.version}, Kind={rt.kind}")
        if error is not None:
            raise error
        entry, created = self.strategy.apply(
            rt, info.namespace or "", info.name, config, manager=manager, force=force,
            dry_run=self._dry_run(query, "PatchOptions"), subresource=info.subresource or "")
        return Response(201 if created else 200, entry.typed(rt))

    def patch(
        self, info: RequestInfo, query: dict[str, str], content_type: str, body: Any,
        validate: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        manager: str = "",
    ) -> Response:
        rt = info.rt
        assert rt is not None
        entry = self.strategy.patch(
            rt, info.namespace or "", info.name, content_type, body,
            subresource=info.subresource, dry_run=self._dry_run(query, "PatchOptions"),
            validate=validate,
            manager=manager,
        )
        return Response(200, entry.typed(rt))

    @staticmethod
    def delete_options(query: dict[str, str], body: Any) -> dict[str, Any]:
        """DeleteOptions from the body, overridden by query parameters."""
        options: dict[str, Any] = dict(body) if isinstance(body, dict) else {}
        if body is not None and not isinstance(body, dict):
            raise status.bad_request("the body of a delete request must be a DeleteOptions object")
        if query.get("gracePeriodSeconds"):
            options["gracePeriodSeconds"] = parse_int(
                "gracePeriodSeconds", query["gracePeriodSeconds"]
            )
        if query.get("propagationPolicy"):
            options["propagationPolicy"] = query["propagationPolicy"]
        if query.get("orphanDependents"):
            options["orphanDependents"] = parse_bool("orphanDependents", query["orphanDependents"])
        policy = options.get("propagationPolicy")
        if policy not in (None, "Orphan", "Background", "Foreground"):
            raise status.invalid("DeleteOptions", "meta.k8s.io", "", [(
                "FieldValueNotSupported", "propagationPolicy",
                f'Unsupported value: "{policy}": supported values: "Foreground", '
                '"Background", "Orphan", "nil"')])
        return options

    def delete(self, info: RequestInfo, query: dict[str, str], body: Any) -> Response:
        rt = info.rt
        assert rt is not None
        options = self.delete_options(query, body)
        entry, gone = self.strategy.delete(
            rt, info.namespace or "", info.name, options,
            dry_run=self._dry_run(query, "DeleteOptions")
        )
        code = 200
        if not gone and options.get("orphanDependents") is False:
            code = 202  # handlers/delete.go: not deleted at once and dependents not orphaned
        if gone and not rt.returns_deleted_object:
            # registry store.go finalizeDelete: without ReturnDeletedObject, a Status.
            details: dict[str, Any] = {"name": entry.name}
            if rt.group:
                details["group"] = rt.group
            details["kind"] = rt.plural
            uid = entry.decode()["metadata"].get("uid")
            if uid:
                details["uid"] = uid
            return _json({"kind": "Status", "apiVersion": "v1", "metadata": {},
                          "status": "Success", "details": details}, code)
        return Response(code, entry.typed(rt))

    def deletecollection(
        self, info: RequestInfo, query: dict[str, str], opts: ListOptions, body: Any
    ) -> Response:
        rt = info.rt
        assert rt is not None
        shard = parse_shard_selector(opts.shard_selector, self.settings.sharded_list_and_watch)
        predicate = Predicate(rt, opts.label_selector, opts.field_selector, shard)
        options = self.delete_options(query, body)
        entries = self.strategy.delete_collection(
            rt, info.namespace, predicate, options,
            dry_run=self._dry_run(query, "DeleteOptions"),
        )
        head = (
            f'{{"kind":"{rt.list_kind}","apiVersion":"{rt.api_version}","metadata":'.encode()
            + dumps({"resourceVersion": str(self.storage.rv)}) + b',"items":['
        )
        # Items as a list answers them: built-in kinds without kind/apiVersion.
        bodies = [e.body if rt.builtin else e.typed(rt) for e in entries]
        return Response(200, b"".join((head, b",".join(bodies), b"]}")))


def status_response(err: StatusError) -> Response:
    """The HTTP answer for a failure; ``Retry-After`` mirrors ``details.retryAfterSeconds``
    (``endpoints/handlers/responsewriters/errors.go`` ``ErrorNegotiated``)."""
    headers = []
    details = err.status.get("details")
    if isinstance(details, dict) and details.get("retryAfterSeconds"):
        headers.append(("Retry-After", str(details["retryAfterSeconds"])))
    return Response(err.code or 500, dumps(err.status), headers)

