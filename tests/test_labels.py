"""Tests for informers.labels, with cases ported from apimachinery pkg/labels/selector_test.go."""

from __future__ import annotations

import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from informers import labels
from informers.errors import SelectorError
from informers.labels import EVERYTHING, NOTHING, Requirement, Selector

# --------------------------------------------------------------------------------------------
# Parsing: canonical strings
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        # TestSelectorParse good strings: re-stringing gives the input without spaces.
        ("x=a,y=b,z=c", "x=a,y=b,z=c"),
        ("", ""),
        ("x!=a,y=b", "x!=a,y=b"),
        ("x=", "x="),
        ("x= ", "x="),
        ("x=,z= ", "x=,z="),
        ("x= ,z= ", "x=,z="),
        ("!x", "!x"),
        ("x>1", "x>1"),
        ("x>1,z<5", "x>1,z<5"),
        # Deterministic order: sorted by key.
        ("x=a,a=x", "a=x,x=a"),
        ("a=x,x=a", "a=x,x=a"),
        # TestSetSelectorParser valid cases.
        ("\rx", "x"),
        ("this-is-a-dns.domain.com/key-with-dash", "this-is-a-dns.domain.com/key-with-dash"),
        (
            "this-is-another-dns.domain.com/key-with-dash in (so,what)",
            "this-is-another-dns.domain.com/key-with-dash in (so,what)",
        ),
        (
            "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
            "0.1.2.domain/99 notin (10.10.100.1,tick.tack.clock)",
        ),
        ("foo  in\t (abc)", "foo in (abc)"),
        ("x notin\n (abc)", "x notin (abc)"),
        ("x  notin\t\t\t(abc,def)", "x notin (abc,def)"),
        ("x in (abc,def)", "x in (abc,def)"),
        ("x in (abc,)", "x in (,abc)"),
        ("x in (abc,abc)", "x in (abc)"),
        ("x in ()", "x in ()"),
        ("x in (a,,)", "x in (,a)"),
        ("x in (a,,,)", "x in (,a)"),
        ("x in (a,,,,,,)", "x in (,a)"),
        ("x in (a,,a,,a,,a,,)", "x in (,a)"),
        ("x notin (abc,,def),bar,z in (),w", "bar,w,x notin (,abc,def),z in ()"),
        ("x,y in (a)", "x,y in (a)"),
        ("x=a", "x=a"),
        ("x>1", "x>1"),
        ("x<7", "x<7"),
        ("x=a,y!=b", "x=a,y!=b"),
        ("x=a,y!=b,z in (h,i,j)", "x=a,y!=b,z in (h,i,j)"),
        ("x notin ( )", "x notin ()"),
        ("x notin (, a)", "x notin (,a)"),
        ("a ", "a"),
        ("a in (x,y,notin, z,in)", "a in (in,notin,x,y,z)"),
        # Values in sets are sorted; "(,a)" starts with an empty value.
        ("x in (c,b,a)", "x in (a,b,c)"),
        ("x in (,a)", "x in (,a)"),
        ("x in (a,,b)", "x in (,a,b)"),
        # "==" is kept (Requirement.String prints DoubleEquals as "==").
        ("x==a", "x==a"),
        ("x == a , y != b", "x==a,y!=b"),
        # in / notin are operators only in operator position.
        ("notin=in", "notin=in"),
        ("in in (in)", "in in (in)"),
        ("in", "in"),
        ("!notin", "!notin"),
        ("x=in,y=notin", "x=in,y=notin"),
        # Whitespace: space, tab, CR and LF anywhere between tokens.
        (" \t\r\nx\t=\ta\n,\r!y ", "x=a,!y"),
        ("x in(a)", "x in (a)"),
        ("x notin(a)", "x notin (a)"),
        ("  ", ""),
        # Same-key requirements keep their given order.
        ("b,a=1,a!=2", "a=1,a!=2,b"),
        ("a!=2,a=1", "a!=2,a=1"),
        # Integer comparisons keep the value's spelling.
        ("x>007", "x>007"),
        ("x<9223372036854775807", "x<9223372036854775807"),
        # Prefixed keys, names with _ and . and uppercase.
        ("example.com/My_Name.v2=Val-1_x.y", "example.com/My_Name.v2=Val-1_x.y"),
    ],
)
def test_parse_canonical_string(text: str, canonical: str) -> None:
    selector = labels.parse(text)
    assert str(selector) == canonical
    assert labels.parse(canonical) == selector


