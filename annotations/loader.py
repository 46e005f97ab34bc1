"""Read annotation YAML files and Markdown articles into claims.

YAML is composed with `yaml.SafeLoader` into nodes and converted here (never constructed into
Python objects), so every value keeps its line and only plain YAML tags are accepted. Scalars
given where text is expected are taken exactly as written (``text: yes`` is the text ``yes``).

A file with any error yields no Article; `load_all` reports every error of every file.
"""

from __future__ import annotations

import bisect
import datetime
import functools
import hashlib
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import yaml

from annotations.errors import AnnotationError, AnnotationFileError, RefSyntaxError
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
MAX_LINK_TEXT = 300
"""Longest text of a claim made from a permalink in a Markdown article, in characters."""
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
_LINE_BREAK_RE = re.compile("\r\n|[\r\n\x85\u2028\u2029]")
_URL_RE = re.compile(r"https://github\.com/[A-Za-z0-9\-._~:/?#@!$&*+,;=%]+")
_PERMALINK_RE = re.compile(r"https://github\.com/(?P<repo>[^/]+/[^/]+)/blob/")
URL_TRAILING = ".,;:!?*_~"
"""What ends a URL in prose rather than belonging to it, as GitHub's autolinks read it
(``~~URL~~`` and ``_URL_`` are struck out and emphasised, not part of the path)."""
_BLOCK_START_RE = re.compile(r"\s*(#{1,6}(\s|$)|[-*+]\s|[0-9]+[.)]\s|>|```|~~~|\|)")
_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_BACKTICKS_RE = re.compile(r"`+")
_LIST_ITEM_RE = re.compile(r"(?:[-*+]|\d{1,9}[.)])(?:[ \t]{1,4}|$)")
# A fence, also inside block quotes and list items (their markers and indentation first).
_FENCE_RE = re.compile(r"(?:[ \t]*>)*[ \t]*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+)?"
                       r"(?P<fence>`{3,}|~{3,})(?P<info>.*)")
_SINGLE_LINE_BLOCK_RE = re.compile(r"\s*(#{1,6}(\s|$)|```|~~~)")
_REFERENCE_DEFINITION_RE = re.compile(
    r" {0,3}\[(?P<label>[^\[\]]{1,999})\]:[ \t]*<?(?P<url>[^\s>]+)")
# A full ([text][label]), collapsed ([label][]) or shortcut ([label]) reference link; a
# shortcut is not followed by '(' or ':' (an inline link, a definition).
_REFERENCE_USE_RE = re.compile(
    r"!?\[(?P<text>[^\[\]]{1,999})\](?:\[(?P<ref>[^\[\]]{0,999})\]|(?![(:\[]))")
_QUOTE_RE = re.compile(r"[ \t]*(?:>[ \t]?)+")
_MARKER_RE = re.compile(r"^(?:#{1,6}\s+|(?:>\s?)+|[-*+]\s+|[0-9]+[.)]\s+)")
_MAX_LABEL, _MAX_DESTINATION, _MAX_TITLE = 500, 2000, 500
"""The longest label, destination and title of an inline link read (see `_inline_links`)."""
_DESTINATION_END_RE = re.compile(r"[)\s>]")
_OPEN_RE, _CLOSE_RE, _QUOTE_MARK_RE = re.compile(r"\["), re.compile(r"\]"), re.compile('"')
_RAW_HTML_OPEN_RE = re.compile(r" {0,3}<(?P<tag>pre|script|style|textarea)(?:[\s>]|$)",
                               re.IGNORECASE)
Span = tuple[int, int]
"""A [start, stop) range of columns of a line."""
_COMMENT_OPEN_RE = re.compile(r" {0,3}<!--")
_AUTOLINK_RE = re.compile(r"<(https?://[^<>\s]+)>")
_MAX_REDUCED = 10 * MAX_LINK_TEXT
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")


# -- public API ---------------------------------------------------------------------------------


def load_annotation_file(path: Path, display: str | None = None) -> Article:
    """Read one annotation YAML file; raises AnnotationFileError (the first error found)."""
    shown = display if display is not None else path.as_posix()
    return load_annotation_text(_read_text(path, shown), shown)


