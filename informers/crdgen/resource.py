"""The resource-level settings of a custom resource's version: :func:`custom_resource`.

The decorator marks a ``TypedDict`` or dataclass as one version of a kind, with what
controller-gen reads from ``+kubebuilder:resource``, ``+kubebuilder:storageversion``,
``+kubebuilder:unservedversion``, ``+kubebuilder:subresource:status``,
``+kubebuilder:subresource:scale``, ``+kubebuilder:printcolumn``,
``+kubebuilder:selectablefield`` and ``+kubebuilder:deprecatedversion``
(``sigs.k8s.io/controller-tools/pkg/crd/markers/crd.go``)::

    @custom_resource(group="example.com", version="v1", short_names=("bk",),
                     status=True, printer_columns=(PrinterColumn("Phase", ".status.phase"),))
    class Backup(TypedDict):
        '''A Backup copies a volume.'''
        spec: BackupSpec
        status: NotRequired[BackupStatus]

The class describes the whole object: its fields are the object's top-level fields
(``spec``, ``status``...). ``apiVersion``, ``kind`` and ``metadata`` are added as
kube-apiserver requires them and must not be declared. Several classes with the same group
and kind are the versions of one CRD (:func:`informers.crdgen.crd.crd`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from informers.crdgen.errors import ResourceDefinitionError
from informers.crdgen.schema import is_object_type

__all__ = ["CustomResource", "PrinterColumn", "Scale", "custom_resource", "plural_of",
           "resource_of"]

_RESOURCE_ATTR = "__crd_resource__"

T = TypeVar("T")


@dataclass(frozen=True)
class PrinterColumn:
    """One ``additionalPrinterColumns`` entry (``+kubebuilder:printcolumn``).

    Attributes:
        name: the column's header.
        json_path: a simple JSON path into the object, e.g. ``".spec.replicas"``.
        type: ``string`` (default), ``integer``, ``number``, ``boolean`` or ``date``.
        description: the column's help text.
        format: an OpenAPI format of the column (``int32``, ``date-time``...).
        priority: 0 (default, shown by ``kubectl get``) or more (``-o wide`` only).
    """

    name: str
    json_path: str
    type: Literal["string", "integer", "number", "boolean", "date"] = "string"
    description: str | None = None
    format: str | None = None
    priority: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "jsonPath": self.json_path, "type": self.type}
        if self.description is not None:
            out["description"] = self.description
        if self.format is not None:
            out["format"] = self.format
        if self.priority is not None:
            out["priority"] = self.priority
        return out


@dataclass(frozen=True)
class Scale:
    """The ``scale`` subresource (``+kubebuilder:subresource:scale``); the defaults are
    kubebuilder's ``specpath``/``statuspath`` conventions.

    Attributes:
        spec_replicas_path: ``specReplicasPath``, under ``.spec``.
        status_replicas_path: ``statusReplicasPath``, under ``.status``.
        label_selector_path: ``labelSelectorPath`` (a string field under ``.status`` or
            ``.spec`` holding a serialized label selector), or ``None``.
    """

    spec_replicas_path: str = ".spec.replicas"
    status_replicas_path: str = ".status.replicas"
    label_selector_path: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"specReplicasPath": self.spec_replicas_path,
               "statusReplicasPath": self.status_replicas_path}
        if self.label_selector_path is not None:
            out["labelSelectorPath"] = self.label_selector_path
        return out


@dataclass(frozen=True)
class CustomResource:
    """One version of a kind, as :func:`custom_resource` recorded it. See there for the
    fields."""

    cls: type
    group: str
    version: str
    kind: str
    plural: str
    singular: str
    list_kind: str
    short_names: tuple[str, ...]
    categories: tuple[str, ...]
    scope: Literal["Namespaced", "Cluster"]
    served: bool
    storage: bool | None
    status: bool
    scale: Scale | None
    printer_columns: tuple[PrinterColumn, ...]
    selectable_fields: tuple[str, ...]
    deprecated: bool
    deprecation_warning: str | None

    @property
    def crd_name(self) -> str:
        """``<plural>.<group>``, the CRD's name."""
        return f"{self.plural}.{self.group}"


