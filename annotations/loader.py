"""Read annotation YAML files and Markdown articles into claims.

YAML is composed with `yaml.SafeLoader` into nodes and converted here (never constructed into
Python objects), so every value keeps its line and only plain YAML tags are accepted. Scalars
given where text is expected are taken exactly as written (``text: yes`` is the text ``yes``).

A file with any error yields no Article; `load_file` reports every error of it.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from annotations.errors import AnnotationError, AnnotationFileError, RefSyntaxError
from annotations.markdown import (
    LINE_BREAK_RE,
    PERMALINK_RE,
    Body,
    front_matter_close,
    front_matter_text,
    read_body,
)
from annotations.model import (
    WAIVABLE_STATUSES,
    Article,
    Claim,
    LoadResult,
    RefEntry,
    RepoFilter,
    Waiver,
)
from annotations.refs import Ref, RefForm, format_ref, parse_pin, parse_ref
from db.close_matches import close_matches, did_you_mean

MAX_FILE_BYTES = 2 * 1024 * 1024
"""Largest file read (2 MiB)."""
MAX_DEPTH = 20
"""Deepest YAML nesting, counting every node; the top-level mapping is level 1."""
MAX_NODES = 100_000
"""Most YAML nodes (keys included) after expanding aliases; refuses "billion laughs" bombs.

A minimal claim is 8 nodes, so this leaves room for MAX_CLAIMS claims.
"""
MAX_CLAIMS = 5_000
"""Most claims in one file (YAML claims plus, in Markdown, permalink claims)."""
CLAIM_ID_PATTERN = "^[a-z0-9][a-z0-9-]*$"

TOP_KEYS = ("article", "title", "at", "claims")
CLAIM_KEYS = ("id", "text", "at", "refs", "waive")
REF_KEYS = ("ref", "quote", "uses")
WAIVER_KEYS = ("status", "until", "reason")

_ID_RE = re.compile(CLAIM_ID_PATTERN.strip("^$"))
_DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_YAML_TAG = "tag:yaml.org,2002:"
_KINDS = {
    "str": "a string",
    "int": "an integer",
    "float": "a number",
    "bool": "a boolean",
    "null": "null",
    "timestamp": "a date",
    "seq": "a list",
    "map": "a mapping",
}
_TOO_MANY_HINT = ("split the file into several (an article's claims may come from many); "
                  "each use of an alias (*x) counts its anchor's nodes again")
_AT_HINT = "'at' takes REPO@VERSION, e.g. vllm@v0.20.0"
_SURROGATE_RE = re.compile("[\ud800-\udfff]")


# -- public API ---------------------------------------------------------------------------------


def load_annotation_file(path: Path, display: str | None = None) -> Article:
    """Read one annotation YAML file; raises AnnotationFileError (the first error found)."""
    shown = display if display is not None else path.as_posix()
    return load_annotation_text(_read_text(path, shown), shown)


def load_annotation_text(
    text: str, display: str, composed: ComposedYaml | None = None
) -> Article:
    """Like `load_annotation_file` for text already read; `display` names it in errors;
    ``composed``: its YAML, when it was composed already."""
    return _raise_first(_collect_yaml(text, display, composed))


def load_markdown_article(
    path: Path, display: str | None = None, repos: RepoFilter | None = None
) -> Article:
    """Read one Markdown article (front matter claims and permalink claims; with
    ``repos``, only the permalinks into the repos it tracks)."""
    shown = display if display is not None else path.as_posix()
    return load_markdown_text(_read_text(path, shown), shown, repos)


def load_markdown_text(
    text: str, display: str, repos: RepoFilter | None = None,
    composed: ComposedYaml | None = None,
) -> Article:
    """Like `load_markdown_article` for text already read; `display` is also the default
    path; ``composed``: its front matter's YAML, when it was composed already."""
    return _raise_first(_collect_markdown(text, display, repos, composed))


