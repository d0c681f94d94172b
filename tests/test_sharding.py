"""informers.sharding: the shard hash and the ``shardRange`` selectors of KEP-5866.

Ported from k8s.io/apimachinery/pkg/sharding (hash_test.go, selector_test.go) and
k8s.io/apiserver/pkg/sharding/parser_test.go at v0.36.3, with the exact values: each error
message below is what upstream's ``Parse`` returns for the same input (checked by running
upstream's code on them), and the hashes are ``HashField``'s.
"""

from __future__ import annotations

import pytest

from informers import sharding
from informers.sharding import ShardRange, ShardSelector, ShardSelectorError

U, NS = sharding.UID_KEY, sharding.NAMESPACE_KEY


# -- hash_test.go TestHashField ---------------------------------------------------------------

@pytest.mark.parametrize("value,expected", [
    ("", "cbf29ce484222325"),
    ("abc", "e71fa2190541574b"),
    ("test-uid-12345", "d4c53b72f9287c28"),
    ("aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", "93754b7248a00eb9"),
    ("test", "f9e6e6ef197c2b25"),
    ("different", "88f38c6c33321162"),
    ("a", "af63dc4c8601ec8c"),
    ("foobar", "85944171f73967e8"),
    ("default", "ebada5168620c5fe"),
    ("héllo", "a35ff71f960240e0"),  # UTF-8 bytes, as Go hashes a string
])
def test_hash_field(value, expected):
    assert sharding.hash_field(value) == expected
    assert len(expected) == 16
    assert sharding.hash_field("test") != sharding.hash_field("different")


def test_format_bound_and_hex_less():
    assert sharding.format_bound(0) == "0x0000000000000000"
    assert sharding.format_bound(1 << 63) == "0x8000000000000000"
    assert sharding.format_bound(1 << 64) == sharding.HASH_SPACE_END == "0x10000000000000000"
    with pytest.raises(ValueError):
        sharding.format_bound((1 << 64) + 1)
    assert sharding.hex_less("0xffffffffffffffff", "0x10000000000000000")
    assert not sharding.hex_less("0x8000000000000000", "0x8000000000000000")


# -- selector_test.go ---------------------------------------------------------------------------

OBJ = {"metadata": {"uid": "test-uid-123", "name": "test-name", "namespace": "test-namespace"}}
HASH = "0x" + sharding.hash_field("test-uid-123")  # 0xd0ba679834556c0b


@pytest.mark.parametrize("name,selector,want", [
    ("everything matches", sharding.everything(), True),
    ("empty selector matches", ShardSelector(), True),
    ("full range matches",
     ShardSelector([ShardRange(U, "0x0000000000000000", "0x10000000000000000")]), True),
    ("hash in specific range", ShardSelector([ShardRange(U, HASH, HASH + "f")]), True),
    ("hash below start",
     ShardSelector([ShardRange(U, "0xffffffffffffffff", "0x10000000000000000")]), False),
    ("hash at or above end",
     ShardSelector([ShardRange(U, "0x0000000000000000", "0x0000000000000001")]), False),
    ("the namespace key", ShardSelector([ShardRange(
        NS, "0x" + sharding.hash_field("test-namespace"), "0x10000000000000000")]), True),
    ("a second OR-ed range", ShardSelector([
        ShardRange(U, "0x0000000000000000", "0x0000000000000001"),
        ShardRange(U, "0xd000000000000000", "0xe000000000000000")]), True),
])
def test_selector_matches(name, selector, want):
    assert selector.matches(OBJ) is want, (name, HASH)


def test_selector_matches_refuses_mixed_keys():
    selector = ShardSelector([ShardRange(U, "0x0000000000000000", "0x8000000000000000"),
                              ShardRange(NS, "0x8000000000000000", "0x10000000000000000")])
    with pytest.raises(ShardSelectorError) as info:
        selector.matches(OBJ)
    assert str(info.value) == \
        'inconsistent shard keys: "object.metadata.uid" vs "object.metadata.namespace"'


def test_selector_empty():
    assert sharding.everything().empty()
    assert ShardSelector().empty()
    assert not ShardSelector([ShardRange(U, "0x0000000000000000", "0x8000000000000000")]).empty()


def test_selector_string():
    assert str(ShardSelector([ShardRange(U, "0x00", "0x80")])) == \
        "shardRange(object.metadata.uid, '0x00', '0x80')"
    assert str(sharding.everything()) == ""


# -- parser_test.go TestParse -------------------------------------------------------------------

