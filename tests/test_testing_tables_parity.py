"""kubectl's Table responses on both servers (the embedded one held to kube-apiserver v1.36.3's
printers): headers, cells (ages by shape), ``includeObject``."""

from __future__ import annotations

import re

from wire import call, watch_lines

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
AGE = re.compile(r"^\d+s$")


def header(table: dict) -> list:
    return [(c["name"], c["type"], c["format"], c["priority"]) for c in table["columnDefinitions"]]


def cells(table: dict) -> list:
    return [[("<age>" if isinstance(c, str) and AGE.match(c) else c) for c in row["cells"]]
            for row in table["rows"]]


def test_pod_table(any_api_server):
    s = any_api_server
    s.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "a", "image": "registry.invalid/a"},
                       {"name": "b", "image": "registry.invalid/b"}],
        "readinessGates": [{"conditionType": "example.com/ready"}]}})
    code, table = call(s, "GET", f"/api/v1/namespaces/{s.namespace}/pods", accept=TABLE)
    assert code == 200
    assert (table["kind"], table["apiVersion"]) == ("Table", "meta.k8s.io/v1")
    assert header(table) == [
        ("Name", "string", "name", 0), ("Ready", "string", "", 0), ("Status", "string", "", 0),
        ("Restarts", "string", "", 0), ("Age", "string", "", 0), ("IP", "string", "", 1),
        ("Node", "string", "", 1), ("Nominated Node", "string", "", 1),
        ("Readiness Gates", "string", "", 1)]
    assert cells(table) == [["p", "0/2", "Pending", "0", "<age>", "<none>", "<none>", "<none>",
                             "0/1"]]
    row = table["rows"][0]
    assert row["object"]["kind"] == "PartialObjectMetadata"
    assert row["object"]["metadata"]["name"] == "p"
    code, one = call(s, "GET", f"/api/v1/namespaces/{s.namespace}/pods/p", accept=TABLE,
                     query=[("includeObject", "Object")])
    assert code == 200
    assert cells(one) == cells(table)
    assert one["rows"][0]["object"]["kind"] == "Pod"
    code, none = call(s, "GET", f"/api/v1/namespaces/{s.namespace}/pods", accept=TABLE,
                      query=[("includeObject", "None")])
    assert none["rows"][0]["object"] is None