def load_annotation_text(text: str, display: str) -> Article:
    """Like `load_annotation_file` for text already read; `display` names it in errors."""
    return _raise_first(_collect_yaml(text, display))


def load_markdown_article(
    path: Path, display: str | None = None, repos: RepoFilter | None = None
) -> Article:
    """Read one Markdown article (front matter claims and permalink claims; with
    ``repos``, only the permalinks into the repos it tracks)."""
    shown = display if display is not None else path.as_posix()
    return load_markdown_text(_read_text(path, shown), shown, repos)


def load_markdown_text(text: str, display: str, repos: RepoFilter | None = None) -> Article:
    """Like `load_markdown_article` for text already read; `display` is also the default path."""
    return _raise_first(_collect_markdown(text, display, repos))


def load_all(
    yaml_files: Iterable[Path], markdown_files: Iterable[Path], root: Path,
    repos: RepoFilter | None = None,
) -> LoadResult:
    """Load every file, collecting every file's errors instead of stopping at the first.

    Display paths (and Markdown articles' default paths) are POSIX paths relative to `root`.
    """
    result = LoadResult()
    jobs: list[tuple[Path, Callable]] = [(path, _collect_yaml) for path in yaml_files]
    jobs += [(path, functools.partial(_collect_markdown, repos=repos))
             for path in markdown_files]
    for path, collect in jobs:
        display = display_path(path, root)
        if _SURROGATE_RE.search(display):
            result.errors.append(AnnotationFileError(
                "the file name is not valid UTF-8", file=escaped_name(display),
                hint="rename the file"))
            continue
        try:
            article, errors = collect(_read_text(path, display), display)
        except AnnotationError as error:
            article, errors = None, [error]
        result.errors.extend(errors)
        if article is not None:
            result.articles.append(article)
    if repos is not None:
        result.untracked = dict(repos.skipped)
    return result


# -- reading ------------------------------------------------------------------------------------


def escaped_name(name: str) -> str:
    """A file name whose bytes are not UTF-8, with those bytes written ``\\xNN``."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def display_path(path: Path, root: Path) -> str:
    for candidate, base in ((path, root), (path.resolve(), root.resolve())):
        try:
            return candidate.relative_to(base).as_posix()
        except ValueError:
            continue
    return path.as_posix()


def _read_text(path: Path, display: str) -> str:
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        message = f"cannot read file: {error.strerror or error}"
        raise AnnotationFileError(message, file=display) from None
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

    def __init__(self, line: int, too_deep: bool) -> None:
        super().__init__(line)
        self.line = line
        self.too_deep = too_deep


@dataclass
class _Context:
    """The file being read and the errors found so far."""

    display: str
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

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node:
        self.depth += 1
        self.count += 1
        try:
            if self.depth > MAX_DEPTH or self.count > MAX_NODES:
                line = self.peek_event().start_mark.line + 1
                raise _ComposeLimit(line, too_deep=self.depth > MAX_DEPTH)
            return super().compose_node(parent, index)
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
    class _FastLoader(_Limited, yaml.cyaml.CParser, yaml.constructor.SafeConstructor,
                      yaml.resolver.Resolver):
        """libyaml's events (10x faster than PyYAML's scanner and parser, which are most
        of a large collection's link), composed in Python with the limits."""

        def __init__(self, stream: str) -> None:
            yaml.cyaml.CParser.__init__(self, stream)
            yaml.composer.Composer.__init__(self)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)

        def compose_scalar_node(self, anchor: str | None) -> yaml.ScalarNode:
            event = self.peek_event()
            if event.tag == "!":  # PyYAML resolves a lone '!' as untagged ('at: !' is null)
                event.implicit = (True, False)
            return super().compose_scalar_node(anchor)


def _compose(text: str, ctx: _Context) -> yaml.Node | None:
    try:
        return _compose_single(text)
    except _ComposeLimit as error:
        if error.too_deep:
            raise ctx.fatal(error.line, _too_deep_message()) from None
        raise ctx.fatal(error.line, _too_many_message(), hint=_TOO_MANY_HINT) from None
    except yaml.MarkedYAMLError as error:
        raise ctx.fatal(_mark_line(error), _yaml_message(error)) from None
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


def _composed(loader_class: type[_Limited], text: str) -> yaml.Node | None:
    loader = loader_class(text)
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()


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


