"""The CRD -> TypedDict generator: Python ``TypedDict`` definitions from a CRD's schema.

::

    python -m informers.types.generate crd.yaml > website_types.py
    python -m informers.types.generate crd.yaml --version v1   # one version, plain names

For every served version of every ``CustomResourceDefinition`` in the file (a YAML or JSON
stream), its ``openAPIV3Schema`` becomes one ``TypedDict`` for the kind (``Website``), one
per nested object (``WebsiteSpec``, ``WebsiteStatus``, ``WebsiteStatusCondition``...) and a
list type (``WebsiteList``). With more than one served version (and no ``--version``) every
name starts with its version (``V1Website``, ``V1beta1Website``), as the official Python
client names its models. How each schema construct is typed:

================================================  ==================================================
schema                                            Python type
================================================  ==================================================
``type: object`` with ``properties``              a ``TypedDict`` named parent + property
``additionalProperties: <schema>``                ``dict[str, <that type>]``
``additionalProperties: true``, no properties     ``dict[str, Any]``
``x-kubernetes-preserve-unknown-fields``          ``dict[str, Any]`` (``Any`` without ``type``)
``x-kubernetes-embedded-resource``                ``dict[str, Any]`` unless it lists properties
``type: array``                                   ``list[<items>]``; object items are named after
                                                  the property, singular (``conditions`` ->
                                                  ``...Condition``)
``x-kubernetes-int-or-string``                    ``int | str``
``enum``                                          ``Literal[...]`` of its values
``string`` / ``integer`` / ``number`` / ``boolean``  ``str`` / ``int`` / ``float`` / ``bool``
``nullable: true``                                ``<type> | None``
anything else (no ``type``)                       ``Any``
================================================  ==================================================

Properties in ``required`` are ``Required[...]``; every other one may be absent (the classes
are ``total=False``), so partial objects (apply configurations) type-check. The root's
``metadata`` is :class:`informers.types.meta_v1.ObjectMeta` and ``apiVersion``/``kind`` are
``str``. Descriptions become docstrings (objects) and comments (properties). Property names
that are not Python identifiers (``x-foo``, ``class``) put the class in ``TypedDict``'s
functional syntax. The generated module imports :mod:`informers.types.meta_v1`, and ``Required``
from ``typing_extensions`` for type checkers only (``typing.Required`` is Python 3.11+).

This is the reverse of a CRD-from-Python-types generator: it reads a CRD and writes Python.
The same renderer (:func:`render_typeddict`) writes the built-in kinds' modules of
:mod:`informers.types` (``tools/typed-objects/generate.py``).
"""

from __future__ import annotations

import argparse
import keyword
import re
import sys
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "Field",
    "GenerateError",
    "TypedDictDef",
    "generate_crd_module",
    "main",
    "render_module",
    "render_typeddict",
]

LINE = 100
"""The line length the generated code wraps at (the project's ruff ``line-length``)."""


class GenerateError(ValueError):
    """The input is not a CRD with a schema the generator can read (the message says why)."""


@dataclass
class Field:
    """One key of a ``TypedDict``: its JSON name, Python type expression, whether it is
    ``Required`` and its description (a comment above it)."""

    name: str
    type: str
    required: bool = False
    doc: str = ""


@dataclass
class TypedDictDef:
    """One ``TypedDict`` to write (``total=False``: keys not ``required`` may be absent)."""

    name: str
    fields: list[Field] = field(default_factory=list)
    doc: str = ""


def _identifier(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)


def _comment(text: str, indent: str) -> list[str]:
    width = LINE - len(indent) - 2
    lines: list[str] = []
    for paragraph in text.strip().splitlines():
        wrapped = textwrap.wrap(paragraph, width, break_long_words=False,
                                break_on_hyphens=False) or [""]
        lines.extend(f"{indent}# {line}".rstrip() for line in wrapped)
    return lines


