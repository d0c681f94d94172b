"""``informers-gen``: writes CRD, RBAC and ValidatingAdmissionPolicy YAML files.

The project's ``controller-gen``::

    informers-gen crd --module my_operator.api --out config/crd/
    informers-gen rbac --manager my_operator.main:build_manager --module my_operator.controller \\
        --role-name my-operator --out config/rbac/

``--manager module:function`` names a function that takes an API client and returns the
operator's (unstarted) Manager; it is called with an
:class:`~informers.crdgen.rbac.OfflineApiClient`, which refuses any request.
    informers-gen policy --module my_operator.api --out config/policy/

``--module`` takes a dotted module name (importable from the current directory), a ``.py``
file or a package directory; a package's submodules are read too. ``crd`` writes one file
per kind, ``<group>_<plural>.yaml`` (controller-gen's naming); ``policy`` one file per kind
with rules that apply (the policy and its binding); ``rbac`` writes ``role.yaml``: the
ClusterRole, then a Role per namespace (leader election).

Output is deterministic: keys sorted, versions by priority, rules normalized, multi-line
strings as YAML block literals; running twice writes the same bytes. ``--check`` writes
nothing and exits 1 naming each file that differs from what would be written (for CI and
for tests that committed manifests are current). Errors (an unsupported annotation, two
storage versions...) print one line naming the type and field and exit 2.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import pkgutil
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from informers.crdgen.crd import crds
from informers.crdgen.errors import GenerationError
from informers.crdgen.policy import validating_admission_policy
from informers.crdgen.rbac import OfflineApiClient, roles

__all__ = ["dump_yaml", "load_modules", "main", "render"]


class _Dumper(yaml.SafeDumper):
    """Block literals for multi-line strings and ``""`` for the empty string, as
    controller-gen (go-yaml) writes them."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else '"' if not value else None  # go-yaml writes ""
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump_yaml(documents: Sequence[Any]) -> str:
    """``documents`` as a YAML stream, each starting with ``---``, keys sorted."""
    return "".join("---\n" + yaml.dump(doc, Dumper=_Dumper, sort_keys=True,
                                       default_flow_style=False, allow_unicode=True,
                                       width=100)
                   for doc in documents)


def _import_path(path: Path) -> ModuleType:
    """Import a ``.py`` file or a package directory under its own name."""
    if path.is_dir():
        init = path / "__init__.py"
        spec = importlib.util.spec_from_file_location(
            path.name, init, submodule_search_locations=[str(path)])
    else:
        spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise GenerationError(f"{path}: not a Python module or package")
    loaded = sys.modules.get(spec.name)
    if loaded is not None and getattr(loaded, "__file__", None) == spec.origin:
        return loaded  # already imported from this file (e.g. by --manager)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def load_modules(names: Sequence[str]) -> list[ModuleType]:
    """Import each of ``names`` (dotted, a file or a package directory) and, for packages,
    every submodule, in name order."""
    found: list[ModuleType] = []
    for name in names:
        path = Path(name)
        if name.endswith(".py") or path.is_dir():
            module = _import_path(path)
        else:
            module = importlib.import_module(name)
        found.append(module)
        for info in sorted(pkgutil.walk_packages(getattr(module, "__path__", []),
                                                 module.__name__ + "."),
                           key=lambda i: i.name):
            found.append(importlib.import_module(info.name))
    return found


def _classes(modules: Sequence[ModuleType]) -> list[type]:
    seen: dict[int, type] = {}
    for module in modules:
        for _, member in sorted(vars(module).items()):
            if isinstance(member, type) and member.__module__ == module.__name__:
                seen.setdefault(id(member), member)
    return list(seen.values())


def _load_manager(ref: str) -> Any:
    module_name, _, attr = ref.partition(":")
    if not attr:
        raise GenerationError(f"--manager {ref!r}: expected module:function")
    module = load_modules([module_name])[0]
    return getattr(module, attr)(OfflineApiClient())


def render(args: argparse.Namespace) -> dict[str, str]:
    """The files (name -> text) the command ``args`` writes."""
    modules = load_modules(args.module or [])
    files: dict[str, str] = {}
    if args.what == "crd":
        for made in crds(_classes(modules)):
            spec = made["spec"]
            files[f"{spec['group']}_{spec['names']['plural']}.yaml"] = dump_yaml([made])
    elif args.what == "policy":
        for made in crds(_classes(modules)):
            docs = validating_admission_policy(made)
            if docs:
                spec = made["spec"]
                files[f"{spec['group']}_{spec['names']['plural']}.yaml"] = dump_yaml(docs)
    else:
        manager = _load_manager(args.manager) if args.manager else None
        files["role.yaml"] = dump_yaml(roles(args.role_name, manager, declared=modules))
    return files


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="informers-gen",
        description="Write CRD, RBAC and ValidatingAdmissionPolicy manifests from Python.")
    sub = parser.add_subparsers(dest="what", required=True)
    for what, text in (("crd", "CustomResourceDefinitions of the custom_resource() classes"),
                       ("rbac", "a ClusterRole (and Roles) from a Manager and @rbac markers"),
                       ("policy", "ValidatingAdmissionPolicies from the CRDs' CEL rules")):
        cmd = sub.add_parser(what, help=text)
        cmd.add_argument("--module", action="append", required=what != "rbac",
                         help="a module, .py file or package directory (repeatable)")
        cmd.add_argument("--out", required=True, type=Path, help="the output directory")
        cmd.add_argument("--check", action="store_true",
                         help="write nothing; exit 1 if a file differs from the output")
        if what == "rbac":
            cmd.add_argument("--manager", help="module:function returning a Manager")
            cmd.add_argument("--role-name", required=True, help="the roles' name")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status (0, 1 for ``--check`` differences, 2 for
    bad input)."""
    args = _parser().parse_args(argv)
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        files = render(args)
    except (GenerationError, ImportError) as err:
        print(f"informers-gen {args.what}: {err}", file=sys.stderr)
        return 2
    out: Path = args.out
    stale = []
    for name, text in sorted(files.items()):
        target = out / name
        if args.check:
            if not target.is_file() or target.read_text() != text:
                stale.append(str(target))
            continue
        out.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        print(f"wrote {target}")
    if stale:
        print("out of date (run informers-gen without --check): " + ", ".join(stale),
              file=sys.stderr)
        return 1
    return 0
