"""The admission chain of the embedded server: mutating, then validating webhooks.

Every API write (create, update, patch, apply, delete; not the ``ApiServer`` seeding helpers)
passes through :class:`Admission`, which plays kube-apiserver's ``MutatingAdmissionWebhook``
and ``ValidatingAdmissionWebhook`` plugins (``k8s.io/apiserver/pkg/admission/plugin/webhook``):

* which webhooks are called (``generic/webhook.go`` ``ShouldCallHook``): configurations in
  name order, their webhooks in order; ``namespaceSelector`` (on the namespace's labels; on
  a namespace's own labels for its create and update), ``objectSelector`` (on the new or the
  old object's labels), ``rules`` (operations, groups, versions, ``resources`` with
  ``sub/resources`` and ``*``, ``scope``: ``predicates/rules/rules.go``) and
  ``matchConditions`` (CEL on ``object``, ``oldObject`` and ``request``; an evaluation error
  answers 403). The configuration kinds themselves are never sent to webhooks
  (``IsExemptAdmissionConfigurationResource``). ``matchPolicy: Equivalent`` matches no other
  resource here: each kind is served at one version.
* mutating webhooks run one by one (``mutating/dispatcher.go``); a ``JSONPatch`` they answer
  is applied to the object the next one sees; ``reinvocationPolicy: IfNeeded`` webhooks are
  called a second time when a later webhook changed the object after them (one extra
  round, as ``webhookReinvokeContext`` decides). Validating webhooks then all run
  (``validating/dispatcher.go``; sequentially here) and the first error is answered.
* errors as kube-apiserver answers them: a denial is the webhook's ``Status`` with its
  message rewritten to ``admission webhook "<name>" denied the request: <message>`` (code at
  least 400: ``errors/statuserror.go`` ``ToStatusErr``); a webhook that cannot be called
  (timeout, refused, TLS, non-2xx, garbage, a response with the wrong ``uid``) fails the
  request with 500 ``Internal error occurred: failed calling webhook "<name>": ...`` under
  ``failurePolicy: Fail`` and is skipped under ``Ignore``; a webhook without ``sideEffects``
  ``None``/``NoneOnDryRun`` refuses a dry run with 400 ``admission webhook "<name>" does not
  support dry run`` (v1 objects cannot have other values: their create answers 422).
* ``warnings`` of every called webhook reach the client as ``Warning: 299 - "<text>"``
  headers, on success and on failure alike.

Threading: the strategy calls :meth:`Admission.mutate` and :meth:`Admission.validate` while
it holds the storage lock; the webhooks are called with that lock released (a helper thread
does the calls while the request thread waits on a condition of the lock), so reads and other
writes go on while a webhook thinks, and a webhook may call the same server. The strategy
re-checks what it read once the lock is back (a concurrent change answers 409).
"""

from __future__ import annotations

import base64
import copy
import json
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from informers import labels
from informers.errors import StatusError
from informers.testing import status
from informers.testing.admission_policy import (
    BINDINGS,
    POLICIES,
    POLICY_RESOURCES,
    PolicyRequest,
    cel_error_text,
    default_policy,
    evaluate_policies,
    validate_policy_object,
)
from informers.testing.errors import PatchError
from informers.testing.patch import apply_json_patch
from informers.testing.resources import ResourceRegistry, ResourceType
from informers.testing.storage import Storage
from informers.testing.webhook_client import CallError, WebhookClient
from informers.testing.webhook_config import (
    MUTATING,
    VALIDATING,
    WEBHOOK_RESOURCES,
    default_configuration,
    validate_configuration,
)

__all__ = ["USER_INFO", "Admission", "Attributes", "RequestScope", "current_request",
           "request_scope", "to_status_error"]

_T = TypeVar("_T")

USER_INFO: dict[str, Any] = {
    "username": "kube-informers-admin", "uid": "kube-informers-admin",
    "groups": ["system:masters", "system:authenticated"]}
