"""Loads YAML (and JSON, which is YAML) from outside the process, refusing alias bombs.

Every place the project decodes YAML it did not write itself -- static pod manifests read by
the kubelet sources, the embedded API server's ``application/yaml`` request bodies -- goes
through :func:`load_yaml` or :func:`load_all_yaml`.

**Alias bombs** ("billion laughs", CVE-2019-11253). A few hundred bytes of nested anchors and
aliases expand to billions of nodes. PyYAML's own loaders share the aliased objects, so the
load itself is cheap, but anything that then walks the result (``json.dumps``, a deep copy,
validation) expands it. Here the document is composed from the parser's events by an
iterative composer that never expands anything: it records the expanded size of every
anchored node and counts, in document order, the decode operations go-yaml would perform,
with go-yaml's rule (``go.yaml.in/yaml/v2`` decode.go ``allowedAliasRatio``, used by
``sigs.k8s.io/yaml`` and so by the kubelet and kube-apiserver):

* every node counts one decode; an alias counts one plus the expanded size of its anchor,
  and that expanded part also counts as alias-driven decodes;
* once more than 100 alias-driven decodes and more than 1000 decodes are counted, the share
  of alias-driven decodes may not exceed 99% up to 400,000 decodes, falling linearly to 10% at
  4,000,000 (:func:`allowed_alias_ratio`); past it the document is rejected with "document
  contains excessive aliasing".

So the work of a load is bounded by the document's size plus about 400,000 alias-driven
nodes, and a rejected bomb costs only the parse of its bytes. An alias inside its own anchor
("anchor value contains itself") and an unknown anchor are rejected as go-yaml rejects them.
The result never shares containers between two places (go-yaml and JSON decoding produce
trees): a legitimate document with anchors gets independent copies.

**Other limits.** Nesting deeper than :data:`MAX_DEPTH` is rejected (libyaml's own nesting
limit, ``yaml_set_max_nest_level`` default 1000; go-yaml allows 10000, but the Python code
that walks a decoded object recurses). Size limits belong to the caller, where upstream puts
them (the kubelet reads at most 10 MiB of a manifest, kube-apiserver 3 MiB of a request body).

**Values** are those of PyYAML's safe loader (YAML 1.1, like go-yaml v2), except where
go-yaml v2 differs in ways a manifest meets: a timestamp stays a string, as go-yaml v2 decodes
it into ``interface{}`` (decode.go: "for backward compatibility reasons we set it as a
string"), and ``y``/``Y``/``n``/``N`` are booleans (resolve.go). Left different: PyYAML reads
``1:20`` as a base-60 number and ``!!binary`` as bytes, go-yaml as a string.

**Errors** are :class:`YAMLLoadError`, naming the source, the problem and its line and
column, never quoting the document: quoted parts of the parser's messages are replaced by
``…``, since a manifest path may point at a file of secrets.

libyaml's parser (``yaml.CParser``) is used when PyYAML was built with it (:data:`LIBYAML`),
else PyYAML's pure-Python parser, which is several times slower on large inputs. The
functions are pure and thread-safe: each call uses its own parser.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.events import (
    AliasEvent,
    CollectionStartEvent,
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
    StreamStartEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from informers.errors import InformersError

__all__ = [
    "ALIAS_RATIO_RANGE_HIGH",
    "ALIAS_RATIO_RANGE_LOW",
    "LIBYAML",
    "MAX_DEPTH",
    "YAMLLoadError",
    "allowed_alias_ratio",
    "load_all_yaml",
    "load_yaml",
]

try:
    from yaml._yaml import CParser as _CParser

    LIBYAML = True
    """Whether libyaml's parser is used (PyYAML built with libyaml)."""
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    _CParser = None  # type: ignore[assignment,misc]
    LIBYAML = False

ALIAS_RATIO_RANGE_LOW = 400_000
"""Decodes up to which 99% may come from aliases (go-yaml ``alias_ratio_range_low``)."""
ALIAS_RATIO_RANGE_HIGH = 4_000_000
"""Decodes from which only 10% may come from aliases (go-yaml ``alias_ratio_range_high``)."""
MAX_DEPTH = 1000
"""Deepest nesting of collections accepted (libyaml's default ``max_nest_level``)."""

