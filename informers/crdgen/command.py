"""``informers-gen``: writes CRD, RBAC and ValidatingAdmissionPolicy YAML files.

The project's ``controller-gen``::

    informers-gen crd --module my_operator.api --out config/crd/
    informers-gen rbac --manager my_operator.main:build_manager --module my_operator.controller \\
        --role-name my-operator --out config/rbac/

    informers-gen policy --module my_operator.api --out config/policy/
    informers-gen webhook --webhook-server my_operator.webhooks:make_server \
        --service my-operator-system/my-operator-webhook --name my-operator --out config/webhook/

``--manager module:function`` names a function that takes an API client and returns the
operator's (unstarted) Manager; it is called with an
:class:`~informers.crdgen.rbac.OfflineApiClient`, which refuses any request.
``--webhook-server module:function`` names a function that takes no arguments and returns the
operator's (unstarted) :class:`~informers.webhook.WebhookServer`: ``webhook`` writes
``manifests.yaml`` (controller-gen's name), the ``MutatingWebhookConfiguration`` and
``ValidatingWebhookConfiguration`` of its admission handlers; ``crd --webhook-server`` adds
``spec.conversion`` (``strategy: Webhook``) to each CRD one of its conversion handlers serves
(``WebhookServer.conversion(..., crd=...)``). Both point at ``--service
NAMESPACE/NAME[:PORT]`` (port 443 by default) and carry no ``caBundle``: it is filled in at
install time, by :class:`~informers.webhook.ManagedConfiguration` or by cert-manager's CA
injector, for which ``--inject-ca-from NAMESPACE/CERTIFICATE`` writes the
``cert-manager.io/inject-ca-from`` annotation (controller-gen with kubebuilder's
``config/default`` kustomization does the same).

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
from informers.webhook.configuration import (
    ClientConfig,
    ServiceReference,
    conversion_stanza,
    mutating_configuration,
    validating_configuration,
)

__all__ = ["INJECT_CA_FROM", "dump_yaml", "load_modules", "main", "render"]

INJECT_CA_FROM = "cert-manager.io/inject-ca-from"
"""The annotation cert-manager's CA injector reads (``cainjector``): the
``namespace/name`` of the Certificate whose CA goes into every ``caBundle``."""


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


def _load_function(option: str, ref: str) -> Any:
    module_name, _, attr = ref.partition(":")
    if not attr:
        raise GenerationError(f"{option} {ref!r}: expected module:function")
    module = load_modules([module_name])[0]
    function = getattr(module, attr, None)
    if not callable(function):
        raise GenerationError(f"{option} {ref!r}: {module_name} has no function {attr}")
    return function


def _load_manager(ref: str) -> Any:
    return _load_function("--manager", ref)(OfflineApiClient())


def _service(text: str | None) -> ServiceReference:
    """``NAMESPACE/NAME[:PORT]``."""
    namespace, _, rest = (text or "").partition("/")
    name, _, port = rest.partition(":")
    if not namespace or not name or (port and not port.isdigit()):
        raise GenerationError(f"--service {text!r}: expected NAMESPACE/NAME or "
                              "NAMESPACE/NAME:PORT")
    return ServiceReference(namespace, name, int(port) if port else 443)


def _annotate(obj: dict[str, Any], inject_ca_from: str | None) -> dict[str, Any]:
    if inject_ca_from:
        if inject_ca_from.count("/") != 1 or not all(inject_ca_from.split("/")):
            raise GenerationError(f"--inject-ca-from {inject_ca_from!r}: expected "
                                  "NAMESPACE/CERTIFICATE")
        obj["metadata"].setdefault("annotations", {})[INJECT_CA_FROM] = inject_ca_from
    return obj


def _webhook_server(args: argparse.Namespace) -> tuple[Any, ClientConfig] | None:
    """The server ``--webhook-server`` makes, and the client config of ``--service``."""
    if not args.webhook_server:
        return None
    server = _load_function("--webhook-server", args.webhook_server)()
    return server, ClientConfig(b"", service=_service(args.service))


def _conversions(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    found = _webhook_server(args)
    if found is None:
        return {}
    server, client = found
    return {name: conversion_stanza(reg.path, client)
            for reg in server.registrations for name in reg.crds}


def render(args: argparse.Namespace) -> dict[str, str]:
    """The files (name -> text) the command ``args`` writes."""
    modules = load_modules(getattr(args, "module", None) or [])
    files: dict[str, str] = {}
    if args.what == "crd":
        for made in crds(_classes(modules), conversions=_conversions(args)):
            if "conversion" in made["spec"]:
                _annotate(made, args.inject_ca_from)
            spec = made["spec"]
            files[f"{spec['group']}_{spec['names']['plural']}.yaml"] = dump_yaml([made])
    elif args.what == "webhook":
        found = _webhook_server(args)
        assert found is not None  # --webhook-server is required
        server, client = found
        docs = [_annotate(make(args.name, server.registrations, client), args.inject_ca_from)
                for make, type_ in ((mutating_configuration, "mutating"),
                                    (validating_configuration, "validating"))
                if any(r.type == type_ for r in server.registrations)]
        if not docs:
            raise GenerationError(f"--webhook-server {args.webhook_server}: the server has no "
                                  "admission handlers")
        files["manifests.yaml"] = dump_yaml(docs)
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
                       ("policy", "ValidatingAdmissionPolicies from the CRDs' CEL rules"),
                       ("webhook", "the webhook configurations of a WebhookServer")):
        cmd = sub.add_parser(what, help=text)
        if what != "webhook":
            cmd.add_argument("--module", action="append", required=what != "rbac",
                             help="a module, .py file or package directory (repeatable)")
        if what in ("crd", "webhook"):
            cmd.add_argument("--webhook-server", required=what == "webhook",
                             help="module:function returning the WebhookServer (crd: for the "
                                  "conversion stanzas)")
            cmd.add_argument("--service", help="NAMESPACE/NAME[:PORT] of the webhook's Service")
            cmd.add_argument("--inject-ca-from",
                             help="NAMESPACE/CERTIFICATE for cert-manager's CA injector")
        if what == "webhook":
            cmd.add_argument("--name", required=True, help="the configurations' name")
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
    parser = _parser()
    args = parser.parse_args(argv)
    if getattr(args, "webhook_server", None) and not args.service:
        parser.error("--webhook-server needs --service")
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