def load_file(
    path: Path, root: Path, *, markdown: bool, repos: RepoFilter | None = None,
    data: bytes | None = None,
) -> LoadResult:
    """One file, with every error it has (`link` loads each file so, and goes on to the
    next), from ``data`` when its bytes were read already. Its display path (and a Markdown
    article's default path) is its POSIX path relative to ``root``."""
    article, errors = _load_file(path, root, markdown, repos, data)
    return LoadResult([article] if article is not None else [], errors,
                      dict(repos.skipped) if repos is not None else {})


def _load_file(
    path: Path, root: Path, markdown: bool, repos: RepoFilter | None,
    data: bytes | None = None,
) -> tuple[Article | None, list[AnnotationError]]:
    display = display_path(path, root)
    if _SURROGATE_RE.search(display):
        return None, [AnnotationFileError("the file name is not valid UTF-8",
                                          file=escaped_name(display), hint="rename the file")]
    collect: Callable = (functools.partial(_collect_markdown, repos=repos) if markdown
                         else _collect_yaml)
    try:
        text = _read_text(path, display) if data is None else _text_of(data, display)
        return collect(text, display)
    except AnnotationError as error:
        return None, [error]


# -- reading ------------------------------------------------------------------------------------


def escaped_name(name: str) -> str:
    """A file name whose bytes are not UTF-8, with those bytes written ``\\xNN``."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def display_path(path: Path, root: Path) -> str:
    if path.is_relative_to(root):
        return path.relative_to(root).as_posix()
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError):  # a symlink loop: no file, the path as given
        return path.as_posix()
    if resolved.is_relative_to(root.resolve()):
        return resolved.relative_to(root.resolve()).as_posix()
    return path.as_posix()


def _read_text(path: Path, display: str) -> str:
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        message = f"cannot read file: {error.strerror or error}"
        raise AnnotationFileError(message, file=display) from None
    return _text_of(data, display)


def _text_of(data: bytes, display: str) -> str:
    if len(data) > MAX_FILE_BYTES:
        raise AnnotationFileError(f"file is larger than {MAX_FILE_BYTES} bytes", file=display,
                                  hint="split it into several files")
    return _decode_utf8(data, display)


def _decode_utf8(data: bytes, display: str) -> str:
    """Decode `data` as UTF-8 (dropping a BOM); a bad byte is an error naming its offset."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise AnnotationFileError(
            f"not valid UTF-8: byte 0x{data[error.start]:02x} at offset {error.start}",
            file=display,
            line=line,
        ) from None
    return text.removeprefix("\ufeff")


def _raise_first(outcome: tuple[Article | None, list[AnnotationError]]) -> Article:
    article, errors = outcome
    if errors:
        raise errors[0]
    assert article is not None
    return article


# -- YAML nodes ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Scalar:
    line: int
    kind: str
    text: str


@dataclass(frozen=True)
class _Seq:
    line: int
    items: tuple[_Node, ...]


@dataclass(frozen=True)
class _Map:
    line: int
    items: dict[str, _Node]
    key_lines: dict[str, int]


_Node = _Scalar | _Seq | _Map
_Pin = tuple[str, str] | None


class _Fatal(Exception):
    """Stops reading a file: the error is already recorded."""


class _ComposeLimit(Exception):
    """Raised by the composer at the first node past MAX_DEPTH or MAX_NODES."""

    def __init__(self, line: int | None, too_deep: bool) -> None:
        super().__init__(line)
        self.line = line
        self.too_deep = too_deep


@dataclass
class _Context:
    """The file being read, its YAML when it was composed already, and the errors found
    so far."""

    display: str
    composed: ComposedYaml | None = None
    errors: list[AnnotationError] = field(default_factory=list)

    def error(self, line: int | None, message: str, hint: str | None = None) -> None:
        self.errors.append(AnnotationFileError(message, file=self.display, line=line, hint=hint))

    def sorted_errors(self) -> list[AnnotationError]:
        """The errors in line order (stable; errors without a line first)."""
        return sorted(self.errors, key=lambda error: error.line or 0)

    def fatal(self, line: int | None, message: str, hint: str | None = None) -> _Fatal:
        self.error(line, message, hint)
        return _Fatal()


