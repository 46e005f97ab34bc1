"""``annotate link``: read every claim, resolve each ref at its pin, store the links.

A ref's state is ``linked`` (resolved, with the symbol's fingerprints at the pin),
``unindexed`` (its version is not in the index yet) or ``broken`` (it does not resolve,
or its ``quote`` or ``uses:`` does not hold in the symbol at its own pin).
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import errno
import fnmatch
import hashlib
import itertools
import json
import os
import posixpath
import re
import stat
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from enum import Enum
from pathlib import Path, PurePosixPath

from annotations.errors import AnnotationError, AnnotationFileError, RefSyntaxError
from annotations.model import (
    Article,
    Claim,
    RefEntry,
    RepoFilter,
    Waiver,
    governing_waiver,
)
from annotations.quotes import quote_stands
from annotations.refs import RefForm, parse_ref
from annotations.resolve import Resolved, ResolveError, Resolver, UnindexedVersion
from annotations.wording import counted, pinned_at_unindexed
from db import claims as claim_store
from db import queries
from db.close_matches import did_you_mean
from db.config_names import table_in
from db.database import Database
from db.version_order import COMMIT
from indexer.config import ProjectConfig, is_pypi_number, misspelling_of, run_from
from indexer.literals import split_lines

LINK_FILES_SPLIT = 1024
"""Files whose lines a link keeps: a 300-file collection's line refs and permalinks fall
in ~1,000 files, in random order (with 256, each was split 2.7 times: 1.1 s of a 9.3 s link)."""
_UNREADABLE = "unreadable "  # before the signature of a link that could not read every file
LINK_FORMAT = 22
"""Bumped whenever what a link stores for the same input changes, so that the next
command links again. 2: a broken ref's hint is in its message; 3: permalinks in fenced
code, or into repos not configured, are not claims; 4: a quote picks the definition of a
qualname defined twice; 5: permalinks in indented code or in code spans are not claims,
a permalink's blank edge lines are left out, a quote stands only as whole names and
numbers, a definition's own name is no use of a uses: target; 6: a lone CR ends a line;
7: a permalink in a link's destination runs to its end (raw non-ASCII paths) and one in
prose ends before a trailing '_' or '~', permalinks in HTML comments and <pre> blocks are
not claims, a dotted name may hold '<locals>', a reference definition's claim text is
its use's, a block quote's wrapped lines are one paragraph; 8: an autolink holds no '<';
9: a link or autolink in a code span stays as written in a claim's text; 10: a fence in an
HTML comment or <pre> block opens nothing, an HTML block starts at most three columns in
(a tab is four) and ends a paragraph (the indented line after it is code); 11: an HTML
block's lines are not text of the paragraph after them; 12: nor is the end of a comment
before its '-->'; 13: nor are the comments inside a paragraph; 14: a reference
definition no link uses has its own line as its text, not its block of definitions'; 15:
Markdown read as CommonMark nests block quotes and list items, with HTML blocks of all
seven types (a permalink in '<?php ... ?>', '<!DOCTYPE ...>' or '<![CDATA[ ... ]]>' is no
claim), thematic breaks, setext headings and list items opened empty, a link in an image's
alt text is no claim, and a claim's text loses its lines' container markers alone; 16: a
broken ref's name that its version defines nowhere has the closest qualnames in its hint;
17: a broken PATH::QUALNAME's hint names the indexed versions whose PATH defines it; 18:
a pin of an indexed version's number spelt otherwise (v0.20 for v0.20.0) names it; 19: a
quote that does not occur at its pin names the closest line; 20: one that holds the quote
in runs of two characters or more, not single characters strewn over it; 21: an at: at a
version neither indexed nor configured is one error at its line; 22: a pin at a release
named as PyPI numbers it (vllm@0.20.0) is told its tag."""


@dataclass
class UnindexedRefs:
    """The refs pinned at one version that is configured but not indexed yet."""

    error: AnnotationError
    """The first ref's error, which the others share."""
    refs: int = 0
    claims: set[tuple[str, str]] = field(default_factory=set)

    def add(self, article: str, claim_id: str) -> None:
        self.refs += 1
        self.claims.add((article, claim_id))

    def __str__(self) -> str:
        return pinned_at_unindexed(self.error.message, self.refs, len(self.claims),
                                   self.error.hint or "")


@dataclass
class LinkOutcome:
    articles: int = 0
    claims: int = 0
    refs: int = 0
    states: dict[str, int] = field(default_factory=lambda: {"linked": 0, "unindexed": 0,
                                                            "broken": 0})
    errors: list[AnnotationError] = field(default_factory=list)
    unindexed: dict[str, UnindexedRefs] = field(default_factory=dict)
    """``REPO@VERSION`` -> the refs pinned there, a configured version not indexed yet."""
    waived: list[tuple[AnnotationError, Waiver]] = field(default_factory=list)
    """Broken refs whose claims waive ``broken`` until today or later: not errors."""
    untracked: dict[str, int] = field(default_factory=dict)
    """GitHub repo -> how many permalinks in Markdown bodies point into it, a repo that is
    not configured (and whose name is not close to one that is): those are not claims."""
    split: list[AnnotationError] = field(default_factory=list)
    """Annotation files whose ``article:`` names a Markdown article by a shorter path than
    its own (two articles where the author meant one), or a Markdown file that is no
    article of the config (its claims left unread)."""
    _error_keys: set[tuple] = field(default_factory=set, init=False, repr=False, compare=False)
    _keyed: int = field(default=0, init=False, repr=False, compare=False)  # errors keyed

    def add_error_once(self, error: AnnotationError) -> None:
        """Add ``error`` unless an equal one (class, message, hint, place) is in ``errors``:
        once, when an ``at:`` breaks every ref it pins. A set of those seen, where every
        broken ref compared itself with every error (0.3 s of a link of the bench's big
        collection, 595 broken refs)."""
        self._error_keys.update(map(_error_key, self.errors[self._keyed:]))
        self._keyed = len(self.errors)
        if _error_key(error) not in self._error_keys:
            self.errors.append(error)


AnnotationFiles = tuple[list[Path], list[Path]]
"""The YAML annotation files and the Markdown articles (`annotation_files`)."""


