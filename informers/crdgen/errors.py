"""The exceptions of CRD, RBAC and policy generation, named by the step that failed.

Each is also a ``ValueError`` (bad input) and an :class:`informers.errors.InformersError`.
Messages name the type and field (``Website.spec.replicas``) or the resource and version.
"""

from __future__ import annotations

from informers.errors import InformersError

__all__ = ["GenerationError", "ResourceDefinitionError", "RuleCompileError", "SchemaError"]


class GenerationError(InformersError, ValueError):
    """The base of the generators' errors."""


class SchemaError(GenerationError):
    """A type annotation or marker that has no structural-schema equivalent, e.g. an
    unsupported type (``set[int]``), ``Minimum`` on a string, ``ListMapKeys`` without
    ``ListType("map")``. The message starts with the field's path."""


class RuleCompileError(SchemaError):
    """An ``XValidation`` rule (or message expression) that does not compile as CEL; the
    message names the field, the rule and the compiler's error."""


class ResourceDefinitionError(GenerationError):
    """Resource-level settings kube-apiserver would refuse: no or two storage versions, two
    definitions of one version, versions that disagree on the kind's names or scope, a
    printer column or selectable field that names no field."""
