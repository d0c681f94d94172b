"""``ValidatingAdmissionPolicy`` and its bindings: CEL validation of writes, in-process.

The embedded server's ``ValidatingAdmissionPolicy`` admission plugin
(``k8s.io/apiserver/pkg/admission/plugin/policy/validating``), run after the mutating
webhooks and before the validating ones, as kube-apiserver orders its plugins:

* the objects (``admissionregistration.k8s.io/v1``, cluster-scoped): a policy is defaulted
  (``failurePolicy: Fail``; ``matchConstraints`` ``matchPolicy: Equivalent``, empty
  selectors, rules' ``scope: "*"``: ``pkg/apis/admissionregistration/v1/defaults.go``) and
  refused (422) without ``matchConstraints.resourceRules`` or without validations, or with an
  expression that does not parse; a binding needs ``policyName`` and ``validationActions``
  (``Deny``, ``Warn``, ``Audit``).
* matching: a binding applies its policy when the request matches the policy's
  ``matchConstraints`` and the binding's ``matchResources`` (when set): ``resourceRules``
  (with ``resourceNames``) minus ``excludeResourceRules``, ``namespaceSelector``,
  ``objectSelector``; then the policy's ``matchConditions``.
* evaluation: each ``validations[].expression`` with ``object``, ``oldObject``, ``request``,
  ``namespaceObject``, ``variables`` (the policy's ``variables``, in order) and ``params``
  (always ``null``: ``paramKind`` policies are not supported; a binding of one fails as a
  configuration error). A false expression is a violation with the ``messageExpression``
  result, else ``message``, else ``failed expression: <expression>``; its ``reason``
  (default ``Invalid``) sets the code (``policy_decision.go`` ``reasonToCode``). An error
  is a violation under ``failurePolicy: Fail``, ignored under ``Ignore``.
* actions: ``Deny`` answers ``<resource> "<name>" is forbidden: ValidatingAdmissionPolicy
  '<policy>' with binding '<binding>' denied request: <message>`` (``admission.NewForbidden``
  with the reason and code replaced), ``Warn`` adds the warning ``Validation failed for
  ValidatingAdmissionPolicy '<policy>' with binding '<binding>': <message>``, ``Audit`` has no
  audit log to go to here.

CEL is the ``common-expression-language`` package (see :mod:`informers.testing.cel_rules`
for what it covers; the Kubernetes CEL libraries and ``authorizer`` are not available, and
their calls are evaluation errors). Thread-safe; policies are read from storage per request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from informers import labels
from informers.errors import StatusError
from informers.testing import status
from informers.testing.resources import ResourceType

__all__ = ["BINDINGS", "POLICIES", "POLICY_RESOURCES", "cel_error_text", "default_policy",
           "evaluate_policies", "validate_policy_object"]

_API = ("admissionregistration.k8s.io", "v1")
POLICIES = ResourceType(
    *_API, "validatingadmissionpolicies", "ValidatingAdmissionPolicy", namespaced=False,
    has_status=True, has_generation=True, categories=("api-extensions",))
BINDINGS = ResourceType(
    *_API, "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding",
    namespaced=False, has_generation=True, categories=("api-extensions",))
POLICY_RESOURCES = (POLICIES, BINDINGS)

_ACTIONS = ("Audit", "Deny", "Warn")
_CODES = {"Forbidden": 403, "Unauthorized": 401, "RequestEntityTooLarge": 413, "Invalid": 422}


_CEL_ERRORS = (ValueError, RuntimeError, TypeError, KeyError)
"""What the ``cel`` package raises when an expression fails (a missing map key is a
``KeyError``)."""


def cel_error_text(err: BaseException) -> str:
    """cel-go's wording where it differs: a missing key is ``no such key: <key>``."""
    if isinstance(err, KeyError) and err.args:
        return f"no such key: {err.args[0]}"
    return str(err)


def _default_match(match: Any) -> None:
    if not isinstance(match, dict):
        return
    match.setdefault("namespaceSelector", {})
    match.setdefault("objectSelector", {})
    match.setdefault("matchPolicy", "Equivalent")
    for key in ("resourceRules", "excludeResourceRules"):
        for rule in match.get(key) or []:
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")


