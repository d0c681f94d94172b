"""The documentation a user reads: the MkDocs site builds with warnings as errors, it documents
every root name, and the examples in the README and the docs run as written.

Runnable examples are marked in the Markdown by an HTML comment on the line before the fence
(invisible in the rendered page):

* ``<!-- test -->``: the block is a program; it runs in a fresh directory and must exit 0.
* ``<!-- test: append NAME -->``: the block is appended to the file ``NAME`` (a page that builds
  one module over several blocks, as the tutorial does); a ``yaml`` block may be appended too.
* ``<!-- test: pytest NAME -->``: the block is written to ``NAME`` and run with pytest, in the
  directory where the page's earlier blocks were written.

Every marked page gets a fresh directory; programs run in a subprocess with this checkout first
on ``PYTHONPATH``, so they import the ``informers`` under test, as a user's script would import
the installed one. The README's quick start is not marked: it is the first ``python`` block
under the ``## Quickstart`` heading, and its output is checked line by line.

Reference pages may hold ``:::`` directives for names that do not exist yet, inside an HTML
comment opened by ``<!-- client-api`` or ``<!-- pending-api``;
:func:`test_pending_directives_name_what_does_not_exist_yet` fails once such a name exists, so
the directive is uncommented then.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import informers

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"

PENDING_MARKERS = ("client-api", "pending-api")
"""Comment markers of directives waiting for their names (see the module docstring)."""

_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_DIRECTIVE = re.compile(r"^:::\s+([\w.]+)\s*$", re.MULTILINE)
_MARKER = re.compile(r"^<!--\s*test(?::\s*(append|pytest)\s+([\w.]+))?\s*-->$")


@dataclass(frozen=True)
class Example:
    """One marked code block: where it is, what to do with it and its code."""

    page: str
    line: int
    action: str  # "run", "append" or "pytest"
    filename: str
    code: str


def examples(path: Path) -> list[Example]:
    """The marked ``python`` blocks of a Markdown file, in order."""
    lines = path.read_text().splitlines()
    found: list[Example] = []
    for i, line in enumerate(lines):
        match = _MARKER.match(line.strip())
        if match is None:
            continue
        fence = i + 1
        action = match.group(1) or "run"
        # An appended file may be YAML (a manifest the page's program reads).
        fences = ("```python", "```yaml") if action == "append" else ("```python",)
        if fence >= len(lines) or lines[fence].strip() not in fences:
            raise AssertionError(f"{path.name}:{i + 1}: a test marker must be followed by a "
                                 f"```python fence on the next line")
        end = next(j for j in range(fence + 1, len(lines)) if lines[j].strip() == "```")
        filename = match.group(2) or "example.py"
        found.append(Example(path.name, fence + 1, action, filename,
                             "\n".join(lines[fence + 1:end]) + "\n"))
    return found


def first_python_block_under(path: Path, heading: str) -> str:
    """The first ```python block after the line ``heading`` (and before the next ``## ``)."""
    lines = path.read_text().splitlines()
    start = lines.index(heading)
    inside: list[str] | None = None
    for line in lines[start + 1:]:
        if inside is None:
            if line.startswith("## "):
                break
            if line.strip() == "```python":
                inside = []
        elif line.strip() == "```":
            return "\n".join(inside) + "\n"
        else:
            inside.append(line)
    raise AssertionError(f"no python block under {heading!r} in {path.name}")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env["NO_MKDOCS_2_WARNING"] = "1"
    return env


def _run(args: list[str], cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=_env(), capture_output=True, text=True,
                          timeout=timeout, check=False)


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def directives(text: str) -> list[str]:
    """The ``:::`` targets of a page outside HTML comments."""
    return _DIRECTIVE.findall(_COMMENT.sub("", text))


def pending_directives(text: str) -> list[str]:
    """The ``:::`` targets inside ``<!-- client-api`` / ``<!-- pending-api`` comments."""
    out: list[str] = []
    for comment in _COMMENT.findall(text):
        if comment[4:].lstrip().startswith(PENDING_MARKERS):
            out += _DIRECTIVE.findall(comment)
    return out


def resolves(target: str) -> bool:
    """Whether a dotted name imports from this checkout: the longest importable module (whose
    file is in this checkout: an editable install elsewhere may also answer), then
    attributes."""
    parts = target.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        if not Path(getattr(obj, "__file__", None) or "/").resolve().is_relative_to(ROOT):
            return False
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


# -- the site ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (pip install 'kube-informers[docs]')")
    out = tmp_path_factory.mktemp("site")
    result = _run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                  ROOT, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return out


@pytest.mark.slow
def test_the_site_builds_strict_with_every_page(site: Path) -> None:
    for page in pages():
        relative = page.relative_to(DOCS).with_suffix("")
        html = (site / "index.html" if relative.name == "index" and relative.parent == Path()
                else site / relative.parent / "index.html" if relative.name == "index"
                else site / relative / "index.html")
        assert html.is_file(), f"{page.relative_to(ROOT)} was not rendered"
    # mkdocstrings rendered the reference from this checkout, and the changelog was included.
    informer_page = (site / "reference" / "informer" / "index.html").read_text()
    assert 'id="informers.SharedInformerFactory"' in informer_page
    assert "Unreleased" in (site / "changelog" / "index.html").read_text()