def annotation_files(config: ProjectConfig) -> AnnotationFiles:
    """The YAML annotation files and Markdown articles the config's globs select."""
    return _glob(config, config.annotations), _glob(config, config.articles)


def file_named(config: ProjectConfig, written: str) -> Path | None:
    """The file a path given on the command line names: relative to the current folder, as
    a shell names it, else to the config's folder, as the stored claims name annotation
    files; None when neither is a file (nor when the name is too long, or a symlink loop)."""
    for path in (Path(written), config.root / written):
        if os.path.isfile(path):
            return path
    return None


def selects(files: AnnotationFiles, path: Path) -> bool:
    """Whether ``path`` (as the process names it: `file_named` of a path given relative to
    the config's folder) is one of ``files`` (`annotation_files`), told by where it leads:
    a file named another way, or by a symlink, is the file it leads to (a symlink loop
    does not stop `os.path.realpath`)."""
    return os.path.realpath(path) in {os.path.realpath(file) for file in (*files[0], *files[1])}


def output_refusal(
    output: Path, config: ProjectConfig, files: AnnotationFiles, db_path: Path,
    unreadable: Iterable[Path] = (),
) -> str | None:
    """Why a report may not be written to ``output``, if it may not: it would replace the
    index, the config or an annotation file (``files``; in the folders ``unreadable``, of
    which none can be told apart), or the next link would read it as one (``-o
    .annotate/index.db`` for ``-o report.sarif``)."""
    for folder in unreadable:
        if Path(os.path.realpath(output)).is_relative_to(os.path.realpath(folder)):
            from annotations.loader import display_path  # only for this message

            return (f"{display_path(folder, config.root)} cannot be listed, so whether "
                    f"{output} is an annotation file, which the report would replace, cannot "
                    "be told; write the report outside that folder, or make it readable")
    if replaces_an_input(output, config, files, db_path):
        return (f"{output} is one of annotate's inputs, which the report would replace; "
                "write the report to another file")
    glob = glob_selecting(config, output)
    if glob is None:
        return None
    key, what = (("annotations", "annotation files") if glob in config.annotations
                 else ("articles", "Markdown articles"))
    return (f"{output} is where the glob '{glob}' of '{key}' looks for {what}: the next link "
            "would read the report as one; write it elsewhere")


def replaces_an_input(
    output: Path, config: ProjectConfig, files: AnnotationFiles, db_path: Path
) -> bool:
    """Whether a report written to ``output`` would replace a file a run reads: the index
    in use (at ``db_path``) or the config's, each with its -wal and -shm files, the config
    file, or one of the annotation files ``files``, by its own name or another (a hard
    link)."""
    inputs = [index.with_name(index.name + suffix) for index in {db_path, config.db}
              for suffix in ("", "-wal", "-shm")]
    if config.source_file is not None:
        inputs.append(config.source_file)
    inputs += [path for paths in files for path in paths]
    return any(_same_file(path, output) for path in inputs)


def _same_file(path: Path, other: Path) -> bool:
    """The same path, or two names of one file (a hard link)."""
    try:
        if path.resolve() == other.resolve():
            return True
        return os.path.samefile(path, other)
    except (OSError, RuntimeError):  # one of them does not exist, or is a symlink loop
        return False


def readable_annotation_files(config: ProjectConfig) -> tuple[AnnotationFiles, list[Path]]:
    """`annotation_files` but those in the folders the globs reach that cannot be looked
    into, passed over as Python's glob passes over them, with those folders: for a command
    that reads the stored links and never the files (``diff``)."""
    unreadable: list[Path] = []
    files = (_glob(config, config.annotations, unreadable),
             _glob(config, config.articles, unreadable))
    return files, unreadable


def glob_selecting(config: ProjectConfig, path: Path) -> str | None:
    """The config's glob (of annotation files, then of articles) that selects ``path``,
    which need not exist yet (a report about to be written); None when none does."""
    for relative in _below_root(config.root, path):
        *path_folders, name = relative.parts or ("",)
        for pattern in (*config.annotations, *config.articles):
            folders, last = posixpath.split(pattern)
            parts = tuple(part for part in folders.split("/") if part)
            states = _past_stars(parts, {0})
            for depth, child in enumerate(path_folders):
                symlink = _is_symlink(config.root.joinpath(*path_folders[:depth + 1]))
                states = _states_below(parts, states, child, symlink)
            if len(parts) in states and fnmatch.fnmatchcase(name, last):
                return pattern
    return None


def _below_root(root: Path, path: Path) -> list[Path]:
    """``path`` relative to ``root``, as written (through a symlinked folder, which a glob
    looks into: ``annotations`` a link to a shared catalogue) and as it really is; none
    outside ``root``, where no glob looks."""
    found = []
    for written, top in ((os.path.abspath(path), os.path.abspath(root)),
                         (os.path.realpath(path), os.path.realpath(root))):
        with contextlib.suppress(ValueError):
            found.append(Path(written).relative_to(top))
    return found


class UnreadableFolder(AnnotationError):
    """A folder that an annotation glob reaches cannot be listed: Python's glob passes over
    it, and the claims of the files in it would drop out of the links unsaid."""


def _glob(config: ProjectConfig, patterns: tuple[str, ...],
          unreadable: list[Path] | None = None) -> list[Path]:
    """The files ``patterns`` select under the config's folder; a folder they reach that
    cannot be looked into is `UnreadableFolder`, or, given the list ``unreadable``, added
    to it."""
    root = config.root
    found: dict[Path, Path] = {}  # the file -> the first name it was found under
    walked: set[tuple[Path, tuple[str, ...]]] = set()
    for pattern in patterns:
        errors = _unreadable_folders(root, pattern, walked)
        if unreadable is not None:
            unreadable.extend(Path(error.filename) for error in errors)
        elif errors:
            raise _unreadable_folder(root, pattern, errors[0], config.file_name)
        for path in sorted(_matches(root, pattern)):
            if _is_file(path) or _leads_nowhere(path):  # a symlink to a file too, as a
                # symlinked folder is; one file under two names: once
                found.setdefault(Path(os.path.realpath(path)), path)
    return list(found.values())