_MERGE_TAG = "tag:yaml.org,2002:merge"
# Quoted parts of a parser message and "#x41"-style character codes; of these only
# punctuation ("expected ',' or ']'") and token names ("'<stream end>'") are kept.
_QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"|#x[0-9a-fA-F]+")
_HARMLESS = re.compile(r"'(?:[^\w\s']{1,3}|<[a-z ]+>)'")


class YAMLLoadError(InformersError, ValueError):
    """A YAML document could not be loaded.

    Attributes:
        source: where the document came from (a path, URL or request), "" if not given.
        problem: what is wrong, without the source and without quoting the document.
        line: 1-based line of the problem, or ``None``.
        column: 1-based column of the problem, or ``None``.
    """

    def __init__(self, problem: str, source: str = "", line: int | None = None,
                 column: int | None = None) -> None:
        where = f" (line {line}, column {column})" if line is not None else ""
        super().__init__(f"{source}: {problem}{where}" if source else f"{problem}{where}")
        self.source = source
        self.problem = problem
        self.line = line
        self.column = column

    @property
    def detail(self) -> str:
        """The problem and its position, without the source."""
        if self.line is None:
            return self.problem
        return f"{self.problem} (line {self.line}, column {self.column})"


def allowed_alias_ratio(decode_count: int) -> float:
    """The share of decodes that may come from alias expansion (go-yaml ``allowedAliasRatio``).

    0.99 up to :data:`ALIAS_RATIO_RANGE_LOW` decodes, 0.10 from :data:`ALIAS_RATIO_RANGE_HIGH`,
    linear in between.
    """
    if decode_count <= ALIAS_RATIO_RANGE_LOW:
        return 0.99
    if decode_count >= ALIAS_RATIO_RANGE_HIGH:
        return 0.10
    span = ALIAS_RATIO_RANGE_HIGH - ALIAS_RATIO_RANGE_LOW
    return 0.99 - 0.89 * ((decode_count - ALIAS_RATIO_RANGE_LOW) / span)


def _redact(text: str | None) -> str:
    def keep_harmless(match: re.Match[str]) -> str:
        return match.group() if _HARMLESS.fullmatch(match.group()) else "…"

    return _QUOTED.sub(keep_harmless, " ".join((text or "").split()))


class _Frame:
    """A collection being composed: its node, expanded size so far, and its anchor."""

    __slots__ = ("anchor", "node", "pending_key", "size")

    def __init__(self, node: Node, anchor: str | None, own: int) -> None:
        self.node = node
        self.anchor = anchor
        self.size = own
        self.pending_key: Node | None = None