"""The ``userInfo`` of every request: the token's user, named as the real control plane's
token file names it (``informers.testing.control_plane``), so reviews compare equal."""

_EXEMPT_KINDS = frozenset({
    "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
    "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
    "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"})

_local = threading.local()


class RequestScope:
    """What one API request carries through admission: its query (for the options) and
    the warnings the webhooks answered (for the response headers). One per request thread."""

    def __init__(self, query: dict[str, str]) -> None:
        self.query = query
        self.warnings: list[str] = []

    def warn(self, text: str) -> None:
        if text not in self.warnings:  # the warning recorder deduplicates
            self.warnings.append(text)


@contextmanager
def request_scope(query: dict[str, str]) -> Iterator[RequestScope]:
    """Mark the current thread as serving an API request (the handler does, around the
    dispatch): writes made inside are admitted; seeding helpers outside are not."""
    scope = RequestScope(query)
    previous = getattr(_local, "scope", None)
    _local.scope = scope
    try:
        yield scope
    finally:
        _local.scope = previous


def current_request() -> RequestScope | None:
    """The scope of the request the current thread serves, if any."""
    return getattr(_local, "scope", None)


@dataclass
class Attributes:
    """One write as admission sees it (``admission.Attributes``). ``obj`` and ``old`` are
    stored forms (no ``kind``/``apiVersion``)."""

    rt: ResourceType
    operation: str  # CREATE, UPDATE, DELETE
    namespace: str
    name: str
    subresource: str
    obj: dict[str, Any] | None
    old: dict[str, Any] | None
    dry_run: bool
    options: dict[str, Any] = field(default_factory=dict)


def _options(kind: str, scope: RequestScope, dry_run: bool,
             base: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``options`` of the review: ``CreateOptions``/``UpdateOptions`` from the query
    (``dryRun``, ``fieldManager``, ``fieldValidation``; a patch's are converted to these,
    ``patchToUpdateOptions``), ``DeleteOptions`` from the delete's options."""
    options: dict[str, Any] = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
    if base:
        options.update({k: v for k, v in base.items() if k not in ("kind", "apiVersion")})
    if dry_run:
        options["dryRun"] = ["All"]
    if kind != "DeleteOptions":
        for key in ("fieldManager", "fieldValidation"):
            if scope.query.get(key):
                options[key] = scope.query[key]
    return options


def _run_unlocked(lock: Any, work: Callable[[], _T]) -> _T:
    """Run ``work`` on a helper thread while this thread waits with ``lock`` (re-entrant,
    possibly held several times) fully released, as ``Condition.wait`` releases it."""
    cond = threading.Condition(lock)
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = work()
        except BaseException as err:  # re-raised on the request thread
            box["error"] = err
        with cond:
            box["done"] = True
            cond.notify_all()

    thread = threading.Thread(target=run, name="informers-testing-admission", daemon=True)
    with cond:
        thread.start()
        while "done" not in box:
            cond.wait()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def to_status_error(webhook_name: str, result: Any) -> StatusError:
    """A webhook's denial as the client gets it: ``errors/statuserror.go`` ``ToStatusErr`` of
    the response's ``status`` (the JSON name of ``AdmissionResponse.Result``): the code at
    least 400, ``status`` ``Failure`` unless the webhook set another value than ``Success``,
    the message prefixed with ``admission webhook "<name>" denied the request``."""
    result = dict(result) if isinstance(result, dict) else {}
    denied = f'admission webhook "{webhook_name}" denied the request'
    code = result["code"] if isinstance(result.get("code"), int) else 0
    if result.get("message"):
        message = f"{denied}: {result['message']}"
    elif result.get("reason"):
        message = f"{denied}: {result['reason']}"
    else:
        message = f"{denied} without explanation"
    state = result.get("status")
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {},
                            "status": state if state not in (None, "", "Success") else "Failure",
                            "message": message}
    for key in ("reason", "details"):
        if result.get(key):
            body[key] = result[key]
    body["code"] = code if code >= 400 else 400
    return StatusError(body)


