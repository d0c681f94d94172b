"""Reads the syntax of a CEL expression into a small AST, as cel-go's parser does, no more.

:func:`informers.sharding.parse` needs what ``k8s.io/apiserver/pkg/sharding/parser.go`` gets
from ``celparser.NewParser(celparser.Macros())``: the AST of an expression, which it walks but
never evaluates. This module reads the grammar of cel-go's ``parser/gen/CEL.g4`` (literals,
identifiers, selections, calls, receiver calls, lists, maps, messages and every operator, with
CEL's precedence), producing :class:`Expr` nodes whose ``kind`` numbers are cel-go's
``ast.ExprKind`` values, operators named as cel-go names them (``_||_``, ``_&&_``, ``_>_``...) and
literals typed as the Go values cel-go gives (``int64``, ``uint64``, ``float64``, ``string``,
``[]uint8``, ``bool``). Syntax errors are worded as cel-go's ANTLR errors for the common cases
(``missing ')' at '<EOF>'``, ``mismatched input ...``, ``token recognition error at: ...``);
rarer ones may be worded differently. Macros are off, as there (``has(x)`` is a plain call).

Pure functions: safe from any thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["CALL", "IDENT", "LIST", "LITERAL", "MAP", "SELECT", "STRUCT", "CELSyntaxError",
           "Expr", "parse_expression"]


class CELSyntaxError(ValueError):
    """The expression is not CEL; the message is cel-go's (``Syntax error: ...``)."""


# cel-go common/ast ExprKind values: %v of the kind prints the number.
CALL, IDENT, LIST, LITERAL, MAP, SELECT, STRUCT = 1, 3, 4, 5, 6, 7, 8


@dataclass
class Expr:
    """One AST node (cel-go ``ast.Expr``): ``kind`` is :data:`CALL` (``name`` the function,
    ``args`` its arguments, a receiver call's target left out as cel-go's ``Args()`` leaves
    it), :data:`IDENT` (``name``), :data:`SELECT` (``name`` the field, ``args[0]`` the
    operand), :data:`LITERAL` (``value``, ``go_type``), or :data:`LIST`, :data:`MAP`,
    :data:`STRUCT` (contents not kept)."""

    kind: int
    name: str = ""  # function name (call), identifier, or selected field
    args: tuple[Expr, ...] = ()  # call arguments; a select's operand is args[0]
    value: Any = None  # a literal's value
    go_type: str = ""  # a literal's Go type (%T)


@dataclass
class _Token:
    kind: str  # "ident", "string", "int", "uint", "float", "bytes", "op", "eof"
    text: str
    value: Any = None


_OPERATORS = ("||", "&&", "==", "!=", "<=", ">=", "<", ">", "+", "-", "*", "/", "%", "!",
              "(", ")", "[", "]", "{", "}", ".", ",", "?", ":")
_BINARY = {"||": "_||_", "&&": "_&&_", "==": "_==_", "!=": "_!=_", "<": "_<_", "<=": "_<=_",
           ">": "_>_", ">=": "_>=_", "+": "_+_", "-": "_-_", "*": "_*_", "/": "_/_",
           "%": "_%_", "in": "@in"}
_EXPECTING_EXPRESSION = ("{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, "
                         "NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v",
            "\\": "\\", "'": "'", '"': '"', "`": "`", "?": "?"}


def _syntax_error(message: str) -> CELSyntaxError:
    return CELSyntaxError(f"Syntax error: {message}")


