"""informers.controllerutil: controller-runtime's controllerutil_test.go and
pkg/finalizer/finalizer_test.go, case for case (named after their ``It`` blocks), and
create_or_update / create_or_patch / Finalizers.run against both servers."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from informers.client import Client
from informers.controllerutil import (
    FinalizerError,
    FinalizeResult,
    Finalizers,
    OperationResult,
    add_finalizer,
    contains_finalizer,
    create_or_patch,
    create_or_update,
    has_controller_reference,
    has_owner_reference,
    merge_patch,
    remove_controller_reference,
    remove_finalizer,
    remove_owner_reference,
    set_controller_reference,
    set_owner_reference,
)
from informers.errors import AlreadyOwnedError, NotFound, StatusError


def dep(name: str = "foo", uid: str = "foo-uid", namespace: str | None = None,
        api_version: str = "extensions/v1beta1") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": uid}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": api_version, "kind": "Deployment", "metadata": meta}


def rs(*refs: dict[str, Any], name: str = "", namespace: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if name:
        meta["name"] = name
    if namespace:
        meta["namespace"] = namespace
    if refs:
        meta["ownerReferences"] = [dict(r) for r in refs]
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta}


def ref(api_version: str = "extensions/v1beta1", uid: str = "foo-uid", name: str = "foo",
        **flags: bool) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": "Deployment", "name": name, "uid": uid, **flags}


def refs_of(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return obj["metadata"].get("ownerReferences", [])


# -- SetOwnerReference ------------------------------------------------------------------------


def test_set_owner_reference_should_set_owner_ref_on_an_empty_list():
    r = rs()
    set_owner_reference(dep(), r)
    assert refs_of(r) == [ref()]


def test_set_owner_reference_should_set_the_block_owner_deletion_if_it_is_specified():
    r = rs()
    set_owner_reference(dep(), r, block_owner_deletion=True)
    assert refs_of(r) == [ref(blockOwnerDeletion=True)]


def test_set_owner_reference_should_not_duplicate_owner_references():
    r = rs(ref())
    set_owner_reference(dep(), r)
    assert refs_of(r) == [ref()]


def test_set_owner_reference_should_update_the_reference():
    r = rs(ref(api_version="extensions/v1alpha1", uid="foo-uid-1"))
    set_owner_reference(dep(uid="foo-uid-2"), r)
    assert refs_of(r) == [ref(uid="foo-uid-2")]


def test_should_remove_the_owner_reference():
    r = rs(ref(api_version="extensions/v1alpha1", uid="foo-uid-1"))
    d = dep(uid="foo-uid-2")
    set_owner_reference(d, r)
    assert refs_of(r) == [ref(uid="foo-uid-2")]
    remove_owner_reference(d, r)
    assert refs_of(r) == []


def test_should_remove_the_owner_reference_established_by_set_controller_reference():
    r, d = rs(), dep()
    set_controller_reference(d, r)
    assert refs_of(r) == [ref(controller=True, blockOwnerDeletion=True)]
    remove_owner_reference(d, r)
    assert refs_of(r) == []


def test_should_error_when_trying_to_remove_the_reference_that_doesnt_exist():
    r = rs()
    with pytest.raises(ValueError, match="does not have any owner references"):
        remove_owner_reference(dep(uid="foo-uid-2"), r)
    assert refs_of(r) == []


def test_should_error_when_trying_to_remove_an_owner_that_doesnt_exist():
    r = rs()
    set_owner_reference(dep(uid="foo-uid-2"), r)
    with pytest.raises(ValueError, match="does not have an owner reference for Deployment"):
        remove_owner_reference(dep(name="bar", uid="bar-uid-3"), r)
    assert len(refs_of(r)) == 1


def test_should_error_when_trying_to_remove_the_owner_when_the_owner_has_no_kind():
    r = rs()
    set_owner_reference(dep(uid="foo-uid-2"), r)
    with pytest.raises(ValueError, match="the owner has no apiVersion, kind"):
        remove_owner_reference({"metadata": {"name": "foo"}}, r)
    assert len(refs_of(r)) == 1


def test_has_controller_reference_true_for_set_controller_reference():
    r = rs()
    set_controller_reference(dep(uid="foo-uid-2"), r)
    assert has_controller_reference(r)


def test_has_controller_reference_false_for_set_owner_reference():
    r = rs()
    set_owner_reference(dep(uid="foo-uid-2"), r)
    assert not has_controller_reference(r)


def test_should_error_when_remove_controller_reference_owners_controller_is_set_to_false():
    r, d = rs(), dep(uid="foo-uid-2")
    set_owner_reference(d, r)
    with pytest.raises(ValueError, match="controller equals true"):
        remove_controller_reference(d, r)


def test_should_error_when_remove_controller_reference_passed_in_owner_is_not_the_owner():
    r = rs()
    set_controller_reference(dep(uid="foo-uid-2"), r)
    d2 = dep(name="foo-2", uid="foo-uid-42")
    set_owner_reference(d2, r)
    with pytest.raises(ValueError, match="is not the controller reference"):
        remove_controller_reference(d2, r)
    assert len(refs_of(r)) == 2


def test_should_not_error_when_remove_controller_reference_owners_controller_is_set_to_true():
    r, d = rs(), dep(uid="foo-uid-2")
    set_controller_reference(d, r)
    remove_controller_reference(d, r)
    assert refs_of(r) == []


def test_has_owner_reference():
    r, d = rs(), dep()
    assert not has_owner_reference(r, d)
    set_owner_reference(d, r)
    assert has_owner_reference(r, d)
    assert not has_owner_reference(r, dep(name="other"))


# -- SetControllerReference -------------------------------------------------------------------


def test_set_controller_reference_should_set_the_owner_reference():
    r = rs()
    set_controller_reference(dep(), r)
    assert refs_of(r) == [ref(controller=True, blockOwnerDeletion=True)]


def test_set_controller_reference_should_return_an_error_if_the_owner_has_no_kind():
    with pytest.raises(ValueError, match="the owner has no kind"):
        set_controller_reference({"apiVersion": "v1", "metadata": {"name": "foo"}}, rs())


def test_should_return_an_error_if_object_is_already_owned_by_another_controller():
    r = rs(ref(name="bar", uid="bar-uid", controller=True, blockOwnerDeletion=True),
           name="foo", namespace="default")
    with pytest.raises(AlreadyOwnedError) as info:
        set_controller_reference(dep(namespace="default"), r)
    assert str(info.value) == (
        "Object default/foo is already owned by another Deployment controller bar")
    assert info.value.owner["name"] == "bar"


def test_set_controller_reference_should_not_duplicate_existing_owner_reference():
    r = rs(ref(controller=False, blockOwnerDeletion=True), name="foo", namespace="default")
    set_controller_reference(dep(namespace="default"), r)
    assert refs_of(r) == [ref(controller=True, blockOwnerDeletion=True)]


def test_should_replace_the_owner_reference_if_its_already_present():
    r = rs(ref(api_version="extensions/v1alpha1", controller=True, blockOwnerDeletion=True),
           name="foo", namespace="default")
    set_controller_reference(dep(namespace="default"), r)
    assert refs_of(r) == [ref(controller=True, blockOwnerDeletion=True)]


def test_should_return_an_error_if_its_setting_a_cross_namespace_owner_reference():
    r = rs(name="foo", namespace="namespace1")
    with pytest.raises(ValueError, match="cross-namespace owner references are disallowed, "
                                         "owner's namespace namespace2, obj's namespace "
                                         "namespace1"):
        set_controller_reference(dep(namespace="namespace2"), r)
    assert refs_of(r) == []


def test_should_return_an_error_if_its_owner_is_namespaced_but_dependant_is_cluster_scoped():
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "foo"}}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "foo", "namespace": "default", "uid": "foo-uid"}}
    with pytest.raises(ValueError, match="cluster-scoped resource must not have a "
                                         "namespace-scoped owner, owner's namespace default"):
        set_controller_reference(pod, pv)


def test_should_not_return_any_error_if_the_existing_owner_has_a_different_version():
    r = rs(ref(api_version="extensions/v1alpha1", controller=False, blockOwnerDeletion=True),
           name="foo", namespace="default")
    set_controller_reference(dep(namespace="default"), r)
    assert refs_of(r) == [ref(controller=True, blockOwnerDeletion=True)]


def test_set_controller_reference_should_set_the_block_owner_deletion_if_specified():
    r = rs()
    set_controller_reference(dep(), r, block_owner_deletion=False)
    assert refs_of(r) == [ref(controller=True, blockOwnerDeletion=False)]


# -- Finalizers (controllerutil) --------------------------------------------------------------

FINALIZER = "fin"


def test_add_finalizer_should_add_the_finalizer_when_not_present():
    obj: dict = {"metadata": {}}
    assert add_finalizer(obj, FINALIZER) is True
    assert obj["metadata"]["finalizers"] == [FINALIZER]


def test_add_finalizer_should_not_add_the_finalizer_when_already_present():
    obj: dict = {"metadata": {"finalizers": [FINALIZER]}}
    assert add_finalizer(obj, FINALIZER) is False
    assert obj["metadata"]["finalizers"] == [FINALIZER]


def test_remove_finalizer_should_remove_finalizer_if_present():
    obj: dict = {"metadata": {"finalizers": [FINALIZER]}}
    assert remove_finalizer(obj, FINALIZER) is True
    assert obj["metadata"]["finalizers"] == []


def test_remove_finalizer_should_remove_all_equal_finalizers_if_present():
    obj: dict = {"metadata": {"finalizers": [FINALIZER, FINALIZER]}}
    assert remove_finalizer(obj, FINALIZER) is True
    assert obj["metadata"]["finalizers"] == []


def test_remove_finalizer_returns_false_and_keeps_the_list_when_absent():
    obj: dict = {"metadata": {"finalizers": ["other"]}}
    assert remove_finalizer(obj, FINALIZER) is False
    assert obj["metadata"]["finalizers"] == ["other"]


def test_contains_finalizer():
    obj: dict = {"metadata": {"finalizers": [FINALIZER]}}
    assert contains_finalizer(obj, FINALIZER)
    remove_finalizer(obj, FINALIZER)
    assert not contains_finalizer(obj, FINALIZER)


# -- pkg/finalizer (TestFinalizer) ------------------------------------------------------------

KEY = "finalizers.sigs.k8s.io/testfinalizer"
DELETED = "2026-01-01T00:00:00Z"


def pod(*finalizers: str, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"finalizers": list(finalizers)}
    if deleting:
        meta["deletionTimestamp"] = DELETED
    return {"metadata": meta}


def ok(obj: dict[str, Any]) -> None:
    return None


def test_register_successfully_registers_a_finalizer():
    Finalizers().register(KEY, ok)


def test_register_should_fail_when_the_finalizer_was_already_registered():
    f = Finalizers()
    f.register(KEY, ok)
    with pytest.raises(ValueError, match="already registered"):
        f.register(KEY, ok)


def test_finalize_adds_the_finalizer_when_not_deleting_and_absent():
    f, p = Finalizers(), pod()
    f.register(KEY, ok)
    result = f.finalize(p)
    assert (result.updated, result.errors) == (True, {})
    assert p["metadata"]["finalizers"] == [KEY]


def test_finalize_removes_the_finalizer_when_deleting_and_present():
    f, p = Finalizers(), pod(KEY, deleting=True)
    f.register(KEY, ok)
    assert f.finalize(p).updated is True
    assert p["metadata"]["finalizers"] == []


def test_finalize_not_updated_when_not_deleting_and_nothing_registered():
    p = pod()
    assert Finalizers().finalize(p) == FinalizeResult()
    assert p["metadata"]["finalizers"] == []


def test_finalize_not_updated_when_deleting_and_the_finalizer_is_absent():
    f, p = Finalizers(), pod(deleting=True)
    f.register(KEY, ok)
    assert f.finalize(p) == FinalizeResult()
    assert p["metadata"]["finalizers"] == []


def test_finalize_multiple_finalizers_when_deleting():
    f = Finalizers()
    f.register(KEY, ok)
    f.register("finalizers.sigs.k8s.io/newtestfinalizer", ok)
    p = pod(KEY, "finalizers.sigs.k8s.io/newtestfinalizer", deleting=True)
    result = f.finalize(p)
    assert (result.updated, result.status_updated) == (True, False)
    assert p["metadata"]["finalizers"] == []


def test_finalize_should_return_result_as_false_and_an_error():
    def failing(obj: dict[str, Any]) -> None:
        raise RuntimeError(f"finalizer failed for {KEY!r}")

    f, p = Finalizers(), pod(KEY, deleting=True)
    f.register(KEY, failing)
    result = f.finalize(p)
    assert (result.updated, result.status_updated) == (False, False)
    assert "finalizer failed" in str(result.errors[KEY])
    assert p["metadata"]["finalizers"] == [KEY]


def test_finalize_multiple_finalizers_with_different_results():
    names = [f"finalizers.sigs.k8s.io/testfinalizer{i}" for i in (1, 2, 3)]
    p = pod(*names, deleting=True)
    f = Finalizers()
    f.register(names[0], lambda obj: FinalizeResult(updated=True))
    result = f.finalize(p)
    assert (result.updated, result.status_updated, result.errors) == (True, False, {})
    assert p["metadata"]["finalizers"] == names[1:]

    def failing(obj: dict[str, Any]) -> None:
        raise RuntimeError("finalizer failed")

    f.register(names[1], failing)
    result = f.finalize(p)
    assert (result.updated, result.status_updated) == (False, False)
    assert str(FinalizerError(result.errors)) == (
        "finalizer 'finalizers.sigs.k8s.io/testfinalizer2' failed: finalizer failed")
    assert p["metadata"]["finalizers"] == names[1:]


def test_a_cleanup_reporting_a_status_change():
    f, p = Finalizers(), pod(KEY, deleting=True)
    f.register(KEY, lambda obj: FinalizeResult(status_updated=True))
    result = f.finalize(p)
    assert (result.updated, result.status_updated) == (True, True)


# -- merge_patch (jsonpatch.CreateMergePatch) ---------------------------------------------------


def test_merge_patch():
    before = {"a": 1, "b": {"c": 2, "d": 3}, "l": [1, 2], "gone": True}
    after = {"a": 1, "b": {"c": 2, "d": 4, "e": 5}, "l": [1], "new": "x"}
    assert merge_patch(before, after) == {"b": {"d": 4, "e": 5}, "l": [1], "gone": None,
                                          "new": "x"}
    assert merge_patch(before, before) == {}


# -- CreateOrUpdate / CreateOrPatch on both servers ---------------------------------------------


@pytest.fixture
def client(any_api_server):
    api = any_api_server.api_client()
    yield Client(api, field_manager="test-controllerutil")
    api.close()


def deploy_key(ns: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "deploy", "namespace": ns}}


def specr(obj: dict[str, Any]) -> None:
    obj["spec"] = {"selector": {"matchLabels": {"foo": "bar"}},
                   "template": {"metadata": {"labels": {"foo": "bar"}},
                                "spec": {"containers": [{"name": "busybox",
                                                         "image": "busybox"}]}}}


def scaler(replicas: int):
    def scale(obj: dict[str, Any]) -> None:
        obj["spec"]["replicas"] = replicas
    return scale


def identity(obj: dict[str, Any]) -> None:
    pass


def renamer(obj: dict[str, Any]) -> None:
    obj["metadata"]["name"] = obj["metadata"]["name"] + "-renamed"


def namespace_changer(obj: dict[str, Any]) -> None:
    obj["metadata"]["namespace"] = "changed"


def statusr(status: dict[str, Any]):
    def set_status(obj: dict[str, Any]) -> None:
        obj["status"] = dict(obj.get("status") or {}, **status)
    return set_status


OPS = [create_or_update, create_or_patch]


@pytest.mark.parametrize("op", OPS, ids=lambda f: f.__name__)
def test_creates_a_new_object_if_one_doesnt_exist(any_api_server, client, op):
    ns = any_api_server.namespace
    obj = deploy_key(ns)
    assert op(client, obj, specr) is OperationResult.CREATED
    fetched = client.get("deployments", "deploy", ns)
    assert fetched["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox"
    assert obj["metadata"]["uid"] == fetched["metadata"]["uid"]


@pytest.mark.parametrize("op", OPS, ids=lambda f: f.__name__)
def test_updates_existing_object(any_api_server, client, op):
    ns = any_api_server.namespace
    assert op(client, deploy_key(ns), specr) is OperationResult.CREATED
    obj = deploy_key(ns)
    assert op(client, obj, scaler(2)) is OperationResult.UPDATED
    fetched = client.get("deployments", "deploy", ns)
    assert fetched["spec"]["replicas"] == 2
    assert obj["metadata"]["resourceVersion"] == fetched["metadata"]["resourceVersion"]


@pytest.mark.parametrize("op", OPS, ids=lambda f: f.__name__)
def test_updates_only_changed_objects(any_api_server, client, op):
    ns = any_api_server.namespace
    op(client, deploy_key(ns), specr)
    before = client.get("deployments", "deploy", ns)["metadata"]["resourceVersion"]
    assert op(client, deploy_key(ns), identity) is OperationResult.NONE
    assert client.get("deployments", "deploy", ns)["metadata"]["resourceVersion"] == before


@pytest.mark.parametrize("op", OPS, ids=lambda f: f.__name__)
def test_errors_when_mutate_fn_changes_object_name_on_creation(any_api_server, client, op):
    ns = any_api_server.namespace

    def spec_and_rename(obj: dict[str, Any]) -> None:
        specr(obj)
        renamer(obj)

    with pytest.raises(ValueError, match="MutateFn cannot mutate object name"):
        op(client, deploy_key(ns), spec_and_rename)
    with pytest.raises(NotFound):
        client.get("deployments", "deploy", ns)


@pytest.mark.parametrize("op", OPS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("mutate", [renamer, namespace_changer], ids=lambda f: f.__name__)
def test_errors_when_mutate_fn_renames_an_object(any_api_server, client, op, mutate):
    ns = any_api_server.namespace
    op(client, deploy_key(ns), specr)
    with pytest.raises(ValueError, match="MutateFn cannot mutate object name"):
        op(client, deploy_key(ns), mutate)


@pytest.mark.parametrize("op", OPS, ids=lambda f: f.__name__)
def test_aborts_immediately_if_there_was_an_error_initially_retrieving_the_object(
        any_api_server, client, op):
    called = []
    obj = {"apiVersion": "v1", "kind": "NoSuchKind", "metadata": {"name": "x",
                                                                  "namespace": "ns"}}
    with pytest.raises(StatusError):
        op(client, obj, called.append)
    assert called == []


def test_create_or_patch_patches_only_changed_status(any_api_server, client):
    ns = any_api_server.namespace
    create_or_patch(client, deploy_key(ns), specr)
    obj = deploy_key(ns)
    result = create_or_patch(client, obj, statusr({"readyReplicas": 1, "replicas": 3}))
    assert result is OperationResult.UPDATED_STATUS_ONLY
    fetched = client.get("deployments", "deploy", ns)
    assert (fetched["status"]["readyReplicas"], fetched["status"]["replicas"]) == (1, 3)
    assert obj["metadata"]["resourceVersion"] == fetched["metadata"]["resourceVersion"]


def test_create_or_patch_patches_resource_and_status(any_api_server, client):
    ns = any_api_server.namespace
    create_or_patch(client, deploy_key(ns), specr)

    def both(obj: dict[str, Any]) -> None:
        scaler(3)(obj)
        statusr({"readyReplicas": 1, "replicas": 3})(obj)

    obj = deploy_key(ns)
    assert create_or_patch(client, obj, both) is OperationResult.UPDATED_STATUS
    fetched = client.get("deployments", "deploy", ns)
    assert fetched["spec"]["replicas"] == 3
    assert fetched["status"]["replicas"] == 3
    assert obj["metadata"]["resourceVersion"] == fetched["metadata"]["resourceVersion"]

    def conditions(o: dict[str, Any]) -> None:
        o["spec"]["replicas"] = 5
        o["status"]["conditions"] = [{"type": "Progressing", "status": "True"}]

    obj = deploy_key(ns)
    assert create_or_patch(client, obj, conditions) is OperationResult.UPDATED_STATUS
    fetched = client.get("deployments", "deploy", ns)
    assert fetched["spec"]["replicas"] == 5
    assert len(fetched["status"]["conditions"]) == 1
    assert obj["status"] == fetched["status"]


def test_create_or_update_conflicts_on_a_concurrent_write(any_api_server, client):
    ns = any_api_server.namespace
    create_or_update(client, deploy_key(ns), specr)

    def racing(obj: dict[str, Any]) -> None:
        other = copy.deepcopy(obj)
        other["spec"]["replicas"] = 7
        client.update(other)
        obj["spec"]["replicas"] = 3

    with pytest.raises(StatusError) as info:
        create_or_update(client, deploy_key(ns), racing)
    assert info.value.reason == "Conflict"
    assert client.get("deployments", "deploy", ns)["spec"]["replicas"] == 7


# -- Finalizers.run on both servers -------------------------------------------------------------


def test_finalizers_run_adds_then_cleans_up_and_removes(any_api_server, client):
    ns = any_api_server.namespace
    cleaned: list[str] = []
    f = Finalizers()
    f.register("example.com/cleanup", lambda obj: cleaned.append(obj["metadata"]["name"]))
    obj = client.create({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "fin", "namespace": ns}})
    assert f.run(client, obj) is False
    assert obj["metadata"]["finalizers"] == ["example.com/cleanup"]
    assert client.get("configmaps", "fin", ns)["metadata"]["finalizers"] == [
        "example.com/cleanup"]
    client.delete("configmaps", "fin", ns)
    marked = client.get("configmaps", "fin", ns)
    assert marked["metadata"]["deletionTimestamp"]
    assert cleaned == []
    assert f.run(client, marked) is True
    assert cleaned == ["fin"]
    with pytest.raises(NotFound):
        client.get("configmaps", "fin", ns)


def test_finalizers_run_keeps_the_finalizer_when_the_cleanup_fails(any_api_server, client):
    ns = any_api_server.namespace

    def failing(obj: dict[str, Any]) -> None:
        raise RuntimeError("bucket still in use")

    f = Finalizers()
    f.register("example.com/cleanup", failing)
    obj = client.create({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "fin2", "namespace": ns,
                                      "finalizers": ["example.com/cleanup"]}})
    client.delete("configmaps", "fin2", ns)
    obj = client.get("configmaps", "fin2", ns)
    with pytest.raises(FinalizerError, match=r"finalizer .example\.com/cleanup. failed: bucket "
                                             "still in use"):
        f.run(client, obj)
    assert client.get("configmaps", "fin2", ns)["metadata"]["finalizers"] == [
        "example.com/cleanup"]
    client.patch("configmaps", "fin2", {"metadata": {"finalizers": None}}, ns)
