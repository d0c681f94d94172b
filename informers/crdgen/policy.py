"""A ``ValidatingAdmissionPolicy`` and its binding from a CRD's ``x-kubernetes-validations``.

A CRD's rules run inside kube-apiserver's schema validation of that CRD's objects. The same
checks as an ``admissionregistration.k8s.io/v1`` ValidatingAdmissionPolicy (GA since
Kubernetes v1.30) let a cluster enforce them without the CRD carrying them, e.g. per
namespace (a binding's ``namespaceSelector``), in ``Warn`` or ``Audit`` mode, or on a cluster
that runs an older CRD.

The translation (:func:`policy_validation`), for the storage version's schema:

* a rule on a node reached from the root through object properties only (the root, ``spec``,
  ``spec.template``...) applies: ``self`` becomes ``object.<path>`` and ``oldSelf``
  ``oldObject.<path>`` (outside string literals);
* the CRD evaluates a rule only where its node is present, and a transition rule only on
  updates where the old value is present (``apiextensions-apiserver``
  ``schema/cel/validation.go``); the expression is guarded the same way:
  ``!has(object.spec) || (<rule>)``, and ``oldObject == null || ...`` for a transition rule;
* rules under list items or map values, rules with ``optionalOldSelf``, and rules on fields
  whose names are not CEL identifiers do not apply (they have no single object path) and
  are left out;
* ``reason``: ``FieldValueForbidden`` becomes ``Forbidden``, the others ``Invalid`` (the
  reasons a policy may give); ``fieldPath`` has no policy equivalent and is dropped.

The policy matches CREATE and UPDATE of the resource in its storage version with
``matchPolicy: Equivalent`` (the default), so requests in every served version are checked.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

__all__ = ["policy_validation", "translate", "validating_admission_policy"]

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_RESERVED = frozenset({
    "true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
    "function", "if", "import", "let", "loop", "package", "namespace", "return", "var",
    "void", "while"})
"""CEL's reserved words (cel-spec ``langdef.md``): a field so named has no plain path."""

_REASONS = {"FieldValueForbidden": "Forbidden"}


def translate(expression: str, names: dict[str, str]) -> str:
    """``expression`` with each identifier token in ``names`` replaced (not member names
    after a ``.``, not inside string literals, raw or triple-quoted ones included)."""
    out: list[str] = []
    i, n = 0, len(expression)
    while i < n:
        ch = expression[i]
        if ch in "\"'":
            end = _string_end(expression, i)
            out.append(expression[i:end])
            i = end
            continue
        if ch.isalpha() or ch == "_":
            j = i
            while j < n and (expression[j].isalnum() or expression[j] == "_"):
                j += 1
            word = expression[i:j]
            if j < n and expression[j] in "\"'" and word.lower() in ("r", "b", "rb", "br"):
                end = _string_end(expression, j, raw="r" in word.lower())
                out.append(expression[i:end])
                i = end
                continue
            before = "".join(out).rstrip()
            out.append(names[word] if word in names and not before.endswith(".") else word)
            i = j
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _string_end(text: str, start: int, raw: bool = False) -> int:
    quote = text[start]
    triple = text.startswith(quote * 3, start)
    delim = quote * 3 if triple else quote
    i = start + len(delim)
    while i < len(text):
        if text[i] == "\\" and not raw:
            i += 2
            continue
        if text.startswith(delim, i):
            return i + len(delim)
        i += 1
    return len(text)


def _nodes(schema: dict[str, Any], path: tuple[str, ...] = ()
           ) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    """The schema nodes reached from the root through object properties, with their paths
    (nodes under names that are not plain CEL identifiers are not reached)."""
    yield path, schema
    for name, sub in sorted((schema.get("properties") or {}).items()):
        if isinstance(sub, dict) and _IDENT.match(name) and name not in _RESERVED:
            yield from _nodes(sub, (*path, name))


def _guarded(base: str, path: tuple[str, ...]) -> list[str]:
    return [f"!has({base}.{'.'.join(path[:i])})" for i in range(1, len(path) + 1)]


def policy_validation(path: tuple[str, ...], rule: dict[str, Any]) -> dict[str, Any] | None:
    """The policy validation of the CRD rule ``rule`` at the node ``path`` (``()`` for the
    root, ``("spec",)``...), or ``None`` when it does not apply (see the module)."""
    if rule.get("optionalOldSelf"):
        return None
    obj = ".".join(("object", *path))
    old = ".".join(("oldObject", *path))
    names = {"self": obj, "oldSelf": old}
    text = translate(rule["rule"], names)
    guards = _guarded("object", path)
    if "\0" in translate(rule["rule"], {"oldSelf": "\0"}):  # a transition rule
        guards = ["oldObject == null", *guards, *_guarded("oldObject", path)]
    expression = " || ".join([*guards, f"({text})"]) if guards else text
    out: dict[str, Any] = {"expression": expression}
    if rule.get("message"):
        out["message"] = rule["message"]
    if rule.get("messageExpression"):
        out["messageExpression"] = translate(rule["messageExpression"], names)
    if rule.get("reason"):
        out["reason"] = _REASONS.get(rule["reason"], "Invalid")
    return out


def validating_admission_policy(crd: dict[str, Any], *, name: str | None = None,
                                namespace_selector: dict[str, Any] | None = None,
                                validation_actions: tuple[str, ...] = ("Deny",),
                                failure_policy: str = "Fail") -> list[dict[str, Any]]:
    """The ``ValidatingAdmissionPolicy`` and ``ValidatingAdmissionPolicyBinding`` enforcing
    the rules of ``crd`` (a CRD manifest, e.g. from :func:`informers.crdgen.crd.crd`);
    ``[]`` when none of its rules applies.

    Args:
        crd: the CRD.
        name: the policy's and the binding's name (default: the CRD's).
        namespace_selector: the binding's ``matchResources.namespaceSelector`` (default:
            none, every namespace).
        validation_actions: the binding's actions: ``Deny``, ``Warn``, ``Audit``.
        failure_policy: the policy's ``failurePolicy`` (``Fail``, kube-apiserver's default,
            or ``Ignore``).
    """
    spec = crd["spec"]
    storage = next(v for v in spec["versions"] if v.get("storage"))
    schema = (storage.get("schema") or {}).get("openAPIV3Schema") or {}
    validations = []
    for path, node in _nodes(schema):
        for rule in node.get("x-kubernetes-validations") or []:
            made = policy_validation(path, rule)
            if made is not None:
                validations.append(made)
    if not validations:
        return []
    name = name or crd["metadata"]["name"]
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": failure_policy,
            "matchConstraints": {"resourceRules": [{
                "apiGroups": [spec["group"]], "apiVersions": [storage["name"]],
                "operations": ["CREATE", "UPDATE"], "resources": [spec["names"]["plural"]]}]},
            "validations": validations,
        },
    }
    binding_spec: dict[str, Any] = {"policyName": name,
                                    "validationActions": list(validation_actions)}
    if namespace_selector is not None:
        binding_spec["matchResources"] = {"namespaceSelector": namespace_selector}
    binding = {"apiVersion": "admissionregistration.k8s.io/v1",
               "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name},
               "spec": binding_spec}
    return [policy, binding]