def test_parse_structure() -> None:
    selector = labels.parse("z in (b, a), !y, x, w>5, v notin (c), u==d, t!=e, s=")
    assert selector.requirements() == (
        Requirement("s", "=", [""]),
        Requirement("t", "!=", ["e"]),
        Requirement("u", "==", ["d"]),
        Requirement("v", "notin", ["c"]),
        Requirement("w", "gt", ["5"]),
        Requirement("x", "exists"),
        Requirement("y", "!"),
        Requirement("z", "in", ["a", "b"]),
    )
    z = selector.requirements()[-1]
    assert (z.key, z.operator, z.values) == ("z", "in", ("a", "b"))
    assert selector.requirements()[4].operator == labels.GREATER_THAN


def test_parse_empty_is_everything_singleton() -> None:
    assert labels.parse("") is EVERYTHING
    assert labels.parse(" \t") is EVERYTHING
    assert labels.everything() is EVERYTHING
    assert labels.nothing() is NOTHING


def test_parse_rejects_non_string() -> None:
    with pytest.raises(TypeError, match="must be a string"):
        labels.parse(None)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# Parsing: errors name the offending part
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # TestSelectorParse bad strings.
        ("x=a||y=b", 'invalid label value "a||y" for key "x"'),
        ("x==a==b", "found '==' at position 4, expected ',' or end of string"),
        ("!x=a", "found '=' at position 2, expected ',' or end of string"),
        ("x<a", "value \"a\": for 'gt', 'lt' operators, the value must be an integer"),
        # TestSetSelectorParser invalid cases.
        ("x,,y", "found ',' at position 2, expected '!' or identifier after ','"),
        (",x,y", "found ',' at position 0, expected '!', identifier or end of string"),
        ("x nott in (y)", "found 'nott' at position 2, expected one of in, notin, =, ==, !=, >, <"),
        ("a in (xyz),", "found end of string at position 11, expected '!' or identifier after ','"),
        ("a in (xyz)b notin ()", "found 'b' at position 10, expected ',' or end of string"),
        ("a in (xyz abc)", "found 'abc' at position 10, expected ',' or ')'"),
        ("a notin(", "found end of string at position 8, expected ',', ')' or identifier"),
        ("a (", "found '(' at position 2, expected one of in, notin"),
        ("(", "found '(' at position 0, expected '!', identifier or end of string"),
        # The brief's examples.
        ("x=a b", "found 'b' at position 4, expected ',' or end of string"),
        ("x in (", "found end of string at position 6, expected ',', ')' or identifier"),
        ("x notin a", "found 'a' at position 8, expected '('"),
        ("=a", "found '=' at position 0, expected '!', identifier or end of string"),
        ("key/with/two/slashes=a", 'invalid label key "key/with/two/slashes": a valid label key'),
        ("x=" + "a" * 64, f'invalid label value "{"a" * 64}" for key "x": must be no more than 63'),
        # More structure errors.
        ("x=a=b", "found '=' at position 3, expected ',' or end of string"),
        ("x in (a,(", "found '(' at position 8, expected ',' or identifier"),
        ("x in a", "found 'a' at position 5, expected '('"),
        ("x=(", "found '(' at position 2, expected identifier"),
        ("x=)", "found ')' at position 2, expected identifier"),
        ("!", "found end of string at position 1, expected identifier"),
        ("!!x", "found '!' at position 1, expected identifier"),
        ("x,", "found end of string at position 2, expected '!' or identifier after ','"),
        ("x y", "found 'y' at position 2, expected one of in, notin"),
        ("x in (a)(", "found '(' at position 8, expected ',' or end of string"),
        ("== != (), = notin", "found '==' at position 0"),
        ("x>=1", "found '=' at position 2, expected identifier"),
        ("x<>1", "found '>' at position 2, expected identifier"),
        # Key validation (content.IsLabelKey).
        ("-x", 'invalid label key "-x": name part must consist of alphanumeric characters'),
        ("x-", 'invalid label key "x-": name part must consist'),
        ("a/", 'invalid label key "a/": name part must be non-empty'),
        ("/a", 'invalid label key "/a": prefix part must be non-empty'),
        ("Example.com/a", 'invalid label key "Example.com/a": prefix part a lowercase RFC 1123'),
        ("-a.com/b", 'invalid label key "-a.com/b": prefix part a lowercase RFC 1123'),
        ("a" * 64, f'invalid label key "{"a" * 64}": name part must be no more than 63 bytes'),
        (
            "a" * 254 + "/b",
            f'invalid label key "{"a" * 254}/b": prefix part must be no more than 253 bytes',
        ),
        ("ключ=a", 'invalid label key "ключ"'),
        ("a\x00b=c", 'invalid label key "a\\u0000b"'),
        ("x|y", 'invalid label key "x|y"'),
        # Value validation (content.IsLabelValue).
        ("x=-a", 'invalid label value "-a" for key "x": must be empty or consist'),
        ("x in (a,b_)", 'invalid label value "b_" for key "x"'),
        ("x notin (" + "v" * 64 + ")", "must be no more than 63 bytes"),
        ("x!=a/b", 'invalid label value "a/b" for key "x"'),
        # Integer comparisons need a value that strconv.ParseInt accepts.
        ("x>", "value \"\": for 'gt', 'lt' operators, the value must be an integer"),
        ("x>1.5", 'value "1.5"'),
        ("x>-1", 'invalid label value "-1" for key "x"'),
        ("x<9223372036854775808", 'value "9223372036854775808"'),
    ],
)
def test_parse_errors_name_the_offending_part(text: str, expected: str) -> None:
    with pytest.raises(SelectorError) as info:
        labels.parse(text)
    message = str(info.value)
    assert expected in message
    assert message.startswith("unable to parse label selector ")
    assert isinstance(info.value, ValueError)