def _docstring(text: str, indent: str) -> list[str]:
    text = text.strip().replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    width = LINE - len(indent) - 3
    lines: list[str] = []
    for paragraph in text.splitlines():
        lines.extend(textwrap.wrap(paragraph, width, break_long_words=False,
                                   break_on_hyphens=False) or [""])
    if len(lines) == 1 and len(indent) + len(lines[0]) + 6 <= LINE:
        return [f'{indent}"""{lines[0]}"""']
    return [f'{indent}"""{lines[0]}', *(f"{indent}{line}".rstrip() for line in lines[1:]),
            f'{indent}"""']


def render_typeddict(definition: TypedDictDef, *, postponed: bool = True) -> str:
    """The source of one ``TypedDict`` (``total=False``; ``Required[...]`` for the required
    keys). Class syntax when every key is a Python identifier, else the functional syntax,
    whose types are quoted when ``postponed`` (the functional form evaluates them at import;
    unquoted, what they name must be defined above)."""
    out: list[str] = []
    def typed(f: Field) -> str:
        return f"Required[{f.type}]" if f.required else f.type
    if all(_identifier(f.name) for f in definition.fields):
        out.append(f"class {definition.name}(TypedDict, total=False):")
        if definition.doc:
            out.extend(_docstring(definition.doc, "    "))
        for f in definition.fields:
            if f.doc:
                out.extend(_comment(f.doc, "    "))
            out.append(f"    {f.name}: {typed(f)}")
        if not definition.doc and not definition.fields:
            out.append("    pass")
        return "\n".join(out) + "\n"
    if definition.doc:
        out.extend(_comment(definition.doc, ""))
    out.append(f"{definition.name} = TypedDict(")
    out.append(f'    "{definition.name}",')
    out.append("    {")
    for f in definition.fields:
        if f.doc:
            out.extend(_comment(f.doc, "        "))
        value = f'"{typed(f)}"' if postponed else typed(f)
        out.append(f'        "{f.name}": {value},')
    out.append("    },")
    out.append("    total=False,")
    out.append(")")
    return "\n".join(out) + "\n"


def render_module(doc: str, imports: Iterable[str], definitions: Sequence[TypedDictDef],
                  exports: Sequence[str] | None = None, *, postponed: bool = True) -> str:
    """A module: its docstring, ``from __future__ import annotations`` (when ``postponed``:
    else each definition must come after what it names, see :func:`render_typeddict`),
    ``imports`` (lines, written as given, in order), ``__all__`` (``exports``, default every
    definition, sorted) and the definitions in order."""
    names = sorted(exports if exports is not None else [d.name for d in definitions])
    parts = ["\n".join(_docstring(doc, "")), ""]
    if postponed:
        parts += ["from __future__ import annotations", ""]
    parts.extend(imports)
    parts.append("")
    if len(names) <= 1 or len(", ".join(f'"{n}"' for n in names)) + 12 <= LINE:
        parts.append(f"__all__ = [{', '.join(repr(n).replace(chr(39), chr(34)) for n in names)}]")
    else:
        parts.append("__all__ = [")
        parts.extend(f'    "{n}",' for n in names)
        parts.append("]")
    for definition in definitions:
        parts.extend(["", "", render_typeddict(definition, postponed=postponed).rstrip("\n")])
    return "\n".join(parts) + "\n"


# -- CRD schemas ---------------------------------------------------------------------------------


def _pascal(name: str) -> str:
    words = [w for w in re.split(r"[^0-9A-Za-z]+", name) if w]
    result = "".join(w[:1].upper() + w[1:] for w in words)
    if not result or not result[0].isalpha():
        result = "X" + result
    return result


def _singular(name: str) -> str:
    """``conditions`` -> ``condition``, ``policies`` -> ``policy``, ``addresses`` ->
    ``address``; a name not ending in ``s`` gets ``Item``."""
    if name.endswith("ies") and len(name) > 3:
        return name[:-3] + "y"
    if name.endswith(("sses", "xes", "ches", "shes")):
        return name[:-2]
    if name.endswith("s") and not name.endswith("ss") and len(name) > 1:
        return name[:-1]
    return name + "Item"