def _is_null(node: _Node | None) -> bool:
    return node is None or (isinstance(node, _Scalar) and node.kind == "null")


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
            ctx.error(line, f"unknown key '{key}' {where} (allowed: {', '.join(allowed)})")


def _pin(mapping: _Map, what: str, ctx: _Context) -> _Pin:
    text = _optional_string(mapping, "at", what, ctx)
    if text is None:
        return None
    try:
        return parse_pin(text)
    except RefSyntaxError as error:
        ctx.error(mapping.items["at"].line, error.message, hint=_AT_HINT)
        return None


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
    first_lines: dict[str, int] = field(default_factory=dict)


def _collect_yaml(text: str, display: str) -> tuple[Article | None, list[AnnotationError]]:
    ctx = _Context(display)
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
    scope = _ClaimScope(ctx, path or "", _pin(tree, "'at'", ctx))
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
    at = _pin(node, f"'at' of {label}", ctx) or scope.at
    refs = _refs(node, label, at, ctx)
    waivers = _waivers(node, label, ctx)
    if len(ctx.errors) > errors_before or claim_id is None or text is None:
        return None
    at_text = f"{at[0]}@{at[1]}" if at else None
    return Claim(scope.article, claim_id, text, at_text, refs, waivers, ctx.display, node.line)


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
        scope.ctx.error(id_node.line, message)
        return None
    return _register_id(claim_id, node.line, scope)


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
    if _is_null(refs) or (isinstance(refs, _Seq) and not refs.items):
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
    if _is_null(node):
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
    if _is_null(waive):
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
    text: str, display: str, repos: RepoFilter | None = None
) -> tuple[Article | None, list[AnnotationError]]:
    ctx = _Context(display)
    lines = _LINE_BREAK_RE.split(text)
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
    close = _front_matter_close(lines)
    if close is None:
        raise ctx.fatal(1, "front matter opened on line 1 is not closed", hint="end it with '---'")
    return _parse_tree(_front_matter_text(lines, close), ctx), close + 1


def front_matter_yaml(text: str) -> str | None:
    """A Markdown article's front matter as the loader reads it, with the file's line and
    column numbers; None when it has none (or it is not closed)."""
    lines = _LINE_BREAK_RE.split(text)
    close = _front_matter_close(lines)
    return None if close is None else _front_matter_text(lines, close)


def _front_matter_close(lines: list[str]) -> int | None:
    """The index of the line that closes the front matter; None when there is none, or
    it is not closed."""
    if lines[0].rstrip() != "---":
        return None
    return next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)


def _front_matter_text(lines: list[str], close: int) -> str:
    # A leading empty line keeps YAML's line numbers equal to the file's.
    return "\n" + "\n".join(lines[1:close])


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
    shown = list(_visible_lines(lines, body_start))
    visible_lines = {index: visible for index, visible, _ in shown}
    body = _Body(lines, body_start, visible_lines, {index: hidden for index, _, hidden in shown})
    claims: list[Claim] = []
    seen: dict[str, int] = {}
    for index, visible in visible_lines.items():
        for url in find_permalinks(visible):
            if repos is not None and not repos.keeps(_PERMALINK_RE.match(url)["repo"]):
                continue
            seen[url] = seen.get(url, 0) + 1
            claims.append(_link_claim(body, index, url, seen[url], article, ctx))
            if len(claims) > MAX_CLAIMS:
                raise ctx.fatal(index + 1, f"too many claims (more than {MAX_CLAIMS})")
    return claims