def test_parse_error_is_not_cached_as_success() -> None:
    for _ in range(2):
        with pytest.raises(SelectorError):
            labels.parse("x=a b")


# --------------------------------------------------------------------------------------------
# Matching
# --------------------------------------------------------------------------------------------

LABELSET = {"foo": "bar", "baz": "blah"}


@pytest.mark.parametrize(
    ("text", "label_set", "expected"),
    [
        # TestSelectorMatches.
        ("", {"x": "y"}, True),
        ("x=y", {"x": "y"}, True),
        ("x=y,z=w", {"x": "y", "z": "w"}, True),
        ("x!=y,z!=w", {"x": "z", "z": "a"}, True),
        ("notin=in", {"notin": "in"}, True),
        ("x", {"x": "z"}, True),
        ("!x", {"y": "z"}, True),
        ("x>1", {"x": "2"}, True),
        ("x<1", {"x": "0"}, True),
        ("x=z", {}, False),
        ("x=y", {"x": "z"}, False),
        ("x=y,z=w", {"x": "w", "z": "w"}, False),
        ("x!=y,z!=w", {"x": "z", "z": "w"}, False),
        ("x", {"y": "z"}, False),
        ("!x", {"x": "z"}, False),
        ("x>1", {"x": "0"}, False),
        ("x<1", {"x": "2"}, False),
        ("foo=bar", LABELSET, True),
        ("baz=blah", LABELSET, True),
        ("foo=bar,baz=blah", LABELSET, True),
        ("foo=blah", LABELSET, False),
        ("baz=bar", LABELSET, False),
        ("foo=bar,foobar=bar,baz=blah", LABELSET, False),
        # TestRequirementSelectorMatching.
        ("x in (foo),y notin (alpha)", {"x": "foo", "y": "baz"}, True),
        ("x in (foo),y in (alpha)", {"x": "foo", "y": "baz"}, False),
        ("x notin (),y", {"y": ""}, True),
        ("!x,y", {"y": ""}, True),
        ("x notin (),!y", {"y": ""}, False),
        ("x in ()", {"y": "baz"}, False),
        ("z>1", {"z": "2"}, True),
        ("z>1", {"z": "v2"}, False),
        # != and notin match when the key is absent; = and in do not.
        ("x!=a", {}, True),
        ("x notin (a,b)", {}, True),
        ("x notin (a,b)", {"x": "b"}, False),
        ("x notin (a,b)", {"x": "c"}, True),
        ("x in (a,b)", {}, False),
        ("x in (a,b)", {"x": "b"}, True),
        ("x=", {}, False),
        ("x=", {"x": ""}, True),
        ("x in (,a)", {"x": ""}, True),
        ("x!=", {"x": ""}, False),
        ("x!=", {"x": "a"}, True),
        ("x==a", {"x": "a"}, True),
        # gt/lt need the key and an integer (strconv.ParseInt) label value.
        ("x>1", {}, False),
        ("x<1", {}, False),
        ("x>1", {"x": "1"}, False),
        ("x<1", {"x": "1"}, False),
        ("x>1", {"x": "+2"}, True),
        ("x<0", {"x": "-1"}, True),
        ("x>1", {"x": "1.5"}, False),
        ("x>1", {"x": ""}, False),
        ("x>1", {"x": "1_000"}, False),
        ("x>1", {"x": " 5"}, False),
        ("x>1", {"x": "9223372036854775808"}, False),
        ("x<0", {"x": "-9223372036854775808"}, True),
        ("x>9", {"x": "10"}, True),
        ("x<10", {"x": "9"}, True),
        ("x>007", {"x": "8"}, True),
        # Conflicting requirements match nothing (but are not NOTHING).
        ("a,!a", {"a": "1"}, False),
        ("a=b,a!=b", {"a": "b"}, False),
        ("a=b,a=c", {"a": "b"}, False),
    ],
)
def test_matches(text: str, label_set: dict[str, str], expected: bool) -> None:
    selector = labels.parse(text)
    assert selector.matches(label_set) is expected
    assert selector.matches(types.MappingProxyType(label_set)) is expected
    assert all(r.matches(label_set) for r in selector.requirements()) is expected


