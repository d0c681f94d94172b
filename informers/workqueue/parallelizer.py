"""Runs a function over numbered pieces of work on a fixed number of threads.

The Python counterpart of client-go ``util/workqueue/parallelizer.go`` (``ParallelizeUntil``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

__all__ = ["parallelize_until"]

logger = logging.getLogger(__name__)


def parallelize_until(
    workers: int,
    pieces: int,
    fn: Callable[[int], object],
    stop: threading.Event | None = None,
    chunk_size: int = 1,
) -> None:
    """Call ``fn(piece)`` once for each ``piece`` in ``range(pieces)`` on up to ``workers`` threads.

    Pieces are handed out in chunks of ``chunk_size`` consecutive pieces (client-go
    ``WithChunkSize``; values below 1 mean 1); ``min(workers, number of chunks)`` threads run.
    Returns when every piece ran, or, once ``stop`` is set, when each thread has finished its
    current piece (the remaining pieces are skipped, as when client-go's context is cancelled).

    Unlike Go, where a panic in a piece crashes the process, an exception raised by ``fn``
    makes the other threads stop taking pieces, and is re-raised here after all threads ended.

    Args:
        workers: Maximum number of threads.
        pieces: Number of pieces; ``fn`` receives ``0 .. pieces - 1``.
        fn: The work for one piece.
        stop: When set, no further piece starts.
        chunk_size: Consecutive pieces a thread takes at once.
    """
    if pieces <= 0:
        return
    chunk_size = max(chunk_size, 1)
    chunks = -(-pieces // chunk_size)
    workers = min(max(workers, 1), chunks)
    halt = stop if stop is not None else threading.Event()
    failure = threading.Event()
    errors: list[BaseException] = []
    lock = threading.Lock()
    next_chunk = 0

    def work() -> None:
        nonlocal next_chunk
        while True:
            with lock:
                chunk = next_chunk
                next_chunk += 1
            if chunk >= chunks:
                return
            start = chunk * chunk_size
            for piece in range(start, min(start + chunk_size, pieces)):
                if halt.is_set() or failure.is_set():
                    return
                try:
                    fn(piece)
                except BaseException as err:
                    logger.exception("parallelize_until: piece %d failed", piece)
                    with lock:
                        errors.append(err)
                    failure.set()
                    return

    threads = [
        threading.Thread(target=work, name=f"parallelize-until-{i}", daemon=True)
        for i in range(workers)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