def _escape(text: str, start: int, j: int) -> tuple[str, int]:
    """Decode the escape at ``text[j]`` (a backslash) of a string literal begun at ``start``:
    CEL's ``\\n``-style, ``\\xHH``, ``\\uHHHH``, ``\\UHHHHHHHH`` and ``\\NNN`` (octal)."""
    nxt = text[j + 1] if j + 1 < len(text) else ""
    if nxt in _ESCAPES and nxt:
        return _ESCAPES[nxt], j + 2
    width = {"x": 2, "X": 2, "u": 4, "U": 8}.get(nxt)
    if width is not None:
        digits = text[j + 2:j + 2 + width]
        if len(digits) == width and all(c in "0123456789abcdefABCDEF" for c in digits):
            return chr(int(digits, 16)), j + 2 + width
    elif nxt in "0123":
        digits = text[j + 1:j + 4]
        if len(digits) == 3 and all(c in "01234567" for c in digits):
            return chr(int(digits, 8)), j + 4
    raise _syntax_error(f"token recognition error at: '{text[start:j + 2]}'")


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n\f":
            i += 1
            continue
        raw = c in "rR" and i + 1 < n and text[i + 1] in "'\""
        if c in "'\"" or raw or (c in "bB" and i + 1 < n and text[i + 1] in "'\""):
            j = i + (1 if (raw or c in "bB") else 0)
            quote = text[j]
            j += 1
            chars: list[str] = []
            while True:
                if j >= n or text[j] == "\n":
                    raise _syntax_error(f"token recognition error at: '{text[i:j]}'")
                ch = text[j]
                if ch == quote:
                    j += 1
                    break
                if ch == "\\" and not raw:
                    decoded, j = _escape(text, i, j)
                    chars.append(decoded)
                    continue
                chars.append(ch)
                j += 1
            kind = "bytes" if c in "bB" else "string"
            out.append(_Token(kind, text[i:j], "".join(chars)))
            i = j
            continue
        if c.isdigit():
            j = i
            if text.startswith(("0x", "0X"), i):
                j = i + 2
                while j < n and text[j] in "0123456789abcdefABCDEF":
                    j += 1
                value: Any = int(text[i + 2:j], 16)
            else:
                while j < n and text[j].isdigit():
                    j += 1
                is_float = j < n and text[j] == "." and j + 1 < n and text[j + 1].isdigit()
                if is_float:
                    j += 1
                    while j < n and text[j].isdigit():
                        j += 1
                    out.append(_Token("float", text[i:j], float(text[i:j])))
                    i = j
                    continue
                value = int(text[i:j])
            kind = "int"
            if j < n and text[j] in "uU":
                j += 1
                kind = "uint"
            out.append(_Token(kind, text[i:j], value))
            i = j
            continue
        if c.isalpha() or c == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            out.append(_Token("ident", text[i:j]))
            i = j
            continue
        for op in _OPERATORS:
            if text.startswith(op, i):
                out.append(_Token("op", op))
                i += len(op)
                break
        else:  # ANTLR quotes what it read trying to match a token ('|' of '||')
            bad = text[i:i + 2] if c in "|&=" and i + 1 < n else c
            raise _syntax_error(f"token recognition error at: '{bad}'")
    out.append(_Token("eof", "<EOF>"))
    return out