@pytest.mark.parametrize("name,text,want", [
    ("single requirement with uid",
     "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
     [(U, "0x0000000000000000", "0x8000000000000000")]),
    ("full range with 2^64 end",
     "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')",
     [(U, "0x0000000000000000", "0x10000000000000000")]),
    ("namespace field",
     "shardRange(object.metadata.namespace, '0x00000000000000aa', '0x00000000000000ff')",
     [(NS, "0x00000000000000aa", "0x00000000000000ff")]),
    ("two requirements with ||",
     "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || "
     "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')",
     [(U, "0x0000000000000000", "0x8000000000000000"),
      (U, "0x8000000000000000", "0x10000000000000000")]),
    ("three requirements with ||",
     "shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000005') || "
     "shardRange(object.metadata.uid, '0x0000000000000005', '0x000000000000000a') || "
     "shardRange(object.metadata.uid, '0x000000000000000a', '0x000000000000000f')",
     [(U, "0x0000000000000000", "0x0000000000000005"),
      (U, "0x0000000000000005", "0x000000000000000a"),
      (U, "0x000000000000000a", "0x000000000000000f")]),
    ("no spaces",
     "shardRange(object.metadata.uid,'0x0000000000000000','0x8000000000000000')",
     [(U, "0x0000000000000000", "0x8000000000000000")]),
    ("extra whitespace",
     "  shardRange( object.metadata.uid ,  '0x0000000000000000' ,  '0x8000000000000000' )  ",
     [(U, "0x0000000000000000", "0x8000000000000000")]),
])
def test_parse(name, text, want):
    assert [(r.key, r.start, r.end) for r in sharding.parse(text).requirements] == want, name


@pytest.mark.parametrize("name,text,message", [
    ("empty string", "",
     "empty shard selector is not allowed; omit the parameter for unfiltered lists"),
    ("missing 0x prefix on start",
     "shardRange(object.metadata.uid, '0000000000000000', '0x8000000000000000')",
     'hexStart must have \'0x\' prefix, got "0000000000000000"'),
    ("missing 0x prefix on end",
     "shardRange(object.metadata.uid, '0x0000000000000000', '8000000000000000')",
     'hexEnd must have \'0x\' prefix, got "8000000000000000"'),
    ("empty after 0x prefix", "shardRange(object.metadata.uid, '0x', '0x8000000000000000')",
     "hexStart: hex value is required after '0x'"),
    ("name field unsupported", "shardRange(object.metadata.name, '0x00', '0x80')",
     'unsupported field path "object.metadata.name"; supported: object.metadata.uid, '
     'object.metadata.namespace'),
    ("unsupported field", "shardRange(object.metadata.labels, '0x00', '0x80')",
     'unsupported field path "object.metadata.labels"; supported: object.metadata.uid, '
     'object.metadata.namespace'),
    ("unknown function", "invalidFunc(object.metadata.uid, '0x00', '0x80')",
     'unsupported function "invalidFunc"; only shardRange() and || are allowed'),
    ("hex too long (18 chars)",
     "shardRange(object.metadata.uid, '0x000000000000000000', '0x80')",
     'hexStart: hex value too long (18 chars, max 17): "000000000000000000"'),
    ("invalid hex char", "shardRange(object.metadata.uid, '0x0g', '0x80')",
     'hexStart: invalid hex character "g" in "0x0g"'),
    ("&& operator not allowed",
     "shardRange(object.metadata.uid, '0x0', '0x8') && "
     "shardRange(object.metadata.uid, '0x8', '0xf')",
     'unsupported function "_&&_"; only shardRange() and || are allowed'),
    ("integer literal instead of string", "shardRange(object.metadata.uid, 0, 8)",
     "hexStart must be a string literal, got int64"),
    ("comparison operator", "object.metadata.uid > '0x0'",
     'unsupported function "_>_"; only shardRange() and || are allowed'),
    ("wrong number of arguments", "shardRange(object.metadata.uid, '0x0')",
     "shardRange() requires exactly 3 arguments, got 2"),
    ("nested function call", "shardRange(object.metadata.uid, hex(0), '0x8')",
     "hexStart must be a string literal (e.g. '0xff'), got expression kind 1"),
    ("mixed field keys",
     "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || "
     "shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')",
     'all shard ranges must use the same field, got "object.metadata.uid" and '
     '"object.metadata.namespace"'),
    ("short hex rejected", "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
     'hexStart must be a 0x-prefixed 16-digit hex value, got "0x0" (did you mean '
     '"0x0000000000000000"?)'),
    ("short hex rejected on end",
     "shardRange(object.metadata.uid, '0x0000000000000000', '0xff')",
     'hexEnd must be a 0x-prefixed 16-digit hex value, got "0xff" (did you mean '
     '"0x00000000000000ff"?)'),
    ("start equals end",
     "shardRange(object.metadata.uid, '0x8000000000000000', '0x8000000000000000')",
     "shard range start 0x8000000000000000 must be less than end 0x8000000000000000"),
    ("start greater than end",
     "shardRange(object.metadata.uid, '0xffffffffffffffff', '0x0000000000000000')",
     "shard range start 0xffffffffffffffff must be less than end 0x0000000000000000"),
    # CEL syntax errors, worded as cel-go's ANTLR parser words them
    ("unclosed call", "shardRange(object.metadata.uid, '0x0000000000000000'",
     "CEL parse error: Syntax error: missing ')' at '<EOF>'"),
    ("dangling ||",
     "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') ||",
     "CEL parse error: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', "
     "'-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, "
     "IDENTIFIER}"),
    ("single |",
     "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') | x",
     "CEL parse error: Syntax error: token recognition error at: '| '"),
    ("missing comma",
     "shardRange(object.metadata.uid '0x0000000000000000', '0x8000000000000000')",
     "CEL parse error: Syntax error: mismatched input ''0x0000000000000000'' expecting ')'"),
    ("a bare literal", "true",
     "unexpected expression kind 5; expected shardRange() call or || operator"),
])
def test_parse_errors(name, text, message):
    with pytest.raises(ShardSelectorError) as info:
        sharding.parse(text)
    assert str(info.value) == message, name


