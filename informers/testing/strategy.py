"""kube-apiserver's registry rules for writes: what create, update, patch and delete store.

The :class:`Strategy` plays the generic registry store, applying the per-kind strategies of
:mod:`informers.testing.kind_rules`, the NamespaceLifecycle admission plugin and,
synchronously, kube-controller-manager's namespace controller: it validates names, sets the
server-owned metadata, checks optimistic concurrency, keeps the status on main-resource writes
of kinds with a status subresource, honours finalizers and graceful pod deletion, and takes a
deleted namespace through its ``Terminating`` phase. The request body's checks and defaults
are :mod:`informers.testing.request_body`'s, the marking of graceful deletion and dry-run
deletes :mod:`informers.testing.graceful_deletion`'s, and the namespace rules
:mod:`informers.testing.namespace_lifecycle`'s. Every method runs under the storage lock,
so each request is atomic, except while admission webhooks are called
(:mod:`informers.testing.admission`: the lock is released, and what was read is checked
again after). Custom resources of a CRD with webhook conversion are stored in the storage
version (:mod:`informers.testing.conversion`).
"""

from __future__ import annotations

import copy
import random
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from informers.clock import Clock
from informers.errors import StatusError
from informers.testing import status
from informers.testing.apply import apply_object, record_update, same_managed_fields
from informers.testing.defaults import default_ip_families
from informers.testing.errors import PatchError
from informers.testing.graceful_deletion import bump_generation, delete_pod, dry_run_delete, rfc3339
from informers.testing.kind_rules import (
    IMMORTAL_NAMESPACES,
    allocate_cluster_ip,
    check_no_new_finalizers,
    is_daemon_sets,
    is_namespaces,
    is_pods,
    is_services,
    keep_cluster_ip,
    prepare_namespace_create,
    prepare_namespace_update,
    spec_finalizers,
    status_metadata,
    template_generation,
    validate,
)
from informers.testing.merge_schema import MergeSchemas
from informers.testing.namespace_lifecycle import NamespaceLifecycle
from informers.testing.options import Predicate
from informers.testing.patch import apply_json_patch, apply_merge_patch
from informers.testing.pod_admission import admit_pod, keep_qos_class, pod_qos_class
from informers.testing.request_body import normalize_body
from informers.testing.resources import ResourceRegistry, ResourceType
from informers.testing.storage import Entry, Storage, object_key
from informers.testing.strategic_merge import strategic_patch

if TYPE_CHECKING:
    from informers.testing.admission import Admission
    from informers.testing.conversion import Conversion
    from informers.testing.crds import CustomResources

__all__ = ["JSON_PATCH", "MERGE_PATCH", "STRATEGIC_MERGE_PATCH", "Strategy"]

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"

# k8s.io/apimachinery/pkg/util/rand: the alphabet of generateName suffixes (no vowels, no
# confusable characters) and their length (names.SimpleNameGenerator, randomLength = 5).
_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_GENERATE_LENGTH = 5


def _strip_rv(obj: dict[str, Any]) -> dict[str, Any]:
    meta = dict(obj.get("metadata") or {})
    meta.pop("resourceVersion", None)
    return {**obj, "metadata": meta}