def _visible_lines(lines: list[str], first: int) -> Iterator[tuple[int, str, list[Span]]]:
    """The body's lines whose links a reader sees, each with its inline code and its HTML
    comments blanked (the same length: a column is the line's own), and the spans its
    comments hide (a comment's end at its start included): code blocks, raw-text
    HTML blocks (``<pre>``) and comments (a note to self, a link kept for later) show no
    link. A comment hides what it holds, code and ``<pre>`` included."""
    blocks = _html_and_fenced_blocks(lines, first)
    code = _indented_code_lines(lines, first, blocks.lines)
    comment = False  # a comment opened in a paragraph is open
    for index in range(first, len(lines)):
        line = lines[index]
        shown = blocks.shown.get(index, 0)
        in_block = index in blocks.lines and (not shown or not line[shown:].strip())
        if index in code or in_block:  # a comment's last line shows what follows its -->
            comment = False  # a block ends a paragraph, and its comment was text
            continue
        if shown or not line.strip():
            comment = False  # the paragraph ended: a comment never closed in it was text
        if comment:  # the line goes on past the comment's end
            end = line.find("-->")
            if end < 0:
                continue
            shown, comment = end + 3, False
        code_blanked = _blank_code_spans(" " * shown + line[shown:])
        spans, comment = _comment_spans(code_blanked)
        yield index, _blanked(code_blanked, spans), ([(0, shown)] if shown else []) + spans


def markdown_visible_lines(text: str) -> dict[int, str]:
    """A Markdown article's body lines that a reader sees, by 0-based index, with inline
    code and HTML comments blanked (see `_visible_lines`): where `fix` may rewrite a
    permalink, as the loader found it."""
    lines = _LINE_BREAK_RE.split(text)
    close = _front_matter_close(lines)
    seen = _visible_lines(lines, 0 if close is None else close + 1)
    return {index: visible for index, visible, _ in seen}


def _closes_raw_html(line: str) -> bool:
    """Whether a raw-text HTML block ends on ``line``: at any of the four end tags, as
    CommonMark ends it."""
    lowered = line.lower()
    return any(tag in lowered for tag in ("</pre>", "</script>", "</style>", "</textarea>"))


def _comment_spans(line: str) -> tuple[list[Span], bool]:
    """Where ``line``'s HTML comments (``<!-- ... -->``) are, and whether one is still open
    at its end."""
    spans: list[Span] = []
    position = 0
    while (start := line.find("<!--", position)) >= 0:
        end = line.find("-->", start)
        if end < 0:
            spans.append((start, len(line)))
            return spans, True
        spans.append((start, end + 3))
        position = end + 3
    return spans, False


def _blanked(line: str, spans: list[Span]) -> str:
    """``line`` with ``spans`` (in order, apart) blanked."""
    pieces, last = [], 0
    for start, stop in spans:
        pieces += [line[last:start], " " * (stop - start)]
        last = stop
    return "".join(pieces) + line[last:]


def _without(line: str, spans: list[Span]) -> str:
    """``line`` without ``spans`` (in order, apart), and without the blanks before one
    that blanks or the line's end follow (``A <!-- c --> B`` is ``A B``)."""
    pieces, last = [], 0
    for start, stop in spans:
        piece = line[last:start]
        pieces.append(piece.rstrip(" \t") if line[stop:stop + 1] in ("", " ", "\t") else piece)
        last = stop
    return "".join(pieces) + line[last:]


def _indented_code_lines(lines: list[str], first: int, blocks: set[int]) -> set[int]:
    """Indexes of the lines of indented code blocks, as CommonMark reads them: indented
    four columns past the content of the list item they are in (if any), and not the
    continuation of a paragraph (``blocks`` are the lines of the other blocks that end
    one). Block quotes are not looked into."""
    inside: set[int] = set()
    content_column = 0  # where the content of the list item around starts; 0 outside lists
    paragraph_open = in_code = False
    for index in range(first, len(lines)):
        line = lines[index].expandtabs(4)
        if index in blocks or not line.strip():
            paragraph_open = False  # a fence or HTML block, like a blank line, ends a paragraph
            continue
        indent = len(line) - len(line.lstrip())
        if indent >= content_column + 4 and (in_code or not paragraph_open):
            inside.add(index)
            in_code = True
            continue
        item = _LIST_ITEM_RE.match(line, indent)
        if item:
            content_column = indent + len(item[0])
        elif indent < content_column and not paragraph_open:
            content_column = 0  # a line left of the item's content, not a lazy one, ends it
        # a heading (fences were passed over above) is a block of one line, no paragraph
        paragraph_open, in_code = not _SINGLE_LINE_BLOCK_RE.match(line), False
    return inside


@dataclass
class _Blocks:
    """The lines of a body's fenced code blocks and HTML blocks (fences and tags included),
    and for a comment's last line, the column past its ``-->``: a reader sees what
    follows."""

    lines: set[int] = field(default_factory=set)
    shown: dict[int, int] = field(default_factory=dict)