def _literal(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return repr(value)
    return ""  # floats, objects: not expressible as Literal


class _Converter:
    """Turns one version's schema into definitions (nested objects first seen, first
    written after their parent)."""

    def __init__(self, taken: set[str]) -> None:
        self.definitions: list[TypedDictDef] = []
        self.taken = taken
        self.uses: set[str] = set()

    def name(self, wanted: str) -> str:
        name, n = wanted, 2
        while name in self.taken:
            name, n = f"{wanted}{n}", n + 1
        self.taken.add(name)
        return name

    def object(self, name: str, schema: dict[str, Any], *, root: bool = False) -> str:
        definition = TypedDictDef(self.name(name), doc=str(schema.get("description") or ""))
        self.definitions.append(definition)
        required = set(schema.get("required") or ())
        props = {k: v if isinstance(v, dict) else {}
                 for k, v in (schema.get("properties") or {}).items()}
        if root:  # the object's envelope, whatever the schema says of it
            self.uses.add("ObjectMeta")
            definition.fields.extend([Field("apiVersion", "str", "apiVersion" in required),
                                      Field("kind", "str", "kind" in required),
                                      Field("metadata", "ObjectMeta", "metadata" in required)])
            props = {k: v for k, v in props.items() if k not in ("apiVersion", "kind",
                                                                    "metadata")}
        for prop, sub in props.items():
            definition.fields.append(Field(prop, self.type(definition.name, prop, sub),
                                           prop in required, str(sub.get("description") or "")))
        return definition.name

    def type(self, parent: str, prop: str, schema: dict[str, Any]) -> str:
        """The type of ``schema``, the property ``prop`` of the object ``parent`` (nested
        objects are named ``parent`` + ``prop``)."""
        result = self._type(parent, prop, schema)
        if schema.get("nullable") and result != "Any":
            result += " | None"
        return result

    def _type(self, parent: str, prop: str, schema: dict[str, Any]) -> str:
        if schema.get("x-kubernetes-int-or-string"):
            return "int | str"
        kind = schema.get("type")
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields") or schema.get(
            "x-kubernetes-embedded-resource")
        if isinstance(props, dict) and props and kind in (None, "object"):
            return self.object(parent + _pascal(prop), schema)
        if isinstance(extra, dict) and kind in (None, "object"):
            return f"dict[str, {self.type(parent, prop + 'Value', extra)}]"
        if preserve and kind is None:  # any JSON value
            self.uses.add("Any")
            return "Any"
        if kind == "object" or extra is True:
            self.uses.add("Any")
            return "dict[str, Any]"
        if kind == "array":
            items = schema.get("items")
            if not isinstance(items, dict):
                self.uses.add("Any")
                return "list[Any]"
            return f"list[{self.type(parent, _singular(prop), items)}]"
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            values = [_literal(v) for v in enum]
            if all(values):
                self.uses.add("Literal")
                return f"Literal[{', '.join(values)}]"
        scalar = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}
        if isinstance(kind, str) and kind in scalar:
            return scalar[kind]
        self.uses.add("Any")
        return "Any"


def _crds(documents: Iterable[Any]) -> list[dict[str, Any]]:
    crds = []
    for doc in documents:
        if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
            crds.append(doc)
        elif isinstance(doc, dict) and doc.get("kind") == "List":
            crds.extend(_crds(doc.get("items") or []))
    return crds