def _typed(rt: ResourceType, obj: dict[str, Any] | None) -> dict[str, Any] | None:
    if obj is None:
        return None
    return {"kind": rt.kind, "apiVersion": rt.api_version,
            **{k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}}


def _rule_matches(rule: dict[str, Any], attrs: Attributes) -> bool:
    """``predicates/rules/rules.go`` ``Matcher.Matches``."""
    rt = attrs.rt
    is_namespace = rt.group == "" and rt.plural == "namespaces"
    scope = rule.get("scope") or "*"
    if scope == "Namespaced" and (is_namespace or not attrs.namespace):
        return False
    if scope == "Cluster" and not (is_namespace or not attrs.namespace):
        return False
    ops = rule.get("operations") or []
    if "*" not in ops and attrs.operation not in ops:
        return False
    groups, versions = rule.get("apiGroups") or [], rule.get("apiVersions") or []
    if "*" not in groups and rt.group not in groups:
        return False
    if "*" not in versions and rt.version not in versions:
        return False
    for resource in rule.get("resources") or []:
        res, _, sub = str(resource).partition("/")
        if (res in ("*", rt.plural)) and (sub == "*" or sub == attrs.subresource):
            return True
    return False


@dataclass
class _Hook:
    configuration: str
    spec: dict[str, Any]
    mutating: bool

    @property
    def name(self) -> str:
        return str(self.spec.get("name", ""))

    @property
    def uid(self) -> str:
        return f"{self.configuration}/{self.name}"