_RAW_HTML, _COMMENT = "<pre>", "<!--"


def _html_and_fenced_blocks(lines: list[str], first: int) -> _Blocks:
    """The fenced code blocks and HTML blocks (raw text, ``<pre>``, and comments) of a
    body, found in one pass as CommonMark finds them: a block that starts a line runs to
    its end (an unclosed one to the body's), and what it holds is text: a fence in a
    comment or ``<pre>`` opens nothing, nor does a ``<!--`` or ``<pre>`` in a fence. A
    URL in a fence is code shown, not a link (a header pasted from vLLM's sources,
    ``# Adapted from https://github.com/...``)."""
    blocks = _Blocks()
    block = ""  # the open block: its fence, _RAW_HTML or _COMMENT
    for index in range(first, len(lines)):
        opening = not block
        block = block or _block_opened(lines[index])
        if not block:
            continue
        blocks.lines.add(index)
        end = _block_end(block, lines[index], opening)
        if end is not None:
            if block == _COMMENT:
                blocks.shown[index] = end
            block = ""
    return blocks


def _block_opened(line: str) -> str:
    """The block ``line`` opens: its fence, _RAW_HTML or _COMMENT; "" for none. An HTML
    block starts at most three columns in (a tab is four: indented code, or a paragraph's
    text)."""
    fence = _FENCE_RE.match(line)
    if fence and not (fence["fence"][0] == "`" and "`" in fence["info"]):
        return fence["fence"]
    if _RAW_HTML_OPEN_RE.match(line):
        return _RAW_HTML
    return _COMMENT if _COMMENT_OPEN_RE.match(line) else ""


def _block_end(block: str, line: str, opening: bool) -> int | None:
    """The column past the end of ``block`` on ``line``, None when the block goes on;
    ``opening``: the block opened on the line. A fence closes at one at least as long, with
    no info; ``<pre>`` at any raw-text end tag; a comment at its ``-->``."""
    if block == _COMMENT:
        end = line.find("-->", line.find("<!--") if opening else 0)
        return None if end < 0 else end + 3
    if block == _RAW_HTML:
        return len(line) if _closes_raw_html(line) else None
    fence = None if opening else _FENCE_RE.match(line)
    closes = fence and fence["fence"].startswith(block) and not fence["info"].strip()
    return len(line) if closes else None


def code_span_ranges(line: str) -> list[tuple[int, int]]:
    """Where the inline code spans of a Markdown line are (their permalinks are code): as
    CommonMark pairs them, a run of backticks opens one that the next run of the same
    length closes; a run that none closes is text. Linear in the runs (a regex that
    backtracks over unclosed runs took minutes on a hostile line)."""
    runs = [match.span() for match in _BACKTICKS_RE.finditer(line)]
    by_length: dict[int, list[int]] = {}
    for number, (start, end) in enumerate(runs):
        by_length.setdefault(end - start, []).append(number)
    spans, number = [], 0
    while number < len(runs):
        start, end = runs[number]
        same = by_length[end - start]
        later = bisect.bisect_right(same, number)
        if later == len(same):
            number += 1
            continue
        closer = same[later]
        spans.append((start, runs[closer][1]))
        number = closer + 1
    return spans


def _blank_code_spans(line: str) -> str:
    """``line`` with its inline code spans blanked (the same length)."""
    return _blanked(line, code_span_ranges(line))


def find_permalinks(line: str) -> list[str]:
    """The GitHub ``/blob/`` URLs in one Markdown line, trailing punctuation removed. A
    link's destination (``[text](URL)``, ``<URL>``) is a URL to its end, raw non-ASCII
    paths included; in prose a URL ends at the first character no URL holds, so the
    Chinese text that often follows it with no space is not taken in."""
    matches = list(_URL_RE.finditer(line))
    ends = _destination_ends(line) if matches else {}
    urls = (line[match.start():max(match.end(), ends.get(match.start(), 0))]
            for match in matches)
    return [url.rstrip(URL_TRAILING) for url in urls if _PERMALINK_RE.match(url)]


