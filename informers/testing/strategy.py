"""kube-apiserver's registry rules for writes: what create, update, patch and delete store.

The :class:`Strategy` plays the generic registry store, applying the per-kind strategies of
:mod:`informers.testing.kind_rules`, the NamespaceLifecycle admission plugin and,
synchronously, kube-controller-manager's namespace controller: it validates names, sets the
server-owned metadata, checks optimistic concurrency, keeps the status on main-resource writes
of kinds with a status subresource, honours finalizers and graceful pod deletion, and takes a
deleted namespace through its ``Terminating`` phase. Every method runs under the storage lock,
so each request is atomic, except while admission webhooks are called
(:mod:`informers.testing.admission`: the lock is released, and what was read is checked
again after). Custom resources of a CRD with webhook conversion are stored in the storage
version (:mod:`informers.testing.conversion`).
"""

from __future__ import annotations

import bisect
import copy
import datetime
import random
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from informers.clock import Clock
from informers.errors import StatusError
from informers.testing import status
from informers.testing.apply import apply_object, record_update, same_managed_fields
from informers.testing.defaults import apply_defaults, default_ip_families
from informers.testing.errors import PatchError
from informers.testing.kind_rules import (
    IMMORTAL_NAMESPACES,
    KUBERNETES_FINALIZER,
    TERMINATING,
    allocate_cluster_ip,
    default_endpoints,
    is_daemon_sets,
    is_endpoints,
    is_namespaces,
    is_pods,
    is_services,
    is_terminating,
    keep_cluster_ip,
    omit_empty,
    pod_grace_period,
    prepare_namespace_create,
    prepare_namespace_update,
    round_trip_pod_ips,
    spec_finalizers,
    template_generation,
    validate,
)
from informers.testing.merge_schema import MergeSchemas
from informers.testing.options import Predicate
from informers.testing.patch import apply_json_patch, apply_merge_patch
from informers.testing.pod_admission import admit_pod, keep_qos_class, pod_qos_class
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


def rfc3339(moment: datetime.datetime) -> str:
    """``metav1.Time`` JSON: RFC 3339 in UTC with second precision."""
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


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


