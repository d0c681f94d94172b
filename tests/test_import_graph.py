"""The import graph of ``informers/``: no cycles, and no module importing from a layer above it.

Every import counts, those inside functions and under ``TYPE_CHECKING`` included: a cycle that
only type checkers follow still ties two modules together for a reader.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "informers"

# Lowest first. A module may import from its own layer and the layers below it, never above.
LAYERS: list[tuple[str, list[str]]] = [
    ("ground", [
        "informers.clock", "informers.errors", "informers.resources", "informers.meta_time",
        "informers.name_validation", "informers.global_provider", "informers.keys",
        "informers.backoff", "informers.labels", "informers.label_selector", "informers.fields",
        "informers.memory", "informers.yaml_loader", "informers.resource_version",
        "informers.conditions", "informers.deadline", "informers.certificates",
        "informers.object_codec", "informers.types", "informers.object_type",
        "informers.sharding", "informers.cel_syntax",
    ]),
    ("list/watch protocol", [
        "informers.list_watch", "informers.reflector_options", "informers.list_progress",
    ]),
    ("HTTP client", ["informers.client"]),
    ("work queue", ["informers.workqueue"]),
    ("caches and reflector", [
        "informers.reflector", "informers.delta_fifo", "informers.indexer", "informers.listers",
        "informers.undelta_store", "informers.mutation_detector", "informers.handlers",
        "informers.processor_listener", "informers.synchronous_listener",
        "informers.shared_processor", "informers.wait", "informers.real_fifo",
        "informers.fifo_metrics", "informers.process_deltas", "informers.informer_queue",
        "informers.fifo_prometheus_metrics", "informers.reflector_rules",
        "informers.informer_rules",
    ]),
    ("informer", ["informers.shared_informer", "informers.typed_informers", "informers.factory"]),
    ("runtime", ["informers.controller", "informers.events", "informers.leaderelection",
                 "informers.controllerutil", "informers.shard", "informers.aio"]),
    ("process", ["informers.manager", "informers.health_server", "informers.signals",
                 "informers.webhook", "informers.crdgen", "informers.aio.manager",
                 "informers.leader_election_config", "informers.shard_binding",
                 "informers.runnable"]),
    ("test server", ["informers.testing"]),
    ("package root", ["informers"]),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def layer_of(module: str) -> int:
    best, rank = "", -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
                best, rank = prefix, i
    assert rank >= 0, f"{module} is in no layer: add it to LAYERS"
    return rank


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The informers modules ``module`` imports (a package's ``__init__`` is the package)."""
    found: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            # "from informers import fields" imports the submodule informers.fields
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                     for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
    return found


def graph() -> dict[str, set[str]]:
    modules = all_modules()
    return {m: imports_of(m, p, modules) for m, p in modules.items()}


def test_every_module_is_in_a_layer():
    for module in all_modules():
        layer_of(module)


def test_no_module_imports_from_a_layer_above_it():
    upward = [
        f"{a} ({LAYERS[layer_of(a)][0]}) -> {b} ({LAYERS[layer_of(b)][0]})"
        for a, targets in sorted(graph().items()) for b in sorted(targets)
        if layer_of(b) > layer_of(a)
    ]
    assert upward == []


def find_cycles(edges: dict[str, set[str]]) -> list[str]:
    """Every cycle a depth-first walk meets, as ``a -> b -> a``."""
    cycles: list[str] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join([*stack[stack.index(nxt):], nxt]))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    return cycles


def test_no_import_cycles():
    assert find_cycles(graph()) == []


def test_the_checker_finds_an_upward_import_and_a_cycle():
    """The two checks can fail: the graph of the layout before informers.client existed."""
    assert layer_of("informers.client.transport") > layer_of("informers.list_watch")
    assert layer_of("informers.reflector") > layer_of("informers.client")
    fake = {"informers.list_watch": {"informers.client.transport"},
            "informers.client.transport": {"informers.list_watch"}}
    upward = [(a, b) for a, bs in fake.items() for b in bs if layer_of(b) > layer_of(a)]
    assert upward == [("informers.list_watch", "informers.client.transport")]
    assert find_cycles(fake) == [
        "informers.client.transport -> informers.list_watch -> informers.client.transport"]