def _spec_part(obj: dict[str, Any], keep_status: bool = False) -> dict[str, Any]:
    """What ``metadata.generation`` follows: all but metadata and (unless ``keep_status``:
    a custom resource without the status subresource) the status."""
    skip = ("metadata", "kind", "apiVersion") if keep_status else (
        "metadata", "status", "kind", "apiVersion")
    return {k: v for k, v in obj.items() if k not in skip}


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
        self._lifecycle = NamespaceLifecycle(storage, registry, clock, delete=self.delete,
                                             remove=self._remove,
                                             finalize=self._finalize_namespace)
        self.custom: CustomResources | None = None  # CRDs and custom resources (crds.py)
        self.admission: Admission | None = None  # webhooks (admission.py), for API writes
        self.conversion: Conversion | None = None  # CRD conversion webhooks (conversion.py)

    # -- helpers -------------------------------------------------------------------------------

    def _now(self) -> str:
        return rfc3339(self._clock.wall())

    def now(self) -> str:
        """The clock's wall time as a ``metav1.Time`` (for the CRD controllers)."""
        return self._now()

    def _current(self, rt: ResourceType, namespace: str, name: str) -> Entry:
        entry = self._storage.get(rt, object_key(rt, namespace, name))
        if entry is None:
            raise status.not_found(rt.plural, rt.group, name)
        return entry

    # -- create --------------------------------------------------------------------------------

    def create(
        self, rt: ResourceType, namespace: str, obj: Any, *, seeding: bool = False,
        dry_run: bool = False, manager: str = "",
    ) -> Entry:
        """POST to a collection. ``obj`` becomes owned by the storage.

        Raises:
            StatusError: 400 bad body, 422 invalid name, 404 missing namespace, 403 namespace
                terminating, 409 already exists, 500 resourceVersion set.
        """
        obj = normalize_body(rt, obj, seeding)
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
            self._lifecycle.admit(
                rt, namespace, meta.get("name") or meta.get("generateName") or "Unknown"
            )
            recorded = False
            # The built-in mutating admission plugins (DefaultTolerationSeconds, Priority) run
            # before the mutating webhooks, as in kube-apiserver's plugin order.
            if is_pods(rt):
                admit_pod(obj, None)
            elif is_daemon_sets(rt):
                template_generation(obj, None)
            if self.admission is not None:
                if manager and self.admission.mutating_configured():
                    # kube-apiserver's field manager runs before admission: mutating
                    # webhooks see the entry, and their own changes are not attributed
                    self._record(rt, None, obj, manager)
                    recorded = True
                obj = self._admit(rt, "CREATE", namespace, meta.get("name") or "", "", obj,
                                  None, dry_run)
                meta = obj["metadata"]
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
            if self.custom is not None:
                self.custom.prepare(rt, obj, None, "", seeding)
            if self.admission is not None:
                self.admission.prepare(rt, obj)
            validate(rt, obj)
            if meta.get("resourceVersion"):
                if not seeding:
                    # etcd3 store.Create refuses it; the API reports an internal error.
                    raise status.internal_error(
                        "resourceVersion should not be set on objects to be created"
                    )
                del meta["resourceVersion"]
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
            if is_namespaces(rt):
                prepare_namespace_create(obj, name)
            if is_services(rt):
                allocate_cluster_ip(obj, self._storage.collection(rt).objects.values(), self._rand)
                if isinstance(obj.get("spec"), dict):
                    default_ip_families(obj["spec"])
            if rt.create_status is not None and not (seeding and "status" in obj):
                obj["status"] = copy.deepcopy(rt.create_status)
            if is_pods(rt):
                # pod strategy PrepareForCreate: the QoS class, immutable from now on
                pod_status = obj.get("status")
                if not isinstance(pod_status, dict):
                    pod_status = obj["status"] = {}
                if not pod_status.get("qosClass"):
                    pod_status["qosClass"] = pod_qos_class(obj)
            ordered = {"metadata": meta, **{k: v for k, v in obj.items() if k != "metadata"}}
            if manager and not recorded:
                self._record(rt, None, ordered, manager)
            if self.admission is not None:
                self._check_admitted(rt, "CREATE", namespace, name, "", ordered, None, dry_run)
                if self._storage.get(rt, object_key(rt, namespace, name)) is not None:
                    raise status.already_exists(rt.plural, rt.group, name)
            ordered = self._as_stored(rt, ordered)
            if dry_run:
                return self._storage.preview(rt, ordered)
            return self._put(rt, ordered)

    # -- admission (admission.py) and CRD webhook conversion (conversion.py) ----------------

    def _admit(self, rt: ResourceType, operation: str, namespace: str, name: str,
               subresource: str, obj: dict[str, Any] | None, old: dict[str, Any] | None,
               dry_run: bool, options: dict[str, Any] | None = None) -> dict[str, Any]:
        """The mutating webhooks (run with the storage lock released): the object left."""
        assert self.admission is not None
        return self.admission.mutate(self.admission.attributes(
            rt, operation, namespace, name, subresource, obj, old, dry_run, options)) or {}

    def _check_admitted(self, rt: ResourceType, operation: str, namespace: str, name: str,
                        subresource: str, obj: dict[str, Any] | None,
                        old: dict[str, Any] | None, dry_run: bool,
                        options: dict[str, Any] | None = None) -> None:
        """The policies and validating webhooks on the object about to be stored."""
        assert self.admission is not None
        self.admission.validate(self.admission.attributes(
            rt, operation, namespace, name, subresource, obj, old, dry_run, options))

    def _record(self, rt: ResourceType, old: dict[str, Any] | None, obj: dict[str, Any],
                manager: str) -> None:
        """The manager's ``Update`` entry in ``obj``'s ``managedFields``."""
        record_update(old, obj, MergeSchemas.shared().shape(rt), manager=manager,
                      api_version=rt.api_version, now=self._now(), has_status=rt.has_status)

    def _check_unchanged(self, rt: ResourceType, current: Entry) -> None:
        """After webhooks ran unlocked: 409 when the object changed meanwhile."""
        now = self._storage.get(rt, current.key)
        if now is None:
            raise status.not_found(rt.plural, rt.group, current.name)
        if now.rv != current.rv:
            raise status.conflict(rt.plural, rt.group, current.name,
                                  status.OPTIMISTIC_LOCK_MESSAGE)

    def _as_read(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        return obj if self.conversion is None else self.conversion.read_as(rt, obj)

    def _as_stored(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        return obj if self.conversion is None else self.conversion.store_as(rt, obj)

    def _put(self, rt: ResourceType, obj: dict[str, Any]) -> Entry:
        entry = self._storage.put(rt, obj)
        if self.custom is not None:
            self.custom.stored(rt, entry)
        return entry

    # -- update and patch ----------------------------------------------------------------------

    def update(
        self, rt: ResourceType, namespace: str, name: str, obj: Any, *, subresource: str = "",
        seeding: bool = False, dry_run: bool = False, manager: str = "",
    ) -> Entry:
        """PUT an object (``subresource="status"``: PUT its status).

        A ``metadata.resourceVersion`` in ``obj`` is a precondition (409 when stale); without
        one the update is unconditional. An update that changes nothing writes nothing.
        """
        obj = normalize_body(rt, obj, seeding or subresource == "*")
        with self._storage.lock:
            current = self._current(rt, namespace, name)
            if seeding:
                obj["metadata"].pop("resourceVersion", None)
            return self._write_update(rt, namespace, name, current, obj, subresource, dry_run,
                                      manager=manager)

    def patch(
        self, rt: ResourceType, namespace: str, name: str, patch_type: str, patch: Any, *,
        subresource: str = "", dry_run: bool = False,
        validate: Callable[[dict[str, Any]], dict[str, Any]] | None = None, manager: str = "",
    ) -> Entry:
        """PATCH an object (a strategic merge patch by :mod:`informers.testing
        .strategic_merge`; on custom resources, which kube-apiserver refuses it for, as a JSON
        merge patch).
        ``validate`` sees the patched object (with ``kind`` and ``apiVersion``) and returns
        what to store (the ``fieldValidation`` check)."""
        with self._storage.lock:
            current = self._current(rt, namespace, name)
            target = self._as_read(rt, current.decode())
            target = {"kind": rt.kind, "apiVersion": rt.api_version, **target}
            try:
                if patch_type == JSON_PATCH:
                    patched = apply_json_patch(target, patch)
                elif patch_type == STRATEGIC_MERGE_PATCH and rt.builtin:
                    patched = strategic_patch(rt, target, patch)
                else:
                    if not isinstance(patch, dict):
                        raise PatchError("a merge patch must be a JSON object")
                    patched = apply_merge_patch(target, patch)
            except PatchError as err:
                raise status.invalid(rt.kind, rt.group, name, [
                    ("FieldValueInvalid", "patch", f"Invalid value: {err}")
                ]) from None
            if validate is not None and isinstance(patched, dict):
                patched = validate(patched)
            patched = normalize_body(rt, patched)
            target.pop("kind")
            target.pop("apiVersion")
            return self._write_update(
                rt, namespace, name, current, patched, subresource, dry_run, old=target,
                manager=manager,
            )

    def apply(
        self, rt: ResourceType, namespace: str, name: str, config: dict[str, Any], *,
        manager: str, force: bool, dry_run: bool = False, subresource: str = "",
    ) -> tuple[Entry, bool]:
        """Server-side apply :mod:`informers.testing.apply`; ``(entry, created)``. An apply to
        ``status`` needs the object to exist (404 otherwise) and changes only its status."""
        with self._storage.lock:
            current = self._storage.get(rt, object_key(rt, namespace, name))
            if current is None and subresource:
                raise status.not_found(rt.plural, rt.group, name)
            live = None
            if current is not None:
                live = {"kind": rt.kind, "apiVersion": rt.api_version,
                        **self._as_read(rt, current.decode())}
            merged = apply_object(live, config, MergeSchemas.shared().shape(rt),
                                  manager=manager, force=force, api_version=rt.api_version,
                                  now=self._now(), has_status=rt.has_status,
                                  subresource=subresource, status_meta=status_metadata(rt))
            if current is None:
                return self.create(rt, namespace, merged, dry_run=dry_run), True
            assert live is not None
            merged = normalize_body(rt, merged)
            merged["metadata"].pop("resourceVersion", None)
            live.pop("kind")
            live.pop("apiVersion")
            return self._write_update(rt, namespace, name, current, merged, subresource,
                                      dry_run, old=live, applied=True), False

    def _write_update(
        self, rt: ResourceType, namespace: str, name: str, current: Entry, obj: dict[str, Any],
        subresource: str, dry_run: bool, old: dict[str, Any] | None = None,
        manager: str = "", applied: bool = False,
    ) -> Entry:
        """Store ``obj`` over ``current``. ``old`` is ``current`` decoded (it may share nested
        values with ``obj``, as a patched copy does; neither is mutated below the top level).
        ``applied``: ``obj`` is a server-side apply's result, its ``managedFields`` already
        final."""
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
            old = self._as_read(rt, current.decode())
        recorded = False
        if self.admission is not None and subresource in ("", "status"):
            if manager and subresource == "" and self.admission.mutating_configured():
                self._record(rt, old, obj, manager)  # before admission, as in create
                recorded = True
            obj = self._admit(rt, "UPDATE", namespace, name, subresource, obj, old, dry_run)
            obj = {**obj, "metadata": dict(obj.get("metadata") or {})}
            meta = obj["metadata"]
            self._check_unchanged(rt, current)
        if self.custom is not None:
            self.custom.prepare(rt, obj, old, subresource, subresource == "*")
        if self.admission is not None and subresource != "status":
            self.admission.prepare(rt, obj)
        old_meta = old["metadata"]
        if subresource == "status":
            # Everything but the status (and the metadata the kind lets through) from
            # ``old``: a copy of its top level and metadata is enough, as nothing below them
            # is mutated.
            new = {**old, "metadata": dict(old_meta)}
            for key in status_metadata(rt):  # what the kind's status strategy lets through
                if key in meta:
                    new["metadata"][key] = meta[key]
                else:
                    new["metadata"].pop(key, None)
            check_no_new_finalizers(rt, name, new["metadata"], old_meta)
            if applied and "managedFields" in meta:
                # An apply's entries survive the reset (customresource status_strategy.go
                # PrepareForUpdate "managedFields must be preserved"); those an update sends
                # are ignored on a subresource (managedfields/internal/fieldmanager.go
                # decodeLiveOrNew), the live ones stay and record_update adds its entry.
                if meta["managedFields"]:
                    new["metadata"]["managedFields"] = meta["managedFields"]
                else:
                    new["metadata"].pop("managedFields", None)
            if obj.get("status") is None:
                new.pop("status", None)
            else:
                new["status"] = obj["status"]
            if is_pods(rt):
                keep_qos_class(new, old)
        else:
            new = obj
            new_meta = new["metadata"]
            if old_meta.get("managedFields") and (
                    "managedFields" not in new_meta
                    or same_managed_fields(new_meta["managedFields"], old_meta["managedFields"])):
                # an update that sends none keeps them (fieldmanager: nil means unchanged)
                new_meta["managedFields"] = old_meta["managedFields"]
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
            if is_namespaces(rt):
                prepare_namespace_update(new, old, name, keep_finalizers=subresource == "")
            if is_services(rt):
                keep_cluster_ip(new, old)
                if isinstance(new.get("spec"), dict):
                    default_ip_families(new["spec"])
            if is_pods(rt):
                admit_pod(new, old)
                keep_qos_class(new, old)
            elif is_daemon_sets(rt):
                template_generation(new, old)
            keep_status = not rt.builtin and not rt.has_status
            if rt.has_generation and _spec_part(new, keep_status) != _spec_part(old, keep_status):
                new_meta["generation"] = int(old_meta.get("generation") or 0) + 1
            check_no_new_finalizers(rt, name, new_meta, old_meta)
            validate(rt, new, old, seeding=subresource == "*")
        new = {"metadata": new["metadata"], **{k: v for k, v in new.items() if k != "metadata"}}
        new["metadata"]["resourceVersion"] = str(current.rv)
        if manager and not recorded:  # unchanged fields leave the entries as they were
            record_update(old, new, MergeSchemas.shared().shape(rt), manager=manager,
                          api_version=rt.api_version, now=self._now(),
                          has_status=rt.has_status, status_meta=status_metadata(rt),
                          subresource=subresource if subresource in ("status", "scale") else "")
        if self.admission is not None and subresource in ("", "status"):
            self._check_admitted(rt, "UPDATE", namespace, name, subresource, new, old, dry_run)
            self._check_unchanged(rt, current)
        if _strip_rv(new) == _strip_rv(old):
            return current  # no-op: etcd3 GuaranteedUpdate skips the write
        new = self._as_stored(rt, new)
        if dry_run:
            return self._storage.preview(rt, new)
        new_meta = new["metadata"]
        if (new_meta.get("deletionTimestamp") and not new_meta.get("finalizers")
                and not new_meta.get("deletionGracePeriodSeconds")
                and not (is_namespaces(rt) and spec_finalizers(new))):
            # The last finalizer is gone from an object being deleted: remove it now
            # (registry store.go ShouldDeleteDuringUpdate; for namespaces also the last
            # spec.finalizer: ShouldDeleteNamespaceDuringUpdate).
            return self._remove(rt, current.key, new)
        return self._put(rt, new)

    def _remove(self, rt: ResourceType, key: str, final: dict[str, Any] | None = None) -> Entry:
        """Remove an object; when that empties a terminating namespace, finalize it."""
        entry = self._storage.remove(rt, key, final)
        if self.custom is not None:
            self.custom.removed(rt, entry)
        if rt.namespaced:
            self._lifecycle.removed(entry.namespace)
        return entry

    def _finalize_namespace(self, rt: ResourceType, name: str, ns: Entry,
                            obj: dict[str, Any]) -> Entry:
        """The namespace controller's ``/finalize`` update of an emptied namespace."""
        return self._write_update(rt, "", name, ns, obj, "finalize", False)

    # -- delete --------------------------------------------------------------------------------

    def delete(
        self, rt: ResourceType, namespace: str, name: str, options: dict[str, Any], *,
        dry_run: bool = False,
    ) -> tuple[Entry, bool]:
        """DELETE an object; returns the entry answered and whether it is gone.

        Rules (documented on ``ApiServer``): preconditions are checked (409); an object with
        finalizers is only marked (``deletionTimestamp``); a pod is deleted gracefully
        (:func:`~informers.testing.graceful_deletion.delete_pod`: marked, then removed by a
        delete with period 0); a namespace goes through its ``Terminating`` phase
        (:meth:`NamespaceLifecycle.delete
        <informers.testing.namespace_lifecycle.NamespaceLifecycle.delete>`), and ``default``,
        ``kube-system`` and ``kube-public`` cannot be deleted (403, NamespaceLifecycle).
        """
        if is_namespaces(rt) and name in IMMORTAL_NAMESPACES:
            raise status.forbidden(rt.plural, rt.group, name, "this namespace may not be deleted")
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
            if self.admission is not None:
                self._admit(rt, "DELETE", namespace, name, "", None, obj, dry_run, options)
                self._check_admitted(rt, "DELETE", namespace, name, "", None, obj, dry_run,
                                     options)
                self._check_unchanged(rt, current)
            if dry_run:
                return dry_run_delete(self._storage, self._clock, rt, current, obj, grace)
            if is_namespaces(rt):
                return self._lifecycle.delete(rt, current, obj)
            if is_pods(rt):
                return delete_pod(self._storage, self._clock, self._remove, rt, current, obj,
                                  grace)
            if self.custom is not None:
                self.custom.deleting(rt, obj)
            if meta.get("finalizers"):
                if meta.get("deletionTimestamp") and not meta.get("deletionGracePeriodSeconds"):
                    return current, False  # already marked; waiting for finalizers
                meta["deletionTimestamp"] = self._now()
                meta["deletionGracePeriodSeconds"] = 0
                bump_generation(rt, meta)
                return self._put(rt, obj), False
            return self._remove(rt, current.key), True

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
