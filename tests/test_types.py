"""informers.types: the built-in kinds' TypedDicts are what their generator writes, cost
nothing until used and stay plain dicts; the CRD -> TypedDict generator
(informers.types.generate) writes exactly the expected module for a CRD with every schema
construct, and says clearly why it cannot read a file.

The generated modules are also type-checked (tests/test_typing.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from informers.types.generate import GenerateError, generate_crd_module, main
from informers.yaml_loader import load_all_yaml

ROOT = Path(__file__).resolve().parent.parent
TYPING = ROOT / "tests" / "typing"
WEBSITE = ROOT / "examples" / "07-website-operator"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, check=False)


def test_builtin_modules_are_up_to_date_with_the_field_table() -> None:
    result = _run("tools/typed-objects/generate.py", "--check")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_the_check_names_a_stale_module(tmp_path: Path) -> None:
    """The up-to-date check can fail: a generator run over an edited copy of the package
    reports the file that differs (and rewrites it)."""
    copy = tmp_path / "repo"
    for part in ("tools/typed-objects", "informers"):
        (copy / part).parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(ROOT / part, copy / part)
    meta = copy / "informers" / "types" / "meta_v1.py"
    meta.write_text(meta.read_text().replace("    uid: str\n", "", 1))
    check = subprocess.run([sys.executable, "tools/typed-objects/generate.py", "--check"],
                           cwd=copy, capture_output=True, text=True, timeout=60, check=False)
    assert (check.returncode, check.stdout) == (
        1, "informers/types/meta_v1.py is out of date: run tools/typed-objects/generate.py\n")
    rewrite = subprocess.run([sys.executable, "tools/typed-objects/generate.py"], cwd=copy,
                             capture_output=True, text=True, timeout=60, check=False)
    assert rewrite.stdout == "wrote informers/types/meta_v1.py\n"
    assert meta.read_text() == (ROOT / "informers" / "types" / "meta_v1.py").read_text()


def test_the_kinds_and_their_parts_are_there() -> None:
    from informers.types import apps_v1, batch_v1, coordination_v1, core_v1, discovery_v1, meta_v1

    for module, names in [
        (meta_v1, ["ObjectMeta", "OwnerReference", "ManagedFieldsEntry", "Condition",
                   "ListMeta", "LabelSelector"]),
        (core_v1, ["Pod", "PodList", "PodSpec", "Container", "PodStatus", "Service",
                   "ServiceList", "Endpoints", "ConfigMap", "Secret", "Namespace", "Node",
                   "Event"]),
        (discovery_v1, ["EndpointSlice", "EndpointSliceList", "EndpointPort"]),
        (coordination_v1, ["Lease", "LeaseList"]),
        (apps_v1, ["Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "DeploymentList"]),
        (batch_v1, ["Job", "JobList"]),
    ]:
        for name in names:
            assert name in module.__all__, (module.__name__, name)
    assert core_v1.Pod.__annotations__.keys() == {"apiVersion", "kind", "metadata", "spec",
                                                  "status"}
    assert core_v1.Pod.__total__ is False
    assert set(meta_v1.ListMeta.__annotations__) == {
        "selfLink", "resourceVersion", "continue", "remainingItemCount", "shardInfo"}
    assert core_v1.PodList.__annotations__["items"] == list[core_v1.Pod]
    # the Go types' JSON names, embedded structs merged (Volume inlines VolumeSource)
    assert {"name", "configMap", "emptyDir", "secret"} <= core_v1.Volume.__annotations__.keys()
    # the two EndpointPorts stay apart: core/v1's in Endpoints, discovery/v1's in slices
    assert "appProtocol" in discovery_v1.EndpointPort.__annotations__
    assert discovery_v1.EndpointSlice.__annotations__["ports"] == list[discovery_v1.EndpointPort]
    assert core_v1.EndpointSubset.__annotations__["ports"] == list[core_v1.EndpointPort]


def test_objects_stay_plain_dicts() -> None:
    from informers.types import Pod

    pod = Pod(metadata={"name": "web"}, spec={"containers": [{"name": "c", "image": "i"}]})
    assert type(pod) is dict
    assert pod == {"metadata": {"name": "web"},
                   "spec": {"containers": [{"name": "c", "image": "i"}]}}


def test_importing_the_package_imports_no_submodule() -> None:
    code = textwrap.dedent("""
        import sys
        import informers.types as t
        print(sorted(m for m in sys.modules if m.startswith("informers.types.")))
        print("typing_extensions" in sys.modules)
        t.Deployment
        print(sorted(m for m in sys.modules if m.startswith("informers.types.")))
        try:
            t.NoSuchKind
        except AttributeError as err:
            print(err)
    """)
    result = _run("-c", code)
    assert result.stdout.splitlines() == [
        "[]",
        "False",
        "['informers.types.apps_v1', 'informers.types.core_v1', 'informers.types.meta_v1']",
        "module 'informers.types' has no attribute 'NoSuchKind'",
    ], result.stderr


# -- the CRD -> TypedDict generator ------------------------------------------------------------


def test_a_crd_with_every_construct_gives_the_expected_module() -> None:
    """tests/typing/crd_features.yaml has objects, arrays of objects, maps of scalars and of
    objects, int-or-string, preserve-unknown-fields (with and without a type), an embedded
    resource, enums, nullable, required, descriptions, property names that are keywords or
    not identifiers, and a version that is not served; the expected module is
    tests/typing/gadget_types.py, which tests/test_typing.py also type-checks."""
    documents = load_all_yaml((TYPING / "crd_features.yaml").read_text())
    module = generate_crd_module(documents, source="crd_features.yaml")
    assert module == (TYPING / "gadget_types.py").read_text()


def test_the_website_example_uses_its_crds_generated_types() -> None:
    documents = load_all_yaml((WEBSITE / "crd.yaml").read_text())
    expected = generate_crd_module(documents, source="crd.yaml")
    assert (WEBSITE / "website_types.py").read_text() == expected
    assert "from website_types import Website" in (WEBSITE / "website.py").read_text()


def _crd(kind: str, versions: list[dict[str, object]]) -> dict[str, object]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{kind.lower()}s.example.com"},
            "spec": {"group": "example.com", "names": {"kind": kind}, "versions": versions}}


def _version(name: str, properties: dict[str, object], served: bool = True
             ) -> dict[str, object]:
    return {"name": name, "served": served, "schema": {"openAPIV3Schema": {
        "type": "object", "properties": properties}}}


def test_several_served_versions_get_version_prefixes() -> None:
    crd = _crd("Thing", [_version("v1", {"spec": {"type": "object", "properties": {
        "a": {"type": "string"}}}}), _version("v1beta1", {"spec": {
            "type": "object", "properties": {"b": {"type": "integer"}}}})])
    module = generate_crd_module([crd])
    assert '__all__ = [\n    "V1Thing",\n    "V1ThingList",\n    "V1ThingSpec",\n' in module
    assert "class V1beta1ThingSpec(TypedDict, total=False):\n    b: int\n" in module
    only = generate_crd_module([crd], version="v1beta1")
    assert "class ThingSpec(TypedDict, total=False):\n    b: int\n" in only
    assert "V1" not in only.replace("v1beta1", "")


def test_name_clashes_between_nested_objects_get_numbers() -> None:
    """``spec.status`` would be named ``ThingSpecStatus``... and the root's ``specStatus``
    too: the second gets a number."""
    obj = {"type": "object", "properties": {"x": {"type": "string"}}}
    crd = _crd("Thing", [_version("v1", {
        "spec": {"type": "object", "properties": {"status": obj}}, "specStatus": obj})])
    module = generate_crd_module([crd])
    assert "    status: ThingSpecStatus\n" in module
    assert "    specStatus: ThingSpecStatus2\n" in module
    # nor may a nested object take the name of what the module imports
    clash = generate_crd_module([_crd("Object", [_version("v1", {"meta": obj})])])
    assert "    meta: ObjectMeta2\n" in clash
    assert "    metadata: ObjectMeta\n" in clash


@pytest.mark.parametrize(("documents", "message"), [
    ([{"kind": "ConfigMap"}], "no CustomResourceDefinition found"),
    ([_crd("Thing", [_version("v1", {}, served=False)])],
     "CRD things.example.com: no served version"),
    ([{**_crd("Thing", []), "spec": {"versions": []}}],
     "CRD things.example.com: spec.names.kind is missing"),
    ([_crd("Thing", [{"name": "v1", "served": True}])],
     "CRD things.example.com version v1: no openAPIV3Schema"),
])
def test_what_is_not_a_crd_with_a_schema_is_refused(documents: list[object],
                                                    message: str) -> None:
    with pytest.raises(GenerateError) as info:
        generate_crd_module(documents)
    assert str(info.value) == message


def test_an_unknown_version_is_named() -> None:
    with pytest.raises(GenerateError) as info:
        generate_crd_module([_crd("Thing", [_version("v1", {})])], version="v2")
    assert str(info.value) == "CRD things.example.com: no served version named 'v2'"


def test_the_command_writes_to_stdout_or_a_file(tmp_path: Path) -> None:
    result = _run("-m", "informers.types.generate", str(WEBSITE / "crd.yaml"))
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == (WEBSITE / "website_types.py").read_text()
    out = tmp_path / "types.py"
    assert main([str(WEBSITE / "crd.yaml"), "-o", str(out)]) == 0
    assert out.read_text() == result.stdout


def test_the_command_reports_bad_input_and_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: [unclosed\n")
    result = _run("-m", "informers.types.generate", str(bad))
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith(f"informers.types.generate: {bad}: ")
    empty = tmp_path / "cm.yaml"
    empty.write_text("kind: ConfigMap\n")
    result = _run("-m", "informers.types.generate", str(empty))
    assert (result.returncode, result.stderr) == (
        1, f"informers.types.generate: {empty}: no CustomResourceDefinition found\n")
    missing = _run("-m", "informers.types.generate", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 1
    assert "No such file or directory" in missing.stderr


# -- the generic components at run time ---------------------------------------------------------


def test_object_types_change_nothing_at_run_time() -> None:
    """``object_type`` arguments and subscripted classes are for type checkers: the same
    shared informer, the same cached dicts."""
    from kubernetes.client import ApiClient

    from informers.factory import SharedInformerFactory
    from informers.listers import Lister
    from informers.resources import lookup
    from informers.types import Deployment, Pod

    factory = SharedInformerFactory(ApiClient())
    typed = factory.informer_for("pods", object_type=Pod)
    assert typed is factory.informer_for("pods")
    assert factory.for_resource("", "v1", "pods", object_type=Pod).informer() is typed
    typed.get_indexer().add({"metadata": {"name": "web", "namespace": "default"}})
    lister = Lister[Pod](typed.get_indexer(), lookup("pods"))
    assert lister.pods("default").get("web") is typed.get_indexer().get_by_key("default/web")
    assert type(lister) is Lister
    generic = factory.for_resource("apps", "v1", "deployments", object_type=Deployment)
    assert generic.resource == lookup("deployments")


def test_the_builder_refuses_a_manager_without_a_factory() -> None:
    from informers.controller import ControllerBuilder
    from informers.manager import Manager

    with pytest.raises(ValueError) as info:
        ControllerBuilder(Manager())
    assert str(info.value) == ("the manager has no informer factory: create it with an "
                               "api_client or a factory")


def test_a_reconciler_factory_annotated_with_typed_listers_gets_the_listers() -> None:
    """``def make(listers: Listers[Website])`` (a postponed, subscripted annotation) is told
    apart from a reconcile as ``Listers`` is."""
    from kubernetes.client import ApiClient

    from informers.controller import ControllerBuilder, Listers, Request
    from informers.factory import SharedInformerFactory
    from informers.manager import Manager
    from informers.resources import Resource

    websites = Resource("example.com", "v1", "websites", "Website", namespaced=True)
    got: list[object] = []

    def make(given: Listers[dict[str, object]]) -> Callable[[Request], None]:
        got.append(given)
        return lambda request: None

    make.__annotations__["given"] = "Listers[Website]"  # as `from __future__` leaves it
    manager = Manager(factory=SharedInformerFactory(ApiClient()))
    builder = ControllerBuilder(manager).for_(websites)
    builder.complete(make)
    assert got == [builder.listers]
