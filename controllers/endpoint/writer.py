"""Writes Endpoints through the API server and reports failed writes as warning events.

The API half of the endpoints controller's ``syncService`` (``pkg/controller/endpoint/
endpoints_controller.go``, k8s.io/kubernetes v1.36.3: the delete of a Service that is gone,
the create or update and its error handling): ``POST``, ``PUT`` and ``DELETE`` of core/v1
Endpoints with plain dict bodies, through the official client's ``ApiClient``
(:func:`informers.client.api_call.api_call`).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any, Protocol
from urllib.parse import quote

from informers.client.api_call import api_call
from informers.errors import ApiConnectionError, StatusError

__all__ = ["EndpointsWriter", "EventRecorderLike"]

logger = logging.getLogger(__name__)

_EVENT_WARNING = "Warning"  # k8s.io/api core/v1 EventTypeWarning
# k8s.io/api core/v1 NamespaceTerminatingCause; a metav1.StatusCause's type is the JSON "reason".
_NAMESPACE_TERMINATING_CAUSE = "NamespaceTerminating"


class EventRecorderLike(Protocol):
    """What the controller needs of an event recorder (e.g. ``informers.events.EventRecorder``):
    ``event(obj, type, reason, message)``, which must never block."""

    def event(self, obj: Mapping[str, Any], type: str, reason: str, message: str) -> None: ...


def _path(namespace: str, name: str | None = None) -> str:
    base = f"/api/v1/namespaces/{quote(namespace, safe='')}/endpoints"
    return base if name is None else f"{base}/{quote(name, safe='')}"


class EndpointsWriter:
    """Creates, replaces and deletes Endpoints; stateless apart from its configuration.

    Thread-safe (the ``ApiClient``'s connection pool is). Failed creates and updates are logged
    and, with a recorder, reported as ``FailedToCreateEndpoint`` / ``FailedToUpdateEndpoint``
    warning events on the Endpoints, with the messages of endpoints_controller.go.

    Args:
        api_client: a ``kubernetes.client.ApiClient``.
        event_recorder: receives the warning events; ``None``: only logged.
        request_timeout: seconds per request; ``None``: the client's default.
    """

    def __init__(
        self,
        api_client: Any,
        *,
        event_recorder: EventRecorderLike | None = None,
        request_timeout: float | None = None,
    ) -> None:
        self.api_client = api_client
        self.event_recorder = event_recorder
        self.request_timeout = request_timeout

    def create(self, key: str, namespace: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """``POST`` the Endpoints; the stored object, or ``None`` when the namespace is
        terminating (a 403 with cause ``NamespaceTerminating``: the caller drops the key).

        Raises:
            StatusError, ApiConnectionError: after the warning event.
        """
        try:
            return api_call(self.api_client, "POST", _path(namespace), body,
                            request_timeout=self.request_timeout)
        except StatusError as err:
            if err.code == 403 and any(
                c.get("reason") == _NAMESPACE_TERMINATING_CAUSE for c in err.causes
            ):
                logger.debug("Forbidden from creating endpoints %s: namespace terminating", key)
                return None
            self._failed(key, namespace, body, "FailedToCreateEndpoint",
                         f"Failed to create endpoint for service {key}: {err}")
            raise
        except ApiConnectionError as err:
            self._failed(key, namespace, body, "FailedToCreateEndpoint",
                         f"Failed to create endpoint for service {key}: {err}")
            raise

    def update(self, key: str, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        """``PUT`` the Endpoints (conditional on its ``metadata.resourceVersion``); the stored
        object.

        Raises:
            StatusError, ApiConnectionError: after the warning event (409 on a stale version).
        """
        name = str(body["metadata"].get("name", ""))
        try:
            return api_call(self.api_client, "PUT", _path(namespace, name), body,
                            request_timeout=self.request_timeout)
        except (StatusError, ApiConnectionError) as err:
            self._failed(key, namespace, body, "FailedToUpdateEndpoint",
                         f"Failed to update endpoint {key}: {err}")
            raise

    def delete(self, namespace: str, name: str) -> bool:
        """``DELETE`` the Endpoints; ``False`` if it was already gone (a 404 is success).

        Raises:
            StatusError, ApiConnectionError: any other failure (no event, as upstream).
        """
        try:
            api_call(self.api_client, "DELETE", _path(namespace, name),
                     request_timeout=self.request_timeout)
        except StatusError as err:
            if err.code != 404:
                raise
            return False
        return True

    def _failed(
        self, key: str, namespace: str, body: dict[str, Any], reason: str, message: str
    ) -> None:
        logger.warning("%s", message)
        if self.event_recorder is None:
            return
        subject = copy.copy(body)  # a create body has no namespace; the event needs one
        subject["metadata"] = {**body["metadata"], "namespace": namespace}
        try:
            self.event_recorder.event(subject, _EVENT_WARNING, reason, message)
        except Exception:
            logger.exception("recording event %s for %s failed", reason, key)