class _Composer:
    """Composes one document from parser events without expanding aliases.

    Mirrors ``yaml.composer.Composer`` (same nodes, tags resolved by ``Resolver``) but is
    iterative, keeps go-yaml's decode counts and rejects excessive aliasing, self-containing
    anchors, unknown anchors and nesting past :data:`MAX_DEPTH`.
    """

    def __init__(self, parser: Any, source: str) -> None:
        self.parser = parser
        self.source = source
        self.resolver = _Resolver()
        self.decodes = 0
        self.alias_decodes = 0
        self.used_alias = False

    def fail(self, problem: str, event: Any) -> YAMLLoadError:
        mark = getattr(event, "start_mark", None)
        if mark is None:
            return YAMLLoadError(problem, self.source)
        return YAMLLoadError(problem, self.source, mark.line + 1, mark.column + 1)

    def count(self, decodes: int, alias_decodes: int, event: Any) -> None:
        """Add decodes; go-yaml ``unmarshal``'s check (monotone within one alias block)."""
        self.decodes += decodes
        self.alias_decodes += alias_decodes
        if (self.alias_decodes > 100 and self.decodes > 1000
                and self.alias_decodes / self.decodes > allowed_alias_ratio(self.decodes)):
            raise self.fail("document contains excessive aliasing", event)

    def document(self) -> Node:
        """Compose the document after a DocumentStartEvent, up to its DocumentEndEvent."""
        parser = self.parser
        anchors: dict[str, tuple[Node, int]] = {}
        open_anchors: set[str] = set()
        stack: list[_Frame] = []
        root: Node | None = None
        self.count(1, 0, None)  # go-yaml counts the document node
        while root is None:
            event: Any = parser.get_event()
            parent = stack[-1] if stack else None
            is_key = (parent is not None and isinstance(parent.node, MappingNode)
                      and parent.pending_key is None)
            done: tuple[Node, int, str | None] | None = None
            if isinstance(event, AliasEvent):
                if event.anchor in open_anchors:
                    raise self.fail("anchor value contains itself", event)
                if event.anchor not in anchors:
                    raise self.fail("unknown anchor referenced", event)
                target, size = anchors[event.anchor]
                self.count(1, 0, event)
                self.count(size, size, event)
                self.used_alias = True
                done = (target, 1 + size, None)
            elif isinstance(event, ScalarEvent):
                start: Any = event.start_mark
                tag = event.tag
                if tag is None or tag == "!":
                    tag = self.resolver.resolve(ScalarNode, event.value, event.implicit)
                node: Node = ScalarNode(tag, event.value, start, start, style=event.style)
                own = 0 if is_key and tag == _MERGE_TAG else 1
                self.count(own, 0, event)
                done = (node, own, event.anchor)
            elif isinstance(event, CollectionStartEvent):
                if len(stack) >= MAX_DEPTH:
                    raise self.fail(f"exceeded max depth of {MAX_DEPTH}", event)
                tag = event.tag
                start = event.start_mark
                if isinstance(event, SequenceStartEvent):
                    if tag is None or tag == "!":
                        tag = self.resolver.resolve(SequenceNode, None, event.implicit)
                    node = SequenceNode(tag, [], start, None,
                                        flow_style=event.flow_style)
                else:
                    if tag is None or tag == "!":
                        tag = self.resolver.resolve(MappingNode, None, event.implicit)
                    node = MappingNode(tag, [], start, None,
                                       flow_style=event.flow_style)
                # go-yaml's merge() does not unmarshal a sequence of maps itself, only its items.
                merge_value = (parent is not None and parent.pending_key is not None
                               and parent.pending_key.tag == _MERGE_TAG
                               and isinstance(node, SequenceNode))
                own = 0 if merge_value else 1
                self.count(own, 0, event)
                if event.anchor is not None:
                    open_anchors.add(event.anchor)
                stack.append(_Frame(node, event.anchor, own))
                continue
            elif isinstance(event, (SequenceEndEvent, MappingEndEvent)):
                frame = stack.pop()
                frame.node.end_mark = event.end_mark
                if frame.anchor is not None:
                    open_anchors.discard(frame.anchor)
                done = (frame.node, frame.size, frame.anchor)
            else:  # pragma: no cover - the parser never yields others inside a document
                raise self.fail("unexpected event", event)
            node, size, anchor = done
            if anchor is not None:
                anchors[anchor] = (node, size)  # a later anchor of the same name wins (go-yaml)
            if not stack:
                root = node
                break
            parent = stack[-1]
            parent.size += size
            if isinstance(parent.node, SequenceNode):
                parent.node.value.append(node)
            elif parent.pending_key is None:
                parent.pending_key = node
            else:
                parent.node.value.append((parent.pending_key, node))
                parent.pending_key = None
        end = parser.get_event()
        assert isinstance(end, DocumentEndEvent)
        return root


class _Resolver(Resolver):
    """PyYAML's YAML 1.1 resolver, with go-yaml v2's one-letter booleans (resolve.go:
    ``y``, ``Y`` are true and ``n``, ``N`` false)."""


_Resolver.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:y|Y|n|N)$"), list("yYnN"))


