"""Turns an API server's error answer into the library's error (one parser for
``metav1.Status`` bodies, shared by every request the client sends).

client-go ``rest.Request.transformResponse`` / ``newUnstructuredResponseError``: an answer
whose body is a ``Status`` becomes a :class:`~informers.errors.StatusError` carrying it
(with the HTTP code when the body has none); any other body becomes a generic one built from
the code (``apierrors.NewGenericServerResponse``), quoting at most :data:`BODY_PREFIX` bytes
of it. ``Retry-After`` is honoured in whole seconds, as client-go's ``checkWait`` does.
:func:`client_decoding_status` is the Status the client itself makes for a watch event it
cannot decode.
"""

from __future__ import annotations

import json
from typing import Any

from informers.client.decoder import decode
from informers.errors import StatusError

__all__ = [
    "BODY_PREFIX",
    "WATCH_DECODE_PREFIX",
    "client_decoding_status",
    "retry_after",
    "status_code",
    "status_error",
]

BODY_PREFIX = 200
"""Bytes of a non-Status error body quoted in the error's message."""


WATCH_DECODE_PREFIX = "unable to decode an event from the watch stream: "
"""apimachinery ``watch.StreamWatcher.receive``: how a decode failure's message begins."""


def client_decoding_status(problem: str) -> dict[str, Any]:
    """The ``Status`` of the ERROR event that ends a watch whose next event cannot be decoded.

    apimachinery ``watch.StreamWatcher.receive`` reports ``fmt.Errorf("unable to decode an
    event from the watch stream: %v", err)`` through client-go's reporter
    ``errors.NewClientErrorReporter(500, "GET", "ClientWatchDecoding")``, whose ``AsObject``
    is ``NewGenericServerResponse(500, ...)`` (reason ``InternalError``, a cause of type
    ``UnexpectedServerResponse``) plus a cause of type ``ClientWatchDecoding``.
    """
    text = WATCH_DECODE_PREFIX + problem
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "code": 500,
        "reason": "InternalError",
        "message": f"an error on the server ({json.dumps(text, ensure_ascii=False)}) has "
                   "prevented the request from succeeding",
        "details": {"causes": [{"reason": "UnexpectedServerResponse", "message": text},
                               {"reason": "ClientWatchDecoding", "message": text}]},
    }


def retry_after(headers: Any) -> float | None:
    """Seconds of a ``Retry-After`` header in whole seconds (>= 1), else ``None``; an
    HTTP-date is ignored, as client-go does."""
    value = headers.get("Retry-After") if headers is not None else None
    if value is None:
        return None
    try:
        seconds = int(str(value).strip())
    except ValueError:
        return None
    return float(seconds) if seconds > 0 else None


def status_error(code: int, body: bytes | None, retry: float | None = None) -> StatusError:
    """The error for an answer with HTTP ``code`` and ``body``."""
    status: Any = None
    if body:
        try:
            status = decode(body)
        except ValueError:
            status = None
    if isinstance(status, dict) and status.get("kind") == "Status":
        if not isinstance(status.get("code"), int):
            status["code"] = code
        return StatusError(status, retry)
    text = body[:BODY_PREFIX].decode("utf-8", "replace") if body else ""
    return StatusError.from_code(code, text, retry)


def status_code(err: BaseException | None) -> int:
    """The HTTP code of a :class:`StatusError` (or of the official client's ``ApiException``),
    0 for anything else."""
    if isinstance(err, StatusError):
        return err.code
    code = getattr(err, "status", None)
    return code if isinstance(code, int) else 0