def test_tables_of_other_kinds(any_api_server):
    s = any_api_server
    ns = s.namespace
    s.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
              "data": {"a": "1", "b": "2"}})
    s.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
              "type": "Opaque", "data": {"a": "MQ=="}})  # the embedded server has no default
    s.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}, "spec": {
        "selector": {"app": "web"}, "type": "ClusterIP",  # explicit: no defaults embedded
        "ports": [{"name": "h", "port": 80, "protocol": "TCP"},
                  {"name": "d", "port": 53, "protocol": "UDP"}]}})
    s.create({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "e"}, "subsets": [
        {"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}],
         "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 81}]}]})
    s.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {
        "replicas": 2, "selector": {"matchLabels": {"app": "d"}},
        "template": {"metadata": {"labels": {"app": "d"}}, "spec": {
            "containers": [{"name": "c", "image": "registry.invalid/c"}]}}}})
    s.create({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
              "metadata": {"name": "l"}, "spec": {"holderIdentity": "me"}})

    def table(path: str) -> tuple[list, list]:
        code, got = call(s, "GET", path, accept=TABLE)
        assert code == 200, got
        return [c["name"] for c in got["columnDefinitions"]], cells(got)

    assert table(f"/api/v1/namespaces/{ns}/configmaps/c") == (
        ["Name", "Data", "Age"], [["c", 2, "<age>"]])
    assert table(f"/api/v1/namespaces/{ns}/secrets/s") == (
        ["Name", "Type", "Data", "Age"], [["s", "Opaque", 1, "<age>"]])
    names, rows = table(f"/api/v1/namespaces/{ns}/services/web")
    assert names == ["Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"]
    assert rows[0][:2] + rows[0][3:] == ["web", "ClusterIP", "<none>", "80/TCP,53/UDP",
                                         "<age>", "app=web"]
    assert table(f"/api/v1/namespaces/{ns}/endpoints/e") == (
        ["Name", "Endpoints", "Age"],
        [["e", "10.0.0.1:80,10.0.0.2:80,10.0.0.1:81 + 1 more...", "<age>"]])
    assert table(f"/apis/apps/v1/namespaces/{ns}/deployments/d") == (
        ["Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images",
         "Selector"], [["d", "0/2", 0, 0, "<age>", "c", "registry.invalid/c", "app=d"]])
    assert table(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/l") == (
        ["Name", "Holder", "Age"], [["l", "me", "<age>"]])
    assert table(f"/api/v1/namespaces/{ns}") == (["Name", "Status", "Age"],
                                                  [[ns, "Active", "<age>"]])


def test_a_watch_as_table_sends_columns_once(any_api_server):
    s = any_api_server
    for name in ("a", "b"):
        s.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                  "data": {"k": "v"}})
    events = watch_lines(s, f"/api/v1/namespaces/{s.namespace}/configmaps", 2, accept=TABLE,
                         query=[("resourceVersion", "0")])
    assert [e["type"] for e in events] == ["ADDED", "ADDED"]
    first, second = (e["object"] for e in events)
    assert (first["kind"], first["apiVersion"]) == ("Table", "meta.k8s.io/v1")
    assert [c["name"] for c in first["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert second["columnDefinitions"] is None  # NoHeaders: null, not absent
    assert sorted(cells(first) + cells(second)) == [["a", 1, "<age>"], ["b", 1, "<age>"]]
    assert first["metadata"]["resourceVersion"] == first["rows"][0]["object"]["metadata"][
        "resourceVersion"]


def test_node_and_event_tables(any_api_server):
    s = any_api_server
    node = f"{s.namespace}-n"
    s.create({"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": node, "labels": {"node-role.kubernetes.io/worker": "", "kubernetes.io/role": "x"}},
        "spec": {"unschedulable": True}})
    try:
        code, got = call(s, "GET", f"/api/v1/nodes/{node}", accept=TABLE)
        assert code == 200, got
        assert [c["name"] for c in got["columnDefinitions"]] == [
            "Name", "Status", "Roles", "Age", "Version", "Internal-IP", "External-IP",
            "OS-Image", "Kernel-Version", "Container-Runtime"]
        assert cells(got) == [[node, "Unknown,SchedulingDisabled", "worker,x", "<age>", "",
                               "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"]]
    finally:
        call(s, "DELETE", f"/api/v1/nodes/{node}")
    s.create({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
              "involvedObject": {"kind": "Pod", "name": "p", "namespace": s.namespace,
                                 "fieldPath": "spec.containers{c}"},
              "reason": "Pulled", "message": " done ", "type": "Normal",
              "source": {"component": "kubelet", "host": "n1"},
              "firstTimestamp": "2020-01-01T00:00:00Z", "lastTimestamp": "2020-01-01T00:00:00Z",
              "count": 2})
    code, got = call(s, "GET", f"/api/v1/namespaces/{s.namespace}/events/e", accept=TABLE)
    assert code == 200, got
    assert [c["name"] for c in got["columnDefinitions"]] == [
        "Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message",
        "First Seen", "Count", "Name"]
    row = got["rows"][0]["cells"]
    assert row[1:7] == ["Normal", "Pulled", "pod/p", "spec.containers{c}", "kubelet, n1", "done"]
    assert row[8:] == [2, "e"]
    assert re.fullmatch(r"\d+y\d*d?", row[0]) and row[0] == row[7]


# -- custom resources: the CRD's additionalPrinterColumns ------------------------------------

CUSTOM_COLUMNS = [
    {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
    {"name": "Size", "type": "integer", "jsonPath": ".spec.size", "description": "how big"},
    {"name": "Ready", "type": "boolean", "jsonPath": ".status.ready", "priority": 1},
    {"name": "Tags", "type": "string", "jsonPath": ".spec.tags"},
    {"name": "First", "type": "string", "jsonPath": ".spec.tags[0]"},
    {"name": "Free", "type": "string", "jsonPath": ".spec.free"},
    {"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio", "format": "float"},
    {"name": "Missing", "type": "string", "jsonPath": ".spec.nothing"},
    {"name": "Created", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def test_custom_resource_printer_columns(any_api_server):
    from test_testing_crds import SCHEMA, crd_body, install, new_group, ok, uninstall

    s = any_api_server
    group = new_group()
    schema = {**SCHEMA, "properties": {**SCHEMA["properties"], "spec": {
        **SCHEMA["properties"]["spec"], "properties": {
            **SCHEMA["properties"]["spec"]["properties"], "ratio": {"type": "number"}}}}}
    crd = crd_body(group, schema=schema, subresources={"status": {}},
                   additionalPrinterColumns=CUSTOM_COLUMNS)
    plain = crd_body(group, plural="gadgets", kind="Gadget")
    plain["spec"]["names"]["shortNames"] = ["gd"]
    install(s, crd)
    install(s, plain)
    try:
        where = f"/apis/{group}/v1/namespaces/{s.namespace}"
        made = ok(s, "POST", f"{where}/widgets", {
            "apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w"},
            "spec": {"size": 3, "tags": ["b", "a"], "ratio": 1.5,
                     "free": {"z": 1, "a": "<x>"}}})
        made["status"] = {"ready": True}
        ok(s, "PUT", f"{where}/widgets/w/status", made)
        code, table = call(s, "GET", f"{where}/widgets", accept=TABLE)
        assert code == 200
        assert [(c["name"], c["type"], c["format"], c["priority"], c["description"])
                for c in table["columnDefinitions"][1:]] == [
            ("Color", "string", "", 0,
             "Custom resource definition column (in JSONPath format): .spec.color"),
            ("Size", "integer", "", 0, "how big"),
            ("Ready", "boolean", "", 1,
             "Custom resource definition column (in JSONPath format): .status.ready"),
            ("Tags", "string", "", 0,
             "Custom resource definition column (in JSONPath format): .spec.tags"),
            ("First", "string", "", 0,
             "Custom resource definition column (in JSONPath format): .spec.tags[0]"),
            ("Free", "string", "", 0,
             "Custom resource definition column (in JSONPath format): .spec.free"),
            ("Ratio", "number", "float", 0,
             "Custom resource definition column (in JSONPath format): .spec.ratio"),
            ("Missing", "string", "", 0,
             "Custom resource definition column (in JSONPath format): .spec.nothing"),
            ("Created", "date", "", 0,
             "Custom resource definition column (in JSONPath format): "
             ".metadata.creationTimestamp")]
        name_column = table["columnDefinitions"][0]
        assert (name_column["name"], name_column["format"]) == ("Name", "name")
        assert name_column["description"].startswith("Name must be unique within a namespace.")
        assert cells(table) == [["w", "red", 3, True, '["b","a"]', "b",
                                 '{"a":"\\u003cx\\u003e","z":1}', 1.5, None, "<age>"]]
        assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
        # a version without columns: Name and Age
        ok(s, "POST", f"{where}/gadgets", {"apiVersion": f"{group}/v1", "kind": "Gadget",
                                           "metadata": {"name": "g"}, "spec": {"size": 1}})
        code, table = call(s, "GET", f"{where}/gadgets/g", accept=TABLE)
        assert code == 200
        assert [(c["name"], c["type"], c["format"], c["priority"])
                for c in table["columnDefinitions"]] == [
            ("Name", "string", "name", 0), ("Age", "date", "", 0)]
        assert table["columnDefinitions"][1]["description"] == (
            "CreationTimestamp is a timestamp representing the server time when this object "
            "was created. It is not guaranteed to be set in happens-before order across "
            "separate operations. Clients may not set this value. It is represented in RFC3339 "
            "form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More "
            "info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
            "api-conventions.md#metadata")
        assert cells(table) == [["g", "<age>"]]
        # a watch: one row per event, the columns on the first only
        events = watch_lines(s, f"{where}/widgets", 1, accept=TABLE)
        assert events[0]["type"] == "ADDED"
        assert cells(events[0]["object"])[0][:3] == ["w", "red", 3]
        assert len(events[0]["object"]["columnDefinitions"]) == 10
    finally:
        uninstall(s, crd["metadata"]["name"])
        uninstall(s, plain["metadata"]["name"])