class _Constructor(SafeConstructor):
    """PyYAML's safe constructor with go-yaml v2's values: timestamps stay strings, and the
    one-letter booleans of :class:`_Resolver`."""

    bool_values = {**SafeConstructor.bool_values, "y": True, "n": False}
    yaml_constructors = {
        **SafeConstructor.yaml_constructors,
        "tag:yaml.org,2002:timestamp": SafeConstructor.construct_yaml_str,
    }


def _unshare(data: Any) -> Any:
    """Copy every container that occurs a second time, so the result is a tree. Iterative."""
    if not isinstance(data, (dict, list)):
        return data
    seen = {id(data)}
    stack: list[dict[Any, Any] | list[Any]] = [data]
    while stack:
        container = stack.pop()
        items = list(container.items()) if isinstance(container, dict) else list(
            enumerate(container))
        for key, value in items:
            if not isinstance(value, (dict, list)):
                continue
            if id(value) in seen:
                value = dict(value) if isinstance(value, dict) else list(value)
                container[key] = value
            seen.add(id(value))
            stack.append(value)
    return data


class _PyParser(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser):
    """PyYAML's pure-Python reader, scanner and parser (events only)."""

    def __init__(self, stream: bytes | str) -> None:
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)


def _parser(data: bytes | str, pure: bool = False) -> Any:
    if _CParser is not None and not pure:
        return _CParser(data)
    return _PyParser(data)


def _translate(exc: Exception, source: str) -> YAMLLoadError:
    if isinstance(exc, yaml.reader.ReaderError):
        return YAMLLoadError(f"not valid text: {_redact(exc.reason)} at byte {exc.position}",
                             source)
    if isinstance(exc, yaml.MarkedYAMLError):
        problem = "; ".join(p for p in (_redact(exc.context), _redact(exc.problem)) if p)
        mark = exc.problem_mark or exc.context_mark
        if mark is None:
            return YAMLLoadError(problem or "not valid YAML", source)
        return YAMLLoadError(problem or "not valid YAML", source, mark.line + 1,
                             mark.column + 1)
    if isinstance(exc, RecursionError):
        return YAMLLoadError("nested too deeply", source)
    return YAMLLoadError(f"a value cannot be converted ({type(exc).__name__})", source)


def _documents(data: bytes | str, source: str, single: bool) -> list[Any]:
    parser: Any = None
    out: list[Any] = []
    try:
        parser = _parser(data)  # the pure-Python reader checks the text here
        event = parser.get_event()
        assert isinstance(event, StreamStartEvent)
        while True:
            event = parser.get_event()
            if isinstance(event, StreamEndEvent):
                break
            assert isinstance(event, DocumentStartEvent)
            if single and out:
                mark: Any = event.start_mark
                raise YAMLLoadError("expected a single document in the stream", source,
                                    mark.line + 1, mark.column + 1)
            composer = _Composer(parser, source)
            root = composer.document()
            value = _Constructor().construct_document(root)
            out.append(_unshare(value) if composer.used_alias else value)
    except YAMLLoadError:
        raise
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError) as exc:
        raise _translate(exc, source) from None
    finally:
        dispose = getattr(parser, "dispose", None) if parser is not None else None
        if dispose is not None:
            dispose()
    return out


def load_yaml(data: bytes | str, source: str = "") -> Any:
    """Load exactly one YAML document (``None`` for an empty stream).

    Args:
        data: the document; bytes are UTF-8 (or UTF-16 with a byte order mark).
        source: where it came from, for error messages (a path, URL or request).

    Raises:
        YAMLLoadError: not YAML, several documents, excessive aliasing, an anchor that
            contains itself, an unknown anchor, or nesting deeper than :data:`MAX_DEPTH`.
    """
    docs = _documents(data, source, single=True)
    return docs[0] if docs else None


def load_all_yaml(data: bytes | str, source: str = "") -> list[Any]:
    """Load every document of a YAML stream; each document is checked on its own.

    Raises:
        YAMLLoadError: as :func:`load_yaml`, for the first bad document.
    """
    return _documents(data, source, single=False)