def _matches(root: Path, pattern: str) -> list[Path]:
    """What ``pattern`` matches under ``root``: its parts with a wildcard globbed, the
    others looked up by name, a symlink to nothing too. Python's glob looks names up
    before 3.12 and since 3.13, but passes over a symlink to nothing before 3.12; 3.12's
    lists the folder of every name, and misses those in a folder one may enter but not
    list."""
    found = [root]
    for wildcard, group in itertools.groupby(pattern.split("/"),
                                             key=lambda part: bool(_WILDCARD.search(part))):
        parts = list(group)
        if wildcard:
            found = [match for folder in found for match in folder.glob("/".join(parts))]
        else:
            found = [path for folder in found if _is_there(path := folder.joinpath(*parts))]
    return found


def _is_there(path: Path) -> bool:
    """Whether ``path`` names something, a symlink to nothing too; not when that cannot be
    told (in a folder that cannot be entered: `_unreadable_folders`)."""
    try:
        path.lstat()
    except OSError:
        return False
    return True


def _is_symlink(path: Path) -> bool:
    """Whether ``path`` is a symlink; not when that cannot be told (in a folder that cannot
    be looked into, passed over as Python's glob passes over it: `_unreadable_folders`)."""
    try:
        return path.is_symlink()
    except OSError:
        return False


def _is_file(path: Path) -> bool:
    """Whether ``path`` is a file or a symlink to one; not when that cannot be told (a
    symlink into a folder one may not enter, passed over as a folder that cannot be looked
    into: `_leads_out_of_sight`)."""
    try:
        return path.is_file()
    except OSError:
        return False


def _leads_nowhere(path: Path) -> bool:
    """A symlink to nothing (its target moved away, or a loop): an annotation file that
    cannot be read, as the loader then says; passed over, its claims would drop out of the
    links unsaid."""
    try:
        path.stat()
    except OSError as error:
        return error.errno in _NOT_THERE and _is_symlink(path)
    return False


_WILDCARD = re.compile(r"[*?[]")


def _unreadable_folders(root: Path, pattern: str, walked: set[tuple]) -> list[OSError]:
    """Walk the folders ``pattern`` could match files in, as its glob does: the errors of
    those it cannot look into. ``walked`` holds the walks done (patterns that differ in
    their file names only, ``*.yml`` and ``*.yaml``, walk the same folders): each is done
    once."""
    parts = PurePosixPath(pattern).parts
    fixed = next((i for i, part in enumerate(parts) if _WILDCARD.search(part)), len(parts) - 1)
    top, folders, name = root.joinpath(*parts[:fixed]), parts[fixed:-1], parts[-1]
    walk = (top, folders, "*" if _WILDCARD.search(name) else name)
    if walk in walked:
        return []
    walked.add(walk)
    return _unreadable(*walk)


def _unreadable_folder(
    root: Path, pattern: str, error: OSError, config_name: str
) -> UnreadableFolder:
    unreadable = Path(error.filename)
    shown = unreadable.relative_to(root) if unreadable.is_relative_to(root) else unreadable
    change = f"change 'annotations' or 'articles' in {config_name} so that they do not reach it"
    if _leads_out_of_sight(unreadable):
        return UnreadableFolder(
            f"cannot tell where the symlink {shown} leads ({error.strerror}), which "
            f"'{pattern}' reaches: the annotation files there would be left out",
            hint=f"make the folder it leads into readable, or {change}",
        )
    return UnreadableFolder(
        f"cannot read the folder {shown} ({error.strerror}), which '{pattern}' reaches: "
        "its annotation files would be left out", hint=f"make it readable, or {change}",
    )


def _leads_out_of_sight(path: Path) -> bool:
    """A symlink into a folder one may not enter: whether to a file or a folder cannot be
    told."""
    try:
        path.stat()
    except OSError:
        return _is_symlink(path)
    return False


def _unreadable(top: Path, folders: tuple[str, ...], name: str) -> list[OSError]:
    """The errors of the folders below ``top`` (itself included) that the glob parts
    ``folders`` match a prefix of, and that the glob cannot look into: list it where a
    part there has a wildcard, else find the part's name (``name``, of a file, last) in
    it. As Python's glob does, a symlinked folder is followed but by ``**``. none when
    every folder can be looked into, or is not there."""
    errors: list[OSError] = []
    pending = [(str(top), _past_stars(folders, {0}))]
    while pending:
        folder, states = pending.pop()
        try:
            children = _subfolders(folder, states, folders, name)
        except OSError as error:
            if error.errno not in (errno.ENOENT, errno.ENOTDIR):
                errors.append(error)
            continue
        for child, symlink in children:
            below = _states_below(folders, states, child, symlink)
            if below:
                pending.append((os.path.join(folder, child), below))
    return errors


def _subfolders(
    folder: str, states: frozenset[int], folders: tuple[str, ...], name: str
) -> list[tuple[str, bool]]:
    """The subfolders of ``folder`` the glob looks at, each with whether it is a symlink:
    all when some part there has a wildcard, else those of the parts' names."""
    parts = [folders[state] if state < len(folders) else name for state in states]
    if any(_WILDCARD.search(part) for part in parts):
        with os.scandir(folder) as entries:
            return [(entry.name, entry.is_symlink()) for entry in entries if _is_folder(entry)]
    present = []
    for state, part in zip(states, parts, strict=True):
        path = os.path.join(folder, part)
        try:
            mode = os.stat(path).st_mode
        except OSError as error:
            if error.errno not in _NOT_THERE:  # the folder, or where a symlink there leads
                raise OSError(error.errno, error.strerror,
                              path if _leads_out_of_sight(Path(path)) else folder) from None
            continue
        if state < len(folders) and stat.S_ISDIR(mode):
            present.append((part, False))
    return present


_NOT_THERE = (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)  # as the glob has it


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError as error:  # a symlink into a folder one may not enter
        if error.errno in _NOT_THERE:
            return False
        raise OSError(error.errno, error.strerror, entry.path) from None