class _Limited(yaml.composer.Composer):
    """A composer that stops past MAX_DEPTH (no RecursionError) or MAX_NODES."""

    depth = count = 0

    if TYPE_CHECKING:  # the parser's, PyYAML's or libyaml's, that a loader mixes in
        def peek_event(self) -> yaml.Event: ...
        def dispose(self) -> None: ...

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node | None:
        self.depth += 1
        self.count += 1
        try:
            if self.depth > MAX_DEPTH or self.count > MAX_NODES:
                mark = self.peek_event().start_mark
                line = None if mark is None else mark.line + 1
                raise _ComposeLimit(line, too_deep=self.depth > MAX_DEPTH)
            # PyYAML passes None, or a mapping value's key node, where its stubs say an int
            return super().compose_node(parent, index)  # type: ignore[arg-type]  # stubs: int
        finally:
            self.depth -= 1


class _DepthLimitedLoader(_Limited, yaml.SafeLoader):
    """PyYAML's own SafeLoader, all in Python, composing with the limits."""

    def get_single_node(self) -> yaml.Node | None:
        try:
            return super().get_single_node()
        except (ValueError, OverflowError) as error:  # chr() of an escape such as \UFFFFFFFF
            if isinstance(error, UnicodeError):
                raise
            raise yaml.scanner.ScannerError(
                problem="an escape names no Unicode character (at most \\U0010FFFF)",
                problem_mark=self.get_mark()) from None


if yaml.__with_libyaml__:
    from yaml._yaml import CParser  # which yaml.cyaml's loaders use, not exporting it

    class _FastLoader(_Limited, CParser, yaml.constructor.SafeConstructor,
                      yaml.resolver.Resolver):
        """libyaml's events (10x faster than PyYAML's scanner and parser, which are most
        of a large collection's link), composed in Python with the limits."""

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            yaml.composer.Composer.__init__(self)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)

        # PyYAML passes the event's anchor, a str or None, where its stubs say a dict
        def compose_scalar_node(  # type: ignore[override]  # stubs: anchor is a dict
            self, anchor: str | None
        ) -> yaml.ScalarNode:
            event = self.peek_event()
            if isinstance(event, yaml.ScalarEvent) and event.tag == "!":
                event.implicit = (True, False)  # PyYAML: a lone '!' is untagged ('at: !' is null)
            return super().compose_scalar_node(anchor)  # type: ignore[arg-type]  # stubs: dict


@dataclass(frozen=True)
class ComposedYaml:
    """The YAML ``text`` composed as `link` composes it: its ``root`` node. `fix` composes
    a file to edit it, and reads its claims from that very tree."""

    text: str
    root: yaml.Node


def _compose(text: str, ctx: _Context) -> yaml.Node | None:
    if ctx.composed is not None and ctx.composed.text == text:
        return ctx.composed.root
    try:
        return _compose_single(text)
    except _ComposeLimit as error:
        if error.too_deep:
            raise ctx.fatal(error.line, _too_deep_message()) from None
        raise ctx.fatal(error.line, _too_many_message(), hint=_TOO_MANY_HINT) from None
    except yaml.MarkedYAMLError as error:
        tab = "'\\t'" in (error.problem or "")
        raise ctx.fatal(_mark_line(error), _yaml_message(error),
                        hint=_TAB_HINT if tab else None) from None
    except yaml.reader.ReaderError as error:
        line = text.count("\n", 0, error.position) + 1
        message = f"invalid YAML: unacceptable character U+{error.character:04X}"
        raise ctx.fatal(line, message) from None
    except (yaml.YAMLError, ValueError, RecursionError) as error:
        raise ctx.fatal(None, f"invalid YAML: {error}") from None


def compose_yaml(text: str) -> yaml.Node | None:
    """``text``'s YAML as `link` reads it, or None when it is not YAML that `link` reads:
    `fix` edits the very tree whose claims were stored (libyaml and PyYAML read a few
    texts differently, such as a U+FEFF that starts a line)."""
    try:
        return _compose_single(text)
    except (yaml.YAMLError, _ComposeLimit, ValueError, RecursionError):
        return None


