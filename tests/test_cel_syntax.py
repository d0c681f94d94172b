"""informers.cel_syntax: the AST cel-go's parser gives, for what informers.sharding walks.

The error messages are cel-go's for the same input (checked by running cel-go v0.26.0 through
k8s.io/apiserver/pkg/sharding.Parse on each)."""

from __future__ import annotations

import pytest

from informers import cel_syntax as cel
from informers.cel_syntax import CELSyntaxError, parse_expression


def shape(e: cel.Expr) -> object:
    if e.kind == cel.CALL:
        return (e.name, *[shape(a) for a in e.args])
    if e.kind == cel.SELECT:
        return ("select", shape(e.args[0]), e.name)
    if e.kind == cel.LITERAL:
        return (e.go_type, e.value)
    if e.kind == cel.IDENT:
        return e.name
    return e.kind


@pytest.mark.parametrize("text,expected", [
    ("a || b && c", ("_||_", "a", ("_&&_", "b", "c"))),
    ("a || b || c", ("_||_", ("_||_", "a", "b"), "c")),
    ("x.y.z", ("select", ("select", "x", "y"), "z")),
    ("f(1, 2u, 1.5, 'a', b'b', true, null)",
     ("f", ("int64", 1), ("uint64", 2), ("float64", 1.5), ("string", "a"), ("[]uint8", "b"),
      ("bool", True), ("structpb.NullValue", None))),
    ("-1 + 2 * 3 > 4", ("_>_", ("_+_", ("int64", -1), ("_*_", ("int64", 2), ("int64", 3))),
                        ("int64", 4))),
    ("!a ? b : c[0]", ("_?_:_", ("!_", "a"), "b", ("_[_]", "c", ("int64", 0)))),
    ("o.f(x)", ("f", "x")),  # a receiver call: the target is not an argument
    ("[1, 2]", cel.LIST),
    ("{'a': 1}", cel.MAP),
    ("'\\x41\\u00e9\\101' + r'\\n'", ("_+_", ("string", "AéA"), ("string", "\\n"))),
])
def test_the_ast(text, expected):
    assert shape(parse_expression(text)) == expected


@pytest.mark.parametrize("text,message", [
    ("f(a", "Syntax error: missing ')' at '<EOF>'"),
    ("f(a b)", "Syntax error: extraneous input 'b' expecting ')'"),
    ("f(a 'x', c)", "Syntax error: mismatched input ''x'' expecting ')'"),
    ("a ||", "Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', "
             "'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}"),
    ("a | b", "Syntax error: token recognition error at: '| '"),
    ("f(a) g", "Syntax error: extraneous input 'g' expecting <EOF>"),
])
def test_syntax_errors(text, message):
    with pytest.raises(CELSyntaxError) as info:
        parse_expression(text)
    assert str(info.value) == message
