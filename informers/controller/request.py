"""Names the object a reconcile is about: its namespace and name (controller-runtime
``reconcile.Request``).

A :class:`Request` *is* its key string (``"namespace/name"``, or ``"name"`` for a
cluster-scoped object, as :func:`~informers.keys.meta_namespace_key_func` builds it): the
work queue deduplicates it as that string, and a reconcile written for keys keeps working;
:attr:`Request.namespace` and :attr:`Request.name` save splitting it. Immutable.
"""

from __future__ import annotations

from informers.keys import split_meta_namespace_key

__all__ = ["Request"]


class Request(str):
    """``Request("ns", "name")`` or ``Request.from_key("ns/name")``; equal to (and hashed
    as) its key string."""

    __slots__ = ("name", "namespace")

    namespace: str
    name: str

    def __new__(cls, namespace: str, name: str) -> Request:
        if not name:
            raise ValueError("a Request needs a name")
        self = super().__new__(cls, f"{namespace}/{name}" if namespace else name)
        self.namespace = namespace
        self.name = name
        return self

    @classmethod
    def from_key(cls, key: str) -> Request:
        """The request of a ``namespace/name`` or ``name`` key (itself for a Request).

        Raises:
            ValueError: a key with more than one ``/``, or no name.
        """
        if isinstance(key, Request):
            return key
        namespace, name = split_meta_namespace_key(key)
        return cls(namespace, name)

    @property
    def key(self) -> str:
        """The plain key string."""
        return str.__str__(self)

    def __repr__(self) -> str:
        return f"Request(namespace={self.namespace!r}, name={self.name!r})"

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (Request, (self.namespace, self.name))
