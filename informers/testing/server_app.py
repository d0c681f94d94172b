"""What the embedded API server's request handler needs of ``ApiServer``
(:class:`ServerApp`), so the handler modules do not import the server."""

from __future__ import annotations

import socket
import threading
from typing import Protocol

from informers.clock import Clock
from informers.testing.conversion import Conversion
from informers.testing.endpoints import Endpoints
from informers.testing.faults import Faults
from informers.testing.field_validation import FieldValidator
from informers.testing.openapi import OpenAPI
from informers.testing.requestlog import RequestLog
from informers.testing.resources import ResourceRegistry
from informers.testing.watch import WatchHandle

__all__ = ["ServerApp"]


class ServerApp(Protocol):
    """What the handler needs from ``ApiServer``."""

    token: str
    registry: ResourceRegistry
    endpoints: Endpoints
    openapi: OpenAPI
    field_validator: FieldValidator
    conversion: Conversion
    faults: Faults
    request_log_store: RequestLog
    clock: Clock
    max_request_body_bytes: int
    header_read_timeout: float
    idle_timeout: float
    stopping: threading.Event

    @property
    def server_address(self) -> str: ...

    def connection_opened(self, connection: socket.socket) -> None: ...

    def connection_closed(self, connection: socket.socket) -> None: ...

    def watch_opened(self, handle: WatchHandle) -> None: ...

    def watch_closed(self, handle: WatchHandle) -> None: ...
