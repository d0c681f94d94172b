"""The type variable the generic components share: the static type of the cached objects.

Informers, stores, listers, handlers, the builder and the client are generic over it
(``SharedIndexInformer[Pod]``, ``Lister[Website]``), so code reading a cache of pods can be
checked against :class:`informers.types.core_v1.Pod`. It is bound to ``Mapping[str, Any]``
(a ``TypedDict`` is one; objects are the decoded JSON, plain dicts at run time) and defaults
to ``dict[str, Any]`` (PEP 696), so an unparameterized ``Lister`` is what it always was.

The type is static only: nothing checks objects against it. Type checkers read the
declaration with its default from ``typing_extensions`` (which mypy and pyright bring);
at run time it is a plain ``typing.TypeVar`` (Python before 3.13 has no defaults), so
importing the library does not import ``typing_extensions``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

__all__ = ["ObjectT", "ObjectT_contra", "OtherObjectT"]

if TYPE_CHECKING:
    from typing_extensions import TypeVar

    ObjectT = TypeVar("ObjectT", bound=Mapping[str, Any], default=dict[str, Any])
    ObjectT_contra = TypeVar("ObjectT_contra", bound=Mapping[str, Any],
                             default=dict[str, Any], contravariant=True)
    OtherObjectT = TypeVar("OtherObjectT", bound=Mapping[str, Any], default=dict[str, Any])
else:
    from typing import TypeVar

    ObjectT = TypeVar("ObjectT", bound=Mapping[str, Any])
    """The type of the objects of a cache (a ``TypedDict`` such as ``Pod``, or the default
    ``dict[str, Any]``)."""
    ObjectT_contra = TypeVar("ObjectT_contra", bound=Mapping[str, Any], contravariant=True)
    """The same, for the event handler protocol, which only consumes objects."""
    OtherObjectT = TypeVar("OtherObjectT", bound=Mapping[str, Any])
    """A second one, for a method of a generic class that changes or adds an object type
    (``ControllerBuilder.for_``)."""
