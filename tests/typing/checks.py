"""What type checkers infer of the typed API: mypy --strict and pyright check this file
(tests/test_typing.py); it is never run.

``assert_type`` fails the check when the inferred type differs; a ``# type: ignore[code]``
line must raise that error (mypy's ``warn_unused_ignores``, on under ``--strict``, reports
an ignore that is not needed), so the errors a typed object must catch are pinned too.
"""

from __future__ import annotations

from typing import Any, Literal

from gadget_types import Gadget, GadgetList, GadgetSpecPolicy
from typing_extensions import assert_type

from informers.client import Client
from informers.controller import Controller, ControllerBuilder, EnqueueRequestForObject, Request
from informers.factory import GenericInformer, SharedInformerFactory
from informers.handlers import ResourceEventHandlerFuncs
from informers.indexer import Indexer
from informers.listers import Lister, NamespaceLister
from informers.manager import Manager
from informers.resources import Resource, lookup
from informers.shared_informer import SharedIndexInformer
from informers.types import Container, Deployment, ObjectMeta, Pod, PodList
from informers.types.apps_v1 import DeploymentSpec
from informers.types.meta_v1 import OwnerReference

GADGETS = Resource("example.com", "v1", "gadgets", "Gadget", namespaced=True)


def typed_listers(factory: SharedInformerFactory) -> None:
    informer = factory.informer_for("pods", object_type=Pod)
    assert_type(informer, SharedIndexInformer[Pod])
    assert_type(informer.get_indexer(), Indexer[Pod])
    lister = Lister(informer.get_indexer(), lookup("pods"))
    assert_type(lister, Lister[Pod])
    pod = lister.pods("default").get("web-0")
    assert_type(pod, Pod)
    assert_type(pod["spec"]["containers"], list[Container])
    assert_type(pod["spec"]["containers"][0]["image"], str)
    assert_type(pod["metadata"], ObjectMeta)
    assert_type(pod["metadata"]["ownerReferences"], list[OwnerReference])
    assert_type(lister.list(), list[Pod])
    assert_type(lister.by_namespace("default"), NamespaceLister[Pod])
    pod["spec"]["containerz"]  # type: ignore[typeddict-item]
    pod["spec"]["containers"][0]["image"] + 1  # type: ignore[operator]

    generic = factory.for_resource("apps", "v1", "deployments", object_type=Deployment)
    assert_type(generic, GenericInformer[Deployment])
    deployment = generic.lister().get("default/web")
    assert_type(deployment["spec"], DeploymentSpec)
    assert_type(deployment["spec"]["replicas"], int)
    assert_type(Lister[Pod](informer.get_indexer(), lookup("pods")).get("x"), Pod)


def untyped_listers_are_what_they_were(factory: SharedInformerFactory) -> None:
    pods = factory.core().v1().pods()
    assert_type(pods, GenericInformer)
    assert_type(pods.lister().get("default/web-0"), dict[str, Any])
    assert_type(pods.lister().get("default/web-0")["spec"]["anything"], Any)
    assert_type(factory.informer_for("pods"), SharedIndexInformer[dict[str, Any]])


def handlers(informer: SharedIndexInformer[Pod]) -> None:
    def on_add(pod: Pod) -> None:
        print(pod["spec"]["nodeName"])

    def on_update(old: Pod, new: Pod) -> None:
        print(old["status"]["phase"], new["status"]["phase"])

    informer.add_event_handler(ResourceEventHandlerFuncs(on_add=on_add, on_update=on_update))

    class Handler:
        def on_add(self, obj: Pod, is_in_initial_list: bool) -> None: ...

        def on_update(self, old: Pod, new: Pod) -> None: ...

        def on_delete(self, obj: Any) -> None: ...

    informer.add_event_handler(Handler())

    class DeploymentHandler:
        def on_add(self, obj: Deployment, is_in_initial_list: bool) -> None: ...

        def on_update(self, old: Deployment, new: Deployment) -> None: ...

        def on_delete(self, obj: Any) -> None: ...

    informer.add_event_handler(DeploymentHandler())  # type: ignore[arg-type]

    controller = Controller("pods", lambda key: None)
    controller.watch(informer, Handler())  # a typed handler on a typed informer
    controller.watch(informer, EnqueueRequestForObject)


def builder(manager: Manager) -> None:
    built = (ControllerBuilder(manager).for_(GADGETS, object_type=Gadget)
             .owns("deployments").with_options(workers=2))
    assert_type(built, ControllerBuilder[Gadget])
    listers = built.listers

    def reconcile(request: Request) -> None:
        gadget = listers.get(request)
        assert_type(gadget, Gadget | None)
        if gadget is None:
            return
        assert_type(gadget["spec"]["size"], int)
        assert_type(gadget["spec"]["mode"], Literal["Fast", "Slow"])
        assert_type(gadget["spec"]["port"], int | str)
        assert_type(gadget["spec"]["limits"]["cpu"]["max"], int)
        assert_type(gadget["spec"]["anything"], Any)
        assert_type(gadget["spec"]["policies"], list[GadgetSpecPolicy])
        assert_type(gadget["spec"]["policies"][0]["x-weight"], int | None)
        assert_type(gadget["status"]["conditions"][0]["status"],
                    Literal["True", "False", "Unknown"])
        owned = listers.get(request, "deployments")
        assert_type(owned, dict[str, Any] | None)
        deployment = listers.lister("deployments", Deployment).get(request.key)
        assert_type(deployment["spec"]["replicas"], int)
        assert_type(listers.get(request, "deployments", Deployment), Deployment | None)

    built.complete(reconcile)
    assert_type(ControllerBuilder(manager).for_(GADGETS).listers.get("a/b"),
                dict[str, Any] | None)


def crd_types() -> None:
    ok: Gadget = {"apiVersion": "example.com/v1", "kind": "Gadget",
                  "metadata": {"name": "g"}, "spec": {"size": 1, "mode": "Fast", "port": "http"}}
    missing_required: Gadget = {"spec": {"mode": "Slow"}}  # type: ignore[typeddict-item]
    bad_enum: Gadget = {"spec": {"size": 1, "mode": "Medium"}}  # type: ignore[typeddict-item]
    print(ok, missing_required, bad_enum)


def client(c: Client, gadget: Gadget) -> None:
    assert_type(c.get("pods", "web-0", "default"), dict[str, Any])
    assert_type(c.get("pods", "web-0", "default", object_type=Pod), Pod)
    assert_type(c.create(gadget, object_type=Gadget), Gadget)
    assert_type(c.apply(gadget, force=True, object_type=Gadget), Gadget)
    assert_type(c.status.patch(gadget, {"status": {}}, object_type=Gadget), Gadget)
    assert_type(c.patch(GADGETS, "g", {"spec": {"size": 2}}, "default"), dict[str, Any])
    assert_type(c.list("pods", "default", object_type=PodList)["items"], list[Pod])
    assert_type(c.list(GADGETS, object_type=GadgetList)["items"][0]["spec"]["size"], int)
    assert_type(c.list("pods"), dict[str, Any])
