"""``mypy --strict`` over every example and every Python block of the docs, and the typed API's
inferred types (tests/typing/checks.py) under mypy and pyright.

Examples are checked one directory at a time (each has its own ``main.py``; the directory is
on the path, as ``main.py`` puts it). A page's blocks are checked as the docs tests run them
(tests/test_docs_site.py): a ``<!-- test -->`` block is a program of its own, ``append NAME``
blocks make the module ``NAME``, a ``pytest NAME`` block is the file ``NAME``. The page's
other blocks continue one another, in order, in one module that starts with the names of the
page's ``append`` modules and an ``api_client`` (the free name the docs use for a
``kubernetes.client.ApiClient``). Blocks that only include a file (``--8<--``) are skipped:
the file is checked where it lives.

The library itself is checked by the project's own mypy configuration (setup.cfg); here its
modules are followed silently, so only the code a user writes is held to ``--strict``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_docs_site import README, examples, first_python_block_under

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
TYPING = ROOT / "tests" / "typing"
CACHE = ROOT / ".mypy_cache" / "strict-user-code"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

MYPY_CONFIG = """\
[mypy]
strict = True
python_version = 3.10
[mypy-informers.*]
follow_imports = silent
[mypy-controllers.*]
follow_imports = silent
[mypy-kubernetes.*]
ignore_missing_imports = True
[mypy-prometheus_client.*]
ignore_missing_imports = True
"""

PRELUDE = """\
from __future__ import annotations

from kubernetes.client import ApiClient

api_client = ApiClient()
"""
"""The start of a page's module of unmarked blocks (see the module docstring)."""

_FENCE = re.compile(r"^```python\s*$")


def _page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def unmarked_blocks(page: Path) -> list[tuple[int, str]]:
    """The ``python`` blocks of ``page`` not marked ``<!-- test ... -->``: (line, code)."""
    lines = page.read_text().splitlines()
    found: list[tuple[int, str]] = []
    for i, line in enumerate(lines):
        if not _FENCE.match(line.strip()):
            continue
        if i > 0 and lines[i - 1].strip().startswith("<!-- test"):
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        code = "\n".join(lines[i + 1:end]) + "\n"
        if not code.lstrip().startswith("--8<--"):
            found.append((i + 2, code))
    return found


README_FILES = {"quickstart.py": "## Quickstart", "greeter.py": "## Build a controller",
                "test_greeter.py": "## Test without a cluster"}
"""The README's blocks are the files a reader saves (as tests/test_docs_site.py runs them)."""


def page_modules(page: Path) -> dict[str, str]:
    """File name -> source of the modules ``page``'s blocks make (see the module
    docstring)."""
    if page.resolve() == README.resolve():
        return {name: first_python_block_under(README, heading)
                for name, heading in README_FILES.items()}
    modules: dict[str, str] = {}
    appended: list[str] = []
    for example in examples(page):
        if example.action == "append":
            if example.filename not in modules:
                appended.append(example.filename)
            modules[example.filename] = modules.get(example.filename, "") + example.code
        elif example.action == "pytest":
            modules[example.filename] = example.code
        else:
            modules[f"block_{example.line}.py"] = example.code
    blocks = unmarked_blocks(page)
    if blocks:
        imports = "".join(f"from {Path(name).stem} import *  # noqa: F403\n"
                          for name in appended)
        body = "".join(f"\n# {page.name}:{line}\n{code}" for line, code in blocks)
        modules["snippets.py"] = PRELUDE + imports + body
    return modules