class Admission:
    """The webhook admission chain over the server's storage. Thread-safe."""

    def __init__(self, storage: Storage, registry: ResourceRegistry,
                 client: WebhookClient) -> None:
        self._storage = storage
        self._registry = registry
        self.client = client

    # -- the configuration objects -------------------------------------------------------------

    def install(self) -> None:
        """Serve the configuration collections."""
        for rt in (*WEBHOOK_RESOURCES, *POLICY_RESOURCES):
            if self._registry.lookup(rt.group, rt.version, rt.plural) is None:
                self._registry.add(rt)

    @staticmethod
    def prepare(rt: ResourceType, obj: dict[str, Any]) -> None:
        """Default and validate a configuration or policy object being written (422 if
        invalid)."""
        if rt in WEBHOOK_RESOURCES:
            default_configuration(rt, obj)
            validate_configuration(rt, obj)
        elif rt in POLICY_RESOURCES:
            from informers.testing.cel_rules import _cel

            default_policy(rt, obj)
            validate_policy_object(rt, obj, lambda text: _cel().compile(text))

    def _objects(self, rt: ResourceType) -> list[dict[str, Any]]:
        with self._storage.lock:
            if self._registry.lookup(rt.group, rt.version, rt.plural) is None:
                return []
            entries = list(self._storage.collection(rt).objects.values())
        return sorted((e.decode() for e in entries), key=lambda c: c["metadata"]["name"])

    def mutating_configured(self) -> bool:
        """Whether any ``MutatingWebhookConfiguration`` exists (and the request is admitted)."""
        if current_request() is None:
            return False
        with self._storage.lock:
            return bool(self._storage.collection(MUTATING).objects)

    def _hooks(self, rt: ResourceType) -> list[_Hook]:
        configs = self._objects(rt)
        return [_Hook(c["metadata"]["name"], h, rt is MUTATING)
                for c in configs for h in c.get("webhooks") or [] if isinstance(h, dict)]

    # -- matching ------------------------------------------------------------------------------

    def _namespace_labels(self, attrs: Attributes) -> dict[str, str]:
        rt = attrs.rt
        if (rt.group == "" and rt.plural == "namespaces" and not attrs.subresource
                and attrs.operation in ("CREATE", "UPDATE")):
            return dict(((attrs.obj or {}).get("metadata") or {}).get("labels") or {})
        ns_rt = self._registry.lookup("", "v1", "namespaces")
        assert ns_rt is not None
        entry = self._storage.get(ns_rt, attrs.namespace)
        if entry is None:
            raise status.not_found("namespaces", "", attrs.namespace)
        return dict(entry.decode()["metadata"].get("labels") or {})

    def _selected(self, hook: _Hook, attrs: Attributes) -> bool:
        spec = hook.spec
        ns_selector = spec.get("namespaceSelector") or {}
        is_namespace = attrs.rt.group == "" and attrs.rt.plural == "namespaces"
        if ns_selector and (attrs.namespace or is_namespace):
            selector = labels.selector_from_label_selector(ns_selector)
            if not selector.empty() and not selector.matches(self._namespace_labels(attrs)):
                return False
        obj_selector = spec.get("objectSelector") or {}
        if obj_selector:
            selector = labels.selector_from_label_selector(obj_selector)
            if not selector.empty() and not any(
                    o is not None and selector.matches((o.get("metadata") or {}).get("labels")
                                                       or {})
                    for o in (attrs.obj, attrs.old)):
                return False
        if not any(_rule_matches(rule, attrs) for rule in spec.get("rules") or []
                   if isinstance(rule, dict)):
            return False
        conditions = spec.get("matchConditions") or []
        return not conditions or self._conditions_match(hook, conditions, attrs)

    def _conditions_match(self, hook: _Hook, conditions: list[Any], attrs: Attributes) -> bool:
        """``matchconditions/matcher.go``: all true to call; an error fails closed (403)."""
        from informers.testing.cel_rules import _cel

        cel = _cel()
        context = cel.Context({
            "object": _typed(attrs.rt, attrs.obj), "oldObject": _typed(attrs.rt, attrs.old),
            "request": self._request(attrs, "")})
        errors = []
        for condition in conditions:
            expression = condition["expression"]
            try:
                value = cel.compile(expression).execute(context)
            except (ValueError, RuntimeError, TypeError, KeyError) as err:
                errors.append(f"expression '{expression}' resulted in error: "
                              f"{cel_error_text(err)}")
                continue
            if value is False:
                return False
        if errors:  # utilerrors.NewAggregate: one error as is, several in brackets
            why = errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]"
            raise status.forbidden(attrs.rt.plural, attrs.rt.group, attrs.name, why)
        return True

    # -- the review ----------------------------------------------------------------------------

    def _request(self, attrs: Attributes, uid: str) -> dict[str, Any]:
        """``request/admissionreview.go`` ``CreateV1AdmissionReview``."""
        rt = attrs.rt
        gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
        gvr = {"group": rt.group, "version": rt.version, "resource": rt.plural}
        request: dict[str, Any] = {"uid": uid, "kind": gvk, "resource": gvr}
        if attrs.subresource:
            request["subResource"] = attrs.subresource
        request["requestKind"] = dict(gvk)
        request["requestResource"] = dict(gvr)
        if attrs.subresource:
            request["requestSubResource"] = attrs.subresource
        if attrs.name:
            request["name"] = attrs.name
        if attrs.namespace:
            request["namespace"] = attrs.namespace
        request.update({
            "operation": attrs.operation, "userInfo": copy.deepcopy(USER_INFO),
            "object": _typed(rt, attrs.obj), "oldObject": _typed(rt, attrs.old),
            "dryRun": attrs.dry_run, "options": attrs.options})
        return request

    def _call(self, hook: _Hook, attrs: Attributes, scope: RequestScope) -> dict[str, Any]:
        """One call; the verified ``response`` (``VerifyAdmissionResponse``). Raises
        :class:`CallError` (reason after ``failed calling webhook "<name>": ``) or the dry-run
        refusal."""
        spec = hook.spec
        if attrs.dry_run and spec.get("sideEffects") not in ("None", "NoneOnDryRun"):
            raise status.bad_request(f'admission webhook "{hook.name}" does not support dry run')
        uid = str(uuid.uuid4())
        review = {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
                  "request": self._request(attrs, uid)}
        timeout = int(spec.get("timeoutSeconds") or 10)
        try:
            answer = self.client.post(spec.get("clientConfig") or {}, review, timeout)
        except CallError as err:
            raise CallError(f"failed to call webhook: {err.reason}") from None
        invalid = "received invalid webhook response: "
        response = answer.get("response") if isinstance(answer, dict) else None
        if not isinstance(response, dict):
            raise CallError(invalid + "webhook response was absent")
        if response.get("uid") != uid:
            raise CallError(invalid + f'expected response.uid="{uid}", got '
                                      f'"{response.get("uid", "")}"')
        if (answer.get("apiVersion"), answer.get("kind")) != ("admission.k8s.io/v1",
                                                              "AdmissionReview"):
            got = f"{answer.get('apiVersion', '')}, Kind={answer.get('kind', '')}"
            raise CallError(invalid + "expected webhook response of admission.k8s.io/v1, "
                                      f"Kind=AdmissionReview, got {got}")
        patch, patch_type = response.get("patch"), response.get("patchType")
        if hook.mutating:
            if patch and patch_type is None:
                raise CallError(invalid + "webhook returned response.patch but not "
                                          "response.patchType")
            if not patch and patch_type is not None:
                raise CallError(invalid + "webhook returned response.patchType but not "
                                          "response.patch")
        elif patch:
            raise CallError(invalid + "validating webhook may not return response.patch")
        elif patch_type is not None:
            raise CallError(invalid + "validating webhook may not return response.patchType")
        for text in response.get("warnings") or []:
            scope.warn(str(text))
        return response

    def _patched(self, hook: _Hook, attrs: Attributes, response: dict[str, Any]) -> bool:
        """Apply a mutating webhook's patch to ``attrs.obj``; whether it changed."""
        try:
            operations = json.loads(base64.b64decode(response["patch"]))
        except ValueError as err:
            raise CallError(f"received undecodable patch in webhook response: {err}") from None
        if not operations:
            return False
        if response.get("patchType") != "JSONPatch":
            raise CallError(f'unsupported patch type "{response.get("patchType")}"')
        if attrs.obj is None:
            raise status.internal_error(
                f'admission webhook "{hook.name}" attempted to modify the object, which is not '
                "supported for this operation")
        before = _typed(attrs.rt, attrs.obj)
        try:
            after = apply_json_patch(copy.deepcopy(before), operations)
        except PatchError as err:
            raise status.internal_error(str(err)) from None
        if not isinstance(after, dict) or after == before:
            return False
        after.pop("kind", None)
        after.pop("apiVersion", None)
        attrs.obj = after
        return True

    # -- the two phases ------------------------------------------------------------------------

    def _applies(self, attrs: Attributes) -> RequestScope | None:
        scope = current_request()
        if scope is None or attrs.rt.kind in _EXEMPT_KINDS:
            return None
        return scope

    def mutate(self, attrs: Attributes) -> dict[str, Any] | None:
        """Run the mutating webhooks (with the storage lock released); the object to go on
        with (``attrs.obj``, patched). Raises the ``StatusError`` to answer."""
        scope = self._applies(attrs)
        if scope is None:
            return attrs.obj
        hooks = self._hooks(MUTATING)
        if not hooks:
            return attrs.obj
        return _run_unlocked(self._storage.lock, lambda: self._mutate(hooks, attrs, scope))

    def _mutate(self, hooks: list[_Hook], attrs: Attributes,
                scope: RequestScope) -> dict[str, Any] | None:
        previously: set[str] = set()  # reinvocable webhooks called since the last change
        reinvoke: set[str] = set()
        changed_any = False
        for round_ in (0, 1):
            if round_ == 1 and not (changed_any and reinvoke):
                break
            for hook in hooks:
                if round_ == 1 and hook.uid not in reinvoke:
                    continue
                if not self._selected(hook, attrs):
                    continue
                changed = self._invoke(hook, attrs, scope)
                if changed:
                    changed_any = True
                    reinvoke |= previously
                    previously = set()
                if hook.spec.get("reinvocationPolicy") == "IfNeeded":
                    previously.add(hook.uid)
        return attrs.obj

    def _invoke(self, hook: _Hook, attrs: Attributes, scope: RequestScope) -> bool:
        """Call one webhook; whether it changed the object. Applies the failure policy."""
        try:
            response = self._call(hook, attrs, scope)
            if not response.get("allowed"):
                raise to_status_error(hook.name, response.get("status"))
            if hook.mutating and response.get("patch"):
                return self._patched(hook, attrs, response)
            return False
        except CallError as err:
            if hook.spec.get("failurePolicy") == "Ignore":
                return False
            raise status.internal_error(
                f'failed calling webhook "{hook.name}": {err.reason}') from None

    def validate(self, attrs: Attributes) -> None:
        """Run the validating webhooks (with the storage lock released); raise the first
        error."""
        scope = self._applies(attrs)
        if scope is None:
            return
        bindings = self._objects(BINDINGS)
        if bindings:
            self._policies(bindings, attrs, scope)
        hooks = self._hooks(VALIDATING)
        if hooks:
            _run_unlocked(self._storage.lock, lambda: self._validate(hooks, attrs, scope))

    def _policies(self, bindings: list[dict[str, Any]], attrs: Attributes,
                  scope: RequestScope) -> None:
        """The ``ValidatingAdmissionPolicy`` plugin (:mod:`.admission_policy`)."""
        from informers.testing.cel_rules import _cel

        rt = attrs.rt
        is_namespace = rt.group == "" and rt.plural == "namespaces"
        namespace_object = None
        if attrs.namespace:
            ns_rt = self._registry.lookup("", "v1", "namespaces")
            assert ns_rt is not None
            entry = self._storage.get(ns_rt, attrs.namespace)
            namespace_object = _typed(ns_rt, entry.decode()) if entry is not None else None
        name = attrs.name or str(((attrs.obj or {}).get("metadata") or {}).get("generateName")
                                 or "")
        request = PolicyRequest(
            lambda rule: _rule_matches(rule, attrs), name,
            lambda: self._namespace_labels(attrs), (attrs.obj, attrs.old),
            {"object": _typed(rt, attrs.obj), "oldObject": _typed(rt, attrs.old),
             "request": self._request(attrs, str(uuid.uuid4())),
             "namespaceObject": namespace_object},
            (rt.plural, rt.group))
        evaluate_policies(self._objects(POLICIES), bindings, request,
                          bool(attrs.namespace) or is_namespace, _cel(), scope.warn)

    def _validate(self, hooks: list[_Hook], attrs: Attributes, scope: RequestScope) -> None:
        selected = [hook for hook in hooks if self._selected(hook, attrs)]
        first: StatusError | None = None
        for hook in selected:
            try:
                self._invoke(hook, attrs, scope)
            except StatusError as err:
                first = first or err
        if first is not None:
            raise first

    @staticmethod
    def attributes(rt: ResourceType, operation: str, namespace: str, name: str,
                   subresource: str, obj: dict[str, Any] | None, old: dict[str, Any] | None,
                   dry_run: bool, options: dict[str, Any] | None = None) -> Attributes:
        """The :class:`Attributes` of a write, with the review's ``options`` built for the
        current request (none outside one)."""
        kind = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions"}.get(
            operation, "DeleteOptions")
        scope = current_request()
        built = _options(kind, scope, dry_run, options) if scope is not None else {}
        return Attributes(rt, operation, namespace if rt.namespaced else "", name, subresource,
                          obj, old, dry_run, built)
