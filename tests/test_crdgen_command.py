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


HOOKS = '''
from informers.webhook import AdmissionWebhook, HubAndSpoke, Rule, WebhookServer

def make_server(crd="knobs.example.com"):
    server = WebhookServer()
    rules = [Rule(["example.com"], ["v1"], ["knobs"])]
    server.mutating("/default", lambda obj, request: None,
                    AdmissionWebhook("default.knobs.example.com", rules))
    server.conversion(HubAndSpoke("example.com", "Knob", "v1").spoke(
        "v1beta1", lambda o: o, lambda o: o), crd=crd)
    return server

def other_crd():
    return make_server("gauges.example.com")

def no_admission():
    return WebhookServer()
'''
SERVICE = ("--service", "ops/knob-webhook:8443")


def test_crd_with_a_webhook_server_gets_its_conversion_stanza_without_ca_bundle(tmp_path):
    write_api(tmp_path)
    (tmp_path / "knob_hooks.py").write_text(HOOKS)
    done = run(tmp_path, "crd", "--module", "knob_api", "--webhook-server",
               "knob_hooks:make_server", *SERVICE, "--inject-ca-from", "ops/knob-cert",
               "--out", "out")
    assert (done.returncode, done.stderr) == (0, "")
    (knobs,) = load_all_yaml((tmp_path / "out" / "example.com_knobs.yaml").read_text())
    assert (knobs["metadata"], knobs["spec"]["conversion"]) == (
        {"name": "knobs.example.com",
         "annotations": {"cert-manager.io/inject-ca-from": "ops/knob-cert"}},
        {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {
            "service": {"namespace": "ops", "name": "knob-webhook", "path": "/convert",
                        "port": 8443}}}})
    (dials,) = load_all_yaml((tmp_path / "out" / "other.example.com_dials.yaml").read_text())
    assert ("conversion" in dials["spec"], "annotations" in dials["metadata"]) == (False, False)


def test_webhook_writes_the_configurations_of_the_admission_handlers(tmp_path):
    (tmp_path / "knob_hooks.py").write_text(HOOKS)
    done = run(tmp_path, "webhook", "--webhook-server", "knob_hooks:make_server",
               "--service", "ops/knob-webhook", "--name", "knobs", "--out", "config")
    assert (done.returncode, done.stdout, done.stderr) == (
        0, "wrote config/manifests.yaml\n", "")
    (mutating,) = load_all_yaml((tmp_path / "config" / "manifests.yaml").read_text())
    assert (mutating["kind"], mutating["metadata"]) == (
        "MutatingWebhookConfiguration", {"name": "knobs"})
    assert [w["clientConfig"] for w in mutating["webhooks"]] == [
        {"service": {"namespace": "ops", "name": "knob-webhook", "path": "/default",
                     "port": 443}}]


@pytest.mark.parametrize(("args", "message"), [
    (("crd", "--module", "knob_api", "--webhook-server", "knob_hooks:other_crd", *SERVICE),
     "informers-gen crd: a conversion is registered for gauges.example.com, which no "
     "custom_resource() class defines\n"),
    (("crd", "--module", "knob_api", "--webhook-server", "knob_hooks:make_server",
      "--service", "knob-webhook"),
     "informers-gen crd: --service 'knob-webhook': expected NAMESPACE/NAME or "
     "NAMESPACE/NAME:PORT\n"),
    (("webhook", "--webhook-server", "knob_hooks:no_admission", *SERVICE, "--name", "n"),
     "informers-gen webhook: --webhook-server knob_hooks:no_admission: the server has no "
     "admission handlers\n"),
    (("webhook", "--webhook-server", "knob_hooks:missing", *SERVICE, "--name", "n"),
     "informers-gen webhook: --webhook-server 'knob_hooks:missing': knob_hooks has no "
     "function missing\n"),
    (("crd", "--module", "knob_api", "--webhook-server", "knob_hooks:make_server", *SERVICE,
      "--inject-ca-from", "knob-cert"),
     "informers-gen crd: --inject-ca-from 'knob-cert': expected NAMESPACE/CERTIFICATE\n"),
])
def test_bad_webhook_arguments_are_exit_2_and_write_nothing(tmp_path, args, message):
    write_api(tmp_path)
    (tmp_path / "knob_hooks.py").write_text(HOOKS)
    done = run(tmp_path, *args, "--out", "out")
    assert (done.returncode, done.stderr) == (2, message)
    assert not (tmp_path / "out").exists()


def test_a_webhook_server_without_a_service_is_a_usage_error(tmp_path):
    done = run(tmp_path, "webhook", "--webhook-server", "knob_hooks:make_server",
               "--name", "n", "--out", "out")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "informers-gen: error: --webhook-server needs --service")