def _compose_single(text: str) -> yaml.Node | None:
    if yaml.__with_libyaml__:
        try:
            return _composed(_FastLoader, text)
        except (yaml.YAMLError, _ComposeLimit, UnicodeError, ValueError):
            pass  # said as PyYAML's own parser says it: its messages, its lines
    return _composed(_DepthLimitedLoader, text)


def _composed(loader_class: Callable[[str], _Limited], text: str) -> yaml.Node | None:
    loader = loader_class(text)
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()


_TAB_HINT = "write spaces in place of the tab: YAML takes none there"


def _too_deep_message() -> str:
    return f"YAML nesting is deeper than {MAX_DEPTH} levels"


def _too_many_message() -> str:
    return f"more than {MAX_NODES} YAML nodes (aliases counted as expanded)"


def _mark_line(error: yaml.MarkedYAMLError) -> int | None:
    """The problem's line; where the construct began when the problem is that the text
    ended (an unclosed quote or bracket: its opening line is the one to mend)."""
    mark = error.problem_mark or error.context_mark
    ended = any(end in (error.problem or "") for end in ("end of stream", "<stream end>"))
    if error.context_mark is not None and ended:
        mark = error.context_mark
    return None if mark is None else mark.line + 1


def _yaml_message(error: yaml.MarkedYAMLError) -> str:
    context = error.context
    line = _mark_line(error)
    if (context and context.startswith("while ") and error.context_mark is not None
            and error.context_mark.line + 1 != line):
        context = f"{context} (on line {error.context_mark.line + 1})"
    parts = [part for part in (context, error.problem) if part]
    return "invalid YAML: " + (", ".join(parts) if parts else "unreadable document")


class _Converter:
    """Turns composed nodes into _Node trees, counting nodes as aliases are expanded."""

    def __init__(self, ctx: _Context) -> None:
        self.ctx = ctx
        self.count = 0

    def convert(self, node: yaml.Node, depth: int) -> _Node:
        line = node.start_mark.line + 1
        self._count(line, depth)
        kind = self._kind(node, line)
        if isinstance(node, yaml.ScalarNode):
            surrogate = _SURROGATE_RE.search(node.value)
            if surrogate:  # an escape such as "\ud800": no text can be stored with it
                raise self.ctx.fatal(line, f"invalid character U+{ord(surrogate[0]):04X} (half "
                                           "of a UTF-16 pair)", hint="remove it, or write the "
                                           "character itself")
            return _Scalar(line, kind, node.value)
        if isinstance(node, yaml.SequenceNode):
            return _Seq(line, tuple(self.convert(item, depth + 1) for item in node.value))
        assert isinstance(node, yaml.MappingNode)  # the third and last kind of node
        return self._mapping(node, line, depth)

    def _count(self, line: int, depth: int) -> None:
        self.count += 1
        if self.count > MAX_NODES:
            raise self.ctx.fatal(line, _too_many_message(), hint=_TOO_MANY_HINT)
        if depth > MAX_DEPTH:
            raise self.ctx.fatal(line, _too_deep_message())

    def _kind(self, node: yaml.Node, line: int) -> str:
        tag = node.tag or ""
        short = tag.removeprefix(_YAML_TAG) if tag.startswith(_YAML_TAG) else None
        if short == "merge":
            raise self.ctx.fatal(line, "YAML merge keys ('<<') are not supported")
        if short not in _KINDS:
            shown = f"!!{short}" if short is not None else tag
            raise self.ctx.fatal(
                line, f"unsupported YAML tag '{shown}'", hint="only plain YAML data is read"
            )
        return short

    def _mapping(self, node: yaml.MappingNode, line: int, depth: int) -> _Map:
        items: dict[str, _Node] = {}
        key_lines: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = self.convert(key_node, depth + 1)
            value = self.convert(value_node, depth + 1)
            if not isinstance(key, _Scalar):
                self.ctx.error(key.line, "mapping keys must be plain strings")
            elif key.text in items:
                first = key_lines[key.text]
                self.ctx.error(key.line, f"duplicate key '{key.text}' (first at line {first})")
            else:
                items[key.text] = value
                key_lines[key.text] = key.line
        return _Map(line, items, key_lines)