def test_matches_none_as_no_labels() -> None:
    assert labels.parse("!x").matches(None) is True
    assert labels.parse("x!=a").matches(None) is True
    assert labels.parse("x=a").matches(None) is False
    assert labels.parse("x in (a)").matches(None) is False
    assert EVERYTHING.matches(None) is True
    assert NOTHING.matches(None) is False
    assert Requirement("x", "notin", ["a"]).matches(None) is True


def test_equality_fast_path_agrees_with_general_path() -> None:
    fast = labels.selector_from_set({"a": "1", "b": "2"})
    general = Selector([Requirement("a", "in", ["1"]), Requirement("b", "in", ["2", "3"])])
    cases = [
        ({"a": "1", "b": "2"}, True, True),
        ({"a": "1", "b": "2", "c": "3"}, True, True),
        ({"a": "1"}, False, False),
        ({"a": "1", "b": "3"}, False, True),
        ({}, False, False),
        ({"a": "2", "b": "2"}, False, False),
    ]
    for label_set, fast_expected, general_expected in cases:
        assert fast.matches(label_set) is fast_expected
        assert general.matches(label_set) is general_expected


# --------------------------------------------------------------------------------------------
# Requirement constructor (TestRequirementConstructor) and string form (TestToString)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "operator", "values", "expected"),
    [
        ("x3", "in", ["foo"], "x3 in (foo)"),
        ("x4", "notin", ["foo"], "x4 notin (foo)"),
        ("x6", "exists", [], "x6"),
        ("x7", "!", [], "!x7"),
        ("x11", "gt", ["1"], "x11>1"),
        ("x11", ">", ["1"], "x11>1"),
        ("x12", "lt", ["6"], "x12<6"),
        ("x12", "<", ["6"], "x12<6"),
        ("x", "=", [""], "x="),
        ("x", "==", ["a"], "x==a"),
        ("x", "!=", ["a"], "x!=a"),
        ("x", "in", ["b", "a", "b", ""], "x in (,a,b)"),
        ("x", "notin", [""], "x notin ()"),
        ("a" * 253 + "/" + "b" * 63, "exists", [], "a" * 253 + "/" + "b" * 63),
        ("k", "=", ["v" * 63], "k=" + "v" * 63),
    ],
)
def test_requirement_constructor_valid(
    key: str, operator: str, values: list[str], expected: str
) -> None:
    req = Requirement(key, operator, values)
    assert str(req) == expected
    assert req == Requirement(key, operator, list(reversed(values)))
    assert hash(req) == hash(Requirement(key, operator, values))


