"""CRDs, RBAC and ValidatingAdmissionPolicies generated from Python types: the project's
``controller-gen``.

Mark a ``TypedDict`` or dataclass with :func:`custom_resource` and its fields with the
markers of :mod:`informers.crdgen.markers` in ``typing.Annotated``; :func:`crd` makes the
``apiextensions.k8s.io/v1`` CustomResourceDefinition, :func:`validating_admission_policy`
the policy of its CEL rules, :func:`cluster_role` the RBAC of a Manager; the
``informers-gen`` command (:mod:`informers.crdgen.command`) writes them as YAML files.

Generation reads the types and returns new dicts: no I/O (the command aside), no global
state, safe from any thread. The decorators record what they are given on the class
(``__crd_resource__``, ``__crd_markers__``, ``__rbac_rules__``).
"""

from informers.crdgen.crd import crd, crds
from informers.crdgen.errors import (
    GenerationError,
    ResourceDefinitionError,
    RuleCompileError,
    SchemaError,
)
from informers.crdgen.markers import schema
from informers.crdgen.policy import validating_admission_policy
from informers.crdgen.rbac import PolicyRule, cluster_role, rbac, roles
from informers.crdgen.resource import PrinterColumn, Scale, custom_resource

__all__ = [
    "GenerationError", "PolicyRule", "PrinterColumn", "ResourceDefinitionError",
    "RuleCompileError", "Scale", "SchemaError", "cluster_role", "crd", "crds",
    "custom_resource", "rbac", "roles", "schema", "validating_admission_policy",
]
