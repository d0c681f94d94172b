"""What the compact cache costs a reader: lister reads on a plain and on a compact cache.

Run ``python -m benchmarks.bench_lister`` (10,000 realistic pods from :mod:`benchmarks.pods`,
managedFields stripped as informers do, in 10 namespaces) or ``--quick`` (2,000). Both caches
are filled the way the informer fills them (the compact one with each object encoded as it
arrives, :func:`informers.object_codec.item_encoder`), then measured in the same run, rows
round-robin, best of ``--repeat``:

1. ``lister.by_namespace(ns).get(name)``: one object by key, microseconds per call.
2. ``lister.list("app.kubernetes.io/name=<app>")`` over every namespace: a label selector
   matching one app in 14 (about 700 of 10,000 pods), milliseconds per call.
3. ``lister.by_namespace(ns).list()``: every pod of one namespace (1,000 of 10,000).
4. Memory of the cached objects (``tracemalloc``: Python allocations, not RSS), per pod.

Both caches are built in this one process and then frozen (``gc.freeze()``) so that neither
pays for the garbage collector walking the other; timings are of the reads alone.

The ratio column is compact / plain: how many times slower (or bigger) the compact cache is.
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks.pods import make_pod
from informers.indexer import Indexer
from informers.keys import (
    NAMESPACE_INDEX,
    deletion_handling_meta_namespace_key_func,
    meta_namespace_index_func,
)
from informers.listers import Lister
from informers.object_codec import (
    JSON_CODEC,
    compact_index_func,
    compact_key_func,
    item_encoder,
)
from informers.resources import lookup

NAMESPACES = 10
PODS = lookup("pods")


def make_pods(count: int) -> list[dict[str, Any]]:
    pods = []
    for i in range(count):
        pod = make_pod(i)
        pod["metadata"].pop("managedFields", None)
        pod["metadata"]["namespace"] = f"ns-{i % NAMESPACES}"
        pods.append(pod)
    return pods


def fill(pods: list[dict[str, Any]], compact: bool) -> tuple[Indexer, int]:
    """A cache filled as an informer fills it; and the bytes tracemalloc saw it keep."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    if compact:
        key_func = compact_key_func(deletion_handling_meta_namespace_key_func)
        indexer = Indexer(key_func, {NAMESPACE_INDEX: compact_index_func(
            meta_namespace_index_func)}, codec=JSON_CODEC)
        hook = item_encoder(key_func, None)
        items = [hook(_copy(p)) for p in pods]
    else:
        indexer = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
        items = [_copy(p) for p in pods]
    keys = [deletion_handling_meta_namespace_key_func(p) for p in pods]
    indexer.replace(items, "1", keys=keys)
    del items, keys
    gc.collect()
    kept = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return indexer, kept


def _copy(obj: Any) -> Any:
    """A fresh deep copy (as decoding gives), so the two caches share nothing."""
    import orjson

    return orjson.loads(orjson.dumps(obj))


def best(fn: Callable[[], object], calls: int, repeat: int) -> float:
    """Best seconds per call of ``fn`` over ``repeat`` rounds of ``calls`` calls."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - start) / calls)
    return min(times)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_lister",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2,000 pods")
    parser.add_argument("--pods", type=int, default=None, help="pods (default 10,000)")
    parser.add_argument("--repeat", type=int, default=5, help="rounds, best taken")
    args = parser.parse_args(argv)
    count = args.pods or (2_000 if args.quick else 10_000)
    pods = make_pods(count)
    app = pods[0]["metadata"]["labels"]["app.kubernetes.io/name"]
    name = pods[NAMESPACES]["metadata"]["name"]
    caches = {compact: fill(pods, compact) for compact in (False, True)}
    del pods[NAMESPACES + 1:]
    # Both caches live in this one process: frozen, so that the collector's full passes over
    # the plain cache's millions of dicts do not land on the compact cache's decodes (in a
    # process of its own, a compact cache holds almost nothing the collector walks).
    gc.collect()
    gc.freeze()
    listers = {compact: Lister(indexer, PODS) for compact, (indexer, _) in caches.items()}
    selector = f"app.kubernetes.io/name={app}"
    matched = len(listers[False].list(selector))
    assert matched == len(listers[True].list(selector)) > 0
    assert listers[True].by_namespace("ns-0").get(name) == \
        listers[False].by_namespace("ns-0").get(name)

    rows: list[tuple[str, str, float, float]] = []
    for label, unit, scale, calls, make in (
        ("get one pod by key", "us", 1e6, 2_000,
         lambda lister: lambda: lister.by_namespace("ns-0").get(name)),
        (f"list by label selector ({matched:,} of {count:,})", "ms", 1e3, 10,
         lambda lister: lambda: lister.list(selector)),
        (f"list one namespace ({count // NAMESPACES:,} pods)", "ms", 1e3, 10,
         lambda lister: lambda: lister.by_namespace("ns-0").list()),
    ):
        plain = compact = float("inf")
        for _ in range(args.repeat):  # round-robin: load changes hit both alike
            plain = min(plain, best(make(listers[False]), calls, 1))
            compact = min(compact, best(make(listers[True]), calls, 1))
        rows.append((label, unit, plain * scale, compact * scale))

    print(f"bench_lister: {count:,} pods in {NAMESPACES} namespaces, best of {args.repeat}")
    print(f"  {'':44} {'plain':>10} {'compact':>10} {'ratio':>7}")
    for label, unit, plain, compact in rows:
        print(f"  {label:44} {plain:7.2f} {unit} {compact:7.2f} {unit} {compact / plain:6.1f}x")
    plain_bytes, compact_bytes = caches[False][1] / count, caches[True][1] / count
    print(f"  {'cached objects per pod (tracemalloc)':44} {plain_bytes / 1e3:7.1f} KB "
          f"{compact_bytes / 1e3:7.1f} KB {compact_bytes / plain_bytes:6.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
