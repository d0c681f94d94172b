"""examples/08-webhook-operator, the whole operator on both servers: the Manager of
``controller.build_manager`` runs the Website controller and the webhook server, and keeps
the webhook configurations and the CRD's conversion stanza applied
(``ManagedConfiguration``); the CRD is the generated one. A v1alpha1 Website is created and
read back as v1 and the other way round, defaulting applies, a denial's message and warning
reach the client, a protected Website cannot be deleted, and the controller writes the status.
Also the demo (``main.py`` on the embedded server) and ``--webhook-only``.

Each test installs the CRD under a group of its own and scopes the admission webhooks to its
namespace (``kubernetes.io/metadata.name``); configurations and CRD are deleted in ``finally``,
while the webhook server still serves (the CRD's cleanup may need its conversion webhook).
"""

from __future__ import annotations

import base64
import importlib.util
import json
import secrets
import sys
import time
from pathlib import Path
from typing import Any

from informers.certificates import CertificateAuthority
from informers.client import Client
from informers.errors import NotFound
from informers.testing.runner import eventually, run_manager

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "08-webhook-operator"
CRDS = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition"}
DEPRECATED = '299 - "sites.example.com/v1alpha1 Website is deprecated; use sites.example.com/v1"'


def load_main() -> Any:
    spec = importlib.util.spec_from_file_location("example_08_main", EXAMPLE / "main.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # puts the example on sys.path: controller, webhooks
    return module


main = load_main()
controller = sys.modules["controller"]
webhooks = sys.modules["webhooks"]


def raw(api: Any, method: str, path: str, body: Any = None) -> tuple[int, list[str], Any]:
    """One request through the official client: status, Warning headers, decoded body."""
    method, url, headers, body, _ = api.param_serialize(
        method, path, header_params={"Content-Type": "application/json",
                                     "Accept": "application/json"},
        body=body, auth_settings=["BearerToken"])
    response = api.call_api(method, url, headers, body, _request_timeout=30)
    data = response.read()
    warnings = [v for k, v in response.getheaders().items() if k.lower() == "warning"]
    return response.status, warnings, json.loads(data)




def website(group: str, version: str, name: str, ns: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{group}/{version}", "kind": "Website",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


def established(client: Client, name: str) -> None:
    def check() -> bool:
        crd = client.get(client.resource(obj=CRDS), name)
        conditions = {c["type"]: c["status"]
                      for c in (crd.get("status") or {}).get("conditions") or []}
        assert conditions.get("Established") == "True", conditions
        return True

    eventually(check, timeout=15)


def webhooks_active(api: Any, group: str, ns: str) -> None:
    """kube-apiserver takes up new configurations and a CRD's new conversion within a
    moment: dry-run creates at v1alpha1 until the defaulting and the conversion show (the
    ``message`` of v1alpha1 survives the trip to v1 only through the conversion webhook)."""
    path = f"/apis/{group}/v1alpha1/namespaces/{ns}/websites?dryRun=All"
    deadline = time.monotonic() + 20
    while True:
        probe = website(group, "v1alpha1", f"probe-{secrets.token_hex(3)}", ns,
                        image="nginx:1.27", message="probe")
        status, _, body = raw(api, "POST", path, probe)
        if (status == 201 and webhooks.NAME_LABEL in (body["metadata"].get("labels") or {})
                and body["spec"].get("message") == "probe"):
            return
        assert time.monotonic() < deadline, f"the webhooks never took effect: {status} {body}"
        time.sleep(0.1)


def delete_all(client: Client, objects: list[dict[str, Any]]) -> None:
    for obj in objects:
        try:
            client.delete(client.resource(obj=obj), obj["metadata"]["name"])
        except NotFound:
            pass


def test_the_operator_with_its_webhooks(any_api_server, tmp_path):
    s = any_api_server
    api = s.api_client()
    client = Client(api, field_manager="website-operator-test")
    ns = s.namespace
    group = f"t{secrets.token_hex(4)}.sites.example.com"
    ca = CertificateAuthority()
    ca.issue(["127.0.0.1"]).write(str(tmp_path))
    (tmp_path / "ca.crt").write_bytes(ca.cert_pem)
    hooks = webhooks.make_server(
        group=group, host="127.0.0.1", port=0, cert_dir=str(tmp_path), shutdown_timeout=5.0,
        namespace_selector={"matchLabels": {"kubernetes.io/metadata.name": ns}})
    name = f"website-operator-{group}"
    manager = controller.build_manager(
        api, leader_election=False, webhook_server=hooks, manage_webhooks=True,
        configuration_name=name, group=group, namespace=ns)
    (crd,) = main.crds(group)
    cluster_wide = [
        {"apiVersion": "admissionregistration.k8s.io/v1",
         "kind": "ValidatingWebhookConfiguration", "metadata": {"name": name}},
        {"apiVersion": "admissionregistration.k8s.io/v1",
         "kind": "MutatingWebhookConfiguration", "metadata": {"name": name}},
        crd]
    v1 = f"/apis/{group}/v1/namespaces/{ns}/websites"
    alpha = f"/apis/{group}/v1alpha1/namespaces/{ns}/websites"
    resource = controller.websites(group)

    def reported(site: str) -> dict[str, Any]:
        """The status the controller wrote, once it says Ready."""
        def ready() -> dict[str, Any]:
            got = client.get(resource, site, ns).get("status") or {}
            assert [c["status"] for c in got.get("conditions") or []] == ["True"], got
            return got

        return eventually(ready)

    try:
        client.create(crd)
        established(client, crd["metadata"]["name"])
        with run_manager(manager):
            try:
                webhooks_active(api, group, ns)
                stored = client.get(client.resource(obj=CRDS), crd["metadata"]["name"])
                assert stored["spec"]["conversion"]["webhook"]["clientConfig"] == {
                    "url": f"{hooks.url}/convert", "caBundle": ca.ca_bundle}

                # v1alpha1 in, defaulted by the webhook (and the schema), v1 out.
                status, warnings, made = raw(api, "POST", alpha, website(
                    group, "v1alpha1", "old", ns, image="nginx:1.27"))
                assert (status, warnings) == (201, [DEPRECATED])
                assert (made["apiVersion"], made["metadata"]["labels"], made["spec"]) == (
                    f"{group}/v1alpha1", {"app.kubernetes.io/name": "old"},
                    {"image": "nginx:1.27", "replicas": 1, "message": "Welcome to old"})
                reported("old")  # (then stored with v1's defaults on both servers: this
                # branch's embedded server does not default on read yet)
                _, _, read = raw(api, "GET", f"{v1}/old")
                assert read["spec"] == {"image": "nginx:1.27", "replicas": 1, "tier": "free",
                                        "content": {"message": "Welcome to old",
                                                    "format": "html"}}

                # v1 in, v1alpha1 out, written back as v1alpha1: the v1-only fields survive.
                status, _, made = raw(api, "POST", v1, website(
                    group, "v1", "pro", ns, image="nginx:1.27", replicas=5, tier="pro",
                    content={"message": "hi", "format": "text"}))
                assert status == 201
                reported("pro")  # the controller's status write is done: no conflict below
                status, old = raw(api, "GET", f"{alpha}/pro")[::2]
                assert status == 200
                assert (old["spec"], old["metadata"]["annotations"]) == (
                    {"image": "nginx:1.27", "replicas": 5, "message": "hi"},
                    {webhooks.V1_SPEC: '{"format":"text","tier":"pro"}'})
                old["spec"]["message"] = "hello"
                status, _, _ = raw(api, "PUT", f"{alpha}/pro", old)
                assert status == 200
                _, _, read = raw(api, "GET", f"{v1}/pro")
                assert (read["spec"], read["metadata"].get("annotations")) == (
                    {"image": "nginx:1.27", "replicas": 5, "tier": "pro",
                     "content": {"message": "hello", "format": "text"}}, None)

                # A denial with its message and warning; an admission with a warning.
                status, warnings, body = raw(api, "POST", v1, website(
                    group, "v1", "edge", ns, image="nginx:latest", replicas=0))
                assert (status, body["reason"], body["message"], warnings) == (
                    403, "Forbidden",
                    f'admission webhook "validate.websites.{group}" denied the request: '
                    "spec.image nginx:latest: the :latest tag is not allowed; name a version",
                    ['299 - "spec.replicas is 0: the site serves nothing"'])
                status, warnings, _ = raw(api, "POST", v1, website(
                    group, "v1", "untagged", ns, image="nginx"))
                assert (status, warnings) == (201, [
                    '299 - "spec.image nginx has no tag: it runs whatever :latest is when a '
                    'pod starts"'])

                # A protected Website: the delete is denied (the webhook sees the oldObject).
                assert raw(api, "DELETE", f"{v1}/pro")[0] == 200
                protected = website(group, "v1", "kept", ns, image="nginx:1.27")
                protected["metadata"]["annotations"] = {webhooks.PROTECTED: "true"}
                assert raw(api, "POST", v1, protected)[0] == 201
                status, _, body = raw(api, "DELETE", f"{v1}/kept")
                assert (status, body["message"]) == (
                    403, f'admission webhook "validate.websites.{group}" denied the request: '
                         f"website kept is protected; remove the {webhooks.PROTECTED} "
                         "annotation first")

                # The controller's status, read at both versions.
                got = reported("old")
                assert (got["replicas"], got["selector"]) == (1, "app.kubernetes.io/name=old")
                _, _, read = raw(api, "GET", f"{alpha}/old")
                assert read["status"] == {"replicas": 1}
            finally:
                delete_all(client, cluster_wide)
    finally:
        delete_all(client, cluster_wide)
        api.close()


def test_the_deprecated_version_warns(any_api_server):
    """kube-apiserver warns on every request to a deprecated CRD version
    (apiextensions-apiserver ``crdHandler``: the version's ``deprecationWarning``)."""
    s = any_api_server
    api = s.api_client()
    client = Client(api, field_manager="website-operator-test")
    (crd,) = main.crds(f"t{secrets.token_hex(4)}.sites.example.com")
    group = crd["spec"]["group"]
    try:
        client.create(crd)
        established(client, crd["metadata"]["name"])
        status, warnings, _ = raw(api, "GET", f"/apis/{group}/v1alpha1/namespaces/"
                                              f"{s.namespace}/websites")
        assert (status, warnings) == (200, [DEPRECATED])
    finally:
        delete_all(client, [crd])
        api.close()


def test_the_demo_runs_on_the_embedded_server(capsys):
    assert main.main(["--duration", "0"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        'defaulting webhook, v1alpha1 Website default/demo: [{"op": "add", "path": '
        '"/metadata/labels", "value": {"app.kubernetes.io/name": "demo"}}, {"op": "add", '
        '"path": "/spec/message", "value": "Welcome to demo"}]',
        "validating webhook, Website default/edge: allowed=False, 'spec.image nginx:latest: "
        "the :latest tag is not allowed; name a version', warnings ['spec.replicas is 0: the "
        "site serves nothing']",
        "conversion webhook, v1alpha1 spec {'image': 'nginx:1.27', 'replicas': 1, 'message': "
        "'Welcome to demo'} is v1 spec {'image': 'nginx:1.27', 'replicas': 1, 'content': "
        "{'message': 'Welcome to demo'}}",
        "created Website default/demo with the schema's defaults: {'image': 'nginx:1.27', "
        "'replicas': 1, 'content': {'message': 'Welcome to demo', 'format': 'html'}, "
        "'tier': 'free'}",
        "status: 1 replica(s), selector app.kubernetes.io/name=demo, Ready=True",
    ]


def test_webhook_only_serves_the_webhooks_alone(capsys):
    assert main.main(["--webhook-only", "--port", "0", "--duration", "0"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(" on https://")[0] for line in out] == [
        "serving the webhooks", out[1]]
    assert out[1].startswith("CA bundle: ") and out[1].endswith("/ca.crt")


def test_the_conversion_round_trips_every_field_of_both_versions():
    """The converters alone (the server's HubAndSpoke calls them with copies)."""
    kind = webhooks.make_server().registrations[-1]
    assert kind.type == "conversion" and kind.crds == ("websites.sites.example.com",)
    hub = {"apiVersion": "sites.example.com/v1", "kind": "Website",
           "metadata": {"name": "a", "annotations": {"x": "y"}},
           "spec": {"image": "i", "replicas": 2, "tier": "pro",
                    "content": {"message": "m", "format": "text"}},
           "status": {"replicas": 2, "selector": "s", "conditions": []}}
    spoke = webhooks.alpha_from_hub(json.loads(json.dumps(hub)))
    assert spoke == {"apiVersion": "sites.example.com/v1", "kind": "Website",
                     "metadata": {"name": "a", "annotations": {
                         "x": "y", webhooks.V1_SPEC: '{"format":"text","tier":"pro"}'}},
                     "spec": {"image": "i", "replicas": 2, "message": "m"},
                     "status": {"replicas": 2}}
    back = webhooks.alpha_to_hub(spoke)
    assert back == {**hub, "status": {"replicas": 2}}
    plain = webhooks.alpha_from_hub({"metadata": {"name": "b"}, "spec": {
        "image": "i", "tier": "free", "content": {"message": "m", "format": "html"}}})
    assert plain == {"metadata": {"name": "b"}, "spec": {"image": "i", "message": "m"}}


def test_the_patch_of_the_defaulting_webhook_is_base64_json_patch():
    """What kube-apiserver applies: the JSON patch the server computed from the defaulter."""
    hooks = webhooks.make_server()
    handler = hooks.registrations[0].handler
    review = main.admission_review("CREATE", {
        "apiVersion": "sites.example.com/v1", "kind": "Website",
        "metadata": {"name": "a", "labels": {"team": "web"}}, "spec": {"image": "i"}})
    from informers.webhook.admission import decode_review

    response = handler.handle(decode_review(json.dumps(review).encode())).review("demo-a")
    assert json.loads(base64.b64decode(response["response"]["patch"])) == [
        {"op": "add", "path": "/metadata/labels/app.kubernetes.io~1name", "value": "a"},
        {"op": "add", "path": "/spec/content", "value": {"message": "Welcome to a"}}]