@pytest.mark.parametrize("text", [
    "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
    "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')",
    "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')",
    "shardRange(object.metadata.namespace, '0x00000000000000aa', '0x00000000000000ff')",
    "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || "
    "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')",
])
def test_parse_round_trip(text):
    selector = sharding.parse(text)
    assert str(selector) == text
    assert str(sharding.parse(str(selector))) == str(selector)
    assert sharding.parse(text) == selector


def test_parse_accepts_what_cel_accepts():
    # Double quotes, escapes, parentheses and a receiver-style call parse as in cel-go.
    assert str(sharding.parse(
        '(shardRange(object.metadata.uid, "0x0000000000000000", "\\x30x8000000000000000"))'
    )) == "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
    assert str(sharding.parse(
        "object.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
    )) == "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"


def test_even_split_gives_the_documented_splits():
    # apimachinery/pkg/apis/meta/v1/types.go ListOptions.ShardSelector: the 2- and 4-shard
    # splits it documents.
    assert [str(s) for s in sharding.even_split(2)] == [
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
        "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"]
    assert [str(s) for s in sharding.even_split(4)] == [
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000')",
        "shardRange(object.metadata.uid, '0x4000000000000000', '0x8000000000000000')",
        "shardRange(object.metadata.uid, '0x8000000000000000', '0xc000000000000000')",
        "shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')"]
    assert [str(s) for s in sharding.even_split(1, NS)] == [
        "shardRange(object.metadata.namespace, '0x0000000000000000', '0x10000000000000000')"]
    # Every split parses back, and each object lands in exactly one shard.
    for count in (1, 3, 5, 7):
        shards = sharding.even_split(count)
        assert [sharding.parse(str(s)) for s in shards] == shards
        for uid in ("a", "b", "test-uid-123", "ffff", ""):
            obj = {"metadata": {"uid": uid}}
            assert sum(s.matches(obj) for s in shards) == 1
    with pytest.raises(ValueError):
        sharding.even_split(0)
    with pytest.raises(ValueError):
        sharding.even_split(2, "object.metadata.name")


# -- accessor_test.go ---------------------------------------------------------------------------

@pytest.mark.parametrize("field_path,want", [
    ("object.metadata.uid", "test-uid-123"),
    ("object.metadata.namespace", "test-namespace"),
    ("object.metadata.name", None),
    ("object.metadata.labels", None),
    ("invalid.path", None),
])
def test_resolve_field_value(field_path, want):
    if want is None:
        with pytest.raises(ShardSelectorError) as info:
            sharding.resolve_field_value(OBJ, field_path)
        assert str(info.value) == f'unsupported field path: "{field_path}"'
    else:
        assert sharding.resolve_field_value(OBJ, field_path) == want
    # A cluster-scoped object hashes the empty namespace, as Go's accessor answers "".
    assert sharding.resolve_field_value({"metadata": {"name": "n"}}, NS) == ""