def _states_below(
    folders: tuple[str, ...], states: frozenset[int], child: str, symlink: bool
) -> frozenset[int]:
    """The states of the subfolder ``child`` of a folder in ``states``: a ``**`` goes on
    into it (but into a symlink, as the glob), any other part must match its name."""
    below = set()
    for here in states:
        if here == len(folders):
            continue
        if folders[here] == "**":
            if not symlink:
                below.add(here)
        elif fnmatch.fnmatchcase(child, folders[here]):
            below.add(here + 1)
    return _past_stars(folders, below)


def _past_stars(folders: tuple[str, ...], states: set[int]) -> frozenset[int]:
    """``states`` (how many of the glob parts ``folders`` a folder matched), with those
    that a ``**`` matching no folder reaches."""
    reached = set(states)
    pending = list(states)
    while pending:
        state = pending.pop()
        if state < len(folders) and folders[state] == "**" and state + 1 not in reached:
            reached.add(state + 1)
            pending.append(state + 1)
    return frozenset(reached)


@dataclass
class FileLink:
    """One annotation file's article and claims, resolved: the rows a link stores of them
    and, per ref, the error it reports (``errors``, beside ``refs``), as JSON data. A link
    stores it with the file's `_file_digest`, and takes it again, instead of reading and
    resolving the file, while that digest stands."""

    path: str
    title: str | None
    source_file: str
    claims: list[dict]
    untracked: dict[str, int] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        data = [self.path, self.title, self.source_file, self.claims, self.untracked]
        return zlib.compress(json.dumps(data, ensure_ascii=False).encode(), 1)

    @classmethod
    def from_bytes(cls, stored: bytes) -> FileLink:
        return cls(*json.loads(zlib.decompress(stored)))


def _store(
    database: Database, file_links: list[FileLink], load_errors: list[AnnotationError],
    untracked: dict[str, int], signature: str | None, cache: claim_store.FileLinkCache,
    as_stored: dict[tuple[str, bool], str] | None, config: ProjectConfig,
) -> LinkOutcome:
    """Store the claims of ``file_links`` (and ``cache``, see `claim_store.replace_articles`),
    saying in the outcome what they hold; ``as_stored``: the stored digests read when each
    file's links were found to be those stored for it, and no file that had some gone;
    ``config``: the config, whose folder articles are named from."""
    outcome = LinkOutcome(errors=list(load_errors), untracked=untracked)
    failed_files = {error.file for error in load_errors if error.file}
    rows = _article_rows(file_links, outcome, failed_files)
    outcome.split = (_split_articles(file_links)
                     + _unselected_articles(file_links, failed_files, config))
    clean = not load_errors and not failed_files
    if signature is not None and not clean:
        signature = _UNREADABLE + signature
    if not (clean and as_stored is not None
            and _stored_already(database, rows)
            and claim_store.keep_articles(database, signature, cache, as_stored)):
        claim_store.replace_articles(database, rows, failed_files, signature, cache)
    return outcome


def _stored_already(database: Database, rows: list[claim_store.ArticleRow]) -> bool:
    """Whether the stored claims are ``rows``, row ids included, so that `replace_articles`
    would write them again as they are, when each file's links are those stored for it:
    the stored claims come from those (the last link was clean: it wrote every row), and
    they are in the same order (the files globbed in the same order)."""
    previous = claim_store.link_signature(database)
    if previous is None or previous.startswith(_UNREADABLE):
        return False
    order = [(claim.article, claim.claim_id, claim.source_file)
             for article in rows for claim in article.claims]
    return claim_store.claim_order(database) == order


class NoClaims(AnnotationError):
    """No annotation file is in view, or those in view hold no claim: linking them would
    store none (emptying the stored links), and a check of nothing would pass."""


def require_annotation_files(config: ProjectConfig) -> AnnotationFiles:
    """The config's `annotation_files`, for `link_if_changed` to link; refused when there
    is none: a glob's typo, or a run from the wrong folder."""
    files = annotation_files(config)
    if not any(files):
        found = config.config_above() or config.config_below()
        if found is not None:
            advice = run_from(found)
        elif config.source_file is not None:
            advice = f"add one, or set 'annotations' and 'articles' in {config.file_name}"
        else:
            advice = ("run from your articles' folder, or set 'annotations' and 'articles' "
                      "in annotate.toml")
        raise NoClaims(f"no annotation file under {config.root} matches {_patterns(config)}; "
                       + advice)
    return files


def _patterns(config: ProjectConfig) -> str:
    return ", ".join(config.annotations + config.articles) or "(none)"


def link_if_changed(
    database: Database, config: ProjectConfig, *, force: bool = False,
    files: AnnotationFiles | None = None, reuse: bool = True,
) -> LinkOutcome | None:
    """Link again unless the annotation files (``files``, default the config's
    `annotation_files`), the config and the index are exactly as they were at the last
    clean link (or ``force``); None when nothing needed doing.

    A file whose `_file_digest` is the one stored with its links at the last link is not
    read nor resolved again (unless not ``reuse``): its stored `FileLink` is taken, and
    the links stored are those a link of every file stores.
    """
    files = files if files is not None else annotation_files(config)
    dependencies = _dependencies(database, config)
    contents = _contents(files)
    signature = _signature(dependencies, contents)
    if not force and signature is not None and claim_store.link_signature(database) == signature:
        return None
    gathered = _FileLinks(database, config, dependencies, reuse)
    for path, markdown, data in contents:
        gathered.add(path, markdown, data)
    if not gathered.load_errors and not any(link.claims for link in gathered.file_links):
        count = len(files[0]) + len(files[1])
        raise NoClaims(f"the {counted(count, 'annotation file')} under {config.root} matching "
                       f"{_patterns(config)} {'holds' if count == 1 else 'hold'} no claims",
                       hint=f"check 'annotations' and 'articles' in {config.file_name}; the stored "
                            "links are kept")
    return _store(database, gathered.file_links, gathered.load_errors, gathered.untracked,
                  signature, gathered.cache, gathered.as_stored(), config)