def _parse_tree(text: str, ctx: _Context) -> _Node | None:
    node = _compose(text, ctx)
    return None if node is None else _Converter(ctx).convert(node, 1)


# -- values -------------------------------------------------------------------------------------


def _describe(node: _Node) -> str:
    if isinstance(node, _Scalar):
        return _KINDS[node.kind]
    return "a list" if isinstance(node, _Seq) else "a mapping"


def _is_null(node: _Node) -> bool:
    return isinstance(node, _Scalar) and node.kind == "null"


def _string(node: _Node, what: str, ctx: _Context) -> str | None:
    """The scalar's text as written; an error (and None) for lists, mappings, null and ''."""
    if not isinstance(node, _Scalar) or node.kind == "null":
        ctx.error(node.line, f"{what} must be a string, not {_describe(node)}")
        return None
    if not node.text.strip():
        ctx.error(node.line, f"{what} must not be empty")
        return None
    return node.text


def _optional_string(mapping: _Map, key: str, what: str, ctx: _Context) -> str | None:
    node = mapping.items.get(key)
    return None if node is None or _is_null(node) else _string(node, what, ctx)


def _check_keys(mapping: _Map, allowed: tuple[str, ...], where: str, ctx: _Context) -> None:
    for key, line in mapping.key_lines.items():
        if key not in allowed:
            close = close_matches(key, allowed, n=1, cutoff=0.8)  # as config keys are
            hint = f"{did_you_mean(close)} " if close else ""
            ctx.error(line, f"unknown key '{key}' {where} ({hint}allowed: {', '.join(allowed)})")


def _pin(mapping: _Map, what: str, ctx: _Context) -> _Pin:
    text = _optional_string(mapping, "at", what, ctx)
    if text is None:
        return None
    try:
        return parse_pin(text)
    except RefSyntaxError as error:
        ctx.error(mapping.items["at"].line, error.message, hint=_AT_HINT)
        return None


def _at_line(mapping: _Map) -> int | None:
    node = mapping.items.get("at")
    return None if node is None else node.line


def _date(node: _Node, what: str, ctx: _Context) -> datetime.date | None:
    text = node.text.strip() if isinstance(node, _Scalar) and node.kind != "null" else None
    if text is not None and _DATE_RE.fullmatch(text):
        try:
            return datetime.date.fromisoformat(text)
        except ValueError as error:  # the right form, but no such day
            ctx.error(node.line, f"invalid date '{text}' for {what}: {error}")
            return None
    shown = text if text is not None else _describe(node)
    ctx.error(node.line, f"invalid date '{shown}' for {what}: expected YYYY-MM-DD")
    return None


# -- articles and claims ------------------------------------------------------------------------


@dataclass
class _ClaimScope:
    """What the claims of one file share."""

    ctx: _Context
    article: str
    at: _Pin
    at_line: int | None = None
    first_lines: dict[str, int] = field(default_factory=dict)


def _collect_yaml(
    text: str, display: str, composed: ComposedYaml | None = None
) -> tuple[Article | None, list[AnnotationError]]:
    ctx = _Context(display, composed)
    try:
        tree = _parse_tree(text, ctx)
        article = _article(tree, ctx, default_path=None)
    except _Fatal:
        article = None
    return (None if ctx.errors else article), ctx.sorted_errors()


def _article(tree: _Node | None, ctx: _Context, default_path: str | None) -> Article:
    """Build an Article from a top-level mapping; `default_path` set means Markdown front matter."""
    if tree is None and default_path is not None:
        return Article(default_path, None, ctx.display, ())
    if not isinstance(tree, _Map):
        found = "an empty document" if tree is None else _describe(tree)
        line = 1 if tree is None else tree.line
        raise ctx.fatal(line, f"the top level must be a mapping, not {found}")
    _check_keys(tree, TOP_KEYS, "at top level", ctx)
    path = _article_path(tree, ctx, default_path)
    title = _optional_string(tree, "title", "'title'", ctx)
    scope = _ClaimScope(ctx, path or "", _pin(tree, "'at'", ctx), _at_line(tree))
    claims = _claims(tree, scope, required=default_path is None)
    return Article(path or "", title, ctx.display, claims)