@pytest.mark.parametrize(
    ("key", "operator", "values", "expected"),
    [
        ("x1", "in", [], "values: for 'in', 'notin' operators, values set can't be empty"),
        ("x2", "notin", [], "values set can't be empty"),
        ("x5", "=", ["foo", "bar"], "values ['foo', 'bar']: exact-match compatibility requires"),
        ("x5", "!=", [], "exact-match compatibility requires one single value"),
        ("x8", "exists", ["foo"], "values ['foo']: values set must be empty for exists"),
        ("x8", "!", ["foo"], "values set must be empty for exists and does not exist"),
        ("x13", "gt", [], "for 'gt', 'lt' operators, exactly one value is required"),
        ("x14", "gt", ["bar"], "value \"bar\": for 'gt', 'lt' operators, the value must be an"),
        ("x15", "lt", ["bar"], 'value "bar"'),
        ("a" * 254, "exists", [], "name part must be no more than 63 bytes"),
        ("x16", "=", ["a" * 254], 'for key "x16": must be no more than 63 bytes'),
        ("x17", "=", ["a b"], 'invalid label value "a b" for key "x17"'),
        ("x18", "unsupportedOp", [], 'operator "unsupportedOp" is not supported'),
        ("", "exists", [], 'invalid label key "": name part must be non-empty'),
        (5, "exists", [], "invalid label key 5: must be a string"),
        ("x", "=", [5], 'invalid label value 5 for key "x": must be a string'),
        ("x", "In", ["a"], 'operator "In" is not supported'),
    ],
)
def test_requirement_constructor_invalid(
    key: str, operator: str, values: list[str], expected: str
) -> None:
    with pytest.raises(SelectorError) as info:
        Requirement(key, operator, values)
    assert expected in str(info.value)


def test_requirement_constructor_reports_every_problem() -> None:
    with pytest.raises(SelectorError) as info:
        Requirement("-k", "=", ["-v", "w"])
    message = str(info.value)
    assert 'invalid label key "-k"' in message
    assert "exact-match compatibility requires one single value" in message
    assert 'invalid label value "-v"' in message


def test_requirement_rejects_a_string_as_values() -> None:
    with pytest.raises(TypeError, match="iterable of strings"):
        Requirement("x", "in", "abc")


def test_to_string_of_built_selectors() -> None:
    cases = [
        (
            [Requirement("x", "in", ["abc", "def"]), Requirement("y", "notin", ["jkl"]),
             Requirement("z", "exists")],
            "x in (abc,def),y notin (jkl),z",
        ),
        (
            [Requirement("x", "notin", ["abc", "def"]), Requirement("y", "!=", ["jkl"]),
             Requirement("z", "!")],
            "x notin (abc,def),y!=jkl,!z",
        ),
        (
            [Requirement("x", "notin", ["abc"]), Requirement("y", "in", ["jkl", "mno"]),
             Requirement("z", "notin", [""])],
            "x notin (abc),y in (jkl,mno),z notin ()",
        ),
        (
            [Requirement("x", "=", ["abc"]), Requirement("y", "==", ["jkl"]),
             Requirement("z", "!=", ["a"]), Requirement("z", "exists")],
            "x=abc,y==jkl,z!=a,z",
        ),
        (
            [Requirement("x", "gt", ["2"]), Requirement("y", "lt", ["8"]),
             Requirement("z", "exists")],
            "x>2,y<8,z",
        ),
        ([Requirement("b", "exists"), Requirement("a", "exists")], "a,b"),
    ]
    for requirements, expected in cases:
        assert str(Selector(requirements)) == expected
        assert labels.parse(expected) == Selector(requirements)


def test_repr() -> None:
    assert repr(Requirement("x", "in", ["b", "a"])) == "Requirement('x', 'in', ['a', 'b'])"
    assert repr(labels.parse("x=a")) == "labels.parse('x=a')"
    assert repr(NOTHING) == "labels.NOTHING"
    assert repr(EVERYTHING) == "labels.parse('')"


# --------------------------------------------------------------------------------------------
# Selector API
# --------------------------------------------------------------------------------------------


def test_everything_and_nothing() -> None:
    assert str(EVERYTHING) == "" and str(NOTHING) == ""
    assert EVERYTHING.empty() is True
    assert NOTHING.empty() is False
    assert EVERYTHING.matches({"x": "y"}) is True
    assert NOTHING.matches({"x": "y"}) is False
    assert EVERYTHING.requirements() == () and NOTHING.requirements() == ()
    assert EVERYTHING != NOTHING
    assert EVERYTHING == Selector() == labels.parse("")
    assert hash(EVERYTHING) != hash(NOTHING)
    assert labels.matches_nothing(NOTHING) is True
    assert labels.matches_nothing(EVERYTHING) is False
    assert labels.matches_nothing(labels.parse("a,!a")) is False
    assert NOTHING.add(Requirement("a", "exists")) is NOTHING
    assert EVERYTHING.add() is EVERYTHING
    assert EVERYTHING.requires_exact_match("a") is None


def test_add_returns_a_new_sorted_selector() -> None:
    base = labels.parse("key in (value)")
    added = base.add(Requirement("key2", "=", ["value2"]), Requirement("a", "exists"))
    assert str(added) == "a,key in (value),key2=value2"
    assert str(base) == "key in (value)"
    assert str(EVERYTHING.add(Requirement("key", "in", ["value"]))) == "key in (value)"
    assert added.empty() is False


