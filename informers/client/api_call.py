"""Sends one JSON request through the official client's ApiClient and decodes the answer to a dict.

The leader-election lock, the event sink and the endpoint controller write a handful of small
objects; they need exact control of the JSON on the wire (MicroTime strings,
``resourceVersion`` for optimistic concurrency, a strategic-merge-patch content type) and no
model objects. :func:`api_call` sends through :class:`~informers.client.transport.Transport`
(host and headers from the caller's configuration, reused for
:data:`~informers.client.transport.HEADERS_REUSE_SECONDS`; the body encoded with orjson when
installed, without the official client's recursive ``sanitize_for_serialization``). Failures
map onto the library's error family:

* an HTTP error answer becomes :class:`~informers.errors.StatusError` (the ``metav1.Status``
  body when there is one, else one built from the code: client-go
  ``apierrors.NewGenericServerResponse``);
* a request that got no answer (refused, reset, timed out) becomes
  :class:`~informers.errors.ApiConnectionError`.
"""

from __future__ import annotations

from typing import Any

from informers.client.status import status_code
from informers.client.transport import Transport
from informers.clock import REAL_CLOCK, Clock

__all__ = ["api_call", "status_code"]


def api_call(
    api_client: Any,
    method: str,
    path: str,
    body: Any = None,
    *,
    content_type: str = "application/json",
    request_timeout: float | None = None,
    clock: Clock = REAL_CLOCK,
) -> dict[str, Any]:
    """Send ``method path`` with a JSON ``body`` and return the decoded JSON answer.

    Args:
        api_client: a ``kubernetes.client.ApiClient``.
        method: ``GET``, ``POST``, ``PUT``, ``PATCH`` or ``DELETE``.
        path: the URL path, e.g. ``/api/v1/namespaces/default/events``.
        body: a JSON-serialisable value, or ``None``.
        content_type: the request's content type (e.g.
            ``application/strategic-merge-patch+json`` for a PATCH).
        request_timeout: total seconds for the request, ``None`` for no limit.
        clock: decides when the client's host and headers are asked for again.

    Raises:
        StatusError: the server answered with a non-2xx code, or with a 2xx whose body is
            a ``Status`` other than ``Success`` (client-go ``rest.Result.Into``).
        ApiConnectionError: no answer (connection refused or reset, timeout).
    """
    return Transport(api_client, clock=clock).request(
        method, path, body, content_type=content_type, request_timeout=request_timeout)
