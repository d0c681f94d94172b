"""ValidatingAdmissionPolicies from a CRD's CEL rules (informers.crdgen.policy): the
translation of each rule and the whole policy and binding. That the real kube-apiserver
enforces a generated policy is in tests/test_crdgen_apiserver.py."""

from __future__ import annotations

import pytest

from informers.crdgen.policy import policy_validation, translate, validating_admission_policy


@pytest.mark.parametrize(("expression", "expected"), [
    ("self.a < self.b", "object.spec.a < object.spec.b"),
    ("self == oldSelf", "object.spec == oldObject.spec"),
    ("self.x == 'self' && self.y == \"oldSelf\"",
     "object.spec.x == 'self' && object.spec.y == \"oldSelf\""),
    ("self.s.startsWith(r'\\self') || self.t == '''it's self'''",
     "object.spec.s.startsWith(r'\\self') || object.spec.t == '''it's self'''"),
    ("self.items.all(i, i.self > 0)", "object.spec.items.all(i, i.self > 0)"),
    ("myself + selfish + self_", "myself + selfish + self_"),
    ("self . self", "object.spec . self"),
])
def test_translate_replaces_self_outside_strings_and_member_names(expression, expected):
    assert translate(expression, {"self": "object.spec", "oldSelf": "oldObject.spec"}) == (
        expected)


@pytest.mark.parametrize(("path", "rule", "expected"), [
    ((), {"rule": "self.metadata.name.size() < 10"},
     {"expression": "object.metadata.name.size() < 10"}),
    (("spec",), {"rule": "self.min <= self.max", "message": "min must not exceed max"},
     {"expression": "!has(object.spec) || (object.spec.min <= object.spec.max)",
      "message": "min must not exceed max"}),
    (("spec", "range"), {"rule": "self.low < self.high", "reason": "FieldValueForbidden",
                         "fieldPath": ".low", "messageExpression": "'bad ' + self.name"},
     {"expression": "!has(object.spec) || !has(object.spec.range) || "
                    "(object.spec.range.low < object.spec.range.high)",
      "messageExpression": "'bad ' + object.spec.range.name", "reason": "Forbidden"}),
    (("spec", "size"), {"rule": "self >= oldSelf", "message": "may only grow",
                        "reason": "FieldValueInvalid"},
     {"expression": "oldObject == null || !has(object.spec) || !has(object.spec.size) || "
                    "!has(oldObject.spec) || !has(oldObject.spec.size) || "
                    "(object.spec.size >= oldObject.spec.size)",
      "message": "may only grow", "reason": "Invalid"}),
    (("spec",), {"rule": "self.a == oldSelf.a", "optionalOldSelf": True}, None),
])
def test_each_rule_translates_with_the_crds_presence_semantics(path, rule, expected):
    assert policy_validation(path, rule) == expected


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "kind": "Widget"},
             "versions": [
                 {"name": "v1alpha1", "served": True, "storage": False, "schema": {
                     "openAPIV3Schema": {"type": "object", "x-kubernetes-validations": [
                         {"rule": "false", "message": "not the storage version"}]}}},
                 {"name": "v1", "served": True, "storage": True, "schema": {
                     "openAPIV3Schema": {"type": "object", "properties": {"spec": {
                         "type": "object",
                         "x-kubernetes-validations": [{"rule": "self.min <= self.max",
                                                       "message": "min > max"}],
                         "properties": {
                             "min": {"type": "integer"}, "max": {"type": "integer"},
                             "ports": {"type": "array", "items": {
                                 "type": "object", "x-kubernetes-validations": [
                                     {"rule": "self.port > 0"}]}},
                             "odd-name": {"type": "object", "x-kubernetes-validations": [
                                 {"rule": "self.x > 0"}]}}}}}}},
             ]},
}


def test_the_policy_and_binding_of_a_crd():
    assert validating_admission_policy(
        CRD, namespace_selector={"matchLabels": {"team": "a"}},
        validation_actions=("Deny", "Audit")) == [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
         "metadata": {"name": "widgets.example.com"},
         "spec": {"failurePolicy": "Fail",
                  "matchConstraints": {"resourceRules": [{
                      "apiGroups": ["example.com"], "apiVersions": ["v1"],
                      "operations": ["CREATE", "UPDATE"], "resources": ["widgets"]}]},
                  "validations": [{
                      "expression": "!has(object.spec) || "
                                    "(object.spec.min <= object.spec.max)",
                      "message": "min > max"}]}},
        {"apiVersion": "admissionregistration.k8s.io/v1",
         "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "widgets.example.com"},
         "spec": {"policyName": "widgets.example.com",
                  "validationActions": ["Deny", "Audit"],
                  "matchResources": {"namespaceSelector": {"matchLabels": {"team": "a"}}}}},
    ]


def test_a_crd_without_rules_that_apply_has_no_policy():
    crd = {"metadata": {"name": "x.example.com"}, "spec": {
        "group": "example.com", "names": {"plural": "x"},
        "versions": [{"name": "v1", "storage": True, "schema": {"openAPIV3Schema": {
            "type": "object", "properties": {"items": {"type": "array", "items": {
                "type": "object", "x-kubernetes-validations": [{"rule": "true"}]}}}}}}]}}
    assert validating_admission_policy(crd) == []
