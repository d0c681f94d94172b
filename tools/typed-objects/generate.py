"""Writes informers/types/: TypedDicts of the built-in kinds the library serves.

Usage (from the repository root)::

    python tools/typed-objects/generate.py           # rewrite informers/types/*_v1.py
    python tools/typed-objects/generate.py --check   # exit 1 if a file is out of date

The input is informers/testing/api_schema.json, the field table tools/api-schema/ generates
from the Go types of k8s.io/api and k8s.io/apimachinery (every field's JSON name and type, the
same table the embedded API server's OpenAPI component schemas are built from,
informers/testing/schemas.py). One module per Go package (``core/v1`` -> ``core_v1.py``),
one ``TypedDict`` per Go struct, named as the Go type, its fields the JSON names with
embedded (``json:",inline"``) structs' fields merged in. Each kind gets ``apiVersion`` and
``kind`` (its ``TypeMeta``) and a list type (``PodList``). Every class is ``total=False``:
partial objects (apply configurations, patches) type-check. The types with a JSON form of
their own are typed as their JSON (api_schema.json's special kinds): ``metav1.Time``,
``MicroTime``, ``Duration``, ``resource.Quantity`` and base64 ``[]byte`` are ``str``,
``intstr.IntOrString`` is ``int | str``, ``FieldsV1`` and ``runtime.RawExtension`` are
``dict[str, Any]``.

``ListMeta`` (and its ``ShardInfo``), which no served kind's fields reach, is written from
k8s.io/apimachinery v0.36.3 ``pkg/apis/meta/v1/types.go`` (``ListMeta``). The Go field table
carries no descriptions: the classes' docstrings name the Go type.

The package's ``__init__.py`` is generated too: it re-exports every name (lazily: a
submodule is imported when one of its names is first used) except the names two packages
share (``EndpointPort``), which are imported from their module.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from informers.types.generate import (  # noqa: E402
    Field,
    TypedDictDef,
    render_module,
)

TABLE = ROOT / "informers" / "testing" / "api_schema.json"
OUT = ROOT / "informers" / "types"

_SPECIALS = {
    "string": "str", "bool": "bool", "int32": "int", "int64": "int", "uint32": "int",
    "uint64": "int", "float32": "float", "float64": "float", "bytes": "str", "time": "str",
    "microtime": "str", "duration": "str", "quantity": "str", "intorstring": "int | str",
    "fieldsv1": "dict[str, Any]", "rawextension": "dict[str, Any]",
}

_EXTRA_META: dict[str, list[dict[str, Any]]] = {
    # k8s.io/apimachinery v0.36.3 pkg/apis/meta/v1/types.go ListMeta, ShardInfo
    "meta/v1.ListMeta": [
        {"json": "selfLink", "type": "string"},
        {"json": "resourceVersion", "type": "string"},
        {"json": "continue", "type": "string"},
        {"json": "remainingItemCount", "type": "int64"},
        {"json": "shardInfo", "type": {"struct": "meta/v1.ShardInfo"}},
    ],
    "meta/v1.ShardInfo": [{"json": "selector", "type": "string"}],
}


def module_of(go_type: str) -> str:
    """``core/v1.Pod`` -> ``core_v1``."""
    return go_type.partition(".")[0].replace("/", "_")


def class_of(go_type: str) -> str:
    return go_type.partition(".")[2]


class _Builder:
    def __init__(self, table: dict[str, Any]) -> None:
        self.types: dict[str, list[dict[str, Any]]] = {**table["types"], **_EXTRA_META}
        self.kinds: dict[str, tuple[str, str]] = {
            go_type: (api_version, kind)
            for api_version, entries in table["kinds"].items()
            for kind, go_type in entries.items()
            if go_type != "meta/v1.DeleteOptions"}
        self.source = table["source"]

    def fields(self, go_type: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = []
        for entry in self.types[go_type]:
            if entry.get("inline"):
                result.extend(self.fields(entry["type"]["struct"]))
            elif entry.get("json"):
                result.append(entry)
        return result

    def type_expr(self, kind: Any, module: str, refs: set[str]) -> str:
        if isinstance(kind, str):
            return _SPECIALS[kind]
        if "struct" in kind:
            refs.add(kind["struct"])
            return self.local_name(kind["struct"], module)
        if "slice" in kind:
            return f"list[{self.type_expr(kind['slice'], module, refs)}]"
        if "map" in kind:
            return f"dict[str, {self.type_expr(kind['map'], module, refs)}]"
        raise ValueError(f"unknown type {kind!r}")

    def local_name(self, go_type: str, module: str) -> str:
        """How ``module`` names ``go_type``: its class name, or ``module.Class`` when the
        name is taken in ``module`` by a type of its own."""
        name = class_of(go_type)
        if module_of(go_type) == module:
            return name
        if any(module_of(t) == module and class_of(t) == name for t in self.types):
            return f"{module_of(go_type)}.{name}"
        return name

    def definition(self, go_type: str, module: str, refs: set[str]) -> TypedDictDef:
        fields = []
        doc = f"``{go_type}`` ({_origin(go_type, self.source)})."
        if go_type in self.kinds:
            api_version, kind = self.kinds[go_type]
            fields = [Field("apiVersion", "str"), Field("kind", "str")]
            doc = f"{kind} ({api_version}): ``{go_type}`` ({_origin(go_type, self.source)})."
        fields.extend(Field(e["json"], self.type_expr(e["type"], module, refs))
                      for e in self.fields(go_type))
        return TypedDictDef(class_of(go_type), fields, doc)

    def list_definition(self, go_type: str, module: str, refs: set[str]) -> TypedDictDef:
        api_version, kind = self.kinds[go_type]
        refs.add("meta/v1.ListMeta")
        return TypedDictDef(f"{kind}List", [
            Field("apiVersion", "str"), Field("kind", "str"),
            Field("metadata", self.local_name("meta/v1.ListMeta", module)),
            Field("items", f"list[{class_of(go_type)}]")],
            f"A list of {kind} ({api_version}).")

    def modules(self) -> dict[str, str]:
        """File name -> source of every generated module."""
        by_module: dict[str, list[str]] = {}
        for go_type in self.types:
            by_module.setdefault(module_of(go_type), []).append(go_type)
        result: dict[str, str] = {}
        exports: dict[str, list[str]] = {}
        for module, go_types in sorted(by_module.items()):
            refs: set[str] = set()
            definitions: list[TypedDictDef] = []
            for go_type in self._order(module, go_types):
                definitions.append(self.definition(go_type, module, refs))
                if go_type in self.kinds:
                    definitions.append(self.list_definition(go_type, module, refs))
            exports[module] = [d.name for d in definitions]
            result[f"{module}.py"] = render_module(
                f"TypedDicts of the ``{module.replace('_', '/')}`` types (Go package "
                f"``{_package(module)}``). Generated by tools/typed-objects/generate.py from "
                "informers/testing/api_schema.json: do not edit.",
                self._imports(module, refs, definitions), definitions, postponed=False)
        result["__init__.py"] = _init(exports)
        return result

    def _order(self, module: str, go_types: list[str]) -> list[str]:
        """Every type after the types it uses (the module's annotations are evaluated at
        import, which is several times cheaper than postponed ones: no forward reference to
        compile): depth-first from the kinds (sorted), each type written once the types it
        uses are; then the rest, sorted.

        Raises:
            ValueError: a type uses itself, through any chain (none of the served kinds'
                does; this layout could not write one).
        """
        done: list[str] = []
        seen: set[str] = set()
        open_: set[str] = set()

        def visit(go_type: str) -> None:
            if module_of(go_type) != module or go_type in seen:
                if go_type in open_:
                    raise ValueError(f"{go_type} refers to itself")
                return
            seen.add(go_type)
            open_.add(go_type)
            for entry in self.fields(go_type):
                for struct in _structs(entry["type"]):
                    visit(struct)
            open_.discard(go_type)
            done.append(go_type)

        for go_type in sorted(t for t in go_types if t in self.kinds):
            visit(go_type)
        for go_type in sorted(go_types):
            visit(go_type)
        return done

    def _imports(self, module: str, refs: set[str], definitions: list[TypedDictDef]
                 ) -> list[str]:
        uses_any = any("Any" in f.type for d in definitions for f in d.fields)
        lines = [f"from typing import {'Any, ' if uses_any else ''}TypedDict"]
        foreign: dict[str, list[str]] = {}
        qualified: set[str] = set()
        for go_type in sorted(refs):
            other = module_of(go_type)
            if other == module:
                continue
            name = self.local_name(go_type, module)
            if "." in name:
                qualified.add(other)
            else:
                foreign.setdefault(other, []).append(name)
        if foreign or qualified:
            lines.append("")
        for other in sorted(qualified):
            lines.append(f"from informers.types import {other}")
        for other, names in sorted(foreign.items()):
            lines.append(f"from informers.types.{other} import {', '.join(sorted(names))}")
        return lines


def _structs(kind: Any) -> Iterable[str]:
    if isinstance(kind, dict):
        if "struct" in kind:
            yield kind["struct"]
        for key in ("slice", "map"):
            if key in kind:
                yield from _structs(kind[key])


def _package(module: str) -> str:
    group, _, version = module.partition("_")
    if group == "meta":
        return f"k8s.io/apimachinery/pkg/apis/meta/{version}"
    return f"k8s.io/api/{group}/{version}"


def _origin(go_type: str, source: dict[str, str]) -> str:
    module = "k8s.io/apimachinery" if go_type.startswith("meta/") else "k8s.io/api"
    return f"{module} {source.get(module, '')}".strip()


def _isort(name: str) -> tuple[str, str]:
    """The order ruff's isort gives the names of one ``from`` import (case-insensitive)."""
    return name.lower(), name