def _destination_ends(line: str) -> dict[int, int]:
    """Where each link destination of the line ends, by where it starts."""
    ends = dict(link.destination for link in _inline_links(line))
    ends.update((match.start(1), match.end(1)) for match in _AUTOLINK_RE.finditer(line))
    return ends


class _InlineLink(NamedTuple):
    """An inline link of a text: where it starts and ends, its label, and where its
    destination starts and ends."""

    start: int
    end: int
    label: str
    destination: tuple[int, int]


class _Next:
    """Where some characters of a text stand, to find the next one from an index in log
    time (scanning for it would be linear in the distance)."""

    def __init__(self, found: list[int]) -> None:
        self.found = found

    def at_or_after(self, index: int) -> int | None:
        later = bisect.bisect_left(self.found, index)
        return self.found[later] if later < len(self.found) else None


class _Spans:
    """Spans of a text (its code spans), in order and apart, to tell in log time whether
    one holds a position."""

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        self.spans = spans
        self.starts = [start for start, _ in spans]

    def hold(self, position: int) -> bool:
        index = bisect.bisect_right(self.starts, position) - 1
        return index >= 0 and position < self.spans[index][1]

    def outside(self, pattern: re.Pattern[str], text: str) -> list[int]:
        """Where ``pattern`` matches in ``text``, but not in the spans."""
        return [match.start() for match in pattern.finditer(text) if not self.hold(match.start())]


_NO_SPANS = _Spans([])


def _inline_links(text: str, code: _Spans = _NO_SPANS) -> list[_InlineLink]:
    """The inline links of ``text``, ``[label](<destination> "title")`` (a space allowed
    after '(' and before ')', '!' before an image), left to right, none inside another:
    a label runs from the first '[' after the last ']' (and the last link) to the next
    ']'. A '[' or ']' in the ``code`` spans is text (code spans bind tighter than links).
    Linear in the text: each ']' is looked at once, and where a destination or a title
    ends is looked up, not scanned for (a regex scanned up to 2,000 characters from each
    '[': a 2 MB line of ``[a](`` took 98 s)."""
    if "](" not in text:
        return []
    opens = _Next(code.outside(_OPEN_RE, text))
    ends = _Next([match.start() for match in _DESTINATION_END_RE.finditer(text)])
    quotes = _Next([match.start() for match in _QUOTE_MARK_RE.finditer(text)])
    links: list[_InlineLink] = []
    after = 0  # where the next label may start: past the last ']' and the last link
    for close in code.outside(_CLOSE_RE, text):
        if close < after:
            continue
        label = opens.at_or_after(max(after, close - 1 - _MAX_LABEL))
        after = close + 1
        if label is None or label > close or text[close + 1:close + 2] != "(":
            continue
        tail = _link_tail(text, close + 2, ends, quotes)
        if tail is not None:
            destination, after = tail
            start = label - 1 if label and text[label - 1] == "!" else label
            links.append(_InlineLink(start, after, text[label + 1:close], destination))
    return links


_Tail = tuple[tuple[int, int], int]


def _link_tail(text: str, at: int, ends: _Next, quotes: _Next) -> _Tail | None:
    r"""Where the destination of the link whose '(' ends before ``at`` starts and ends,
    and where the link ends; None when it is no link. The same choices as the regex
    ``( ?<?([^)\s>]{0,2000})>?(?: "[^"]{0,500}")? ?\)`` makes, in the same order."""
    first = at + text.startswith(" ", at)
    tries = [first + 1, first] if text.startswith("<", first) else [first]
    for start in tries + ([at] if first > at else []):
        stop = ends.at_or_after(start)
        stop = len(text) if stop is None else stop
        end = _after_destination(text, stop, quotes) if stop - start <= _MAX_DESTINATION else None
        if end is not None:
            return (start, stop), end
    return None


def _after_destination(text: str, stop: int, quotes: _Next) -> int | None:
    """Where a link ends whose destination ends at ``stop``: after an optional '>', an
    optional `` "title"`` and an optional space, at ')'; None when it does not."""
    at = stop + text.startswith(">", stop)
    if text.startswith(' "', at):
        close = quotes.at_or_after(at + 2)
        if close is not None and close - (at + 2) <= _MAX_TITLE:
            end = _closing_parenthesis(text, close + 1)
            if end is not None:
                return end
    return _closing_parenthesis(text, at)