def test_every_root_name_is_documented() -> None:
    """Every name of ``informers.__all__`` has a reference entry (a ``:::`` directive of the
    name, from the root or its module) or is named in code on a page (not the changelog, which
    names removed ones too)."""
    documented: set[str] = set()
    mentioned = ""
    for page in pages():
        text = page.read_text()
        documented |= {target.rpartition(".")[2] for target in directives(text)}
        if page.name != "changelog.md":
            mentioned += _COMMENT.sub("", text)
    missing = [name for name in informers.__all__
               if name not in documented and f"`{name}" not in mentioned]
    assert missing == [], "root names missing from the docs: " + ", ".join(missing)


def test_the_reference_shows_the_package_root_as_it_is() -> None:
    """The ``from informers import (...)`` block of the reference's index lists exactly
    ``informers.__all__``."""
    text = (DOCS / "reference" / "index.md").read_text()
    block = re.sub(r"#.*", "", text[text.index("from informers import ("):])
    block = block[:block.index(")")]
    names = re.findall(r"\b\w+\b", block)[3:]  # after "from informers import"
    assert sorted(names) == sorted(informers.__all__)


def test_directives_name_what_exists() -> None:
    """A typo in a ``:::`` directive fails the strict build too; this names the page."""
    broken = [f"{page.relative_to(ROOT)}: {target}" for page in pages()
              for target in directives(page.read_text()) if not resolves(target)]
    assert broken == []


def test_pending_directives_name_what_does_not_exist_yet() -> None:
    ready = [f"{page.relative_to(ROOT)}: {target}" for page in pages()
             for target in pending_directives(page.read_text()) if resolves(target)]
    assert ready == [], "these exist now: uncomment their directives: " + "; ".join(ready)


def test_the_helpers_find_what_they_must() -> None:
    text = ("::: informers.Lister\n<!-- client-api\n::: informers.client.x\n-->\n"
            "<!-- other\n::: informers.Hidden\n-->\n")
    assert directives(text) == ["informers.Lister"]
    assert pending_directives(text) == ["informers.client.x"]
    assert resolves("informers.Lister") and resolves("informers.workqueue.RateLimitingQueue")
    assert not resolves("informers.NoSuchName") and not resolves("nosuchpackage.x")


# -- the README ------------------------------------------------------------------------------


def test_readme_is_a_first_page() -> None:
    text = README.read_text()
    assert 150 <= len(text.splitlines()) <= 250
    for needed in ("pip install kube-informers", "make run", "make test", "## Quickstart",
                   "endpoint-controller", "kubelet-pod-source", "`informers`", "`controllers`"):
        assert needed in text, needed
    assert "python -m controllers" not in text  # the console scripts, which nothing shadows


@pytest.mark.slow
def test_readme_quickstart_runs_as_written(tmp_path: Path) -> None:
    (tmp_path / "quickstart.py").write_text(first_python_block_under(README, "## Quickstart"))
    result = _run([sys.executable, "quickstart.py"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "{'pods': True}", "['web-0']", "added db-0", "added web-0", "deleted db-0",
    ]


@pytest.mark.slow
def test_readme_guide_and_its_test_pass(tmp_path: Path) -> None:
    """The operator of "Build a controller" (``greeter.py``) under the test of "Test without
    a cluster" (``test_greeter.py``), as a user would save them."""
    (tmp_path / "greeter.py").write_text(first_python_block_under(README, "## Build a controller"))
    (tmp_path / "test_greeter.py").write_text(
        first_python_block_under(README, "## Test without a cluster"))
    result = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   "test_greeter.py"], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


# -- the pages' marked examples ----------------------------------------------------------------


def test_the_tutorial_builds_example_04s_operator() -> None:
    """The tutorial's ``widget.py`` blocks, one after the other, are
    examples/04-custom-resource-controller/widget.py (the same code, tested by both)."""
    blocks = [e.code for e in examples(DOCS / "tutorial.md")
              if e.action == "append" and e.filename == "widget.py"]
    widget = (ROOT / "examples" / "04-custom-resource-controller" / "widget.py").read_text()
    assert len(blocks) == 3
    assert "\n\n".join(blocks) == widget


def test_the_async_tutorial_builds_example_09s_operator() -> None:
    """docs/async.md's ``async_widget.py`` blocks, one after the other, are
    examples/09-async-operator/async_widget.py (the same code, tested by both)."""
    blocks = [e.code for e in examples(DOCS / "async.md")
              if e.action == "append" and e.filename == "async_widget.py"]
    widget = (ROOT / "examples" / "09-async-operator" / "async_widget.py").read_text()
    assert len(blocks) == 3
    assert "\n\n".join(blocks) == widget


MARKED = [page for page in pages() if examples(page)]


def test_the_marked_pages_are_the_ones_expected() -> None:
    assert sorted(p.name for p in MARKED) == [
        "async.md", "crd-generation.md", "getting-started.md", "operator.md", "performance.md",
        "sharding.md", "testing.md", "tutorial.md", "typed-objects.md", "webhooks.md"]


@pytest.mark.slow
@pytest.mark.parametrize("page", MARKED, ids=lambda p: p.name)
def test_marked_examples_run(page: Path, tmp_path: Path) -> None:
    for example in examples(page):
        where = f"{example.page}:{example.line}"
        target = tmp_path / example.filename
        if example.action == "append":
            with target.open("a") as f:
                f.write(example.code)
            continue
        target.write_text(example.code)
        if example.action == "run":
            result = _run([sys.executable, example.filename], tmp_path)
        else:
            result = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           example.filename], tmp_path, timeout=120)
        assert result.returncode == 0, f"{where}\n{result.stdout}{result.stderr}"