class _FileLinks:
    """The `FileLink` of each annotation file that loads, in order: the stored one while
    its file's digest stands (when ``reuse``), else the file read and resolved."""

    def __init__(
        self, database: Database, config: ProjectConfig, dependencies: bytes, reuse: bool
    ) -> None:
        self.database, self.config, self.dependencies = database, config, dependencies
        self.digests = claim_store.file_link_digests(database)
        self.stored = self.digests if reuse else {}
        self.resolver = Resolver(database, config, files_split=LINK_FILES_SPLIT)
        self.file_links: list[FileLink] = []
        self.load_errors: list[AnnotationError] = []
        self.untracked: dict[str, int] = {}
        self.cache = claim_store.FileLinkCache()
        self.same = True  # so far, every file's links are those stored for it
        self.taken = False  # some file's links were taken from the last link

    def as_stored(self) -> dict[tuple[str, bool], str] | None:
        """The stored digests when each file's links are those stored for it, no file
        that had some is gone, and the last link depended on what this one does (some
        file's digest stands): it stored the same links as the same rows (a new link
        format may not); else None."""
        same = self.taken and self.same and self.cache.kept == set(self.digests)
        return self.digests if same else None

    def add(self, path: Path, markdown: bool, data: bytes | None) -> None:
        from annotations.loader import display_path, load_file  # only when linking

        key = (display_path(path, self.config.root), markdown)
        digest = _file_digest(self.dependencies, key, data)
        stored = (claim_store.file_link(self.database, key, digest)
                  if digest is not None and self.stored.get(key) == digest else None)
        if stored is not None:
            file_link = FileLink.from_bytes(stored)
            self.taken = True
        else:
            loaded = load_file(path, self.config.root, markdown=markdown,
                               repos=repo_filter(self.config), data=data)
            self.load_errors += loaded.errors
            if not loaded.articles:
                self.same = False
                return
            file_link = _file_link(self.resolver, loaded.articles[0], loaded.untracked)
            links = file_link.to_bytes()
            if digest is not None:  # else read by the loader only: its bytes are unknown
                self.cache.written[key] = (digest, links)
            self.same = self.same and digest is not None and key in self.digests and (
                claim_store.file_link(self.database, key, self.digests[key]) == links)
        if digest is not None:
            self.cache.kept.add(key)
        self.file_links.append(file_link)
        for repo, count in file_link.untracked.items():
            self.untracked[repo] = self.untracked.get(repo, 0) + count


_Contents = list[tuple[Path, bool, "bytes | None"]]


def _contents(files: tuple[list[Path], list[Path]]) -> _Contents:
    """Each file, whether it is a Markdown article, and its bytes (None when it cannot
    be read: the loader says why), YAML files first."""
    contents: _Contents = []
    for markdown, paths in enumerate(files):
        for path in paths:
            try:
                data: bytes | None = path.read_bytes()
            except OSError:
                data = None
            contents.append((path, bool(markdown), data))
    return contents


def _dependencies(database: Database, config: ProjectConfig) -> bytes:
    """What the links of every file depend on besides the file: annotate's version and
    link format, the extractor and the matching engine, the configured repos and globs,
    and the indexed versions."""
    from annotations.comparison import ENGINE
    from indexer.extractor import extractor_id

    parts = (f"links {LINK_FORMAT}", _annotate_version(), extractor_id(), ENGINE,
             repr(sorted(config.repos.items())), repr((config.annotations, config.articles)),
             claim_store.index_state(database))
    return "\0".join(parts).encode()


def _annotate_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("vllm-annotate")
    except metadata.PackageNotFoundError:  # run from a checkout that is not installed
        return "unknown"


def _file_digest(dependencies: bytes, key: tuple[str, bool], data: bytes | None) -> str | None:
    """What a file's links depend on: the `_dependencies`, its ``key`` (path and whether it
    is a Markdown article) and its bytes; None when it could not be read."""
    if data is None:
        return None
    display, markdown = key
    digest = hashlib.sha256(dependencies)
    digest.update(b"\0%d\0%s\0" % (markdown, display.encode("utf-8", "surrogateescape")))
    digest.update(data)
    return digest.hexdigest()


class LinkState(str, Enum):
    """How the stored links stand to what the config's annotation files say."""

    CURRENT = "current"
    CHANGED = "changed"  # the files, the config or the index changed since the last link
    UNREADABLE = "unreadable"  # unchanged, but some file could not be read then
    NO_FILES = "no files"  # claims are stored, and the config finds no annotation file


@contextlib.contextmanager
def linkable(
    database: Database, config: ProjectConfig, *, relink: bool = True,
    notify: Callable[[str], None],
) -> Iterator[Database]:
    """The database to link (and check) in: ``database``, unless it is read-only (a CI
    cache restored read-only), its links are not current and they are to be linked again
    (``relink``; not to read the stored links' status): then a temporary copy of it, where
    they are linked again for this run only, which ``notify`` is told."""
    if not relink or not database.read_only or link_state(database, config) is LinkState.CURRENT:
        yield database
        return
    with database.scratch_copy() as copy:
        notify("the index cannot be written: the annotation files are linked in a "
               "temporary copy of it, for this run only")
        yield copy


def link_state(
    database: Database, config: ProjectConfig, files: AnnotationFiles | None = None
) -> LinkState:
    """Where the config finds no annotation files (the articles folder emptied, or globs
    that match nothing), NO_FILES when claims are stored (`link` would refuse, and keep
    them) and CURRENT when none are: nothing to compare with. ``files`` are the config's
    `annotation_files`, when the caller found them already."""
    try:
        files = annotation_files(config) if files is None else files
    except UnreadableFolder:  # `link` names it
        return LinkState.CHANGED
    if not (files[0] or files[1]):
        return LinkState.NO_FILES if claim_store.has_claims(database) else LinkState.CURRENT
    signature = _signature(_dependencies(database, config), _contents(files))
    stored = claim_store.link_signature(database)
    if signature is not None and stored == signature:
        return LinkState.CURRENT
    if signature is not None and stored == _UNREADABLE + signature:
        return LinkState.UNREADABLE
    return LinkState.CHANGED


def _signature(dependencies: bytes, contents: _Contents) -> str | None:
    """What the links depend on: the `_dependencies` and the files; None when a file
    vanished or is unreadable (the loader reports it)."""
    digest = hashlib.sha256(dependencies + b"\0")
    for path, _, data in contents:
        if data is None:
            return None
        digest.update(os.fsencode(path) + b"\0" + data + b"\0")
    return digest.hexdigest()


