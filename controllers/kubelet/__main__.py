"""Entry point of ``python -m controllers.kubelet`` and the ``kubelet-pod-source`` command."""

from __future__ import annotations

from controllers.kubelet.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
