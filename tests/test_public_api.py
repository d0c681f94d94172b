"""The package root: a small public API, an example that runs, and every name that left the
root still importable from its module (the CHANGELOG lists them)."""

from __future__ import annotations

import importlib
import textwrap

import informers

# Root names of 0.1.0 that moved out of the root, with the module that keeps them.
REMOVED_FROM_ROOT = {
    "BUILTIN_RESOURCES": "informers.resources",
    "Backoff": "informers.backoff",
    "CacheMutationDetector": "informers.mutation_detector",
    "CacheMutationError": "informers.errors",
    "CancelToken": "informers.list_watch",
    "Delta": "informers.delta_fifo",
    "DeltaType": "informers.delta_fifo",
    "Deltas": "informers.delta_fifo",
    "ExplicitKey": "informers.keys",
    "FIFOClosedError": "informers.errors",
    "HttpWatchStream": "informers.client.watch_stream",
    "IndexConflictError": "informers.errors",
    "IndexFunc": "informers.keys",
    "IndexFuncError": "informers.errors",
    "IndexNotFoundError": "informers.errors",
    "Indexers": "informers.keys",
    "InformerStartedError": "informers.errors",
    "InformerStoppedError": "informers.errors",
    "KeyFunc": "informers.keys",
    "KeyFuncError": "informers.errors",
    "KeyListerGetter": "informers.delta_fifo",
    "LeaderElectionConfigError": "informers.errors",
    "LeaseNotInitializedError": "informers.errors",
    "ListPager": "informers.list_watch",
    "ListResult": "informers.list_watch",
    "NotFoundError": "informers.errors",
    "ProcessorListener": "informers.processor_listener",
    "REAL_CLOCK": "informers.clock",
    "ReflectorMetrics": "informers.reflector",
    "ReflectorState": "informers.reflector",
    "ResponseDecodeError": "informers.errors",
    "SelectorError": "informers.errors",
    "SharedProcessor": "informers.shared_processor",
    "StoreLike": "informers.reflector",
    "SynchronousListener": "informers.synchronous_listener",
    "TransformFunc": "informers.delta_fifo",
    "UndeltaStore": "informers.undelta_store",
    "VeryShortWatchError": "informers.errors",
    "WatchDecodeError": "informers.errors",
    "WatchEvent": "informers.list_watch",
    "WatchStream": "informers.list_watch",
    "decode": "informers.client.decoder",
    "decode_event": "informers.client.decoder",
    "default_watch_error_handler": "informers.reflector",
    "gc_paused": "informers.memory",
    "is_connection_refused": "informers.errors",
    "is_expired": "informers.errors",
    "is_internal_error": "informers.errors",
    "is_too_large_resource_version": "informers.errors",
    "is_too_many_requests": "informers.errors",
    "strip_managed_fields_bytes": "informers.client.decoder",
    "wait_for_named_cache_sync": "informers.wait",
}


def test_the_root_exports_what_a_user_needs_and_no_more():
    assert 35 <= len(informers.__all__) <= 45
    assert sorted(informers.__all__) == sorted(set(informers.__all__))
    for name in informers.__all__:
        assert getattr(informers, name) is not None
    assert not set(REMOVED_FROM_ROOT) & set(informers.__all__)


def test_every_name_that_left_the_root_is_importable_from_its_module():
    for name, module in REMOVED_FROM_ROOT.items():
        assert hasattr(importlib.import_module(module), name), f"{module}.{name}"


def test_the_changelog_lists_every_name_that_left_the_root_with_its_new_path():
    from pathlib import Path

    changelog = (Path(__file__).resolve().parent.parent / "CHANGELOG.md").read_text()
    missing = [f"{module}.{name}" for name, module in REMOVED_FROM_ROOT.items()
               if f"{module}.{name}" not in changelog and f"`{name}`" not in changelog]
    assert missing == []


def test_the_root_docstring_example_runs(capsys):
    doc = informers.__doc__
    assert doc is not None
    code = doc.split("::\n\n", 1)[1].split("\n\nThe root exports", 1)[0]
    exec(compile(textwrap.dedent(code), "informers.__doc__", "exec"), {})
    assert capsys.readouterr().out == "added web\nweb\n"