def repo_filter(config: ProjectConfig) -> RepoFilter:
    """The body permalinks that are claims: those into configured repos, and those into a
    repo whose name is close to one (to be reported broken: more likely a typo)."""
    return RepoFilter(lambda github: bool(config.repo_for_github(github)
                                          or config.github_close_to(github)))


def _split_articles(file_links: list[FileLink]) -> list[AnnotationError]:
    """An annotation file's ``article: kv/bridge.md`` beside the Markdown article
    ``articles/kv/bridge.md``: the two are merged only when the paths are equal."""
    markdown = {link.path for link in file_links if _is_markdown(link.source_file)}
    found: list[AnnotationError] = []
    for link in file_links:
        if _is_markdown(link.source_file) or link.path in markdown:
            continue
        longer = sorted(path for path in markdown if path.endswith("/" + link.path))
        if len(longer) == 1:
            found.append(_two_articles(link, longer[0]))
    return found


def _two_articles(link: FileLink, article: str) -> AnnotationError:
    """That ``link``'s ``article:`` names the Markdown article ``article`` otherwise."""
    return AnnotationFileError(
        f"article '{link.path}' is not the Markdown article '{article}': their claims are "
        "two articles", file=link.source_file,
        hint=f"write 'article: {article}' to make them one")


def _unselected_articles(
    file_links: list[FileLink], failed_files: set[str], config: ProjectConfig
) -> list[AnnotationError]:
    """An annotation file's ``article: docs/notes.md``, a Markdown file under ``root`` that
    the config's ``articles`` globs do not select: its front matter and permalinks are not
    read, which its author, naming it, surely meant them to be. A selected one that did not
    load (``failed_files``) has its own error; one named by another path
    (``./articles/x.md``) is a second article."""
    root = config.root
    selected = {os.path.realpath(root / path): path for path in failed_files
                if _is_markdown(path)}  # a file that did not load: its path is its article's
    selected |= {os.path.realpath(root / link.source_file): link.path for link in file_links
                 if _is_markdown(link.source_file)}
    found: list[AnnotationError] = []
    for link in file_links:
        if (_is_markdown(link.source_file) or link.path in selected.values()
                or not _is_markdown(link.path)
                or not os.path.isfile(root / link.path)):  # False for a name too long
            continue
        article = selected.get(os.path.realpath(root / link.path))
        if article is not None:
            found.append(_two_articles(link, article))
            continue
        found.append(AnnotationFileError(
            f"article '{link.path}' is a Markdown file that the 'articles' globs of the config "
            "do not select: its front matter and permalinks are not read",
            file=link.source_file, hint=f"add '{link.path}' to 'articles' in {config.file_name}"))
    return found


def _is_markdown(source_file: str) -> bool:
    return source_file.lower().endswith((".md", ".markdown"))


def _article_rows(
    file_links: list[FileLink], outcome: LinkOutcome, failed_files: set[str]
) -> list[claim_store.ArticleRow]:
    """One row per article: files naming the same article add their claims to it.

    A file repeating a claim id of an earlier file's claim of the same article is reported,
    and like a file that fails to load it adds nothing and keeps its previous rows.
    """
    merged: dict[str, FileLink] = {}
    first: dict[tuple[str, str], dict] = {}
    for link in file_links:
        clashes = [claim for claim in link.claims if (link.path, claim["claim_id"]) in first]
        for claim in clashes:
            earlier = first[link.path, claim["claim_id"]]
            outcome.errors.append(AnnotationFileError(
                f"duplicate claim id '{claim['claim_id']}' of article '{link.path}' "
                f"(first defined at {earlier['source_file']}:{earlier['line']})",
                file=claim["source_file"], line=claim["line"],
            ))
        if clashes:
            failed_files.add(link.source_file)
            continue
        first.update(((link.path, claim["claim_id"]), claim) for claim in link.claims)
        base = merged.get(link.path)
        merged[link.path] = link if base is None else FileLink(
            link.path, base.title or link.title, base.source_file, base.claims + link.claims)
    return [_article_row(article, outcome) for article in merged.values()]


def _article_row(article: FileLink, outcome: LinkOutcome) -> claim_store.ArticleRow:
    outcome.articles += bool(article.claims)  # as check counts them: a README is none
    claims = [_claim_row(claim, outcome) for claim in article.claims]
    return claim_store.ArticleRow(article.path, article.title, article.source_file, claims)


def _claim_row(claim: dict, outcome: LinkOutcome) -> claim_store.ClaimRow:
    """The stored row of a `_resolved_claim`; its refs' states and errors told in
    ``outcome`` (a broken ref whose claim waives ``broken`` until today is no error)."""
    outcome.claims += 1
    waivers = tuple(Waiver(w["status"], datetime.date.fromisoformat(w["until"]), w["reason"],
                           w["line"]) for w in claim["waivers"])
    for ref, error in zip(claim["refs"], claim["errors"], strict=True):
        outcome.refs += 1
        outcome.states[ref["state"]] += 1
        if error is None:
            continue
        if ref["state"] == "unindexed":
            unindexed = outcome.unindexed.setdefault(error["pin"], UnindexedRefs(_error(error)))
            unindexed.add(claim["article"], claim["claim_id"])
        else:
            _broken(_error(error), waivers, outcome)
    return claim_store.ClaimRow(
        claim["article"], claim["claim_id"], claim["text"], claim["pin"],
        claim["source_file"], claim["line"], claim["refs"], claim["waivers"], claim["symbols"],
    )


def _file_link(resolver: Resolver, article: Article, untracked: dict[str, int]) -> FileLink:
    claims = [_resolved_claim(resolver, claim) for claim in article.claims]
    return FileLink(article.path, article.title, article.source_file, claims, dict(untracked))


def _resolved_claim(resolver: Resolver, claim: Claim) -> dict:
    """A claim's columns, its refs' rows (resolved at their pins) and their `_error_data`
    (None for a ref that linked), as JSON data."""
    resolved = [_ref_row(resolver, claim, seq, entry) for seq, entry in enumerate(claim.refs)]
    refs = [row for row, _ in resolved]
    symbols = " ".join(f"{ref.get('path') or ''} {ref.get('qualname') or ''}" for ref in refs)
    waivers = [
        {"status": w.status, "until": w.until.isoformat(), "reason": w.reason, "line": w.line}
        for w in claim.waivers
    ]
    return {"article": claim.article, "claim_id": claim.claim_id, "text": claim.text,
            "pin": claim.at, "source_file": claim.source_file, "line": claim.line,
            "refs": refs, "waivers": waivers, "symbols": symbols,
            "errors": [error for _, error in resolved]}


