"""A small HTTPS admission webhook for tests: stdlib ``http.server`` + ``ssl`` in a thread.

``WebhookServer(handler)`` serves every path on ``https://127.0.0.1:<port>`` with a serving
certificate of a fresh :class:`informers.certificates.CertificateAuthority`; ``handler(path,
review)`` returns the ``response`` dict to answer (the review's ``uid`` is filled in unless the
dict has one), or a :class:`Raw` answer (status, content type, body) to answer badly, or
``HANG`` to hold the request until the server stops. Every request is recorded
(``requests``: path with query, decoded body). Use as a context manager: ``__exit__`` stops the
server, releases hanging handlers and joins the thread.
"""

from __future__ import annotations

import json
import ssl
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from informers.certificates import CertificateAuthority

HANG = object()


@dataclass
class Raw:
    status: int
    content_type: str
    body: bytes


Handler = Callable[[str, dict[str, Any]], Any]


def allow(path: str, review: dict[str, Any]) -> dict[str, Any]:
    return {"allowed": True}


class WebhookServer:
    def __init__(self, handler: Handler = allow) -> None:
        self.handler = handler
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.released = threading.Event()
        self.ca = CertificateAuthority()
        pair = self.ca.issue(["127.0.0.1"])
        self._dir = tempfile.TemporaryDirectory()
        cert, key = pair.write(self._dir.name)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        outer = self

        class _Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                review = json.loads(body)
                outer.requests.append((self.path, review))
                answer = outer.handler(self.path, review)
                if answer is HANG:
                    outer.released.wait(30)
                    return
                if isinstance(answer, Raw):
                    status, content_type, data = answer.status, answer.content_type, answer.body
                else:
                    response = {"uid": review["request"]["uid"], **answer}
                    data = json.dumps({"apiVersion": "admission.k8s.io/v1",
                                       "kind": "AdmissionReview", "response": response}).encode()
                    status, content_type = 200, "application/json"
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = False  # server_close joins the handler threads
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="test-webhook-server", daemon=True)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def __enter__(self) -> WebhookServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.released.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
        self._dir.cleanup()