class _Parser:
    """Recursive descent over CEL's precedence levels (cel-go ``parser/gen/CEL.g4``)."""

    def __init__(self, text: str) -> None:
        self.toks = _tokens(text)
        self.pos = 0

    def peek(self) -> _Token:
        return self.toks[self.pos]

    def take(self) -> _Token:
        tok = self.toks[self.pos]
        if tok.kind != "eof":
            self.pos += 1
        return tok

    def is_op(self, *ops: str) -> bool:
        tok = self.peek()
        return tok.kind == "op" and tok.text in ops

    def expect(self, op: str) -> None:
        tok = self.peek()
        if not (tok.kind == "op" and tok.text == op):
            if tok.kind == "eof":  # ANTLR's single-token insertion
                raise _syntax_error(f"missing '{op}' at '<EOF>'")
            after = self.toks[self.pos + 1] if self.pos + 1 < len(self.toks) else None
            if after is not None and after.kind == "op" and after.text == op:
                # ANTLR's single-token deletion
                raise _syntax_error(f"extraneous input '{tok.text}' expecting '{op}'")
            raise _syntax_error(f"mismatched input '{tok.text}' expecting '{op}'")
        self.take()

    def parse(self) -> Expr:
        expr = self.expr()
        tok = self.peek()
        if tok.kind != "eof":
            raise _syntax_error(f"extraneous input '{tok.text}' expecting <EOF>")
        return expr

    def expr(self) -> Expr:
        cond = self.binary(0)
        if self.is_op("?"):
            self.take()
            then = self.binary(0)
            self.expect(":")
            other = self.expr()
            return Expr(CALL, "_?_:_", (cond, then, other))
        return cond

    _LEVELS: tuple[tuple[str, ...], ...] = (
        ("||",), ("&&",), ("==", "!=", "<", "<=", ">", ">=", "in"), ("+", "-"), ("*", "/", "%"))

    def binary(self, level: int) -> Expr:
        if level == len(self._LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        ops = self._LEVELS[level]
        while True:
            tok = self.peek()
            if not (tok.kind in ("op", "ident") and tok.text in ops):
                return left
            self.take()
            right = self.binary(level + 1)
            left = Expr(CALL, _BINARY[tok.text], (left, right))

    def unary(self) -> Expr:
        if self.is_op("!"):
            self.take()
            return Expr(CALL, "!_", (self.unary(),))
        if self.is_op("-"):
            self.take()
            tok = self.peek()
            if tok.kind in ("int", "float"):
                self.take()
                return self.literal(tok, negate=True)
            return Expr(CALL, "-_", (self.unary(),))
        return self.member()

    def member(self) -> Expr:
        expr = self.primary()
        while True:
            if self.is_op("."):
                self.take()
                tok = self.take()
                if tok.kind != "ident":
                    raise _syntax_error(f"no viable alternative at input '.{tok.text}'")
                if self.is_op("("):  # a receiver call: its target is not an argument
                    expr = Expr(CALL, tok.text, self.call_args())
                else:
                    expr = Expr(SELECT, tok.text, (expr,))
            elif self.is_op("["):
                self.take()
                index = self.expr()
                self.expect("]")
                expr = Expr(CALL, "_[_]", (expr, index))
            else:
                return expr

    def call_args(self) -> tuple[Expr, ...]:
        self.expect("(")
        args: list[Expr] = []
        if not self.is_op(")"):
            args.append(self.expr())
            while self.is_op(","):
                self.take()
                args.append(self.expr())
        self.expect(")")
        return tuple(args)

    def primary(self) -> Expr:
        tok = self.peek()
        if tok.kind == "ident":
            self.take()
            if tok.text in ("true", "false"):
                return Expr(LITERAL, value=tok.text == "true", go_type="bool")
            if tok.text == "null":
                return Expr(LITERAL, value=None, go_type="structpb.NullValue")
            if self.is_op("("):
                return Expr(CALL, tok.text, self.call_args())
            if self.is_op("{"):
                self.skip_group("{", "}")
                return Expr(STRUCT, tok.text)
            return Expr(IDENT, tok.text)
        if tok.kind in ("string", "bytes", "int", "uint", "float"):
            self.take()
            return self.literal(tok)
        if self.is_op("("):
            self.take()
            inner = self.expr()
            self.expect(")")
            return inner
        if self.is_op("["):
            self.skip_group("[", "]")
            return Expr(LIST)
        if self.is_op("{"):
            self.skip_group("{", "}")
            return Expr(MAP)
        if self.is_op("."):  # a leading dot: a fully qualified identifier
            self.take()
            return self.primary()
        raise _syntax_error(f"mismatched input '{tok.text}' expecting {_EXPECTING_EXPRESSION}")

    def skip_group(self, open_: str, close: str) -> None:
        """Read a list, map or message literal: the walk only needs its kind."""
        self.expect(open_)
        while not self.is_op(close):
            if self.peek().kind == "eof":
                raise _syntax_error(f"missing '{close}' at '<EOF>'")
            self.expr()
            if self.is_op(":"):
                self.take()
                self.expr()
            if self.is_op(","):
                self.take()
        self.take()

    @staticmethod
    def literal(tok: _Token, negate: bool = False) -> Expr:
        value = -tok.value if negate else tok.value
        go_type = {"string": "string", "bytes": "[]uint8", "int": "int64", "uint": "uint64",
                   "float": "float64"}[tok.kind]
        return Expr(LITERAL, value=value, go_type=go_type)


def parse_expression(text: str) -> Expr:
    """The AST of ``text``.

    Raises:
        CELSyntaxError: ``text`` is not a CEL expression.
    """
    return _Parser(text).parse()