def test_equality_and_hash_use_the_canonical_string() -> None:
    a = labels.parse("b=2, a in (y,x)")
    b = labels.parse("a in (x,y),b=2")
    assert a == b and hash(a) == hash(b)
    assert len({a, b, EVERYTHING, NOTHING}) == 3
    assert labels.parse("x=a") != labels.parse("x==a")  # as Requirement.Equal in Go
    assert labels.parse("x=a") != "x=a"


@pytest.mark.parametrize(
    ("text", "label", "expected"),
    [
        ("key in (value)", "key", "value"),
        ("key in (value,value2)", "key", None),
        ("key in (value,value1),key2 in (value2)", "key2", "value2"),
        ("key=value", "key", "value"),
        ("key==value", "key", "value"),
        ("key!=value", "key", None),
        ("key in (value),key2 in (value2)", "key", "value"),
        ("key", "key", None),
        ("key=", "key", ""),
        ("other=value", "key", None),
        ("key!=a,key=b", "key", None),  # only the first requirement on the key counts
    ],
)
def test_requires_exact_match(text: str, label: str, expected: str | None) -> None:
    assert labels.parse(text).requires_exact_match(label) == expected


def test_selector_rejects_non_requirements() -> None:
    with pytest.raises(TypeError, match=r"expected a labels\.Requirement"):
        Selector(["x=a"])  # type: ignore[list-item]


# --------------------------------------------------------------------------------------------
# Constructors from maps
# --------------------------------------------------------------------------------------------


def test_selector_from_set() -> None:
    assert labels.selector_from_set({}) is EVERYTHING
    assert labels.selector_from_set(None) is EVERYTHING
    assert str(labels.selector_from_set({"app": "foo"})) == "app=foo"
    selector = labels.selector_from_set({"app": "foo", "a": "b"})
    assert str(selector) == "a=b,app=foo"
    assert selector.matches({"app": "foo", "a": "b", "c": "d"}) is True
    assert selector.matches({"app": "foo"}) is False
    # TestSetMatches
    for subset in ({}, {"foo": "bar"}, {"baz": "blah"}, {"foo": "bar", "baz": "blah"}):
        assert labels.selector_from_set(subset).matches(LABELSET) is True


def test_selector_from_set_validates() -> None:
    too_long = "axahm2EJ8Phiephe2eixohbee9eGeiyees1thuozi1xoh0GiuH3diewi8iem7Nui"
    with pytest.raises(SelectorError) as info:
        labels.selector_from_set({"Key": too_long})
    assert f'invalid label value "{too_long}" for key "Key"' in str(info.value)
    with pytest.raises(SelectorError, match='invalid label key "a b"'):
        labels.selector_from_set({"a b": "c"})
    with pytest.raises(SelectorError, match="must be a string"):
        labels.selector_from_set({"a": None})  # type: ignore[dict-item]


def test_selector_from_validated_set_skips_validation() -> None:
    assert labels.selector_from_validated_set(None) is EVERYTHING
    assert labels.selector_from_validated_set({}) is EVERYTHING
    selector = labels.selector_from_validated_set({"a b": "=c", "app": "web"})
    assert str(selector) == "a b==c,app=web"
    assert selector.matches({"a b": "=c", "app": "web"}) is True
    assert selector == labels.selector_from_set({"app": "web"}).add(
        Requirement._trusted("a b", "=", ("=c",))
    )


def test_format_labels() -> None:
    assert labels.format_labels(None) == "<none>"
    assert labels.format_labels({}) == "<none>"
    assert labels.format_labels({"b": "2", "a": "1"}) == "a=1,b=2"
    assert labels.format_labels({"a": "2", "a.b": "1"}) == "a.b=1,a=2"  # sorts the pairs