def _ref_row(
    resolver: Resolver, claim: Claim, seq: int, entry: RefEntry
) -> tuple[dict, dict | None]:
    """The ref's row, and the `_error_data` of why it is broken or unindexed (with the
    ``pin`` of an unindexed one)."""
    row: dict = {"seq": seq, "written": entry.text, "line": entry.line, "quote": entry.quote,
                 "repo": entry.ref.repo, "version": entry.ref.version}
    if entry.unreadable is not None:
        return _state(row, "broken", entry.unreadable.located(claim.source_file, entry.line))
    try:
        resolved = _quoted_definition(resolver, resolver.resolve(entry.ref), entry)
    except UnindexedVersion as error:
        if _unknown_version(resolver, error):
            if _pinned_by_at(claim, entry, error):
                unknown = _unknown_at(resolver, error)
                return _state(row, "broken", unknown.located(claim.source_file, claim.at_line))
            unknown = _unknown_pin(error, entry.text, resolver.config)
            return _state(row, "broken", unknown.located(claim.source_file, entry.line))
        row, data = _state(row, "unindexed", error.located(claim.source_file, entry.line))
        return row, {**(data or {}), "pin": f"{error.repo}@{error.version}"}
    except ResolveError as error:
        return _state(row, "broken", error.located(claim.source_file, entry.line))
    row.update(_resolved_columns(resolved))
    row["uses"] = [_use_row(resolver, text) for text in entry.uses]
    relation_error = _relation_error(resolver, resolved, row["uses"])
    if relation_error is not None:
        return _state(row, "broken", relation_error.located(claim.source_file, entry.line))
    return _state(row, "linked", None)


def _broken(
    error: AnnotationError, waivers: tuple[Waiver, ...], outcome: LinkOutcome
) -> None:
    """A broken ref: an error, unless its claim waives ``broken`` until today or later
    (``check`` then lets it pass, and so does ``link``)."""
    waiver = governing_waiver(waivers, "broken")
    if waiver is not None and waiver.in_force(datetime.date.today()):
        outcome.waived.append((error, waiver))
    else:
        outcome.add_error_once(error)


_ERROR_CLASSES = (ResolveError, AnnotationFileError, RefSyntaxError, AnnotationError)
"""The classes an error of a stored `FileLink` is made again as: `check` tells a file's
errors (not `ResolveError`s) from its refs'."""


def _error_data(error: AnnotationError) -> dict:
    kind = next(cls for cls in _ERROR_CLASSES if isinstance(error, cls))
    return {"class": kind.__name__, "message": error.message, "hint": error.hint,
            "file": error.file, "line": error.line}


def _error_key(error: AnnotationError) -> tuple:
    """What tells two errors apart (`_error_data`'s values)."""
    return tuple(_error_data(error).values())


def _error(data: dict) -> AnnotationError:
    kind = next(cls for cls in _ERROR_CLASSES if cls.__name__ == data["class"])
    return kind(data["message"], file=data["file"], line=data["line"], hint=data["hint"])


def _unknown_version(resolver: Resolver, error: UnindexedVersion) -> bool:
    return error.version not in resolver.config.repo(error.repo).versions


def _pinned_by_at(claim: Claim, entry: RefEntry, error: UnindexedVersion) -> bool:
    """Whether ``entry`` took the version ``error`` names from its claim's ``at:`` (it is
    written with no ``REPO@VERSION:`` or URL of its own)."""
    written = entry.text.split("::", 1)[0].split("#", 1)[0]
    return (claim.at_line is not None and claim.at == f"{error.repo}@{error.version}"
            and "@" not in written and not written.startswith("https://"))


def _unknown_at(resolver: Resolver, error: UnindexedVersion) -> ResolveError:
    """An ``at:`` at a version neither indexed nor configured: one error at that line for
    every ref it pins, naming the versions of the repo close to it."""
    pin = f"{error.repo}@{error.version}"
    known = list(dict.fromkeys([*resolver.config.repo(error.repo).versions,
                                *queries.indexed_versions(resolver.database, error.repo)]))
    close = error.misspelling_of or misspelling_of(error.version, known)
    meant = f"{did_you_mean([f'{error.repo}@{close}'])} " if close else ""
    return ResolveError(
        f"at: {pin} is neither indexed nor configured, so the refs it pins cannot be resolved",
        hint=f"{meant}{error.repo} has {', '.join(known) or 'none'}; or "
             f"{_configure_and_index(error, resolver.config)}")


def _configure_and_index(error: UnindexedVersion, config: ProjectConfig) -> str:
    """``add v0.2.0 to 'versions' of [repos.vllm] in annotate.toml and run 'annotate index
    vllm@v0.2.0'``: how a version neither indexed nor configured comes to resolve. Of a
    version named as PyPI numbers it, which neither is taken, its tag's."""
    repo = config.repo(error.repo)
    version = f"v{error.version}" if is_pypi_number(repo, error.version) else error.version
    pin = f"{error.repo}@{version}"
    advice = (f"add {version} to 'versions' of "
              f"{table_in(config.file_name, f'repos.{error.repo}')} and "
              f"{queries.index_advice(pin, config_name=config.file_name)}")
    if version == error.version:
        return advice
    return f"write {pin}: {repo.github} tags it {version}; then {advice}"


def _unknown_pin(error: UnindexedVersion, written: str, config: ProjectConfig) -> ResolveError:
    """A pin at a version neither indexed nor configured: a typo, a branch or a commit, none
    of which ``annotate index`` (of the configured versions) will ever make resolve."""
    pin = f"{error.repo}@{error.version}"
    if error.misspelling_of:  # in the message, where check shows it
        return ResolveError(f"{pin} is neither indexed nor configured; "
                            + queries.indexed_spelling_hint(error.repo, error.misspelling_of))
    if written.startswith("https://") and COMMIT.fullmatch(error.version):
        hint = ("a commit names only a version indexed from git at that commit (a wheel "
                "records none): put the release tag in its place, blob/TAG/PATH")
    elif written.startswith("https://"):
        hint = "a permalink must name a configured release tag: blob/TAG/PATH"
    elif is_pypi_number(config.repo(error.repo), error.version):
        hint = _configure_and_index(error, config)
    else:
        hint = f"fix the pin, or {_configure_and_index(error, config)}"
    return ResolveError(f"{pin} is neither indexed nor configured", hint=hint)


