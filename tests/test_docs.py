"""The API documentation's source: every public name has a docstring of its own.

The site that renders these docstrings (MkDocs + mkdocstrings, ``make docs``) is built and
checked by ``tests/test_docs_site.py``. The docstring check reads the source (``ast``), not the
runtime objects: ``inspect.getdoc`` would inherit a parent class's docstring and dataclasses
invent one, and module constants and type aliases carry theirs as the string literal that
follows them, which only the source has.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from functools import cache
from pathlib import Path

import pytest

PUBLIC = (
    "informers",
    "informers.controller",
    "informers.events",
    "informers.leaderelection",
    "informers.testing",
    "informers.workqueue",
)
"""Packages whose ``__all__`` is the public API."""


# -- finding a name's own docstring in the source ----------------------------------------------


@cache
def module_ast(module_name: str) -> ast.Module:
    module = importlib.import_module(module_name)
    return ast.parse(Path(inspect.getfile(module)).read_text(), inspect.getfile(module))


def _statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """Top-level statements, including those inside ``if``/``try`` blocks (TYPE_CHECKING)."""
    out: list[ast.stmt] = []
    for stmt in body:
        out.append(stmt)
        if isinstance(stmt, ast.If):
            out += _statements(stmt.body) + _statements(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            out += _statements(stmt.body)
    return out


def _assigned_names(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, ast.Assign):
        return [t.id for t in stmt.targets if isinstance(t, ast.Name)]
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return [stmt.target.id]
    type_alias = getattr(ast, "TypeAlias", None)  # ``type X = ...`` (Python 3.12+)
    if type_alias is not None and isinstance(stmt, type_alias):
        return [stmt.name.id]
    return []


def _resolve(module_name: str, level: int, target: str | None) -> str:
    if level == 0:
        assert target is not None
        return target
    package = importlib.import_module(module_name)
    base = module_name if hasattr(package, "__path__") else module_name.rpartition(".")[0]
    for _ in range(level - 1):
        base = base.rpartition(".")[0]
    return f"{base}.{target}" if target else base


def own_docstring(module_name: str, name: str, seen: frozenset[str] = frozenset()) -> str | None:
    """The docstring of ``name`` where it is defined, following re-exports from
    ``module_name``; ``None`` when no definition is found."""
    if module_name in seen:
        return None
    body = _statements(module_ast(module_name).body)
    for i, stmt in enumerate(body):
        if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            if stmt.name == name:
                return ast.get_docstring(stmt)
        elif name in _assigned_names(stmt):
            following = body[i + 1] if i + 1 < len(body) else None
            if (isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                    and isinstance(following.value.value, str)):
                return inspect.cleandoc(following.value.value)
            return None
    for stmt in body:
        if isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                if (alias.asname or alias.name) != name:
                    continue
                source = _resolve(module_name, stmt.level, stmt.module)
                submodule = f"{source}.{alias.name}"
                try:
                    importlib.import_module(submodule)
                except ImportError:
                    return own_docstring(source, alias.name, seen | {module_name})
                return ast.get_docstring(module_ast(submodule))
    return None


def public_names() -> list[tuple[str, str]]:
    return [(package, name) for package in PUBLIC
            for name in importlib.import_module(package).__all__]


@pytest.mark.parametrize("package", PUBLIC)
def test_all_lists_names_that_exist_once(package):
    module = importlib.import_module(package)
    names = list(module.__all__)
    assert [n for n in names if not hasattr(module, n)] == []
    assert len(names) == len(set(names))


def test_every_public_name_has_a_docstring_of_its_own():
    missing = []
    for package, name in public_names():
        doc = own_docstring(package, name)
        if not doc or not doc.strip():
            missing.append(f"{package}.{name}")
    assert missing == [], "public names without a docstring: " + ", ".join(missing)


def test_the_docstring_finder_sees_what_it_must():
    # A class re-exported twice, a constant's trailing string, a lazily re-exported name,
    # a submodule, and a name without any docstring.
    assert own_docstring("informers", "Controller").startswith("A named reconcile loop")
    assert own_docstring("informers.controller", "DEFAULT_MAX_RETRIES").startswith(
        "Failed retries of a key before it is dropped")
    assert own_docstring("informers.testing", "ApiServer").startswith("An embedded kube-apiserver")
    assert own_docstring("informers", "labels") is not None
    assert own_docstring(__name__, "_statements") is not None
    assert own_docstring(__name__, "public_names") is None