def default_policy(rt: ResourceType, obj: dict[str, Any]) -> None:
    """The v1 defaults of a policy or binding, in place."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if rt is POLICIES:
        spec.setdefault("failurePolicy", "Fail")
        _default_match(spec.get("matchConstraints"))
    else:
        _default_match(spec.get("matchResources"))


def validate_policy_object(rt: ResourceType, obj: dict[str, Any],
                           compile_expression: Callable[[str], Any]) -> None:
    """422 for the common mistakes (``admissionregistration/validation/validation.go``)."""
    spec: dict[str, Any] = obj["spec"] if isinstance(obj.get("spec"), dict) else {}
    errors: list[tuple[str, str, str]] = []
    if rt is POLICIES:
        if not (spec.get("matchConstraints") or {}).get("resourceRules"):
            where = ("spec.matchConstraints.resourceRules" if spec.get("matchConstraints")
                     else "spec.matchConstraints")
            errors.append(("FieldValueRequired", where, "Required value"))
        validations = spec.get("validations") or []
        if not validations and not spec.get("auditAnnotations"):
            for key in ("validations", "auditAnnotations"):
                errors.append(("FieldValueRequired", f"spec.{key}", "Required value: "
                               "validations or auditAnnotations must contain at least one item"))
        for index, validation in enumerate(validations):
            expression = (validation or {}).get("expression") or ""
            where = f"spec.validations[{index}].expression"
            if not expression:
                errors.append(("FieldValueRequired", where, "Required value"))
                continue
            try:
                compile_expression(expression)
            except (ValueError, RuntimeError) as err:
                detail = str(err).removeprefix(f"Failed to parse expression '{expression}': ")
                errors.append(("FieldValueInvalid", where,
                               f'Invalid value: "{expression}": compilation failed: {detail}'))
    else:
        if not spec.get("policyName"):
            errors.append(("FieldValueRequired", "spec.policyName", "Required value"))
        actions = spec.get("validationActions") or []
        if not actions:
            errors.append(("FieldValueRequired", "spec.validationActions",
                           "Required value: at least one validation action is required"))
        for index, action in enumerate(actions):
            if action not in _ACTIONS:
                errors.append(("FieldValueNotSupported", f"spec.validationActions[{index}]",
                               f'Unsupported value: "{action}": supported values: '
                               '"Audit", "Deny", "Warn"'))
    if errors:
        raise status.invalid(rt.kind, rt.group, (obj.get("metadata") or {}).get("name", ""),
                             errors)


class PolicyRequest:
    """What the policies of one write see: the rule check, the selectors' inputs and the
    CEL variables. Built by :class:`informers.testing.admission.Admission`."""

    def __init__(self, rule_matches: Callable[[dict[str, Any]], bool], name: str,
                 namespace_labels: Callable[[], dict[str, str]],
                 objects: tuple[dict[str, Any] | None, dict[str, Any] | None],
                 variables: dict[str, Any], resource: tuple[str, str]) -> None:
        self.rule_matches = rule_matches
        self.name = name
        self.namespace_labels = namespace_labels
        self.objects = objects
        self.variables = variables  # object, oldObject, request, namespaceObject
        self.resource = resource  # (plural, group) for the Forbidden message


def _selector_matches(selector: Any, subject: Callable[[], list[dict[str, str]]]) -> bool:
    if not selector:
        return True
    parsed = labels.selector_from_label_selector(selector)
    return parsed.empty() or any(parsed.matches(s) for s in subject())


def _matches(match: dict[str, Any], request: PolicyRequest, namespaced: bool) -> bool:
    def named(rule: dict[str, Any]) -> bool:
        names = rule.get("resourceNames") or []
        return request.rule_matches(rule) and (not names or request.name in names)

    if not any(named(r) for r in match.get("resourceRules") or [] if isinstance(r, dict)):
        return False
    if any(named(r) for r in match.get("excludeResourceRules") or [] if isinstance(r, dict)):
        return False
    if namespaced and not _selector_matches(match.get("namespaceSelector"),
                                            lambda: [request.namespace_labels()]):
        return False
    return _selector_matches(match.get("objectSelector"), lambda: [
        (o.get("metadata") or {}).get("labels") or {} for o in request.objects if o])


def evaluate_policies(policies: list[dict[str, Any]], bindings: list[dict[str, Any]],
                      request: PolicyRequest, namespaced: bool, cel: Any,
                      warn: Callable[[str], None]) -> None:
    """Apply every binding (name order) to ``request``; raise the first denial."""
    by_name = {p["metadata"]["name"]: p for p in policies}
    denied: list[tuple[str, str, str, str]] = []  # policy, binding, message, reason
    for binding in sorted(bindings, key=lambda b: b["metadata"]["name"]):
        bspec = binding.get("spec") or {}
        policy = by_name.get(bspec.get("policyName", ""))
        if policy is None:
            continue
        pspec = policy.get("spec") or {}
        if not _matches(pspec.get("matchConstraints") or {}, request, namespaced):
            continue
        if bspec.get("matchResources") and not _matches(bspec["matchResources"], request,
                                                        namespaced):
            continue
        for message, reason in _violations(pspec, request, cel):
            for action in bspec.get("validationActions") or []:
                policy_name, binding_name = policy["metadata"]["name"], binding["metadata"]["name"]
                if action == "Deny":
                    denied.append((policy_name, binding_name, message, reason))
                elif action == "Warn":
                    warn(f"Validation failed for ValidatingAdmissionPolicy '{policy_name}' "
                         f"with binding '{binding_name}': {message}")
    if denied:
        policy_name, binding_name, message, reason = denied[0]
        text = (f"ValidatingAdmissionPolicy '{policy_name}' with binding '{binding_name}' "
                f"denied request: {message}")
        plural, group = request.resource
        err = status.forbidden(plural, group, request.name or "Unknown", text)
        body = dict(err.status)
        body["reason"] = reason
        body["details"] = {**body["details"], "causes": [{"message": text}]}
        body["code"] = _CODES.get(reason, 422)
        raise StatusError(body)


def _violations(spec: dict[str, Any], request: PolicyRequest,
                cel: Any) -> list[tuple[str, str]]:
    """``validator.go`` ``Validate``: (message, reason) of each failed validation."""
    fail = spec.get("failurePolicy", "Fail") != "Ignore"
    variables = dict(request.variables)
    variables["params"] = None
    if spec.get("paramKind"):
        return [("failed to configure binding: params are not supported by the embedded "
                 "server", "Invalid")] if fail else []
    computed: dict[str, Any] = {}
    variables["variables"] = computed
    found: list[tuple[str, str]] = []
    try:
        for variable in spec.get("variables") or []:
            computed[variable["name"]] = cel.compile(variable["expression"]).execute(
                cel.Context(variables))
        for condition in spec.get("matchConditions") or []:
            if cel.compile(condition["expression"]).execute(cel.Context(variables)) is False:
                return []
    except _CEL_ERRORS as err:
        return [(cel_error_text(err), "Invalid")] if fail else []
    for validation in spec.get("validations") or []:
        expression = validation.get("expression", "")
        try:
            result = cel.compile(expression).execute(cel.Context(variables))
        except _CEL_ERRORS as err:
            if fail:
                found.append((f"expression '{expression}' resulted in error: "
                              f"{cel_error_text(err)}", "Invalid"))
            continue
        if result is True:
            continue
        message = ""
        if validation.get("messageExpression"):
            try:
                value = cel.compile(validation["messageExpression"]).execute(
                    cel.Context(variables))
                if isinstance(value, str) and "\n" not in value:
                    message = value.strip()
            except _CEL_ERRORS:
                message = ""
        if not message and validation.get("message"):
            message = str(validation["message"]).strip()
        if not message:
            message = f"failed expression: {expression.strip()}"
        found.append((message, validation.get("reason") or "Invalid"))
    return found