def _init(exports: dict[str, list[str]]) -> str:
    owners: dict[str, list[str]] = {}
    for module, names in exports.items():
        for name in names:
            owners.setdefault(name, []).append(module)
    unique = {name: mods[0] for name, mods in sorted(owners.items()) if len(mods) == 1}
    shared = sorted(name for name, mods in owners.items() if len(mods) > 1)
    lines = ['"""TypedDicts of the built-in kinds: ``Pod``, ``PodSpec``, ``ObjectMeta``...',
             "",
             "Static types only: objects stay plain dicts at run time, and importing this "
             "package", "imports no submodule (a name is imported from its module when first "
             "used).", "One module per API group version (:mod:`informers.types.core_v1`,",
             ":mod:`informers.types.apps_v1`...); the names two of them share",
             f"({', '.join(f'``{n}``' for n in shared)}) are imported from their module.",
             "Every class is ``total=False``. :mod:`informers.types.generate` writes the "
             "same for a CRD.", "",
             "Generated by tools/typed-objects/generate.py: do not edit.",
             '"""', "", "from __future__ import annotations", "",
             "import importlib", "from typing import TYPE_CHECKING, Any", "",
             "if TYPE_CHECKING:"]
    for module in sorted(exports):
        names = sorted((n for n in exports[module] if unique.get(n) == module), key=_isort)
        lines.append(f"    from informers.types.{module} import (")
        lines.extend(f"        {n}," for n in names)
        lines.append("    )")
    lines += ["", "__all__ = ["]
    lines.extend(f'    "{name}",' for name in sorted(unique))
    lines += ["]", "", "_MODULES: dict[str, str] = {"]
    lines.extend(f'    "{name}": "{module}",' for name, module in unique.items())
    lines += ["}", "",
              "if not TYPE_CHECKING:  # type checkers see the imports above, not this",
              "",
              "    def __getattr__(name: str) -> Any:",
              '        """Import the submodule that defines ``name`` (PEP 562)."""',
              "        module = _MODULES.get(name)",
              "        if module is None:",
              '            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")',
              '        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)',
              "        globals()[name] = value",
              "        return value", "",
              "    def __dir__() -> list[str]:",
              "        return sorted([*globals(), *_MODULES])", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="report the files that differ from what would be written")
    args = parser.parse_args(argv)
    modules = _Builder(json.loads(TABLE.read_text())).modules()
    stale = [name for name, text in modules.items()
             if not (OUT / name).exists() or (OUT / name).read_text() != text]
    if args.check:
        for name in stale:
            print(f"informers/types/{name} is out of date: run tools/typed-objects/generate.py")
        return 1 if stale else 0
    for name in stale:
        (OUT / name).write_text(modules[name])
        print(f"wrote informers/types/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
