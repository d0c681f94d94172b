"""kube-apiserver's registry rules for writes: what create, update, patch and delete store.

The :class:`Strategy` plays the generic registry store plus the per-kind strategies and the
NamespaceLifecycle admission plugin: it validates names, sets the server-owned metadata, checks
optimistic concurrency, keeps the status on main-resource writes of kinds with a status
subresource, honours finalizers and graceful pod deletion, and cascades namespace deletion.
Every method runs under the storage lock, so each request is atomic.
"""

from __future__ import annotations

import copy
import datetime
import random
import re
import uuid
from typing import Any

from informers.clock import Clock
from informers.errors import PatchError, StatusError
from informers.testing import status
from informers.testing.options import Predicate
from informers.testing.patch import apply_json_patch, apply_merge_patch
from informers.testing.resources import ResourceRegistry, ResourceType
from informers.testing.storage import Entry, Storage, object_key

__all__ = ["JSON_PATCH", "MERGE_PATCH", "STRATEGIC_MERGE_PATCH", "Strategy"]

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"

_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
# apimachinery/pkg/util/validation/validation.go error texts.
_NAME_RULES: dict[str, tuple[re.Pattern[str], int, str]] = {
    "subdomain": (_SUBDOMAIN, 253, (
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
        "'-' or '.', and must start and end with an alphanumeric character (e.g. "
        "'example.com', regex used for validation is "
        r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")),
    "label": (_LABEL, 63, (
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
        "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
        "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")),
    "dns1035": (_DNS1035, 63, (
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
        "with an alphabetic character, and end with an alphanumeric character (e.g. "
        "'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")),
}
# k8s.io/apimachinery/pkg/util/rand: the alphabet of generateName suffixes (no vowels, no
# confusable characters) and their length (names.SimpleNameGenerator, randomLength = 5).
_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_GENERATE_LENGTH = 5
_TERMINAL_PHASES = ("Succeeded", "Failed")


def rfc3339(moment: datetime.datetime) -> str:
    """``metav1.Time`` JSON: RFC 3339 in UTC with second precision."""
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _strip_rv(obj: dict[str, Any]) -> dict[str, Any]:
    meta = dict(obj.get("metadata") or {})
    meta.pop("resourceVersion", None)
    return {**obj, "metadata": meta}


def _spec_part(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "kind", "apiVersion")}


class Strategy:
    """Applies kube-apiserver's write rules on top of :class:`Storage`. Thread-safe.

    ``seeding=True`` (used by the ``ApiServer`` helpers) relaxes two create rules that exist to
    protect API clients, so tests can seed state in one call: the status sent is kept (a pod can
    be created ``Running``) and a ``resourceVersion`` in the object is ignored rather than
    refused.
    """

    def __init__(self, storage: Storage, registry: ResourceRegistry, clock: Clock) -> None:
        self._storage = storage
        self._registry = registry
        self._clock = clock
        self._rand = random.Random()

    # -- helpers -------------------------------------------------------------------------------

    def _now(self) -> str:
        return rfc3339(self._clock.wall())

    def _namespaces(self) -> ResourceType:
        rt = self._registry.lookup("", "v1", "namespaces")
        assert rt is not None
        return rt

    def _body(self, rt: ResourceType, obj: Any) -> dict[str, Any]:
        if not isinstance(obj, dict):
            raise status.bad_request(
                f"the body of the request must be a JSON object of kind {rt.kind}"
            )
        kind = obj.get("kind")
        if kind not in (None, "", rt.kind):
            raise status.bad_request(
                f"the object provided is unrecognized (must be of type {rt.kind}): "
                f'kind "{kind}" (apiVersion "{obj.get("apiVersion")}")'
            )
        api_version = obj.get("apiVersion")
        if api_version not in (None, "", rt.api_version):
            raise status.bad_request(
                f"the API version in the data ({api_version}) does not match the expected "
                f"API version ({rt.api_version})"
            )
        meta = obj.get("metadata")
        if meta is None:
            obj["metadata"] = meta = {}
        if not isinstance(meta, dict):
            raise status.bad_request("metadata must be a JSON object")
        obj.pop("kind", None)
        obj.pop("apiVersion", None)
        return obj

    def _validate_name(self, rt: ResourceType, name: str, namespace: str) -> None:
        pattern, limit, message = _NAME_RULES.get(rt.name_rule, _NAME_RULES["subdomain"])
        causes = []
        if len(name) > limit:
            causes.append(("FieldValueInvalid", "metadata.name",
                           f'Invalid value: "{name}": must be no more than {limit} characters'))
        if not pattern.fullmatch(name):
            causes.append(("FieldValueInvalid", "metadata.name",
                           f'Invalid value: "{name}": {message}'))
        if causes:
            raise status.invalid(rt.kind, rt.group, name, causes)

    def _check_namespace(self, rt: ResourceType, namespace: str, name: str) -> None:
        """The NamespaceLifecycle admission plugin (``plugin/pkg/admission/namespace``)."""
        if not rt.namespaced:
            return
        ns = self._storage.get(self._namespaces(), namespace)
        if ns is None:
            raise status.not_found("namespaces", "", namespace)
        if b'"deletionTimestamp"' in ns.body and ns.decode()["metadata"].get("deletionTimestamp"):
            raise status.forbidden(
                rt.plural, rt.group, name,
                f"unable to create new content in namespace {namespace} because it is being "
                "terminated",
            )

    def _current(self, rt: ResourceType, namespace: str, name: str) -> Entry:
        entry = self._storage.get(rt, object_key(rt, namespace, name))
        if entry is None:
            raise status.not_found(rt.plural, rt.group, name)
        return entry

    # -- create --------------------------------------------------------------------------------

    def create(
        self, rt: ResourceType, namespace: str, obj: Any, *, seeding: bool = False,
        dry_run: bool = False,
    ) -> Entry:
        """POST to a collection. ``obj`` becomes owned by the storage.

        Raises:
            StatusError: 400 bad body, 422 invalid name, 404 missing namespace, 403 namespace
                terminating, 409 already exists, 500 resourceVersion set.
        """
        obj = self._body(rt, obj)
        meta = obj["metadata"]
        if rt.namespaced:
            if meta.get("namespace") and meta["namespace"] != namespace:
                raise status.bad_request(
                    "the namespace of the provided object does not match the namespace sent "
                    "on the request"
                )
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        with self._storage.lock:
            name = meta.get("name") or ""
            if not name:
                prefix = meta.get("generateName") or ""
                if not prefix:
                    raise status.invalid(rt.kind, rt.group, "", [(
                        "FieldValueRequired", "metadata.name",
                        "Required value: name or generateName is required")])
                while True:
                    name = prefix + "".join(
                        self._rand.choice(_GENERATE_ALPHABET) for _ in range(_GENERATE_LENGTH)
                    )
                    if self._storage.get(rt, object_key(rt, namespace, name)) is None:
                        break
                meta["name"] = name
            self._validate_name(rt, name, namespace)
            if meta.get("resourceVersion"):
                if not seeding:
                    # etcd3 store.Create refuses it; the API reports an internal error.
                    raise status.internal_error(
                        "resourceVersion should not be set on objects to be created"
                    )
                del meta["resourceVersion"]
            self._check_namespace(rt, namespace, name)
            if self._storage.get(rt, object_key(rt, namespace, name)) is not None:
                raise status.already_exists(rt.plural, rt.group, name)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = self._now()
            for key in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
                meta.pop(key, None)
            if rt.has_generation:
                meta["generation"] = 1
            else:
                meta.pop("generation", None)
            if rt.plural == "namespaces" and not rt.group:
                spec = obj.setdefault("spec", {})
                if isinstance(spec, dict):
                    spec.setdefault("finalizers", ["kubernetes"])
            if rt.create_status is not None and not (seeding and "status" in obj):
                obj["status"] = copy.deepcopy(rt.create_status)
            ordered = {"metadata": meta, **{k: v for k, v in obj.items() if k != "metadata"}}
            if dry_run:
                return self._storage.preview(rt, ordered)
            return self._storage.put(rt, ordered)

    # -- update and patch ----------------------------------------------------------------------

    def update(
        self, rt: ResourceType, namespace: str, name: str, obj: Any, *, subresource: str = "",
        seeding: bool = False, dry_run: bool = False,
    ) -> Entry:
        """PUT an object (``subresource="status"``: PUT its status).

        A ``metadata.resourceVersion`` in ``obj`` is a precondition (409 when stale); without
        one the update is unconditional. An update that changes nothing writes nothing.
        """
        obj = self._body(rt, obj)
        with self._storage.lock:
            current = self._current(rt, namespace, name)
            if seeding:
                obj["metadata"].pop("resourceVersion", None)
            return self._write_update(rt, namespace, name, current, obj, subresource, dry_run)

    def patch(
        self, rt: ResourceType, namespace: str, name: str, patch_type: str, patch: Any, *,
        subresource: str = "", dry_run: bool = False,
    ) -> Entry:
        """PATCH an object. Strategic merge patch is applied as a JSON merge patch."""
        with self._storage.lock:
            current = self._current(rt, namespace, name)
            target = current.decode()
            target = {"kind": rt.kind, "apiVersion": rt.api_version, **target}
            try:
                if patch_type == JSON_PATCH:
                    patched = apply_json_patch(target, patch)
                else:
                    if not isinstance(patch, dict):
                        raise PatchError("a merge patch must be a JSON object")
                    patched = apply_merge_patch(target, patch)
            except PatchError as err:
                raise status.invalid(rt.kind, rt.group, name, [
                    ("FieldValueInvalid", "patch", f"Invalid value: {err}")
                ]) from None
            patched = self._body(rt, patched)
            target.pop("kind")
            target.pop("apiVersion")
            return self._write_update(
                rt, namespace, name, current, patched, subresource, dry_run, old=target
            )

    def _write_update(
        self, rt: ResourceType, namespace: str, name: str, current: Entry, obj: dict[str, Any],
        subresource: str, dry_run: bool, old: dict[str, Any] | None = None,
    ) -> Entry:
        """Store ``obj`` over ``current``. ``old`` is ``current`` decoded (it may share nested
        values with ``obj``, as a patched copy does; neither is mutated below the top level)."""
        obj = {**obj, "metadata": dict(obj["metadata"])}
        meta = obj["metadata"]
        if meta.get("name", "") != name:
            raise status.bad_request(
                f"the name of the object ({meta.get('name', '')}) does not match the name on "
                f"the URL ({name})"
            )
        if rt.namespaced and meta.get("namespace") and meta["namespace"] != namespace:
            raise status.bad_request(
                "the namespace of the provided object does not match the namespace sent "
                "on the request"
            )
        rv = meta.get("resourceVersion")
        if rv and rv != str(current.rv):
            raise status.conflict(rt.plural, rt.group, name, status.OPTIMISTIC_LOCK_MESSAGE)
        if old is None:
            old = current.decode()
        old_meta = old["metadata"]
        if subresource == "status":
            new = copy.deepcopy(old)
            if obj.get("status") is None:
                new.pop("status", None)
            else:
                new["status"] = obj["status"]
        else:
            new = obj
            new_meta = new["metadata"]
            for key in ("uid", "creationTimestamp", "deletionTimestamp",
                        "deletionGracePeriodSeconds", "generation"):
                if key in old_meta:
                    new_meta[key] = old_meta[key]
                else:
                    new_meta.pop(key, None)
            if rt.namespaced:
                new_meta["namespace"] = namespace
            new_meta.pop("selfLink", None)
            if rt.has_status and subresource != "*":  # "*": a seeding helper's full update
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
            if rt.has_generation and _spec_part(new) != _spec_part(old):
                new_meta["generation"] = int(old_meta.get("generation") or 0) + 1
            if old_meta.get("deletionTimestamp"):
                added = [f for f in new_meta.get("finalizers") or []
                         if f not in (old_meta.get("finalizers") or [])]
                if added:
                    rendered = ", ".join(f'"{f}"' for f in added)
                    raise status.invalid(rt.kind, rt.group, name, [(
                        "FieldValueForbidden", "metadata.finalizers",
                        "Forbidden: no new finalizers can be added if the object is being "
                        f"deleted, found new finalizers []string{{{rendered}}}")])
        new = {"metadata": new["metadata"], **{k: v for k, v in new.items() if k != "metadata"}}
        new["metadata"]["resourceVersion"] = str(current.rv)
        if _strip_rv(new) == _strip_rv(old):
            return current  # no-op: etcd3 GuaranteedUpdate skips the write
        if dry_run:
            return self._storage.preview(rt, new)
        new_meta = new["metadata"]
        if (new_meta.get("deletionTimestamp") and not new_meta.get("finalizers")
                and not new_meta.get("deletionGracePeriodSeconds")):
            # The last finalizer is gone from an object being deleted: remove it now
            # (registry store.go shouldDeleteDuringUpdate).
            return self._storage.remove(rt, current.key, new)
        return self._storage.put(rt, new)

    # -- delete --------------------------------------------------------------------------------

    def delete(
        self, rt: ResourceType, namespace: str, name: str, options: dict[str, Any], *,
        dry_run: bool = False,
    ) -> tuple[Entry, bool]:
        """DELETE an object; returns the entry answered and whether it is gone.

        Rules (documented on ``ApiServer``): preconditions are checked (409); an object with
        finalizers is only marked (``deletionTimestamp``); a pod bound to a node and not
        terminal is deleted gracefully when ``gracePeriodSeconds > 0`` is given, i.e. marked
        until a delete with ``gracePeriodSeconds=0`` (what the kubelet sends); a namespace
        takes everything in it along at once.
        """
        with self._storage.lock:
            current = self._current(rt, namespace, name)
            obj = current.decode()
            meta = obj["metadata"]
            preconditions = options.get("preconditions") or {}
            if not isinstance(preconditions, dict):
                raise status.bad_request("preconditions must be a JSON object")
            uid = preconditions.get("uid")
            if uid and uid != meta.get("uid"):
                raise status.conflict(
                    rt.plural, rt.group, name,
                    f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
                    f"{meta.get('uid', '')}",
                )
            want_rv = preconditions.get("resourceVersion")
            if want_rv and want_rv != str(current.rv):
                raise status.conflict(
                    rt.plural, rt.group, name,
                    f"the ResourceVersion in the precondition ({want_rv}) does not match the "
                    f"ResourceVersion in record ({current.rv}). The object might have been "
                    "modified",
                )
            grace = options.get("gracePeriodSeconds")
            if grace is not None and not isinstance(grace, int):
                raise status.bad_request("gracePeriodSeconds must be an integer")
            if dry_run:
                return current, False
            if self._graceful_pod(rt, obj, grace):
                assert grace is not None
                pending = meta.get("deletionGracePeriodSeconds")
                if meta.get("deletionTimestamp") and pending is not None and pending <= grace:
                    return current, False  # already terminating with a shorter period
                moment = self._clock.wall() + datetime.timedelta(seconds=grace)
                meta["deletionTimestamp"] = rfc3339(moment)
                meta["deletionGracePeriodSeconds"] = grace
                self._bump_generation(rt, meta)
                return self._storage.put(rt, obj), False
            if meta.get("finalizers"):
                if meta.get("deletionTimestamp") and not meta.get("deletionGracePeriodSeconds"):
                    return current, False  # already marked; waiting for finalizers
                meta["deletionTimestamp"] = self._now()
                meta["deletionGracePeriodSeconds"] = 0
                self._bump_generation(rt, meta)
                return self._storage.put(rt, obj), False
            if rt.plural == "namespaces" and not rt.group:
                self._delete_namespace_contents(name)
            return self._storage.remove(rt, current.key), True

    def _graceful_pod(self, rt: ResourceType, obj: dict[str, Any], grace: int | None) -> bool:
        if rt.group or rt.plural != "pods" or grace is None or grace <= 0:
            return False
        spec = obj.get("spec") or {}
        phase = (obj.get("status") or {}).get("phase")
        return bool(spec.get("nodeName")) and phase not in _TERMINAL_PHASES

    @staticmethod
    def _bump_generation(rt: ResourceType, meta: dict[str, Any]) -> None:
        if rt.has_generation and meta.get("generation"):
            meta["generation"] = int(meta["generation"]) + 1

    def _delete_namespace_contents(self, namespace: str) -> None:
        # The namespace controller's job, done synchronously: every namespaced object goes.
        prefix = namespace + "/"
        for coll in self._storage.collections():
            if not coll.rt.namespaced:
                continue
            for key in [k for k in coll.sorted_keys() if k.startswith(prefix)]:
                self._storage.remove(coll.rt, key)

    def delete_collection(
        self, rt: ResourceType, namespace: str | None, predicate: Predicate,
        options: dict[str, Any], *, dry_run: bool = False,
    ) -> list[Entry]:
        """DELETE on a collection: delete every object the selectors match, one by one.
        Returns them as they were listed before the deletion."""
        with self._storage.lock:
            coll = self._storage.collection(rt)
            keys = coll.sorted_keys()
            if namespace is not None and rt.namespaced:
                keys = [k for k in keys if coll.objects[k].namespace == namespace]
            deleted = []
            for key in keys:
                entry = coll.objects.get(key)
                if entry is None or not predicate.matches(entry):
                    continue
                try:
                    self.delete(rt, entry.namespace, entry.name, options, dry_run=dry_run)
                except StatusError as err:
                    if err.code == 404:
                        continue
                    raise
                deleted.append(entry)  # store.go DeleteCollection answers the listed objects
            return deleted