# --------------------------------------------------------------------------------------------
# metav1.LabelSelector (LabelSelectorAsSelector)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("label_selector", "expected"),
    [
        ({}, ""),
        ({"matchLabels": {}, "matchExpressions": []}, ""),
        ({"matchLabels": None, "matchExpressions": None}, ""),
        ({"matchLabels": {"app": "web", "a": "b"}}, "a=b,app=web"),
        (
            {
                "matchLabels": {"app": "web"},
                "matchExpressions": [
                    {"key": "tier", "operator": "In", "values": ["fe", "be"]},
                    {"key": "env", "operator": "NotIn", "values": ["prod"]},
                    {"key": "canary", "operator": "DoesNotExist"},
                    {"key": "owner", "operator": "Exists", "values": []},
                    {"key": "app", "operator": "Exists"},
                ],
            },
            "app=web,app,!canary,env notin (prod),owner,tier in (be,fe)",
        ),
        ({"matchExpressions": [{"key": "x", "operator": "In", "values": [""]}]}, "x in ()"),
    ],
)
def test_selector_from_label_selector(label_selector: dict[str, object], expected: str) -> None:
    selector = labels.selector_from_label_selector(label_selector)
    assert str(selector) == expected
    assert selector is not NOTHING
    if not expected:
        assert selector is EVERYTHING


def test_selector_from_label_selector_nil_matches_nothing() -> None:
    assert labels.selector_from_label_selector(None) is NOTHING
    assert labels.selector_from_label_selector(None).matches({"a": "b"}) is False
    assert labels.selector_from_label_selector({}).matches({"a": "b"}) is True


def test_selector_from_label_selector_matches() -> None:
    selector = labels.selector_from_label_selector(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["fe", "be"]},
                {"key": "env", "operator": "NotIn", "values": ["prod"]},
                {"key": "canary", "operator": "DoesNotExist"},
            ],
        }
    )
    assert selector.matches({"app": "web", "tier": "fe"}) is True
    assert selector.matches({"app": "web", "tier": "fe", "env": "dev"}) is True
    assert selector.matches({"app": "web", "tier": "fe", "env": "prod"}) is False
    assert selector.matches({"app": "web", "tier": "fe", "canary": ""}) is False
    assert selector.matches({"app": "web", "tier": "db"}) is False
    assert selector.matches({"tier": "fe"}) is False


@pytest.mark.parametrize(
    ("label_selector", "expected"),
    [
        (
            {"matchExpressions": [{"key": "x", "operator": "Foo", "values": ["a"]}]},
            'matchExpressions[0].operator: "Foo" is not a valid label selector operator',
        ),
        (
            {"matchExpressions": [{"key": "x", "operator": "in", "values": ["a"]}]},
            '"in" is not a valid label selector operator',
        ),
        (
            {"matchExpressions": [{"key": "x", "operator": "Exists"}, {"key": "y"}]},
            "matchExpressions[1].operator: None is not a valid label selector operator",
        ),
        (
            {"matchExpressions": [{"key": "x", "operator": "In", "values": []}]},
            "matchExpressions[0]: values: for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            {"matchExpressions": [{"key": "x", "operator": "NotIn"}]},
            "values set can't be empty",
        ),
        (
            {"matchExpressions": [{"key": "x", "operator": "Exists", "values": ["a"]}]},
            "values set must be empty for exists and does not exist",
        ),
        (
            {"matchExpressions": [{"key": "x", "operator": "DoesNotExist", "values": ["a"]}]},
            "values set must be empty for exists and does not exist",
        ),
        (
            {"matchExpressions": [{"key": "x y", "operator": "Exists"}]},
            'matchExpressions[0]: invalid label key "x y"',
        ),
        (
            {"matchExpressions": [{"operator": "Exists"}]},
            'invalid label key "": name part must be non-empty',
        ),
        (
            {"matchExpressions": [{"key": "x", "operator": "In", "values": "a"}]},
            'matchExpressions[0].values: must be a list, got "a"',
        ),
        ({"matchExpressions": ["x"]}, "matchExpressions[0]: must be a mapping"),
        ({"matchExpressions": {"key": "x"}}, "matchExpressions must be a list"),
        ({"matchLabels": {"a": "-b"}}, 'matchLabels: invalid label value "-b" for key "a"'),
        ({"matchLabels": ["a"]}, "matchLabels must be a mapping"),
        ({"match_labels": {"a": "b"}}, "unknown field 'match_labels' (did you mean 'matchLabels'?"),
        ({"match_expressions": []}, "did you mean 'matchExpressions'?"),
        ("a=b", "expected a mapping, got str"),
    ],
)
def test_selector_from_label_selector_errors(label_selector: object, expected: str) -> None:
    with pytest.raises(SelectorError) as info:
        labels.selector_from_label_selector(label_selector)  # type: ignore[arg-type]
    assert expected in str(info.value)


# --------------------------------------------------------------------------------------------
# Key and value validation helpers
# --------------------------------------------------------------------------------------------


