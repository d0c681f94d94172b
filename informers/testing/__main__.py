"""Run the embedded API server until interrupted: ``python -m informers.testing``.

    python -m informers.testing --port 8080 --kubeconfig ./kubeconfig
    kubectl --kubeconfig ./kubeconfig get namespaces
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Sequence

from informers.clock import REAL_CLOCK
from informers.testing.server import ApiServer

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m informers.testing",
        description="Serve an embedded Kubernetes API server until interrupted.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="TCP port (default: a free one)")
    parser.add_argument("--token", default=None, help="bearer token (default: random)")
    parser.add_argument("--kubeconfig", default=None,
                        help="write a kubeconfig for this server to this path")
    parser.add_argument("--bookmark-interval", type=float, default=60.0,
                        help="seconds between watch bookmarks (default 60)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every request")
    return parser


def main(argv: Sequence[str] | None = None, stop: threading.Event | None = None) -> int:
    """Serve until SIGINT/SIGTERM (or until ``stop`` is set, for tests). Returns 0."""
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
    with ApiServer(host=args.host, port=args.port, token=args.token,
                   bookmark_interval=args.bookmark_interval) as server:
        if args.kubeconfig:
            server.write_kubeconfig(args.kubeconfig)
        sys.stdout.write(f"serving on {server.url}"
                         + (f" (kubeconfig: {args.kubeconfig})" if args.kubeconfig else "")
                         + "\n")
        sys.stdout.flush()
        REAL_CLOCK.wait_event(stop, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
