"""The errors of the embedded API server and of the real control plane fixture (they are the
testing package's own; the library's error family is :mod:`informers.errors`)."""

from __future__ import annotations

from informers.errors import InformersError

__all__ = ["ControlPlaneError", "GoMissingError", "PatchError"]


class PatchError(InformersError, ValueError):
    """A JSON patch (RFC 6902) or merge patch (RFC 7386) that cannot be applied: a bad
    operation, a missing path, a failed ``test``. The message names the operation and path."""


class ControlPlaneError(InformersError, RuntimeError):
    """The real control plane of the tests (:mod:`informers.testing.control_plane`) could not
    be built, started or probed; the message quotes the log."""


class GoMissingError(ControlPlaneError):
    """The control plane binaries are not built and there is no ``go`` command to build them."""
