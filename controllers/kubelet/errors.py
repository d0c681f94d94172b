"""The exception family of the kubelet pod-source adapter, named by the step that failed.

Every class derives from :class:`informers.errors.InformersError` and from the built-in a caller
would expect (``ValueError`` for a manifest that is not a valid pod, ``ConnectionError`` for a
manifest URL that cannot be fetched). Messages name the file or URL, what was wrong and what
happens next, because they end up in a node agent's log.
"""

from __future__ import annotations

from informers.errors import InformersError

__all__ = ["ManifestError", "ManifestFetchError", "PodSourceError"]


class PodSourceError(InformersError):
    """Base class: a pod source could not turn its input into pods."""


class ManifestError(PodSourceError, ValueError):
    """A manifest (file or URL body) does not decode to valid pods.

    Attributes:
        source: the file path or URL the manifest came from ("" when decoded from memory).
        reason: why it was rejected, without the source (e.g. ``invalid pod: name is needed for
            the pod`` or ``static pods may not reference secrets (via secret volumes)``).
    """

    def __init__(self, reason: str, source: str = "") -> None:
        super().__init__(f"{source}: {reason}" if source else reason)
        self.source = source
        self.reason = reason


class ManifestFetchError(PodSourceError, ConnectionError):
    """A manifest URL could not be read: transport error, timeout or a non-200 answer.

    Attributes:
        url: the manifest URL.
        status_code: the HTTP status, or ``None`` when no answer arrived.
    """

    def __init__(self, message: str, url: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.status_code = status_code
