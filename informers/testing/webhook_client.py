"""The HTTPS caller of admission and conversion webhooks, as kube-apiserver calls them.

kube-apiserver posts the review with a client-go REST client built from the webhook's
``clientConfig`` (``k8s.io/apiserver/pkg/util/webhook/client.go`` ``ClientManager``): the URL
(or the service, resolved to ``https://<name>.<namespace>.svc:<port><path>``), TLS verified
against ``caBundle`` (the system roots when it is empty), and the request's deadline sent as
``?timeout=<d>`` (``client-go/rest/request.go`` ``Request.URL``). Its failures are reported
with Go's words, which kube-apiserver wraps into the client's error: ``Post "<url>": context
deadline exceeded`` for a timeout, ``Post "<url>": dial tcp <addr>: connect: connection
refused``, ``Post "<url>": tls: failed to verify certificate: x509: certificate signed by
unknown authority``, and for a non-2xx answer the ``Status`` it carried or client-go's
``NewGenericServerResponse`` text.

A ``service`` reference cannot be resolved inside a test process: :class:`WebhookClient`
takes a mapping from ``"<namespace>/<name>:<port>"`` (or ``"<namespace>/<name>"`` for any
port) to a base URL such as ``https://127.0.0.1:8443``; an unmapped service fails the call as
an unresolvable host does. Thread-safe: every call makes its own connection.
"""

from __future__ import annotations

import base64
import http.client
import json
import ssl
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from informers.errors import StatusError
from informers.testing import status
from informers.yaml_loader import YAMLLoadError, load_yaml

__all__ = ["CallError", "WebhookClient", "webhook_url"]

_MAX_TEXT = 1024  # client-go rest maxUnstructuredResponseTextBytes (2048) is not reached here


class CallError(Exception):
    """The call failed before a review came back: ``reason`` is Go's error text (without
    the ``failed to call webhook: `` prefix kube-apiserver adds)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _generic_response(code: int, body: bytes, content_type: str) -> StatusError:
    """client-go's ``newUnstructuredResponseError`` (``apimachinery/pkg/api/errors``
    ``NewGenericServerResponse``) for the codes a webhook plausibly answers."""
    text = content_type.startswith("text/") or not content_type
    server_message = body[:_MAX_TEXT].decode(errors="replace").strip() if text else "unknown"
    reasons = {400: ("BadRequest", "the server rejected our request for an unknown reason"),
               401: ("Unauthorized", "the server has asked for the client to provide "
                                     "credentials"),
               403: ("Forbidden", server_message),
               404: ("NotFound", "the server could not find the requested resource"),
               405: ("MethodNotAllowed", "the server does not allow this method on the "
                                         "requested resource"),
               503: ("ServiceUnavailable", "the server is currently unable to handle the "
                                           "request")}
    reason, message = reasons.get(code, (
        "Unknown", f"the server responded with the status code {code} but did not return "
                   "more information"))
    if code >= 500 and code not in reasons and code != 504:
        reason = "InternalError"
        message = (f"an error on the server ({json.dumps(server_message)}) has prevented the "
                   "request from succeeding")
    return StatusError(status.status_dict(code, reason, message, {
        "causes": [{"reason": "UnexpectedServerResponse", "message": server_message}]}))


def webhook_url(client_config: Mapping[str, Any], services: Mapping[str, str]) -> str:
    """The URL a ``clientConfig`` posts to (``url``, or the mapped ``service`` plus its
    ``path``), without the ``timeout`` parameter. For an unmapped service: the service's
    cluster URL ``https://<name>.<namespace>.svc:<port><path>``, which :meth:`WebhookClient.post`
    refuses as kube-apiserver's resolver does for a missing Service."""
    if client_config.get("url"):
        return str(client_config["url"])
    service = client_config.get("service") or {}
    namespace, name = service.get("namespace", ""), service.get("name", "")
    port = int(service.get("port") or 443)
    path = service.get("path") or ""
    base = services.get(f"{namespace}/{name}:{port}") or services.get(f"{namespace}/{name}")
    if base is None:
        return f"https://{name}.{namespace}.svc:{port}{path}"
    return base.rstrip("/") + path


