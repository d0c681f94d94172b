"""Tests of the Makefile's set-up: ``make run`` says what it does while it installs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# A stand-in for the interpreter: "-m venv DIR" creates DIR/bin/python (this same script);
# everything else is recorded in calls.log, so the recipe runs without installing anything.
FAKE_PYTHON = """#!/bin/sh
here=$(cd "$(dirname "$0")" && pwd)
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
    mkdir -p "$3/bin" && cp "$0" "$3/bin/python" && exit 0
fi
echo "python $*" >> "$PWD/calls.log"
"""


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_run_says_what_it_does_on_first_use(tmp_path):
    for name in ("Makefile", "setup.cfg", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    fake = tmp_path / "fake-python"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    result = subprocess.run(["make", "--no-print-directory", "run", f"PYTHON={fake}",
                             "ARGS=--duration 1s"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "make: setting up .venv (first use, or setup.cfg changed; takes a minute or two)",
        f"make: creating the virtual environment .venv with {fake}",
        "make: upgrading pip in .venv",
        "make: installing kube-informers and its extras: pip install -e '.[test,fast,metrics]'",
        "make: .venv is ready",
        "make: running endpoint-controller --duration 1s (Ctrl-C stops it)",
    ]
    assert (tmp_path / "calls.log").read_text().splitlines() == [
        "python -m pip install --quiet --upgrade pip",
        "python -m pip install --quiet -e .[test,fast,metrics]",
        "python -m controllers.endpoint --duration 1s",
    ]
    # Set up once: the second run only runs.
    again = subprocess.run(["make", "--no-print-directory", "run", f"PYTHON={fake}"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert again.stdout.splitlines() == ["make: running endpoint-controller (Ctrl-C stops it)"]
