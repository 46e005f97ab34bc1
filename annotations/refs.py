"""The reference grammar: the one parser and formatter of refs used everywhere.

Forms (``[REPO@VERSION:]`` may be omitted; such a ref is unpinned until `Ref.with_pin`):

* ``symbol``    ``REPO@VERSION:PATH::QUALNAME``  e.g. ``vllm@v0.20.0:vllm/a.py::A.f``
* ``dotted``    ``REPO@VERSION:dotted.module.Qualname`` (where the module ends is left to the
  index; note that ``setup.py`` with no ``/`` reads as the dotted name ``setup.py``)
* ``lines``     ``REPO@VERSION:PATH#Lx-Ly`` or ``#Lx``; ``#Lx-y`` is accepted too. Canonical
  output is ``#Lx`` for one line and ``#Lx-Ly`` for a range.
* ``permalink`` ``https://github.com/ORG/NAME/blob/REF/PATH[#Lx[-Ly]]``; the path is stored
  percent-decoded and formatted back with only ``%``, ``#``, ``?`` and whitespace encoded.

REPO is ``[A-Za-z0-9][A-Za-z0-9_.-]*``; VERSION is ``[A-Za-z0-9][A-Za-z0-9._+-]*`` (never starts
with ``-``: versions are later handed to git and pip). PATH is a relative POSIX path: non-empty
segments, no ``.``/``..`` segment, no ``\\``, ``:``, control characters or whitespace at its ends.
QUALNAME is identifiers joined by ``.``, where an inner component may be ``<locals>``.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from enum import Enum
from urllib.parse import quote, unquote

from annotations.errors import LINE_BREAKING_CHARACTER, RefSyntaxError
from indexer.config import line_span
from indexer.references import python_name

MAX_REF_LENGTH = 4096
"""Longest reference accepted, in characters (after stripping surrounding whitespace)."""

GITHUB_PREFIX = "https://github.com/"
LOCALS = "<locals>"

_REPO_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_VERSION_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
_ANCHOR_RE = re.compile(r"L([0-9]{1,9})(?:-L?([0-9]{1,9}))?")
# GitHub's own permalinks may also name columns (#L178C5-L209C40, from a selection in its
# code view) and ask for the plain view of a rendered file (?plain=1); both are ignored.
_PERMALINK_ANCHOR_RE = re.compile(
    r"L([0-9]{1,9})(?:C[0-9]{1,9})?(?:-L?([0-9]{1,9})(?:C[0-9]{1,9})?)?")
PLAIN_VIEW = re.compile(r"\?plain=[01]\Z")
"""GitHub's source view (``?plain=1``) at the end of a permalink's path."""
_GITHUB_OWNER_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*")
_GITHUB_NAME_RE = re.compile(r"[A-Za-z0-9_.-]+")
_URL_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_WORDISH_RE = re.compile(r"[\w.<>]+")
_QUOTED_IN_URL = frozenset("%#?")
_ANCHOR_HELP = "expected '#Lx' or '#Lx-Ly'"
_QUALNAME_HINT = "a qualname is identifiers joined by '.', e.g. 'Outer.method' or 'f.<locals>.g'"
_PERMALINK_SHAPE = "https://github.com/ORG/NAME/blob/REF/PATH#Lx-Ly"


class RefForm(str, Enum):
    SYMBOL = "symbol"
    DOTTED = "dotted"
    LINES = "lines"
    PERMALINK = "permalink"


@dataclass(frozen=True)
class Ref:
    """One parsed reference; which fields are set depends on `form` (see the module doc)."""

    repo: str | None
    version: str | None
    form: RefForm
    path: str | None = None
    qualname: str | None = None
    dotted: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    github: str | None = None

    @property
    def pinned(self) -> bool:
        """True when the ref names a version (always so for permalinks)."""
        return self.version is not None

    def with_pin(self, repo: str, version: str) -> Ref:
        """This ref pinned to `repo`@`version`; an already pinned ref is returned unchanged.

        Raises RefSyntaxError when `repo` or `version` is malformed.
        """
        whole = f"{repo}@{version}"
        _check_repo(repo, whole)
        _check_version(version, whole)
        if self.pinned:
            return self
        return dataclasses.replace(self, repo=repo, version=version)

    def __str__(self) -> str:
        return format_ref(self)


def parse_ref(text: str, *, whole_file: bool = False) -> Ref:
    """Parse one reference; raises RefSyntaxError naming the part that is wrong.
    ``whole_file``: ``[REPO@VERSION:]PATH``, which a claim cannot cite (it cites a symbol
    or lines), is a `RefForm.LINES` ref of all the file's lines, as a permalink to a file
    is (for ``annotate show``)."""
    s = text.strip()
    if not s:
        raise RefSyntaxError("empty reference")
    if len(s) > MAX_REF_LENGTH:
        raise RefSyntaxError(f"reference is too long ({len(s)} characters, max {MAX_REF_LENGTH})")
    _check_no_control(s, "reference")
    if _URL_SCHEME_RE.match(s):
        return _parse_permalink(s)
    repo, version, body = _split_pin(s)
    return _parse_body(body, s, repo, version, whole_file)


def parse_pin(text: str) -> tuple[str, str]:
    """Parse ``REPO@VERSION`` (as in an ``at:`` key) into (repo, version)."""
    s = text.strip()
    _check_no_control(s, "pin")
    if "@" not in s:
        raise RefSyntaxError(f"invalid pin '{_clip(s)}': expected 'REPO@VERSION'")
    repo, _, version = s.partition("@")
    _check_repo(repo, s)
    _check_version(version, s)
    return repo, version


def format_ref(ref: Ref) -> str:
    """The canonical text of `ref`; `parse_ref(format_ref(r)) == r` for every parsed ref."""
    if ref.form is RefForm.PERMALINK:
        url = f"{GITHUB_PREFIX}{ref.github}/blob/{ref.version}/{_quote_path(ref.path or '')}"
        return url + _format_anchor(ref)
    pin = f"{ref.repo}@{ref.version}:" if ref.repo is not None else ""
    if ref.form is RefForm.SYMBOL:
        return f"{pin}{ref.path}::{ref.qualname}"
    if ref.form is RefForm.DOTTED:
        return f"{pin}{ref.dotted}"
    return f"{pin}{ref.path}{_format_anchor(ref)}"


def is_qualname(text: str) -> bool:
    """True for identifiers joined by '.', inner components possibly being '<locals>'."""
    parts = text.split(".")
    if parts[0] == LOCALS or parts[-1] == LOCALS:
        return False
    previous_locals = False
    for part in parts:
        is_locals = part == LOCALS
        if (is_locals and previous_locals) or not (is_locals or part.isidentifier()):
            return False
        previous_locals = is_locals
    return True


# -- parsing helpers ---------------------------------------------------------------------------


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _check_no_control(text: str, what: str) -> None:
    found = LINE_BREAKING_CHARACTER.search(text)
    if found is not None:
        raise RefSyntaxError(f"{what} contains the control character U+{ord(found[0]):04X}")


def _split_pin(s: str) -> tuple[str | None, str | None, str]:
    colon = s.find(":")
    if colon < 0 or s.startswith("::", colon):
        return None, None, s
    pin, body = s[:colon], s[colon + 1 :]
    if "@" not in pin:
        raise RefSyntaxError(
            f"invalid pin '{_clip(pin)}' in '{_clip(s)}': expected 'REPO@VERSION' before ':'",
            hint="use '::' between a path and a qualname",
        )
    repo, _, version = pin.partition("@")
    _check_repo(repo, s)
    _check_version(version, s)
    return repo, version, body


def _check_repo(repo: str, whole: str) -> None:
    if not repo:
        raise RefSyntaxError(f"missing repository before '@' in '{_clip(whole)}'")
    if not _REPO_RE.fullmatch(repo):
        raise RefSyntaxError(
            f"invalid repository '{_clip(repo)}' in '{_clip(whole)}': a repository name starts "
            "with a letter or digit and contains only letters, digits and '_.-'"
        )


def _check_version(version: str, whole: str) -> None:
    if not version:
        raise RefSyntaxError(f"missing version after '@' in '{_clip(whole)}'")
    if not _VERSION_RE.match(version):
        reason = "a version starts with a letter or digit"
    elif not _VERSION_RE.fullmatch(version):
        reason = "a version contains only letters, digits and '._+-'"
    else:
        return
    raise RefSyntaxError(f"invalid version '{_clip(version)}' in '{_clip(whole)}': {reason}")


def _parse_body(
    body: str, whole: str, repo: str | None, version: str | None, whole_file: bool = False
) -> Ref:
    if not body:
        raise RefSyntaxError(f"nothing after '{_clip(whole)}'",
                             hint="write PATH::QUALNAME, a dotted name or PATH#Lx-Ly after ':'")
    if "::" in body:
        path, _, qualname = body.partition("::")
        _check_path(path, whole, "::")
        _check_qualname(qualname, whole)
        return Ref(repo, version, RefForm.SYMBOL, path=path, qualname=python_name(qualname))
    if "#" in body:
        path, _, anchor = body.rpartition("#")
        _check_path(path, whole, "#")
        start, end = _parse_anchor(anchor, path)
        return Ref(repo, version, RefForm.LINES, path=path, start_line=start, end_line=end)
    if is_qualname(body):  # a module's dotted name, then a qualname (may hold <locals>)
        return Ref(repo, version, RefForm.DOTTED, dotted=python_name(body))
    if "/" not in body and _WORDISH_RE.fullmatch(body):
        raise RefSyntaxError(
            f"invalid dotted name '{_clip(body)}': expected identifiers joined by '.'"
        )
    _check_path(body, whole, "::")
    if whole_file:
        return Ref(repo, version, RefForm.LINES, path=body)
    raise RefSyntaxError(f"missing '::QUALNAME' or '#Lx-Ly' after path '{_clip(body)}'")


def _check_path(path: str, whole: str, before: str) -> None:
    if not path:
        raise RefSyntaxError(f"missing path before '{before}' in '{_clip(whole)}'")
    shown = _clip(path)
    if path != path.strip():
        raise RefSyntaxError(f"path '{shown}' has whitespace at its start or end")
    if "\\" in path:
        raise RefSyntaxError(f"path '{shown}' must use '/' as separator, not '\\'")
    if ":" in path:
        raise RefSyntaxError(f"path '{shown}' must not contain ':'")
    segments = path.split("/")
    if path.startswith("/") or ".." in segments:
        raise RefSyntaxError(f"path '{shown}' must be relative and must not contain '..'")
    if "" in segments:
        raise RefSyntaxError(f"path '{shown}' has an empty segment")
    if "." in segments:
        raise RefSyntaxError(f"path '{shown}' must not contain '.' segments")


def _check_qualname(qualname: str, whole: str) -> None:
    if not qualname:
        raise RefSyntaxError(f"missing qualname after '::' in '{_clip(whole)}'")
    if not is_qualname(qualname):
        raise RefSyntaxError(f"invalid qualname '{_clip(qualname)}'", hint=_QUALNAME_HINT)


def _parse_anchor(anchor: str, path: str, pattern: re.Pattern = _ANCHOR_RE) -> tuple[int, int]:
    match = pattern.fullmatch(anchor)
    if match is None:
        raise RefSyntaxError(
            f"invalid line anchor '#{_clip(anchor)}' after path '{_clip(path)}': {_ANCHOR_HELP}"
        )
    start = int(match.group(1))
    end = int(match.group(2)) if match.group(2) is not None else start
    if start < 1 or end < 1:
        raise RefSyntaxError(f"line numbers start at 1, got '#{anchor}'")
    if end < start:
        raise RefSyntaxError(f"line range L{start}-L{end} ends before it starts")
    return start, end


def _parse_permalink(s: str) -> Ref:
    if not s.startswith(GITHUB_PREFIX):
        raise RefSyntaxError(
            f"unsupported URL '{_clip(s)}': only GitHub permalinks are supported",
            hint=_PERMALINK_SHAPE,
        )
    location, hash_sign, fragment = s[len(GITHUB_PREFIX) :].partition("#")
    location = PLAIN_VIEW.sub("", location)
    if "?" in location:
        raise RefSyntaxError(f"GitHub permalink '{_clip(s)}' must not have a query string")
    parts = location.split("/", 4)
    if len(parts) < 5 or parts[2] != "blob" or not parts[4]:
        raise RefSyntaxError(
            f"invalid GitHub permalink '{_clip(s)}': expected '{_PERMALINK_SHAPE}'"
        )
    owner, name, _, version, raw_path = parts
    _check_github_repo(owner, name, s)
    _check_version(version, s)
    path = _unquote_path(raw_path, s)
    _check_path(path, s, "#")
    start, end = _parse_anchor(fragment, path, _PERMALINK_ANCHOR_RE) if hash_sign else (
        None, None)
    return Ref(
        None,
        version,
        RefForm.PERMALINK,
        path=path,
        start_line=start,
        end_line=end,
        github=f"{owner}/{name}",
    )


def _check_github_repo(owner: str, name: str, whole: str) -> None:
    good_owner = _GITHUB_OWNER_RE.fullmatch(owner) is not None
    good_name = _GITHUB_NAME_RE.fullmatch(name) is not None and name not in (".", "..")
    if not (good_owner and good_name):
        raise RefSyntaxError(
            f"invalid GitHub repository '{_clip(owner)}/{_clip(name)}' in '{_clip(whole)}'"
        )


def _unquote_path(raw_path: str, whole: str) -> str:
    try:
        path = unquote(raw_path, errors="strict")
    except UnicodeDecodeError:
        raise RefSyntaxError(
            f"path of '{_clip(whole)}' is not valid percent-encoded UTF-8"
        ) from None
    _check_no_control(path, "path")
    return path


# -- formatting helpers ------------------------------------------------------------------------


def _format_anchor(ref: Ref) -> str:
    return "" if ref.start_line is None else f"#{line_span(ref.start_line, ref.end_line)}"


def _quote_path(path: str) -> str:
    return "".join(
        quote(ch, safe="") if ch in _QUOTED_IN_URL or ch.isspace() else ch for ch in path
    )