def generate_crd_module(documents: Iterable[Any], *, version: str | None = None,
                        source: str = "") -> str:
    """The Python module of the ``TypedDict`` definitions of every CRD in ``documents``
    (decoded YAML documents; other kinds are skipped).

    Args:
        version: only this version (its names get no version prefix); default every
            served version.
        source: named in the module's docstring (the CRD file).

    Raises:
        GenerateError: no CRD, no served version (or not ``version``), or a version without
            a schema.
    """
    crds = _crds(documents)
    if not crds:
        raise GenerateError("no CustomResourceDefinition found")
    definitions: list[TypedDictDef] = []
    exports: list[str] = []
    uses: set[str] = set()
    taken: set[str] = {"Any", "ListMeta", "Literal", "ObjectMeta", "Required", "TYPE_CHECKING",
                       "TypedDict"}  # the names the module imports
    described: list[str] = []
    for crd in crds:
        spec = crd.get("spec") or {}
        crd_name = (crd.get("metadata") or {}).get("name", "?")
        kind = (spec.get("names") or {}).get("kind")
        if not isinstance(kind, str) or not kind:
            raise GenerateError(f"CRD {crd_name}: spec.names.kind is missing")
        versions = [v for v in spec.get("versions") or [] if isinstance(v, dict)
                    and (v.get("name") == version if version else v.get("served", True))]
        if not versions:
            raise GenerateError(f"CRD {crd_name}: no served version"
                                + (f" named {version!r}" if version else ""))
        for v in versions:
            schema = ((v.get("schema") or spec.get("validation") or {})
                      .get("openAPIV3Schema"))
            if not isinstance(schema, dict):
                raise GenerateError(f"CRD {crd_name} version {v.get('name')}: no "
                                    "openAPIV3Schema")
            prefix = _pascal(str(v["name"])) if len(versions) > 1 else ""
            api_version = f"{spec.get('group')}/{v['name']}"
            converter = _Converter(taken)
            root_schema = dict(schema)
            if not root_schema.get("description"):
                root_schema["description"] = f"{kind} ({api_version})."
            root = converter.object(prefix + kind, root_schema, root=True)
            list_name = converter.name(f"{prefix}{kind}List")
            converter.uses.add("ListMeta")
            definitions.extend(converter.definitions)
            definitions.append(TypedDictDef(list_name, [
                Field("apiVersion", "str"), Field("kind", "str"),
                Field("metadata", "ListMeta"), Field("items", f"list[{root}]", True)],
                f"A list of {kind} ({api_version})."))
            exports.extend([root, list_name])
            uses |= converter.uses
            described.append(f"{kind} ({api_version})")
    needs_required = any(f.required for d in definitions for f in d.fields)
    typing_names = sorted({"Any", "Literal"} & uses | {"TypedDict"}
                          | ({"TYPE_CHECKING"} if needs_required else set()),
                          key=lambda name: (not name.isupper(), name.lower()))  # isort's order
    imports = [f"from typing import {', '.join(typing_names)}", ""]
    meta = sorted({"ObjectMeta", "ListMeta"} & uses)
    imports.append(f"from informers.types.meta_v1 import {', '.join(meta)}")
    if needs_required:  # typing.Required is Python 3.11+; type checkers bring typing_extensions
        imports += ["", "if TYPE_CHECKING:", "    from typing_extensions import Required"]
    doc = (f"TypedDicts of {', '.join(described)}.\n\nGenerated by informers.types.generate"
           + (f" from {source}" if source else "") + ": do not edit.")
    return render_module(doc, imports, definitions, [d.name for d in definitions])


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m informers.types.generate CRD_FILE [--version V] [-o OUT]``."""
    from informers.yaml_loader import YAMLLoadError, load_all_yaml

    parser = argparse.ArgumentParser(
        prog="python -m informers.types.generate",
        description="Write Python TypedDicts for the schema of each served version of the "
                    "CustomResourceDefinitions in a YAML or JSON file.")
    parser.add_argument("crd", help="the CRD file ('-': standard input)")
    parser.add_argument("--version", help="only this version, with unprefixed names")
    parser.add_argument("-o", "--output", help="write here instead of standard output")
    args = parser.parse_args(argv)
    try:
        text = sys.stdin.read() if args.crd == "-" else Path(args.crd).read_text()
        documents = load_all_yaml(text, args.crd)
        module = generate_crd_module(documents, version=args.version,
                                     source=Path(args.crd).name if args.crd != "-" else "")
    except (OSError, YAMLLoadError, GenerateError) as err:
        print(f"informers.types.generate: {args.crd}: {err}", file=sys.stderr)
        return 1
    if args.output:
        Path(args.output).write_text(module)
    else:
        sys.stdout.write(module)
    return 0


if __name__ == "__main__":  # pragma: no cover - the command line
    sys.exit(main())
