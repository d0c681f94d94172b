"""Tests for informers.yaml_loader: go-yaml's alias-ratio rule, limits, and errors without content.

The limit cases are go-yaml's own (``go.yaml.in/yaml/v2`` limit_test.go ``limitTests`` and
decode_test.go ``unmarshalErrorTests``), with the same inputs; go-yaml's nesting limit is 10000
and libyaml's, used here, 1000, so the cases nested 10000 deep are rejected here (see the
module docstring).
"""

from __future__ import annotations

import time

import pytest
import yaml

from informers import yaml_loader
from informers.yaml_loader import (
    LIBYAML,
    MAX_DEPTH,
    YAMLLoadError,
    allowed_alias_ratio,
    load_all_yaml,
    load_yaml,
)


def billion_laughs(levels: int = 8) -> str:
    """A Pod whose args is an alias nested ``levels`` deep: 9**levels strings once expanded."""
    names = "abcdefghijklmnop"
    lines = ["apiVersion: v1", "kind: Pod", "metadata:", "  name: bomb", "  annotations:",
             '    l0: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        prev, cur = names[i - 1], names[i]
        lines.append(f"    l{i}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    lines += ["spec:", "  containers:", "  - name: c", "    image: busybox",
              f"    args: *{names[levels - 1]}"]
    return "\n".join(lines) + "\n"


@pytest.fixture(params=["libyaml", "pure"])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test with libyaml's parser and with PyYAML's pure-Python one."""
    if request.param == "pure":
        monkeypatch.setattr(yaml_loader, "_CParser", None)
    return str(request.param)


def test_libyaml_is_used_here():
    assert LIBYAML


# -- go-yaml's alias ratio --------------------------------------------------------------------


def test_allowed_alias_ratio():
    assert allowed_alias_ratio(1001) == 0.99
    assert allowed_alias_ratio(400_000) == 0.99
    assert allowed_alias_ratio(2_200_000) == pytest.approx(0.545)
    assert allowed_alias_ratio(4_000_000) == 0.10
    assert allowed_alias_ratio(10**12) == 0.10


def test_unmarshal_errors_excessive_aliasing(parser):
    """decode_test.go ``unmarshalErrorTests``: the nine-level billion laughs."""
    data = (
        "a: &a [00,00,00,00,00,00,00,00,00]\n"
        "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
        "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
        "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
        "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
        "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
        "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
        "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
        "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n"
    )
    with pytest.raises(YAMLLoadError) as info:
        load_yaml(data)
    assert info.value.problem == "document contains excessive aliasing"


def test_unmarshal_errors_anchor_contains_itself(parser):
    """decode_test.go: ``a: &a\\n  b: *a\\n`` -> "anchor 'a' value contains itself"."""
    with pytest.raises(YAMLLoadError) as info:
        load_yaml("a: &a\n  b: *a\n")
    assert info.value.problem == "anchor value contains itself"
    assert (info.value.line, info.value.column) == (2, 6)


def test_unmarshal_errors_unknown_anchor(parser):
    """decode_test.go: ``a: *b\\n`` -> "unknown anchor 'b' referenced"."""
    with pytest.raises(YAMLLoadError) as info:
        load_yaml("a: *b\n")
    assert info.value.problem == "unknown anchor referenced"


@pytest.mark.slow
def test_limits_1000kb_of_maps_with_100_aliases():
    """limit_test.go "1000kb of maps with 100 aliases": excessive aliasing."""
    data = "{a: &a [{a}" + ",{a}" * (1000 * 1024 // 4 - 100) + "], b: &b [*a" + ",*a" * 99 + "]}"
    with pytest.raises(YAMLLoadError) as info:
        load_yaml(data)
    assert info.value.problem == "document contains excessive aliasing"


@pytest.mark.parametrize("data", [
    "[" * (1000 * 1024),  # "1000kb of deeply nested slices"
    "x: " + "{" * (1000 * 1024),  # "1000kb of deeply nested maps"
    "- " * (1000 * 1024),  # "1000kb of deeply nested indents"
], ids=["slices", "maps", "indents"])
def test_limits_deeply_nested(data, parser):
    """limit_test.go: go-yaml "exceeded max depth of 10000"; libyaml and this module: 1000."""
    started = time.monotonic()
    with pytest.raises(YAMLLoadError) as info:
        load_yaml(data)
    assert "depth" in info.value.problem
    assert time.monotonic() - started < 3.0


def test_depth_limit_of_the_composer():
    """Collections nested exactly MAX_DEPTH deep load; one more is refused."""
    assert load_yaml("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    with pytest.raises(YAMLLoadError):
        load_yaml("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))


@pytest.mark.parametrize("kb", [1, 10, pytest.param(100, marks=pytest.mark.slow)])
def test_limits_kb_of_maps(kb):
    """limit_test.go "1kb/10kb/100kb of maps": loads."""
    data = "a: &a [{a}" + ",{a}" * (kb * 1024 // 4 - 1) + "]"
    assert len(load_yaml(data)["a"]) == kb * 1024 // 4


def test_alias_ratio_boundary_matches_go_yaml(parser):
    """1000 plain decodes, then aliases of 997 nodes each: go-yaml v2.4.3 accepts 110, not 111.

    (Checked against ``yaml.Unmarshal`` of go.yaml.in/yaml/v2 v2.4.3: 110 -> nil, 111 ->
    "yaml: document contains excessive aliasing".) Counts: document, map, key ``a``, the
    sequence and its 996 items make 1000; key ``b`` and its sequence 2 more; each ``*a`` is one
    decode plus 997 alias-driven ones; 997k / (1002 + 998k) > 0.99 from k = 111.
    """
    base = "a: &a [" + ",".join(["1"] * 996) + "]\nb: ["
    doc = load_yaml(base + ",".join(["*a"] * 110) + "]\n")
    assert len(doc["b"]) == 110 and doc["b"][0] is not doc["b"][1]
    with pytest.raises(YAMLLoadError) as info:
        load_yaml(base + ",".join(["*a"] * 111) + "]\n")
    assert info.value.problem == "document contains excessive aliasing"


def test_merge_of_a_sequence_of_aliases(parser):
    """go-yaml: ``<<: [*d, *d]`` merges the maps (the result of go-yaml v2.4.3 for this input)."""
    assert load_yaml("d: &d {x: 1}\nm:\n  <<: [*d, *d]\n") == {"d": {"x": 1}, "m": {"x": 1}}


# -- what a loaded document looks like ----------------------------------------------------------


def test_a_few_anchors_load_as_independent_copies(parser):
    doc = load_yaml(
        "defaults: &d {image: nginx, ports: [80]}\n"
        "containers:\n- <<: *d\n  name: a\n- <<: *d\n  name: b\nsame: [*d, *d]\n"
    )
    a, b = doc["containers"]
    assert a == {"image": "nginx", "ports": [80], "name": "a"}
    assert b == {"image": "nginx", "ports": [80], "name": "b"}
    assert doc["same"][0] == doc["same"][1] == doc["defaults"]
    assert doc["same"][0] is not doc["same"][1] and doc["same"][0] is not doc["defaults"]
    assert doc["same"][0]["ports"] is not doc["same"][1]["ports"]


def test_timestamps_stay_strings(parser):
    """go-yaml v2 decodes a timestamp into interface{} as its string (decode.go)."""
    assert load_yaml("a: 2001-12-14\nb: 2001-12-14t21:59:43.10-05:00\n") == {
        "a": "2001-12-14", "b": "2001-12-14t21:59:43.10-05:00"}


def test_values_as_yaml_1_1(parser):
    assert load_yaml("a: yes\nb: 010\nc: 1.5\nd: ~\ne: '1'\nf: off\n") == {
        "a": True, "b": 8, "c": 1.5, "d": None, "e": "1", "f": False}


def test_one_letter_booleans_as_go_yaml_v2(parser):
    """go-yaml v2 resolve.go: ``y``/``Y`` are true, ``n``/``N`` false (kube-apiserver answers
    "cannot unmarshal bool" for ``args: [x, y]``); quoted they stay strings."""
    assert load_yaml("[y, Y, n, N, 'y', yy, x]") == [True, True, False, False, "y", "yy", "x"]
    assert yaml.safe_load("[y, n]") == ["y", "n"]  # PyYAML's own loaders are left alone


def test_empty_and_json(parser):
    assert load_yaml("") is None
    assert load_yaml(b"---\n") is None
    assert load_yaml(b'{"a": [1, {"b": null}]}') == {"a": [1, {"b": None}]}


def test_several_documents(parser):
    with pytest.raises(YAMLLoadError) as info:
        load_yaml("a: 1\n---\nb: 2\n", source="f.yaml")
    assert str(info.value) == (
        "f.yaml: expected a single document in the stream (line 2, column 1)")
    assert load_all_yaml("a: 1\n---\nb: 2\n") == [{"a": 1}, {"b": 2}]


def test_anchors_are_per_document(parser):
    with pytest.raises(YAMLLoadError, match="unknown anchor"):
        load_all_yaml("a: &x 1\n---\nb: *x\n")


def test_a_later_anchor_of_the_same_name_wins(parser):
    assert load_yaml("a: &x 1\nb: &x 2\nc: *x\n") == {"a": 1, "b": 2, "c": 2}


# -- errors name the source and the problem, never the content ---------------------------------


SECRET = "AKIAIOSFODNN7EXAMPLEwJalrXUtnFEMIK7MDENG"


@pytest.mark.parametrize("data", [
    f"a: b: {SECRET}",
    f"x: '{SECRET}\n",
    f'x: "{SECRET}\n',
    f"a: !!python/object:{SECRET} 1",
    f"a: *{SECRET}\n",
    f"a: &{SECRET}\n  b: *{SECRET}\n",
    f"\t{SECRET}: 1\n",
    f"[{SECRET}, 2",
    f"{{{SECRET}: 1",
    f"a: \"\\q{SECRET}\"\n",
    f"a: !!int {SECRET}\n",
    f"? [{SECRET}]\n: 1\n",
    f"{SECRET}\x00\n".encode(),
    f"{SECRET}\xff\n".encode("latin-1"),
], ids=lambda d: repr(d)[:20])
def test_errors_never_quote_the_document(data, parser):
    with pytest.raises(YAMLLoadError) as info:
        load_yaml(data, source="/etc/kubernetes/manifests/creds")
    message = str(info.value)
    assert message.startswith("/etc/kubernetes/manifests/creds: ")
    assert info.value.problem
    for part in (SECRET, SECRET[:6], SECRET[-6:]):
        assert part not in message


def test_error_keeps_punctuation_and_position():
    with pytest.raises(YAMLLoadError) as info:
        load_yaml("[1, 2", source="s")
    assert str(info.value) == (
        "s: while parsing a flow sequence; did not find expected ',' or ']' (line 2, column 1)")


# -- cost ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("levels", [8, 9, 16])
def test_billion_laughs_is_refused_before_expansion(levels, parser):
    started = time.monotonic()
    with pytest.raises(YAMLLoadError) as info:
        load_yaml(billion_laughs(levels), source="bomb.yaml")
    assert time.monotonic() - started < 1.0
    assert str(info.value).startswith("bomb.yaml: document contains excessive aliasing (line ")


def test_nine_mib_document_with_libyaml_is_fast():
    data = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: big\n  annotations:\n    a: " + (
        "x" * (9 << 20)) + "\n"
    started = time.process_time()
    doc = load_yaml(data)
    assert time.process_time() - started < 0.5  # PyYAML's pure-Python parser: about 1.7 s
    assert len(doc["metadata"]["annotations"]["a"]) == 9 << 20


# -- where it is wired: the embedded server's YAML request bodies, held to kube-apiserver -------


def post_yaml(server, body: bytes) -> tuple[int, dict]:
    """POST a pod as ``application/yaml``; the status code and the decoded answer."""
    import json

    api = server.api_client()
    try:
        method, url, headers, data, _ = api.param_serialize(
            "POST", f"/api/v1/namespaces/{server.namespace}/pods",
            header_params={"Content-Type": "application/yaml", "Accept": "application/json"},
            body=body, auth_settings=["BearerToken"])
        response = api.call_api(method, url, headers, data, _request_timeout=30)
        return response.status, json.loads(response.read())
    finally:
        api.close()


@pytest.mark.timeout(30)
def test_request_body_alias_bomb_is_a_bad_request(any_api_server):
    """kube-apiserver decodes YAML with sigs.k8s.io/yaml: the bomb is a 400 ``Status`` (create.go
    ``transformDecodeError``) naming go-yaml's "document contains excessive aliasing"."""
    started = time.monotonic()
    code, answer = post_yaml(any_api_server, billion_laughs(8).encode())
    assert time.monotonic() - started < 2.0
    assert code == 400
    assert (answer["kind"], answer["status"], answer["reason"], answer["code"]) == (
        "Status", "Failure", "BadRequest", 400)
    assert "yaml: document contains excessive aliasing" in answer["message"]
    assert any_api_server.list("pods", any_api_server.namespace) == []


def test_request_body_with_a_few_anchors_is_created(any_api_server):
    body = (b"apiVersion: v1\nkind: Pod\nmetadata: {name: anchors}\nspec:\n  containers:\n"
            b"  - &c {name: a, image: 'registry.invalid/pause:1', args: &args [one, two]}\n"
            b"  - {<<: *c, name: b, args: *args}\n")
    code, answer = post_yaml(any_api_server, body)
    assert code == 201, answer
    assert [(c["name"], c["args"]) for c in answer["spec"]["containers"]] == [
        ("a", ["one", "two"]), ("b", ["one", "two"])]