def _article_path(tree: _Map, ctx: _Context, default_path: str | None) -> str | None:
    if default_path is not None:
        return _optional_string(tree, "article", "'article'", ctx) or default_path
    if "article" not in tree.items:
        ctx.error(tree.line, "missing required key 'article' at top level")
        return None
    return _string(tree.items["article"], "'article'", ctx)


def _claims(tree: _Map, scope: _ClaimScope, required: bool) -> tuple[Claim, ...]:
    node = tree.items.get("claims")
    if node is None:
        if required:
            scope.ctx.error(tree.line, "missing required key 'claims' at top level")
        return ()
    if not isinstance(node, _Seq):
        scope.ctx.error(node.line, f"'claims' must be a list, not {_describe(node)}")
        return ()
    if len(node.items) > MAX_CLAIMS:
        raise scope.ctx.fatal(node.line, f"too many claims ({len(node.items)}, max {MAX_CLAIMS})")
    built = (_claim(item, index, scope) for index, item in enumerate(node.items, 1))
    return tuple(claim for claim in built if claim is not None)


def _claim(node: _Node, index: int, scope: _ClaimScope) -> Claim | None:
    ctx = scope.ctx
    if not isinstance(node, _Map):
        ctx.error(node.line, f"claim #{index} must be a mapping, not {_describe(node)}")
        return None
    errors_before = len(ctx.errors)
    claim_id = _claim_id(node, index, scope)
    label = _claim_label(node, index)
    _check_keys(node, CLAIM_KEYS, f"in {label}", ctx)
    text = _claim_text(node, label, ctx)
    own = _pin(node, f"'at' of {label}", ctx)
    at, at_line = (own, _at_line(node)) if own else (scope.at, scope.at_line)
    refs = _refs(node, label, at, ctx)
    waivers = _waivers(node, label, ctx)
    if len(ctx.errors) > errors_before or claim_id is None or text is None:
        return None
    at_text = f"{at[0]}@{at[1]}" if at else None
    return Claim(scope.article, claim_id, text, at_text, refs, waivers, ctx.display, node.line,
                 at_line=at_line if at else None)


def _claim_label(node: _Map, index: int) -> str:
    id_node = node.items.get("id")
    if isinstance(id_node, _Scalar) and id_node.kind != "null" and id_node.text.strip():
        return f"claim '{id_node.text}'"
    return f"claim #{index}"


def _claim_id(node: _Map, index: int, scope: _ClaimScope) -> str | None:
    id_node = node.items.get("id")
    if id_node is None:
        scope.ctx.error(node.line, f"claim #{index} is missing 'id'")
        return None
    claim_id = _string(id_node, f"'id' of claim #{index}", scope.ctx)
    if claim_id is None:
        return None
    if not _ID_RE.fullmatch(claim_id):
        message = f"invalid claim id '{claim_id}': must match {CLAIM_ID_PATTERN}"
        scope.ctx.error(id_node.line, message, _id_like(claim_id))
        return None
    return _register_id(claim_id, node.line, scope)


def _id_like(claim_id: str) -> str:
    """What to write instead of ``claim_id``: its words in lowercase, joined by ``-``."""
    words = "-".join(re.findall(r"[a-z0-9]+", claim_id.lower()))
    if words:
        return f"lowercase letters, digits and '-': '{words}'"
    return "lowercase letters, digits and '-', e.g. 'kv-cache-size'"


def _register_id(claim_id: str, line: int, scope: _ClaimScope) -> str | None:
    if claim_id in scope.first_lines:
        first = scope.first_lines[claim_id]
        scope.ctx.error(line, f"duplicate claim id '{claim_id}' (first defined at line {first})")
        return None
    scope.first_lines[claim_id] = line
    return claim_id


def _claim_text(node: _Map, label: str, ctx: _Context) -> str | None:
    if "text" not in node.items:
        ctx.error(node.line, f"{label} is missing 'text'")
        return None
    return _string(node.items["text"], f"'text' of {label}", ctx)