def _parse_time(text: str) -> datetime.datetime:
    """A ``metav1.Time`` (RFC 3339, UTC, second precision) as an aware datetime."""
    moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc)


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
        self._sweeping = False  # deleting a namespace's content: finalize once, at the end
        self.custom: CustomResources | None = None  # CRDs and custom resources (crds.py)
        self.admission: Admission | None = None  # webhooks (admission.py), for API writes
        self.conversion: Conversion | None = None  # CRD conversion webhooks (conversion.py)

    # -- helpers -------------------------------------------------------------------------------

    def _now(self) -> str:
        return rfc3339(self._clock.wall())

    def now(self) -> str:
        """The clock's wall time as a ``metav1.Time`` (for the CRD controllers)."""
        return self._now()

    def _namespaces(self) -> ResourceType:
        rt = self._registry.lookup("", "v1", "namespaces")
        assert rt is not None
        return rt

    def _body(self, rt: ResourceType, obj: Any, seeding: bool = True) -> dict[str, Any]:
        """Check and normalise a request body. Custom resources must name their
        ``apiVersion`` (an unstructured object carries it; the seeding helpers need not)."""
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
        if api_version not in (None, "", rt.api_version) or (
                not seeding and not rt.builtin and api_version != rt.api_version):
            raise status.bad_request(
                f"the API version in the data ({api_version or ''}) does not match the expected "
                f"API version ({rt.api_version})"
            )
        meta = obj.get("metadata")
        if meta is None:
            obj["metadata"] = meta = {}
        if not isinstance(meta, dict):
            raise status.bad_request("metadata must be a JSON object")
        obj.pop("kind", None)
        obj.pop("apiVersion", None)
        omit_empty(rt, obj)
        if rt.builtin:
            apply_defaults(rt.group, rt.plural, obj)
        if is_pods(rt):
            round_trip_pod_ips(obj)
        elif is_endpoints(rt):
            default_endpoints(obj)
        return obj

    def _check_namespace(self, rt: ResourceType, namespace: str, name: str) -> None:
        """The NamespaceLifecycle admission plugin on a create
        (``apiserver/pkg/admission/plugin/namespace/lifecycle/admission.go``): 404 for a
        missing namespace, 403 with a ``NamespaceTerminating`` cause for a terminating one
        (``status.phase``). Admission runs before names are generated or validated."""
        if not rt.namespaced:
            return
        ns = self._storage.get(self._namespaces(), namespace)
        if ns is None:
            raise status.not_found("namespaces", "", namespace)
        if is_terminating(ns):
            raise status.namespace_terminating(rt.plural, rt.group, name, namespace)

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
        obj = self._body(rt, obj, seeding)
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
            self._check_namespace(
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
        obj = self._body(rt, obj, seeding or subresource == "*")
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
            patched = self._body(rt, patched)
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
                                  subresource=subresource)
            if current is None:
                return self.create(rt, namespace, merged, dry_run=dry_run), True
            assert live is not None
            merged = self._body(rt, merged)
            merged["metadata"].pop("resourceVersion", None)
            live.pop("kind")
            live.pop("apiVersion")
            return self._write_update(rt, namespace, name, current, merged, subresource,
                                      dry_run, old=live), False

    def _write_update(
        self, rt: ResourceType, namespace: str, name: str, current: Entry, obj: dict[str, Any],
        subresource: str, dry_run: bool, old: dict[str, Any] | None = None,
        manager: str = "",
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
            # Everything but the status from ``old``: a copy of its top level and metadata
            # is enough, as nothing below them is mutated.
            new = {**old, "metadata": dict(old_meta)}
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
            if old_meta.get("deletionTimestamp"):
                added = [f for f in new_meta.get("finalizers") or []
                         if f not in (old_meta.get("finalizers") or [])]
                if added:
                    rendered = ", ".join(f'"{f}"' for f in added)
                    raise status.invalid(rt.kind, rt.group, name, [(
                        "FieldValueForbidden", "metadata.finalizers",
                        "Forbidden: no new finalizers can be added if the object is being "
                        f"deleted, found new finalizers []string{{{rendered}}}")])
            validate(rt, new, old, seeding=subresource == "*")
        new = {"metadata": new["metadata"], **{k: v for k, v in new.items() if k != "metadata"}}
        new["metadata"]["resourceVersion"] = str(current.rv)
        if manager and not recorded:  # unchanged fields leave the entries as they were
            record_update(old, new, MergeSchemas.shared().shape(rt), manager=manager,
                          api_version=rt.api_version, now=self._now(),
                          has_status=rt.has_status,
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
        if rt.namespaced and not self._sweeping:
            self._finalize_if_empty(entry.namespace)
        return entry

    # -- delete --------------------------------------------------------------------------------

    def delete(
        self, rt: ResourceType, namespace: str, name: str, options: dict[str, Any], *,
        dry_run: bool = False,
    ) -> tuple[Entry, bool]:
        """DELETE an object; returns the entry answered and whether it is gone.

        Rules (documented on ``ApiServer``): preconditions are checked (409); an object with
        finalizers is only marked (``deletionTimestamp``); a pod is deleted gracefully
        (:meth:`_delete_pod`: marked, then removed by a delete with period 0); a namespace
        goes through its ``Terminating`` phase (:meth:`_delete_namespace`), and ``default``,
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
                return self._dry_run_delete(rt, current, obj, grace)
            if is_namespaces(rt):
                return self._delete_namespace(rt, current, obj)
            if is_pods(rt):
                return self._delete_pod(rt, current, obj, grace)
            if self.custom is not None:
                self.custom.deleting(rt, obj)
            if meta.get("finalizers"):
                if meta.get("deletionTimestamp") and not meta.get("deletionGracePeriodSeconds"):
                    return current, False  # already marked; waiting for finalizers
                meta["deletionTimestamp"] = self._now()
                meta["deletionGracePeriodSeconds"] = 0
                self._bump_generation(rt, meta)
                return self._put(rt, obj), False
            return self._remove(rt, current.key), True

    def _dry_run_delete(
        self, rt: ResourceType, current: Entry, obj: dict[str, Any], grace: int | None
    ) -> tuple[Entry, bool]:
        """What a delete would answer, storing nothing (``store.go`` ``Delete`` with
        ``dryRun``): an object with finalizers, a pod (graceful deletion: marked even with
        period 0) and a namespace (``Terminating``) are answered marked, at their stored
        resourceVersion; any other is answered as stored, and the endpoint turns that into
        the ``Status`` or the object, as for a real removal."""
        meta = obj["metadata"]
        if meta.get("deletionTimestamp"):
            pending = meta.get("deletionGracePeriodSeconds")
            if is_namespaces(rt):
                return current, not (spec_finalizers(obj) or meta.get("finalizers"))
            if meta.get("finalizers"):
                return current, False
            if is_pods(rt) and pending and pod_grace_period(obj, grace) >= pending:
                return current, False
            return current, True
        if is_namespaces(rt):
            meta["deletionTimestamp"] = self._now()
            status_part = obj.get("status")
            obj["status"] = {**(status_part if isinstance(status_part, dict) else {}),
                             "phase": TERMINATING}
            return self._storage.preview(rt, obj), False
        period = pod_grace_period(obj, grace) if is_pods(rt) else 0
        if is_pods(rt) or meta.get("finalizers"):
            # The dry-run graceful update's object, returned as is (store.go Delete: "Going
            # further in this function is not useful when we are performing a dry-run").
            moment = self._clock.wall() + datetime.timedelta(seconds=period)
            meta["deletionTimestamp"] = rfc3339(moment)
            meta["deletionGracePeriodSeconds"] = period
            self._bump_generation(rt, meta)
            gone = period == 0 and not meta.get("finalizers")
            return self._storage.preview(rt, obj), gone
        return current, True

    def _delete_pod(
        self, rt: ResourceType, current: Entry, obj: dict[str, Any], grace: int | None
    ) -> tuple[Entry, bool]:
        """A pod's delete: pods have a graceful-delete strategy, so every delete first writes
        ``deletionTimestamp``/``deletionGracePeriodSeconds`` (a MODIFIED event) and, when the
        period is 0 and no finalizer is left, then removes the pod (DELETED), as
        ``registry/rest/delete.go`` ``BeforeDelete`` and ``store.go``
        ``updateForGracefulDeletionAndFinalizers`` do. The period is
        :func:`~informers.testing.kind_rules.pod_grace_period`'s. A pod already terminating
        may only have its period shortened (its deadline moves by the difference, but never
        into the past: a deadline already passed becomes now, with period 1 unless 0 was
        asked); one marked with period 0 is removed at once."""
        meta = obj["metadata"]
        period = pod_grace_period(obj, grace)
        pending = meta.get("deletionGracePeriodSeconds")
        if meta.get("deletionTimestamp"):
            if not pending:  # marked with period 0 (or by finalizers): remove it now
                if meta.get("finalizers"):
                    return current, False
                return self._remove(rt, current.key), True
            if period >= pending:
                return current, False  # only a shorter period may be set
            start = _parse_time(meta["deletionTimestamp"]) - datetime.timedelta(seconds=pending)
            moment = start + datetime.timedelta(seconds=period)
            now = self._clock.wall()
            if moment < now:  # never into the past (Kubernetes v1.34+ BeforeDelete)
                moment = now
                if period != 0:
                    period = 1  # still graceful: someone else sends the final delete
            meta["deletionTimestamp"] = rfc3339(moment)
        else:
            moment = self._clock.wall() + datetime.timedelta(seconds=period)
            meta["deletionTimestamp"] = rfc3339(moment)
            self._bump_generation(rt, meta)
        meta["deletionGracePeriodSeconds"] = period
        marked = self._storage.put(rt, obj)
        if period > 0 or meta.get("finalizers"):
            return marked, False
        return self._remove(rt, marked.key, marked.decode()), True

    @staticmethod
    def _bump_generation(rt: ResourceType, meta: dict[str, Any]) -> None:
        if rt.has_generation and meta.get("generation"):
            meta["generation"] = int(meta["generation"]) + 1

    # -- namespace lifecycle -------------------------------------------------------------------

    def _delete_namespace(
        self, rt: ResourceType, current: Entry, obj: dict[str, Any]
    ) -> tuple[Entry, bool]:
        """``registry/core/namespace/storage`` ``REST.Delete``, then the namespace controller.

        The first delete sets ``deletionTimestamp`` and ``status.phase: Terminating`` and
        answers that object; the controller's work (``pkg/controller/namespace/deletion``)
        follows at once: every object in the namespace is deleted like an API delete without
        options (finalizers are honoured), and once nothing is left the ``kubernetes`` spec
        finalizer is removed, which removes the namespace unless other finalizers remain. A
        later delete answers the namespace unchanged while it has spec finalizers.
        """
        meta = obj["metadata"]
        name = meta["name"]
        if meta.get("deletionTimestamp"):
            if spec_finalizers(obj) or meta.get("finalizers"):
                return current, False
            return self._remove(rt, current.key), True
        meta["deletionTimestamp"] = self._now()
        status_part = obj.get("status")
        obj["status"] = {**(status_part if isinstance(status_part, dict) else {}),
                         "phase": TERMINATING}
        marked = self._storage.put(rt, obj)
        self._sweeping = True
        try:
            self._delete_namespace_contents(name)
        finally:
            self._sweeping = False
        self._finalize_if_empty(name)
        return marked, False

    def _namespace_keys(self, namespace: str) -> list[tuple[ResourceType, str]]:
        prefix = namespace + "/"
        found = []
        for coll in self._storage.collections():
            if not coll.rt.namespaced:
                continue
            keys = coll.sorted_keys()
            index = bisect.bisect_left(keys, prefix)
            while index < len(keys) and keys[index].startswith(prefix):
                found.append((coll.rt, keys[index]))
                index += 1
        return found

    def _delete_namespace_contents(self, namespace: str) -> None:
        # namespaced_resources_deleter.go deleteAllContent: a delete of every object.
        for rt, key in self._namespace_keys(namespace):
            entry = self._storage.get(rt, key)
            if entry is not None:
                self.delete(rt, entry.namespace, entry.name, {})

    def _finalize_if_empty(self, namespace: str) -> None:
        """The namespace controller's last step: a terminating namespace that is empty loses
        the ``kubernetes`` spec finalizer (``finalizeNamespace``, a ``/finalize`` update)."""
        rt = self._namespaces()
        ns = self._storage.get(rt, namespace)
        if ns is None or not is_terminating(ns):
            return
        obj = ns.decode()
        if KUBERNETES_FINALIZER not in spec_finalizers(obj):
            return
        if self._namespace_keys(namespace):
            return
        spec = obj["spec"]
        rest = sorted({f for f in spec["finalizers"] if f != KUBERNETES_FINALIZER})
        if rest:
            spec["finalizers"] = rest
        else:
            del spec["finalizers"]  # omitempty
        self._write_update(rt, "", namespace, ns, obj, "finalize", False)

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