def _closing_parenthesis(text: str, at: int) -> int | None:
    if text.startswith(" )", at):
        return at + 2
    return at + 1 if text.startswith(")", at) else None


def link_claim_id(article: str, url: str, occurrence: int = 1) -> str:
    """Stable id of the claim made from `url` in `article`: ``link-`` + 10 hex of sha1."""
    digest = hashlib.sha1(f"{article}\n{url}".encode()).hexdigest()[:10]
    return f"link-{digest}" if occurrence == 1 else f"link-{digest}-{occurrence}"


def _link_claim(
    body: _Body, index: int, url: str, occurrence: int, article: str, ctx: _Context
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


@dataclass(frozen=True)
class _Paragraph:
    """One paragraph of a Markdown body: its lines joined, and where each line starts in it."""

    start: int
    parts: list[str]
    offsets: list[int]
    text: str
    reduced: str
    sentence_ends: list[int]
    sentence_starts: list[int]
    reduced_sentences: dict[int, _Reduced] = field(default_factory=dict)

    def sentence_at(self, position: int) -> str:
        """The sentence holding `position`, links reduced to their labels; a long one is
        cut to a window around `position` ("…"), after the links are reduced (a window of
        the raw text may start inside a URL)."""
        i = min(bisect.bisect_right(self.sentence_ends, position), len(self.sentence_ends) - 1)
        first = self.sentence_starts[i]
        if i not in self.reduced_sentences:  # once per sentence: it may hold many links
            self.reduced_sentences[i] = _Reduced.of(self.text[first:self.sentence_ends[i]])
        reduced = self.reduced_sentences[i]
        sentence, where = reduced.text, reduced.position(position - first)
        if len(sentence) <= MAX_LINK_TEXT:
            return sentence.strip()
        start = max(where - MAX_LINK_TEXT // 3, 0)
        end = min(start + MAX_LINK_TEXT - 2, len(sentence))
        return ("…" if start else "") + sentence[start:end] + ("…" if end < len(sentence) else "")


class _Body:
    """A Markdown body split into paragraphs once (each link's text is then cheap to find);
    ``visible`` holds its lines as a reader sees them (`_visible_lines`): a line it does not
    hold (code, a comment, ``<pre>``) is a block of its own, not text of the paragraph
    around it."""

    def __init__(
        self, lines: list[str], first: int, visible: dict[int, str],
        hidden: dict[int, list[Span]],
    ) -> None:
        self.lines = lines
        self.visible = visible
        self.hidden = hidden  # the spans of each line that its comments hide
        self.starts: dict[int, int] = {}
        for index in range(first, len(lines)):
            edge = index not in visible or index - 1 not in visible  # of a hidden block
            new = index == first or edge or _starts_block(lines, index)
            self.starts[index] = index if new else self.starts[index - 1]
        self.cache: dict[int, _Paragraph] = {}
        self.uses: dict[str, tuple[int, str]] | None = None

    def text_of_link(self, index: int, url: str) -> str:
        """The text around the link to ``url`` on line ``index``; for a link reference
        definition (``[label]: URL``), the text around the first link that uses it."""
        definition = _REFERENCE_DEFINITION_RE.match(self.lines[index])
        if definition is not None and definition["url"] == url:
            use = self._use_of(definition["label"])
            if use is not None:
                return self.link_text(*use)
        return self.link_text(index, url)

    def _use_of(self, label: str) -> tuple[int, str] | None:
        """The line of the first link to reference ``label`` (``[text][label]``,
        ``[label][]`` or ``[label]``), and that link's text."""
        if self.uses is None:  # once: an article may define many references
            self.uses = {}
            for index, visible in self.visible.items():
                line = self.lines[index]
                for match in _REFERENCE_USE_RE.finditer(line):
                    if visible[match.start()] != "[":  # in code or a comment
                        continue
                    key = _reference_key(match["ref"] or match["text"])
                    self.uses.setdefault(key, (index, match[0]))
        return self.uses.get(_reference_key(label))

    def link_text(self, index: int, url: str) -> str:
        """The text around a link on line `index`: its paragraph, or else its sentence."""
        paragraph = self._paragraph(self.starts[index])
        if len(paragraph.reduced) <= MAX_LINK_TEXT:
            return paragraph.reduced
        row = index - paragraph.start
        position = paragraph.offsets[row] + max(paragraph.parts[row].find(url), 0)
        return paragraph.sentence_at(position)

    def _paragraph(self, start: int) -> _Paragraph:
        if start not in self.cache:
            end = start + 1
            while end < len(self.lines) and self.starts.get(end) == start:
                end += 1
            parts = [_MARKER_RE.sub("", _without(self.lines[index],
                                                 self.hidden.get(index, [])).strip())
                     for index in range(start, end)]
            self.cache[start] = _make_paragraph(start, parts)
        return self.cache[start]


def _make_paragraph(start: int, parts: list[str]) -> _Paragraph:
    text, offsets = _join_lines(parts)
    sentence_starts, sentence_ends = [0], []
    for boundary in _SENTENCE_END_RE.finditer(text):
        sentence_ends.append(boundary.start())
        sentence_starts.append(boundary.end())
    sentence_ends.append(len(text))
    reduced = _Reduced.of(text).text.strip() if len(text) <= _MAX_REDUCED else text
    return _Paragraph(start, parts, offsets, text, reduced, sentence_ends, sentence_starts)


def _reference_key(label: str) -> str:
    """A link label as CommonMark matches labels: case and inner white space aside."""
    return " ".join(label.split()).casefold()


def _starts_block(lines: list[str], index: int) -> bool:
    """True when line `index` does not continue the paragraph of the line before it (in a
    block quote, a line continues the one before it at the same depth)."""
    line, previous = lines[index], lines[index - 1]
    quote, previous_quote = _QUOTE_RE.match(line), _QUOTE_RE.match(previous)
    if quote and previous_quote:
        if quote[0].count(">") != previous_quote[0].count(">"):
            return True
        line, previous = line[quote.end():], previous[previous_quote.end():]
    return (
        not line.strip()
        or not previous.strip()
        or _BLOCK_START_RE.match(line) is not None
        or _SINGLE_LINE_BLOCK_RE.match(previous) is not None
    )


def _join_lines(parts: list[str]) -> tuple[str, list[int]]:
    """Join wrapped lines with a space, or with nothing between two wide (CJK) characters.

    Also returns where each part starts in the joined text.
    """
    pieces: list[str] = []
    offsets: list[int] = []
    length, last = 0, ""
    for part in parts:
        joint = (
            "" if not pieces or (last and part and _is_wide(last) and _is_wide(part[0])) else " "
        )
        pieces.append(joint + part)
        offsets.append(length + len(joint))
        length += len(joint) + len(part)
        last = part[-1] if part else last
    return "".join(pieces), offsets


def _is_wide(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in ("W", "F")


@dataclass(frozen=True)
class _Reduced:
    """A text with its links reduced to their labels, and where its links were: (start,
    end) in the text and (start, end) of their labels in the reduced text."""

    text: str
    raw: list[tuple[int, int]]
    labels: list[tuple[int, int]]

    @classmethod
    def of(cls, text: str) -> _Reduced:
        pieces: list[str] = []
        raw, labels = [], []
        length = last = 0
        for link in _inline_links(text, _Spans(code_span_ranges(text))):
            length += link.start - last
            pieces += [text[last:link.start], link.label]
            raw.append((link.start, link.end))
            labels.append((length, length + len(link.label)))
            length += len(link.label)
            last = link.end
        pieces.append(text[last:])
        return cls(_unwrap_autolinks("".join(pieces)), raw, labels)

    def position(self, raw: int) -> int:
        """About where ``raw`` of the text is in the reduced text (in a link: its label)."""
        index = bisect.bisect_right(self.raw, (raw, float("inf"))) - 1
        if index < 0:
            return raw
        (_, end), (label_start, label_end) = self.raw[index], self.labels[index]
        return label_start if raw < end else label_end + raw - end


def _unwrap_autolinks(text: str) -> str:
    """``text`` with its autolinks (``<https://…>``) unwrapped, but not in its code spans."""
    code = _Spans(code_span_ranges(text))
    return _AUTOLINK_RE.sub(lambda link: link[0] if code.hold(link.start()) else link[1], text)
