"""Reports file-system changes of a directory or file through Linux inotify (via ctypes).

The file source uses it where the kubelet uses fsnotify (``pkg/kubelet/config/file_linux.go``).
No third-party package is needed: inotify is three libc calls. On other platforms, or when
libc has no inotify, :func:`inotify_available` is false and the file source relies on its
periodic rescan alone (as the kubelet does on platforms without fsnotify support,
``file_unsupported.go``).

Events are translated to fsnotify's operations and then to the kubelet's three pod events
(``produceWatchEvent``): Create -> ``add``, Write or Chmod -> ``modify``, Remove or Rename ->
``delete``. ``IN_CLOSE_WRITE`` also counts as a Write, so the final content of a file written
in several chunks is always read.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import select
import struct
import sys
import threading
from dataclasses import dataclass

__all__ = [
    "POD_ADD",
    "POD_DELETE",
    "POD_MODIFY",
    "Inotify",
    "InotifyEvent",
    "inotify_available",
]

POD_ADD = "add"
POD_MODIFY = "modify"
POD_DELETE = "delete"

# <sys/inotify.h>
IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000

WATCH_MASK = (
    IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE
    | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF
)
"""What fsnotify's ``Add`` watches for (plus ``IN_CLOSE_WRITE``)."""

_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len
_READ_SIZE = 64 * 1024


@dataclass(frozen=True)
class InotifyEvent:
    """One change: ``path`` is the watched path joined with the entry name (if any)."""

    path: str
    mask: int

    @property
    def kind(self) -> str | None:
        """:data:`POD_ADD`, :data:`POD_MODIFY`, :data:`POD_DELETE`, or ``None`` (ignored)."""
        m = self.mask
        if m & (IN_CREATE | IN_MOVED_TO):
            return POD_ADD
        if m & (IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB):
            return POD_MODIFY
        if m & (IN_DELETE | IN_DELETE_SELF | IN_MOVED_FROM | IN_MOVE_SELF):
            return POD_DELETE
        return None

    @property
    def watch_lost(self) -> bool:
        """The watched path itself went away (or the queue overflowed): watch again."""
        return bool(self.mask & (IN_IGNORED | IN_Q_OVERFLOW | IN_DELETE_SELF | IN_MOVE_SELF))


_libc: ctypes.CDLL | None = None
_libc_lock = threading.Lock()


def _load_libc() -> ctypes.CDLL | None:
    global _libc
    with _libc_lock:
        if _libc is None and sys.platform.startswith("linux"):
            try:
                lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
                lib.inotify_init1.argtypes = [ctypes.c_int]
                lib.inotify_init1.restype = ctypes.c_int
                lib.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
                lib.inotify_add_watch.restype = ctypes.c_int
                _libc = lib
            except (OSError, AttributeError):
                _libc = None
        return _libc


def inotify_available() -> bool:
    """True on Linux when libc offers inotify."""
    return _load_libc() is not None


class Inotify:
    """One inotify instance watching one path; :meth:`read` blocks until events or :meth:`close`.

    Thread safety: one thread calls :meth:`read`; any thread may call :meth:`close`, which makes
    a blocked :meth:`read` return ``None``. File descriptors are released by :meth:`close`
    once no read is in progress.

    Raises (constructor):
        OSError: inotify is unavailable, or the path cannot be watched (e.g. it does not exist).
    """

    def __init__(self, path: str) -> None:
        lib = _load_libc()
        if lib is None:
            raise OSError(errno.ENOSYS, "inotify is not available on this platform")
        fd = lib.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"unable to create inotify: {os.strerror(err)}")
        wd = lib.inotify_add_watch(fd, os.fsencode(path), WATCH_MASK)
        if wd < 0:
            err = ctypes.get_errno()
            os.close(fd)
            raise OSError(err, f"unable to create inotify for path {path!r}: {os.strerror(err)}",
                          path)
        self.path = path
        self._fd = fd
        self._wake_r, self._wake_w = os.pipe()
        self._lock = threading.Lock()
        self._closed = False
        self._reading = False
        self._released = False

    def read(self) -> list[InotifyEvent] | None:
        """Block until events arrive; ``None`` once closed."""
        with self._lock:
            if self._closed:
                return None
            self._reading = True
        try:
            while True:
                ready, _, _ = select.select([self._fd, self._wake_r], [], [])
                if self._wake_r in ready:
                    return None
                try:
                    data = os.read(self._fd, _READ_SIZE)
                except BlockingIOError:
                    continue
                return self._parse(data)
        finally:
            with self._lock:
                self._reading = False
                closed = self._closed
            if closed:
                self._release()

    def _parse(self, data: bytes) -> list[InotifyEvent]:
        events: list[InotifyEvent] = []
        offset = 0
        while offset + _HEADER.size <= len(data):
            _wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
            offset += _HEADER.size
            raw = data[offset:offset + length].rstrip(b"\0")
            offset += length
            name = os.fsdecode(raw)
            events.append(InotifyEvent(os.path.join(self.path, name) if name else self.path, mask))
        return events

    def close(self) -> None:
        """Stop watching; wakes a blocked :meth:`read`. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            reading = self._reading
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass
        if not reading:
            self._release()

    def _release(self) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
        for fd in (self._fd, self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