def _refs(node: _Map, label: str, at: _Pin, ctx: _Context) -> tuple[RefEntry, ...]:
    refs = node.items.get("refs")
    if refs is None or _is_null(refs) or (isinstance(refs, _Seq) and not refs.items):
        ctx.error(node.line if refs is None else refs.line, f"{label} has no refs")
        return ()
    if not isinstance(refs, _Seq):
        ctx.error(refs.line, f"'refs' of {label} must be a list, not {_describe(refs)}")
        return ()
    built = (_ref_entry(item, label, at, ctx) for item in refs.items)
    return tuple(entry for entry in built if entry is not None)


def _ref_entry(node: _Node, label: str, at: _Pin, ctx: _Context) -> RefEntry | None:
    if isinstance(node, _Scalar) and node.kind != "null":
        ref = _parse_ref_at(node.text, node.line, at, ctx)
        return None if ref is None else RefEntry(node.text, ref, node.line)
    if isinstance(node, _Map):
        return _ref_mapping(node, label, at, ctx)
    found = _describe(node)
    ctx.error(node.line, f"each ref of {label} must be a string or a mapping, not {found}")
    return None


def _ref_mapping(node: _Map, label: str, at: _Pin, ctx: _Context) -> RefEntry | None:
    _check_keys(node, REF_KEYS, f"in a ref of {label}", ctx)
    if "ref" not in node.items:
        ctx.error(node.line, f"a ref of {label} is missing 'ref'")
        return None
    ref_node = node.items["ref"]
    text = _string(ref_node, f"'ref' of a ref of {label}", ctx)
    ref = None if text is None else _parse_ref_at(text, ref_node.line, at, ctx)
    quote = _optional_string(node, "quote", f"'quote' of a ref of {label}", ctx)
    own_pin = (ref.repo, ref.version) if ref is not None and ref.repo and ref.version else at
    uses = _uses(node.items.get("uses"), label, own_pin, ctx)
    if ref is None or text is None or uses is None:
        return None
    return RefEntry(text, ref, ref_node.line, quote, uses)


def _uses(node: _Node | None, label: str, at: _Pin, ctx: _Context) -> tuple[str, ...] | None:
    if node is None or _is_null(node):
        return ()
    if not isinstance(node, _Seq):
        ctx.error(node.line, f"'uses' of a ref of {label} must be a list, not {_describe(node)}")
        return None
    texts = [_string(item, f"each entry of 'uses' of {label}", ctx) for item in node.items]
    refs = [
        None if text is None else _parse_ref_at(text, item.line, at, ctx)
        for text, item in zip(texts, node.items, strict=True)
    ]
    if any(ref is None for ref in refs):
        return None
    return tuple(format_ref(ref) for ref in refs if ref is not None)


def _parse_ref_at(text: str, line: int, at: _Pin, ctx: _Context) -> Ref | None:
    try:
        ref = parse_ref(text)
    except RefSyntaxError as error:
        ctx.error(line, error.message, hint=error.hint)
        return None
    return ref.with_pin(*at) if at else ref


def _waivers(node: _Map, label: str, ctx: _Context) -> tuple[Waiver, ...]:
    waive = node.items.get("waive")
    if waive is None or _is_null(waive):
        return ()
    if not isinstance(waive, _Seq):
        ctx.error(waive.line, f"'waive' of {label} must be a list, not {_describe(waive)}")
        return ()
    built = (_waiver(item, label, ctx) for item in waive.items)
    return tuple(waiver for waiver in built if waiver is not None)


def _waiver(node: _Node, label: str, ctx: _Context) -> Waiver | None:
    if not isinstance(node, _Map):
        ctx.error(node.line, f"each waiver of {label} must be a mapping, not {_describe(node)}")
        return None
    _check_keys(node, WAIVER_KEYS, f"in a waiver of {label}", ctx)
    missing = [key for key in WAIVER_KEYS if key not in node.items]
    for key in missing:
        ctx.error(node.line, f"a waiver of {label} is missing '{key}'")
    if missing:
        return None
    status = _waiver_status(node.items["status"], label, ctx)
    until = _date(node.items["until"], f"'until' of a waiver of {label}", ctx)
    reason = _string(node.items["reason"], f"'reason' of a waiver of {label}", ctx)
    if status is None or until is None or reason is None:
        return None
    return Waiver(status, until, reason, node.line)