def mypy(files: list[str], cwd: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``mypy --strict`` (MYPY_CONFIG) on ``files`` in ``cwd``, with ``cwd`` and this
    checkout on the path."""
    config = tmp_path / "mypy.ini"
    config.write_text(MYPY_CONFIG)
    env = {**os.environ, "MYPYPATH": os.pathsep.join([str(cwd), str(ROOT)])}
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), "--cache-dir", str(CACHE),
         "--no-error-summary", "--hide-error-context", *files],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)


def _errors(result: subprocess.CompletedProcess[str]) -> str:
    return result.stdout + result.stderr


KNOWN_FAILING: dict[str, str] = {}
"""Checks that fail on code another branch is rewriting: strict xfails, so the suite says so
once they pass (then delete the entry)."""


def _params(names: list[str]) -> list[object]:
    return [pytest.param(name, marks=pytest.mark.xfail(reason=KNOWN_FAILING[name], strict=True))
            if name in KNOWN_FAILING else name for name in names]


EXAMPLE_DIRS = sorted(p.name for p in EXAMPLES.iterdir() if re.match(r"\d\d-", p.name))


@pytest.mark.slow
@pytest.mark.parametrize("example", _params(EXAMPLE_DIRS))
def test_every_example_passes_mypy_strict(example: str, tmp_path: Path) -> None:
    directory = EXAMPLES / example
    files = sorted(p.name for p in directory.glob("*.py"))
    result = mypy(files, directory, tmp_path)
    assert result.returncode == 0, _errors(result)


DOC_PAGES = [_page_id(p) for p in PAGES if page_modules(p)]


@pytest.mark.slow
@pytest.mark.parametrize("name", _params(DOC_PAGES))
def test_every_python_block_of_the_docs_passes_mypy_strict(name: str, tmp_path: Path) -> None:
    page = ROOT / name
    work = tmp_path / "page"
    work.mkdir()
    for name, code in page_modules(page).items():
        (work / name).write_text(code)
    result = mypy(sorted(p.name for p in work.glob("*.py")), work, tmp_path)
    assert result.returncode == 0, _errors(result)


def test_the_blocks_are_found_as_the_docs_tests_find_them(tmp_path: Path) -> None:
    """A page with a program, an appended module, a pytest file, an included file and two
    unmarked blocks that continue each other."""
    page = tmp_path / "page.md"
    page.write_text("\n".join([
        "<!-- test -->", "```python", "print(1)", "```",
        "<!-- test: append lib.py -->", "```python", "X = 1", "```",
        "<!-- test: append lib.py -->", "```python", "Y = X", "```",
        "<!-- test: pytest test_lib.py -->", "```python", "def test() -> None: ...", "```",
        "```python", '--8<-- "examples/x.py"', "```",
        "```python", "a = X", "```",
        "Text.", "```python", "b = a + Y", "```", ""]))
    assert page_modules(page) == {
        "block_2.py": "print(1)\n",
        "lib.py": "X = 1\nY = X\n",
        "test_lib.py": "def test() -> None: ...\n",
        "snippets.py": PRELUDE + "from lib import *  # noqa: F403\n"
                       "\n# page.md:21\na = X\n\n# page.md:25\nb = a + Y\n",
    }


@pytest.mark.slow
def test_a_type_error_in_a_block_fails_the_check(tmp_path: Path) -> None:
    """The check can fail: a block with a type error, and an untyped def, are reported."""
    work = tmp_path / "page"
    work.mkdir()
    (work / "snippets.py").write_text(PRELUDE + "x: int = 'a'\ndef f(y): return y\n")
    result = mypy(["snippets.py"], work, tmp_path)
    assert result.returncode == 1
    assert 'snippets.py:6: error: Incompatible types in assignment (expression has type "str", ' \
        'variable has type "int")  [assignment]' in result.stdout
    assert "snippets.py:7: error: Function is missing a type annotation  [no-untyped-def]" \
        in result.stdout


@pytest.mark.slow
def test_the_typed_api_infers_the_checked_types_under_mypy(tmp_path: Path) -> None:
    result = mypy(["checks.py", "gadget_types.py"], TYPING, tmp_path)
    assert result.returncode == 0, _errors(result)


PYRIGHT_CONFIG = """\
{{"pythonVersion": "3.10", "typeCheckingMode": "strict",
  "reportTypedDictNotRequiredAccess": false, "reportUnusedExpression": false,
  "extraPaths": [{paths}]}}
"""
"""Strict pyright; the access of keys a ``total=False`` TypedDict may lack is allowed (the
built-in kinds' are all optional, so every ``pod["spec"]`` would be reported)."""


@pytest.mark.slow
@pytest.mark.parametrize(("directory", "files"), [
    (TYPING, ["checks.py", "gadget_types.py"]),
    (EXAMPLES / "07-website-operator", ["website.py", "website_types.py"]),
], ids=["checks", "07-website-operator"])
def test_the_typed_api_passes_pyright_strict(directory: Path, files: list[str],
                                             tmp_path: Path) -> None:
    if importlib.util.find_spec("pyright") is None:
        pytest.skip("pyright is not installed (pip install pyright; it needs node)")
    config = tmp_path / "pyrightconfig.json"
    config.write_text(PYRIGHT_CONFIG.format(paths=f'"{ROOT}", "{directory}"'))
    result = subprocess.run(
        [sys.executable, "-m", "pyright", "-p", str(config), "--pythonpath", sys.executable,
         *files], cwd=directory, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, _errors(result)
    assert "0 errors" in result.stdout