def _relation_error(
    resolver: Resolver, resolved: Resolved, uses: list[dict]
) -> AnnotationError | None:
    """Why the ``uses:`` targets (`_use_row`'s rows, whose errors this takes out) do not
    hold at the ref's own pin, or None when they do."""
    errors = [use.pop("error") for use in uses if "error" in use]
    if errors:
        return errors[0]
    unnamed = resolver.unnamed_uses_in(resolved, uses) if uses else []
    if unnamed:
        return ResolveError(
            f"{resolved.canonical} does not refer to {', '.join(unnamed)} at its own pin",
            hint="the relation is wrong from the start: fix the uses: entry or the ref",
        )
    return None


def _quoted_definition(resolver: Resolver, resolved: Resolved, entry: RefEntry) -> Resolved:
    """``resolved``, or the other definition of its qualname in its file that holds the
    ref's quote (a property's setter: ``PATH::QUALNAME`` names the getter, defined first)."""
    if entry.quote is None or quote_stands(entry.quote, resolver.text_of(resolved)):
        return resolved
    others = [] if entry.ref.form is RefForm.PERMALINK else resolver.other_definitions(resolved)
    for other in others:
        if quote_stands(entry.quote, resolver.text_of(other)):
            return other
    where = " or in its other definitions" if others else ""
    texts = [resolver.text_of(definition) for definition in (resolved, *others)]
    closest = _closest_line(entry.quote, texts)
    raise ResolveError(
        f"quote '{entry.quote}' does not occur in {resolved.canonical}{where} at its own pin",
        hint="the annotation is wrong from the start: fix the quote or the ref"
             + (f"; its closest line: '{closest}'" if closest else ""),
    )


QUOTED_LINE_MAX = 100
"""How much of the closest line a broken quote's hint shows."""


def _closest_line(quote: str, texts: list[str]) -> str | None:
    """The line of ``texts`` that holds the most of ``quote``, in order, in runs of
    `QUOTE_RUN` characters or more (white space runs as one space, as a quote stands),
    when it holds at least `QUOTE_FOUND` of it, as a typo or a spacing leaves it:
    ``is_graph_capturing=True,`` for ``is_graph_capturing = True``; None otherwise."""
    wanted = " ".join(quote.split())
    lines = dict.fromkeys(" ".join(line.split()) for text in texts for line in split_lines(text))
    # A line holds no more of the quote, in order, than it holds characters of it: most
    # lines of a big class are passed over without matching them (0.3 s of 7,065 lines).
    needed, characters = QUOTE_FOUND * len(wanted), Counter(wanted)
    scored = [(_share_found(wanted, line), -len(line), line) for line in lines
              if len(line) >= needed and (characters & Counter(line)).total() >= needed]
    best = max(scored, default=None)
    if best is None or best[0] < QUOTE_FOUND:
        return None
    line = best[2]
    return line if len(line) <= QUOTED_LINE_MAX else line[:QUOTED_LINE_MAX - 3] + "..."


QUOTE_FOUND = 0.8
"""The share of a broken quote's characters, in order, that a line must hold to be named."""


QUOTE_RUN = 2
"""The fewest characters of a broken quote, one after another, that count as found in a
line: single ones strewn over a line ('(' and ')' of 'if f(x):' for '()', or 'self.foo()'
in 'disable=not self.load_config.use_tqdm_on_load,') are no likeness."""


def _share_found(wanted: str, line: str) -> float:
    """The share of ``wanted``'s characters that ``line`` holds in the same order, in runs
    of at least `QUOTE_RUN`."""
    matcher = SequenceMatcher(None, wanted, line, autojunk=False)
    return sum(block.size for block in matcher.get_matching_blocks()
               if block.size >= QUOTE_RUN) / max(len(wanted), 1)


def _use_row(resolver: Resolver, text: str) -> dict:
    """A ``uses:`` target, resolved; with its ``error`` when it does not resolve."""
    try:
        used = resolver.resolve(parse_ref(text))
    except UnindexedVersion as error:
        if _unknown_version(resolver, error):
            unknown = _unknown_pin(error, text, resolver.config)
            return {"written": text, "error": _of_a_use(unknown)}
        return {"written": text}
    except AnnotationError as error:
        return {"written": text, "error": _of_a_use(error)}
    return {"written": text, "resolved": used.canonical, "repo": used.repo,
            "version": used.version, "path": used.path, "qualname": used.qualname}


def _of_a_use(error: AnnotationError) -> AnnotationError:
    """``error`` of a ``uses:`` target, saying so: the ref's own symbol may well resolve."""
    of_a_use = copy.copy(error)
    of_a_use.message = f"uses: {error.message}"
    return of_a_use


def _resolved_columns(resolved: Resolved) -> dict:
    return {
        "repo": resolved.repo, "version": resolved.version, "resolved": resolved.canonical,
        "path": resolved.path, "qualname": resolved.qualname, "kind": resolved.kind,
        "start_line": resolved.start_line, "end_line": resolved.end_line,
        "blob_id": resolved.blob_id, "exact": resolved.exact,
        "normalized": resolved.normalized, "shape": resolved.shape,
    }


def _state(
    row: dict, state: str, error: AnnotationError | None
) -> tuple[dict, dict | None]:
    row["state"] = state
    row["message"] = _stored_message(state, error)
    return row, None if error is None else _error_data(error)


def _stored_message(state: str, error: AnnotationError | None) -> str | None:
    """What ``check`` will say of the ref: a broken ref's hint with it, since ``check``
    prints no ``link`` errors (an unindexed ref's hint is ``check``'s own)."""
    if error is None:
        return None
    return error.explained if state == "broken" else error.message
