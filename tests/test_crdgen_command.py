"""``informers-gen`` (informers.crdgen.command), run as a subprocess: the files it writes and
their names, byte-stable output, ``--check``, and bad input (an unsupported annotation, a rule
that does not compile, two storage versions) as a message naming the field and exit status 2,
with nothing written."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from informers.yaml_loader import load_all_yaml

ROOT = Path(__file__).resolve().parent.parent

API = '''
from __future__ import annotations
from typing import Annotated, Literal, TypedDict
from informers.crdgen import custom_resource, schema
from informers.crdgen.markers import Default, XValidation

@schema(XValidation("self.low <= self.high", message="low must not exceed high"))
class Spec(TypedDict):
    """The spec."""
    low: int
    high: int
    mode: Annotated[Literal["a", "b"], Default("a")]

@custom_resource(group="example.com", version="v1", storage=True)
class Knob(TypedDict):
    """A Knob."""
    spec: Spec

@custom_resource(group="example.com", version="v1beta1", kind="Knob")
class KnobBeta(TypedDict):
    spec: Spec

@custom_resource(group="other.example.com", version="v1")
class Dial(TypedDict):
    spec: dict[str, int]
'''


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    return subprocess.run([sys.executable, "-m", "informers.crdgen", *args], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=60)


def write_api(tmp_path: Path, text: str = API) -> None:
    (tmp_path / "knob_api.py").write_text(textwrap.dedent(text))


def test_crd_writes_one_file_per_kind_named_group_plural(tmp_path):
    write_api(tmp_path)
    done = run(tmp_path, "crd", "--module", "knob_api", "--out", "out")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == ["wrote out/example.com_knobs.yaml",
                                        "wrote out/other.example.com_dials.yaml"]
    (knobs,) = load_all_yaml((tmp_path / "out" / "example.com_knobs.yaml").read_text())
    assert [(v["name"], v["storage"]) for v in knobs["spec"]["versions"]] == [
        ("v1", True), ("v1beta1", False)]
    text = (tmp_path / "out" / "example.com_knobs.yaml").read_text()
    assert text.startswith("---\napiVersion: apiextensions.k8s.io/v1\n"
                           "kind: CustomResourceDefinition\nmetadata:\n"
                           "  name: knobs.example.com\nspec:\n  group: example.com\n")
    assert ("          apiVersion:\n            description: |-\n"
            "              APIVersion defines the versioned schema" in text)


def test_the_output_is_byte_stable_and_check_passes_on_it(tmp_path):
    write_api(tmp_path)
    assert run(tmp_path, "crd", "--module", "knob_api.py", "--out", "a").returncode == 0
    assert run(tmp_path, "crd", "--module", "knob_api", "--out", "b").returncode == 0
    for name in ("example.com_knobs.yaml", "other.example.com_dials.yaml"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    done = run(tmp_path, "crd", "--module", "knob_api", "--out", "a", "--check")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_check_names_the_files_that_differ_and_writes_nothing(tmp_path):
    write_api(tmp_path)
    assert run(tmp_path, "crd", "--module", "knob_api", "--out", "out").returncode == 0
    stale = tmp_path / "out" / "example.com_knobs.yaml"
    stale.write_text("old\n")
    (tmp_path / "out" / "other.example.com_dials.yaml").unlink()
    done = run(tmp_path, "crd", "--module", "knob_api", "--out", "out", "--check")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == ("out of date (run informers-gen without --check): "
                           "out/example.com_knobs.yaml, out/other.example.com_dials.yaml\n")
    assert stale.read_text() == "old\n"


def test_policy_writes_the_policy_and_binding_of_kinds_with_rules(tmp_path):
    write_api(tmp_path)
    done = run(tmp_path, "policy", "--module", "knob_api", "--out", "policy")
    assert (done.returncode, done.stdout) == (0, "wrote policy/example.com_knobs.yaml\n")
    policy, binding = load_all_yaml((tmp_path / "policy" / "example.com_knobs.yaml").read_text())
    assert policy["spec"]["validations"] == [{
        "expression": "!has(object.spec) || (object.spec.low <= object.spec.high)",
        "message": "low must not exceed high"}]
    assert binding["spec"] == {"policyName": "knobs.example.com",
                               "validationActions": ["Deny"]}


@pytest.mark.parametrize(("replace", "message"), [
    (("    high: int\n", "    high: set[int]\n"),
     "informers-gen crd: Knob.spec.high: unsupported type annotation set[int]\n"),
    (('"self.low <= self.high"', '"self.low <= "'),
     "informers-gen crd: Knob.spec: XValidation rule 'self.low <= ' does not compile: "),
    (('version="v1beta1", kind="Knob"', 'version="v1beta1", kind="Knob", storage=True'),
     "informers-gen crd: knobs.example.com: exactly one version must be the storage version "
     "(custom_resource(storage=True)), v1 and v1beta1 are: versions v1, v1beta1\n"),
])
def test_bad_input_names_the_field_and_exits_2(tmp_path, replace, message):
    """(A CEL compiler's message ends with the expression and a caret, as kube-apiserver's.)"""
    write_api(tmp_path, API.replace(*replace))
    done = run(tmp_path, "crd", "--module", "knob_api", "--out", "out")
    assert done.returncode == 2
    assert done.stderr.startswith(message), done.stderr
    assert not (tmp_path / "out").exists()


def test_a_module_that_does_not_import_is_exit_2(tmp_path):
    done = run(tmp_path, "crd", "--module", "no_such_module", "--out", "out")
    assert (done.returncode, done.stderr) == (
        2, "informers-gen crd: No module named 'no_such_module'\n")