def _waiver_status(node: _Node, label: str, ctx: _Context) -> str | None:
    status = _string(node, f"'status' of a waiver of {label}", ctx)
    if status is not None and status not in WAIVABLE_STATUSES:
        allowed = ", ".join(WAIVABLE_STATUSES)
        ctx.error(node.line, f"unknown waiver status '{status}' (allowed: {allowed})")
        return None
    return status


# -- Markdown -----------------------------------------------------------------------------------


def _collect_markdown(
    text: str, display: str, repos: RepoFilter | None = None,
    composed: ComposedYaml | None = None,
) -> tuple[Article | None, list[AnnotationError]]:
    ctx = _Context(display, composed)
    lines = LINE_BREAK_RE.split(text)
    try:
        front, body_start = _front_matter(lines, ctx)
        article = _article(front, ctx, default_path=display)
        links = _link_claims(lines, body_start, article.path, ctx, repos)
        claims = _merge_claims(article.claims, links, ctx)
    except _Fatal:
        return None, ctx.sorted_errors()
    if ctx.errors:
        return None, ctx.sorted_errors()
    return Article(article.path, article.title, display, claims), []


def _front_matter(lines: list[str], ctx: _Context) -> tuple[_Node | None, int]:
    """The front matter's tree (None when absent or empty) and the index of the body's line."""
    if lines[0].rstrip() != "---":
        return None, 0
    close = front_matter_close(lines)
    if close is None:
        raise ctx.fatal(1, "front matter opened on line 1 is not closed", hint="end it with '---'")
    return _parse_tree(front_matter_text(lines, close), ctx), close + 1


def _merge_claims(own: tuple[Claim, ...], links: list[Claim], ctx: _Context) -> tuple[Claim, ...]:
    first_lines = {claim.claim_id: claim.line for claim in own}
    for claim in links:
        if claim.claim_id in first_lines:
            first = first_lines[claim.claim_id]
            ctx.error(
                claim.line,
                f"duplicate claim id '{claim.claim_id}' (first defined at line {first})",
            )
    total = len(own) + len(links)
    if total > MAX_CLAIMS:
        raise ctx.fatal(None, f"too many claims ({total}, max {MAX_CLAIMS})")
    return own + tuple(links)


def _link_claims(
    lines: list[str], body_start: int, article: str, ctx: _Context, repos: RepoFilter | None
) -> list[Claim]:
    body = read_body(lines, body_start)
    claims: list[Claim] = []
    seen: dict[str, int] = {}
    for index in body.visible:
        for url in body.permalinks(index):
            permalink = PERMALINK_RE.match(url)  # as every URL permalinks gives
            if repos is not None and permalink and not repos.keeps(permalink["repo"]):
                continue
            seen[url] = seen.get(url, 0) + 1
            claims.append(_link_claim(body, index, url, seen[url], article, ctx))
            if len(claims) > MAX_CLAIMS:
                raise ctx.fatal(index + 1, f"too many claims (more than {MAX_CLAIMS})")
    return claims


def link_claim_id(article: str, url: str, occurrence: int = 1) -> str:
    """Stable id of the claim made from `url` in `article`: ``link-`` + 10 hex of sha1."""
    digest = hashlib.sha1(f"{article}\n{url}".encode()).hexdigest()[:10]
    return f"link-{digest}" if occurrence == 1 else f"link-{digest}-{occurrence}"


def _link_claim(
    body: Body, index: int, url: str, occurrence: int, article: str, ctx: _Context
) -> Claim:
    line = index + 1
    try:
        entry = RefEntry(url, parse_ref(url), line)
    except RefSyntaxError as error:
        entry = RefEntry(url, Ref(None, None, RefForm.PERMALINK), line, unreadable=error)
    claim_id = link_claim_id(article, url, occurrence)
    return Claim(
        article, claim_id, body.text_of_link(index, url), None, (entry,), (), ctx.display,
        line, body_link=True,
    )