def test_label_key_and_value_errors() -> None:
    assert labels.label_key_errors("a") == []
    assert labels.label_key_errors("app.kubernetes.io/name") == []
    assert labels.label_key_errors("a" * 63) == []
    assert labels.label_key_errors("a" * 253 + "/a") == []
    assert labels.label_key_errors("a/b/c") != []
    assert labels.label_key_errors("a_b.c-D9") == []
    assert labels.label_key_errors("a_b.c-D9_") == ["name part must consist of alphanumeric "
                                                    "characters, '-', '_' or '.', and must start "
                                                    "and end with an alphanumeric character"]
    assert labels.label_key_errors("a..b.com/x") != []
    assert labels.label_key_errors("/") == ["prefix part must be non-empty",
                                            "name part must be non-empty"]
    assert labels.label_value_errors("") == []
    assert labels.label_value_errors("v" * 63) == []
    assert labels.label_value_errors("v" * 64) == ["must be no more than 63 bytes"]
    assert labels.label_value_errors("a\n") != []


# --------------------------------------------------------------------------------------------
# Property: printing and re-parsing is the identity, and matching follows a simple model
# --------------------------------------------------------------------------------------------

_NAMES = st.one_of(
    st.sampled_from(["a", "b", "in", "notin", "x-y.z", "A_1"]),
    st.from_regex(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,6}[A-Za-z0-9])?", fullmatch=True),
)
_PREFIXES = st.one_of(
    st.just(""),
    st.sampled_from(["example.com/", "k8s.io/"]),
    st.from_regex(r"[a-z0-9]([-a-z0-9]{0,4}[a-z0-9])?(\.[a-z0-9]{1,3}){0,2}/", fullmatch=True),
)
_KEYS = st.builds(lambda prefix, name: prefix + name, _PREFIXES, _NAMES)
_VALUES = st.one_of(
    st.sampled_from(["", "1", "2", "10", "v", "in", "notin", "a.b"]),
    st.from_regex(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,6}[A-Za-z0-9])?", fullmatch=True),
)
_INTS = st.integers(min_value=0, max_value=20).map(str)


@st.composite
def _requirements(draw: st.DrawFn) -> Requirement:
    key = draw(st.one_of(st.sampled_from(["a", "b", "example.com/c"]), _KEYS))
    op = draw(st.sampled_from(["=", "==", "!=", "in", "notin", "exists", "!", "gt", "lt"]))
    if op in ("in", "notin"):
        values = draw(st.lists(_VALUES, min_size=1, max_size=4))
    elif op in ("=", "==", "!="):
        values = [draw(_VALUES)]
    elif op in ("gt", "lt"):
        values = [draw(_INTS)]
    else:
        values = []
    return Requirement(key, op, values)


_LABEL_SETS = st.dictionaries(
    st.one_of(st.sampled_from(["a", "b", "example.com/c"]), _KEYS),
    st.one_of(_VALUES, _INTS, st.sampled_from(["+3", "-4", "x1"])),
    max_size=5,
)


def _model_matches(reqs: list[tuple[str, str, list[str]]], label_set: dict[str, str]) -> bool:
    """The apimachinery Requirement.Matches rules, written out independently."""
    for key, op, values in reqs:
        present = key in label_set
        value = label_set.get(key)
        if op in ("=", "==", "in"):
            ok = present and value in values
        elif op in ("!=", "notin"):
            ok = not present or value not in values
        elif op == "exists":
            ok = present
        elif op == "!":
            ok = not present
        else:
            try:
                number = int(value) if value is not None and value.lstrip("+-").isdigit() else None
            except ValueError:
                number = None
            if number is None:
                ok = False
            else:
                ok = number > int(values[0]) if op == "gt" else number < int(values[0])
        if not ok:
            return False
    return True


@settings(max_examples=200, deadline=None)
@given(st.lists(_requirements(), max_size=5), st.lists(_LABEL_SETS, min_size=1, max_size=4))
def test_property_string_round_trip_and_matching(
    reqs: list[Requirement], label_sets: list[dict[str, str]]
) -> None:
    selector = Selector(reqs)
    text = str(selector)
    reparsed = labels.parse(text)
    assert reparsed == selector
    assert str(reparsed) == text
    assert [r.key for r in reparsed.requirements()] == sorted(r.key for r in reqs)
    model = [(r.key, r.operator, list(r.values)) for r in reqs]
    for label_set in label_sets:
        expected = _model_matches(model, label_set)
        assert selector.matches(label_set) is expected
        assert reparsed.matches(label_set) is expected