def plural_of(kind: str) -> str:
    """The lower-case plural of ``kind`` by English rules, as controller-gen's default
    (``flect.Pluralize``, its common cases): ``Policy`` -> ``policies``, ``Box`` ->
    ``boxes``, ``Backup`` -> ``backups``."""
    word = kind.lower()
    if word.endswith("y") and word[-2:-1] not in ("a", "e", "i", "o", "u"):
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    return word + "s"


def custom_resource(*, group: str, version: str, kind: str | None = None,
                    plural: str | None = None, singular: str | None = None,
                    list_kind: str | None = None, short_names: tuple[str, ...] = (),
                    categories: tuple[str, ...] = (),
                    scope: Literal["Namespaced", "Cluster"] = "Namespaced",
                    served: bool = True, storage: bool | None = None, status: bool = False,
                    scale: Scale | None = None,
                    printer_columns: tuple[PrinterColumn, ...] = (),
                    selectable_fields: tuple[str, ...] = (), deprecated: bool = False,
                    deprecation_warning: str | None = None) -> Callable[[T], T]:
    """Mark a ``TypedDict`` or dataclass as version ``version`` of a custom resource kind.

    Args:
        group: the API group, e.g. ``"example.com"``.
        version: this version's name, e.g. ``"v1"``.
        kind: the kind (default: the class's name).
        plural: the resource's plural (default: :func:`plural_of` the kind).
        singular: the singular (default: the kind in lower case, as kube-apiserver's
            defaulting, ``apiextensions/v1/defaults.go``).
        list_kind: the list's kind (default ``<kind>List``, the same defaulting).
        short_names: ``kubectl`` short names.
        categories: groups of resources this one belongs to (``"all"``...).
        scope: ``"Namespaced"`` (default) or ``"Cluster"``.
        served: whether this version is served (``+kubebuilder:unservedversion``: False).
        storage: whether objects are stored in this version; ``None`` means "if it is the
            only version" (controller-gen's rule; with several, exactly one says True:
            ``+kubebuilder:storageversion``).
        status: the ``status`` subresource.
        scale: the ``scale`` subresource.
        printer_columns: ``additionalPrinterColumns``, in order.
        selectable_fields: JSON paths of fields usable in field selectors
            (``selectableFields``, GA in Kubernetes v1.32).
        deprecated: the version is deprecated (``deprecated: true``).
        deprecation_warning: the warning clients get (default kube-apiserver's).

    Raises:
        ResourceDefinitionError: the class is neither a ``TypedDict`` nor a dataclass, or
            ``scope`` is neither value.
    """

    def decorate(cls: T) -> T:
        if not is_object_type(cls):
            raise ResourceDefinitionError(
                f"{getattr(cls, '__name__', cls)!r}: custom_resource() decorates a TypedDict "
                "or a dataclass")
        assert isinstance(cls, type)
        if scope not in ("Namespaced", "Cluster"):
            raise ResourceDefinitionError(
                f"{cls.__name__}: scope must be 'Namespaced' or 'Cluster', got {scope!r}")
        name = kind or cls.__name__
        setattr(cls, _RESOURCE_ATTR, CustomResource(
            cls=cls, group=group, version=version, kind=name,
            plural=plural or plural_of(name), singular=singular or name.lower(),
            list_kind=list_kind or f"{name}List", short_names=tuple(short_names),
            categories=tuple(categories), scope=scope, served=served, storage=storage,
            status=status, scale=scale, printer_columns=tuple(printer_columns),
            selectable_fields=tuple(selectable_fields), deprecated=deprecated,
            deprecation_warning=deprecation_warning))
        return cls

    return decorate


def resource_of(cls: Any) -> CustomResource | None:
    """What :func:`custom_resource` recorded on ``cls`` (not inherited), or ``None``."""
    found = vars(cls).get(_RESOURCE_ATTR) if isinstance(cls, type) else None
    return found if isinstance(found, CustomResource) else None
