"""Runs the ``endpoint-controller`` command: ``python -m controllers.endpoint --help``."""

from __future__ import annotations

import sys

from controllers.endpoint.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