class WebhookClient:
    """Posts a JSON review to one webhook and answers the decoded JSON review."""

    def __init__(self, services: Mapping[str, str] | None = None) -> None:
        self.services: dict[str, str] = dict(services or {})

    def _context(self, ca_bundle: str) -> ssl.SSLContext:
        if not ca_bundle:
            return ssl.create_default_context()
        try:
            pem = base64.b64decode(ca_bundle).decode()
            return ssl.create_default_context(cadata=pem)
        except (ValueError, ssl.SSLError) as err:
            raise CallError(f"could not get REST client: unable to load root certificates: "
                            f"{err}") from None

    def post(self, client_config: Mapping[str, Any], review: Mapping[str, Any],
             timeout: int) -> Any:
        """POST ``review`` with the webhook's deadline of ``timeout`` seconds; the decoded
        answer of a 2xx response.

        Raises:
            CallError: the connection, TLS, deadline, a non-2xx answer or an undecodable body.
        """
        target = webhook_url(client_config, self.services)
        split = urlsplit(target)
        query = f"{split.query}&" if split.query else ""
        path = f"{split.path or '/'}?{query}timeout={timeout}s"
        url = f"{split.scheme}://{split.netloc}{path}"
        where = f'Post "{url}"'
        service = client_config.get("service") or {}
        if not client_config.get("url") and target.startswith(
                f"https://{service.get('name', '')}.{service.get('namespace', '')}.svc:"):
            # no mapping: the cluster-IP resolver finds no Service in this process
            raise CallError(f'{where}: service "{service.get("name", "")}" not found')
        if split.scheme != "https":
            raise CallError(f'{where}: unsupported protocol scheme "{split.scheme}"')
        context = self._context(str(client_config.get("caBundle") or ""))
        host, port = split.hostname or "", split.port or 443
        body = json.dumps(review).encode()
        connection = http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
        try:
            connection.request("POST", path, body, {
                "Content-Type": "application/json", "Accept": "application/json, */*"})
            response = connection.getresponse()
            data = response.read()
        except TimeoutError:
            raise CallError(f"{where}: context deadline exceeded") from None
        except ssl.SSLCertVerificationError as err:
            detail = ("x509: certificate signed by unknown authority"
                      if err.verify_code in (19, 20, 21) else f"x509: {err.verify_message}")
            raise CallError(f"{where}: tls: failed to verify certificate: {detail}") from None
        except ConnectionRefusedError:
            refused = f"dial tcp {host}:{port}: connect: connection refused"
            raise CallError(f"{where}: {refused}") from None
        except (OSError, http.client.HTTPException) as err:
            raise CallError(f"{where}: {err or type(err).__name__}") from None
        finally:
            connection.close()
        content_type = (response.getheader("Content-Type") or "").split(";")[0].strip()
        if not 200 <= response.status < 300:
            failure = _status_of(data) or _generic_response(response.status, data, content_type)
            raise CallError(str(failure.status.get("message", "")))
        try:
            return json.loads(data)
        except ValueError as exc:
            answer = _yaml_or_none(data)
            if isinstance(answer, dict):  # the REST client's decoder takes YAML as well
                return answer
            message = f"couldn't get version/kind; json parse error: {_go_json_error(exc, answer)}"
            raise CallError(message) from None


def _status_of(data: bytes) -> StatusError | None:
    """A ``Status`` of ``Failure`` in a non-2xx body (client-go decodes it into the error)."""
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    if isinstance(doc, dict) and doc.get("kind") == "Status" and doc.get("status") == "Failure":
        return StatusError(doc)
    return None


_GO_TYPES = {str: "string", list: "array", int: "number", float: "number", bool: "bool"}
_KIND_STRUCT = ('struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
                'Kind string "json:\\"kind,omitempty\\"" }')


def _yaml_or_none(data: bytes) -> Any:
    try:
        return load_yaml(data)
    except YAMLLoadError:
        return None


def _go_json_error(exc: ValueError, answer: Any) -> str:
    """The error of apimachinery's ``json`` serializer finding the kind of a body that is not
    an object: a body YAML reads as a scalar or list (``garbage`` is the string
    ``"garbage"``) cannot fill its ``{apiVersion, kind}`` probe; else Go's JSON syntax error."""
    go_type = _GO_TYPES.get(type(answer))
    if go_type is not None:
        return f"json: cannot unmarshal {go_type} into Go value of type {_KIND_STRUCT}"
    if isinstance(exc, json.JSONDecodeError) and exc.pos < len(exc.doc):
        return f"invalid character '{exc.doc[exc.pos]}' looking for beginning of value"
    return "unexpected end of JSON input"
