"""Runs every benchmark module: ``python -m benchmarks [--full] [--only NAME ...]``.

Discovers ``benchmarks/bench_*.py`` and calls each module's ``main(argv)`` in turn, with
``["--quick"]`` unless ``--full`` is given (then with no arguments, i.e. each module's full
size). A module that raises is reported and the others still run; the exit status is 1 if any
failed.
"""

from __future__ import annotations

import argparse
import importlib
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

__all__ = ["discover", "main"]


def discover() -> list[str]:
    """The benchmark module names (``bench_queue``, ...), sorted."""
    here = Path(__file__).resolve().parent
    return sorted(p.stem for p in here.glob("bench_*.py"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks",
                                     description="Run every benchmarks/bench_*.py module.")
    parser.add_argument("--full", action="store_true",
                        help="full sizes (default: each module's --quick)")
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="run only this module (bench_informer or informer); repeatable")
    args = parser.parse_args(argv)
    names = discover()
    if args.only:
        wanted = {n if n.startswith("bench_") else f"bench_{n}" for n in args.only}
        unknown = wanted - set(names)
        if unknown:
            parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}; "
                         f"known: {', '.join(names)}")
        names = [n for n in names if n in wanted]
    module_argv = [] if args.full else ["--quick"]
    failed: list[str] = []
    for name in names:
        print(f"==== {name} {' '.join(module_argv)}".rstrip(), flush=True)
        start = time.perf_counter()
        try:
            module = importlib.import_module(f"benchmarks.{name}")
            status = module.main(list(module_argv))
        except Exception:
            traceback.print_exc()
            status = 1
        if status:
            failed.append(name)
        print(f"==== {name}: {'FAILED' if status else 'done'} in "
              f"{time.perf_counter() - start:.1f} s\n", flush=True)
    if failed:
        print(f"failed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
