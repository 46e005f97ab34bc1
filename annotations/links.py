"""``annotate link``: read every claim, resolve each ref at its pin, store the links.

A ref's state is ``linked`` (resolved, with the symbol's fingerprints at the pin),
``unindexed`` (its version is not in the index yet) or ``broken`` (it does not resolve,
or its ``quote`` or ``uses:`` does not hold in the symbol at its own pin).
"""

from __future__ import annotations

import datetime
import errno
import fnmatch
import hashlib
import os
import re
import stat
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path, PurePosixPath

from annotations.errors import AnnotationError, AnnotationFileError
from annotations.model import (
    Article,
    Claim,
    LoadResult,
    RefEntry,
    RepoFilter,
    Waiver,
    governing_waiver,
)
from annotations.refs import RefForm, parse_ref
from annotations.resolve import (
    Resolved,
    ResolveError,
    Resolver,
    UnindexedVersion,
    quote_stands,
)
from annotations.wording import counted, pinned_at_unindexed
from db import claims as claim_store
from db import queries
from db.database import Database
from db.version_order import COMMIT
from indexer.config import ProjectConfig, run_from

_UNREADABLE = "unreadable "  # before the signature of a link that could not read every file
LINK_FORMAT = 14
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
definition no link uses has its own line as its text, not its block of definitions'."""


@dataclass
class UnindexedRefs:
    """The refs pinned at one version that is configured but not indexed yet."""

    error: AnnotationError
    """The first ref's error, which the others share."""
    refs: int = 0
    claims: set[tuple[str, str]] = field(default_factory=set)

    def add(self, claim: Claim) -> None:
        self.refs += 1
        self.claims.add((claim.article, claim.claim_id))

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
    its own: two articles where the author meant one."""


AnnotationFiles = tuple[list[Path], list[Path]]
"""The YAML annotation files and the Markdown articles (`annotation_files`)."""


def annotation_files(config: ProjectConfig) -> AnnotationFiles:
    """The YAML annotation files and Markdown articles the config's globs select."""
    return _glob(config.root, config.annotations), _glob(config.root, config.articles)


class UnreadableFolder(AnnotationError):
    """A folder that an annotation glob reaches cannot be listed: Python's glob passes over
    it, and the claims of the files in it would drop out of the links unsaid."""


def _glob(root: Path, patterns: tuple[str, ...]) -> list[Path]:
    found: dict[Path, Path] = {}  # the file -> the first name it was found under
    walked: set[tuple[Path, tuple[str, ...]]] = set()
    for pattern in patterns:
        _refuse_unreadable_folders(root, pattern, walked)
        for path in sorted(root.glob(pattern)):
            if path.is_file():  # a symlink to a file too, as a symlinked folder is
                found.setdefault(path.resolve(), path)  # one file under two names: once
    return list(found.values())


_WILDCARD = re.compile(r"[*?[]")


def _refuse_unreadable_folders(root: Path, pattern: str, walked: set[tuple]) -> None:
    """Walk the folders ``pattern`` could match files in, as its glob does, and raise
    `UnreadableFolder` for the first that it cannot look into. ``walked`` holds the walks
    done (patterns that differ in their file names only, ``*.yml`` and ``*.yaml``, walk
    the same folders): each is done once."""
    parts = PurePosixPath(pattern).parts
    fixed = next((i for i, part in enumerate(parts) if _WILDCARD.search(part)), len(parts) - 1)
    top, folders, name = root.joinpath(*parts[:fixed]), parts[fixed:-1], parts[-1]
    walk = (top, folders, "*" if _WILDCARD.search(name) else name)
    if walk in walked:
        return
    walked.add(walk)
    error = _first_unreadable(*walk)
    if error is None:  # nothing there to match is no error
        return
    unreadable = Path(error.filename)
    shown = unreadable.relative_to(root) if unreadable.is_relative_to(root) else unreadable
    raise UnreadableFolder(
        f"cannot read the folder {shown} ({error.strerror}), which '{pattern}' reaches: "
        "its annotation files would be left out",
        hint="make it readable, or change 'annotations' or 'articles' in annotate.toml so "
             "that they do not reach it",
    )


def _first_unreadable(top: Path, folders: tuple[str, ...], name: str) -> OSError | None:
    """The error of the first folder below ``top`` (itself included) that the glob parts
    ``folders`` match a prefix of, and that the glob cannot look into: list it where a
    part there has a wildcard, else find the part's name (``name``, of a file, last) in
    it. As Python's glob does, a symlinked folder is followed but by ``**``. None when
    every folder can be looked into, or is not there."""
    pending = [(str(top), _past_stars(folders, {0}))]
    while pending:
        folder, states = pending.pop()
        try:
            children = _subfolders(folder, states, folders, name)
        except OSError as error:
            if error.errno in (errno.ENOENT, errno.ENOTDIR):
                continue
            return error
        for child, symlink in children:
            below = _states_below(folders, states, child, symlink)
            if below:
                pending.append((os.path.join(folder, child), below))
    return None


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
        try:
            mode = os.stat(os.path.join(folder, part)).st_mode
        except OSError as error:
            if error.errno not in _NOT_THERE:
                raise OSError(error.errno, error.strerror, folder) from None
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


def load_claims(config: ProjectConfig, files: AnnotationFiles | None = None) -> LoadResult:
    """The claims of ``files`` (default: the config's `annotation_files`)."""
    from annotations.loader import load_all  # only when something is to be linked

    yaml_files, markdown_files = files if files is not None else annotation_files(config)
    return load_all(yaml_files, markdown_files, config.root, repo_filter(config))


def link_all(
    database: Database, config: ProjectConfig, loaded: LoadResult, signature: str | None = None
) -> LinkOutcome:
    """Resolve and store every claim of ``loaded`` in one transaction, with ``signature``
    (see `link_if_changed`), marked when some file did not load (see `link_state`)."""
    resolver = Resolver(database, config)
    outcome = LinkOutcome(errors=list(loaded.errors), untracked=dict(loaded.untracked))
    failed_files = {error.file for error in loaded.errors if error.file}
    articles = _merge_articles(loaded.articles, outcome, failed_files)
    outcome.split = _split_articles(loaded.articles)
    rows = [_article_row(resolver, article, outcome) for article in articles]
    clean = not loaded.errors and not failed_files
    if signature is not None and not clean:
        signature = _UNREADABLE + signature
    claim_store.replace_articles(database, rows, failed_files, signature)
    return outcome


class NoClaims(AnnotationError):
    """No annotation file is in view, or those in view hold no claim: linking them would
    store none (emptying the stored links), and a check of nothing would pass."""


def require_annotation_files(config: ProjectConfig) -> AnnotationFiles:
    """The config's `annotation_files`, for `link_if_changed` to link; refused when there
    is none: a glob's typo, or a run from the wrong folder."""
    files = annotation_files(config)
    if not any(files):
        found = config.config_above()
        if found is not None:
            advice = run_from(found)
        elif config.source_file is not None:
            advice = (f"add one, or set 'annotations' and 'articles' in "
                      f"{config.source_file.name}")
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
    files: AnnotationFiles | None = None,
) -> LinkOutcome | None:
    """Link again unless the annotation files (``files``, default the config's
    `annotation_files`), the config and the index are exactly as they were at the last
    clean link (or ``force``); None when nothing needed doing."""
    files = files if files is not None else annotation_files(config)
    signature = _signature(database, config, files)
    if not force and signature is not None and claim_store.link_signature(database) == signature:
        return None
    loaded = load_claims(config, files)
    if not loaded.errors and not any(article.claims for article in loaded.articles):
        count = len(files[0]) + len(files[1])
        raise NoClaims(f"the {counted(count, 'annotation file')} under {config.root} matching "
                       f"{_patterns(config)} {'holds' if count == 1 else 'hold'} no claims",
                       hint="check 'annotations' and 'articles' in annotate.toml; the stored "
                            "links are kept")
    return link_all(database, config, loaded, signature)


class LinkState(str, Enum):
    """How the stored links stand to what the config's annotation files say."""

    CURRENT = "current"
    CHANGED = "changed"  # the files, the config or the index changed since the last link
    UNREADABLE = "unreadable"  # unchanged, but some file could not be read then
    NO_FILES = "no files"  # claims are stored, and the config finds no annotation file


def link_state(database: Database, config: ProjectConfig) -> LinkState:
    """Where the config finds no annotation files (the articles folder emptied, or globs
    that match nothing), NO_FILES when claims are stored (`link` would refuse, and keep
    them) and CURRENT when none are: nothing to compare with."""
    try:
        files = annotation_files(config)
    except UnreadableFolder:  # `link` names it
        return LinkState.CHANGED
    if not (files[0] or files[1]):
        return LinkState.NO_FILES if claim_store.has_claims(database) else LinkState.CURRENT
    signature = _signature(database, config, files)
    stored = claim_store.link_signature(database)
    if signature is not None and stored == signature:
        return LinkState.CURRENT
    if signature is not None and stored == _UNREADABLE + signature:
        return LinkState.UNREADABLE
    return LinkState.CHANGED


def _signature(
    database: Database, config: ProjectConfig, files: tuple[list[Path], ...]
) -> str | None:
    """What the links depend on: the repos, the index and the files; None when a file
    vanished or is unreadable (the loader reports it)."""
    digest = hashlib.sha256(f"links {LINK_FORMAT}\0".encode())
    digest.update(repr(sorted(config.repos.items())).encode())
    digest.update(claim_store.index_state(database).encode())
    try:
        for path in (*files[0], *files[1]):
            digest.update(os.fsencode(path) + b"\0" + path.read_bytes() + b"\0")
    except OSError:
        return None
    return digest.hexdigest()


def repo_filter(config: ProjectConfig) -> RepoFilter:
    """The body permalinks that are claims: those into configured repos, and those into a
    repo whose name is close to one (to be reported broken: more likely a typo)."""
    return RepoFilter(lambda github: bool(config.repo_for_github(github)
                                          or config.github_close_to(github)))


def _split_articles(articles: list[Article]) -> list[AnnotationError]:
    """An annotation file's ``article: kv/bridge.md`` beside the Markdown article
    ``articles/kv/bridge.md``: the two are merged only when the paths are equal."""
    markdown = {article.path for article in articles if _is_markdown(article.source_file)}
    found: list[AnnotationError] = []
    for article in articles:
        if _is_markdown(article.source_file) or article.path in markdown:
            continue
        longer = sorted(path for path in markdown if path.endswith("/" + article.path))
        if len(longer) == 1:
            found.append(AnnotationFileError(
                f"article '{article.path}' is not the Markdown article '{longer[0]}': their "
                "claims are two articles", file=article.source_file,
                hint=f"write 'article: {longer[0]}' to make them one"))
    return found


def _is_markdown(source_file: str) -> bool:
    return source_file.lower().endswith((".md", ".markdown"))


def _merge_articles(
    articles: list[Article], outcome: LinkOutcome, failed_files: set[str]
) -> list[Article]:
    """One Article per path: files naming the same article add their claims to it.

    A file repeating a claim id of an earlier file's claim of the same article is reported,
    and like a file that fails to load it adds nothing and keeps its previous rows.
    """
    merged: dict[str, Article] = {}
    first: dict[tuple[str, str], Claim] = {}
    for article in articles:
        clashes = [claim for claim in article.claims if (article.path, claim.claim_id) in first]
        for claim in clashes:
            earlier = first[article.path, claim.claim_id]
            outcome.errors.append(AnnotationFileError(
                f"duplicate claim id '{claim.claim_id}' of article '{article.path}' "
                f"(first defined at {earlier.source_file}:{earlier.line})",
                file=claim.source_file, line=claim.line,
            ))
        if clashes:
            failed_files.add(article.source_file)
            continue
        first.update(((article.path, claim.claim_id), claim) for claim in article.claims)
        base = merged.get(article.path)
        merged[article.path] = article if base is None else Article(
            article.path, base.title or article.title, base.source_file,
            base.claims + article.claims,
        )
    return list(merged.values())


def _article_row(
    resolver: Resolver, article: Article, outcome: LinkOutcome
) -> claim_store.ArticleRow:
    outcome.articles += 1
    claims = [_claim_row(resolver, claim, outcome) for claim in article.claims]
    return claim_store.ArticleRow(article.path, article.title, article.source_file, claims)


def _claim_row(resolver: Resolver, claim: Claim, outcome: LinkOutcome) -> claim_store.ClaimRow:
    outcome.claims += 1
    refs = [_ref_row(resolver, claim, seq, entry, outcome) for seq, entry in
            enumerate(claim.refs)]
    symbols = " ".join(f"{ref.get('path') or ''} {ref.get('qualname') or ''}" for ref in refs)
    waivers = [
        {"status": w.status, "until": w.until.isoformat(), "reason": w.reason, "line": w.line}
        for w in claim.waivers
    ]
    return claim_store.ClaimRow(
        claim.article, claim.claim_id, claim.text, claim.at, claim.source_file, claim.line,
        refs, waivers, symbols,
    )


def _ref_row(
    resolver: Resolver, claim: Claim, seq: int, entry: RefEntry, outcome: LinkOutcome
) -> dict:
    outcome.refs += 1
    row: dict = {"seq": seq, "written": entry.text, "line": entry.line, "quote": entry.quote,
                 "repo": entry.ref.repo, "version": entry.ref.version}
    if entry.unreadable is not None:
        return _broken(row, claim, entry.unreadable.located(claim.source_file, entry.line),
                       outcome)
    try:
        resolved = _quoted_definition(resolver, resolver.resolve(entry.ref), entry)
    except UnindexedVersion as error:
        located = error.located(claim.source_file, entry.line)
        if _unknown_version(resolver, error):
            located = _unknown_pin(error, entry.text).located(claim.source_file, entry.line)
            return _broken(row, claim, located, outcome)
        pin = f"{error.repo}@{error.version}"
        outcome.unindexed.setdefault(pin, UnindexedRefs(error)).add(claim)
        return _state(row, "unindexed", located, outcome)
    except ResolveError as error:
        return _broken(row, claim, error.located(claim.source_file, entry.line), outcome)
    row.update(_resolved_columns(resolved))
    row["uses"] = [_use_row(resolver, text) for text in entry.uses]
    relation_error = _relation_error(resolver, resolved, row["uses"])
    if relation_error is not None:
        located = relation_error.located(claim.source_file, entry.line)
        return _broken(row, claim, located, outcome)
    return _state(row, "linked", None, outcome)


def _broken(row: dict, claim: Claim, error: AnnotationError, outcome: LinkOutcome) -> dict:
    """A broken ref: an error, unless its claim waives ``broken`` until today or later
    (``check`` then lets it pass, and so does ``link``)."""
    waiver = governing_waiver(claim.waivers, "broken")
    if waiver is not None and waiver.in_force(datetime.date.today()):
        outcome.waived.append((error, waiver))
    else:
        outcome.errors.append(error)
    return _state(row, "broken", error, outcome)


def _unknown_version(resolver: Resolver, error: UnindexedVersion) -> bool:
    return error.version not in resolver.config.repo(error.repo).versions


def _unknown_pin(error: UnindexedVersion, written: str) -> ResolveError:
    """A pin at a version neither indexed nor configured: a typo, a branch or a commit, none
    of which ``annotate index`` (of the configured versions) will ever make resolve."""
    pin = f"{error.repo}@{error.version}"
    if error.misspelling_of:  # in the message, where check shows it
        return ResolveError(f"{pin} is neither indexed nor configured; "
                            + queries.did_you_mean(error.repo, error.misspelling_of))
    if written.startswith("https://") and COMMIT.fullmatch(error.version):
        hint = ("a commit names only a version indexed from git at that commit (a wheel "
                "records none): put the release tag in its place, blob/TAG/PATH")
    elif written.startswith("https://"):
        hint = "a permalink must name a configured release tag: blob/TAG/PATH"
    else:
        hint = (f"fix the pin, or add {error.version} to [repos.{error.repo}] versions in "
                f"annotate.toml and {queries.index_advice(pin)}")
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
    raise ResolveError(
        f"quote '{entry.quote}' does not occur in {resolved.canonical}{where} at its own pin",
        hint="the annotation is wrong from the start: fix the quote or the ref",
    )


def _use_row(resolver: Resolver, text: str) -> dict:
    """A ``uses:`` target, resolved; with its ``error`` when it does not resolve."""
    try:
        used = resolver.resolve(parse_ref(text))
    except UnindexedVersion as error:
        if _unknown_version(resolver, error):
            return {"written": text, "error": _unknown_pin(error, text)}
        return {"written": text}
    except AnnotationError as error:
        return {"written": text, "error": error}
    return {"written": text, "resolved": used.canonical, "repo": used.repo,
            "version": used.version, "path": used.path, "qualname": used.qualname}


def _resolved_columns(resolved: Resolved) -> dict:
    return {
        "repo": resolved.repo, "version": resolved.version, "resolved": resolved.canonical,
        "path": resolved.path, "qualname": resolved.qualname, "kind": resolved.kind,
        "start_line": resolved.start_line, "end_line": resolved.end_line,
        "blob_id": resolved.blob_id, "exact": resolved.exact,
        "normalized": resolved.normalized, "shape": resolved.shape,
    }


def _state(row: dict, state: str, error: AnnotationError | None, outcome: LinkOutcome) -> dict:
    outcome.states[state] += 1
    row["state"] = state
    row["message"] = _stored_message(state, error)
    return row


def _stored_message(state: str, error: AnnotationError | None) -> str | None:
    """What ``check`` will say of the ref: a broken ref's hint with it, since ``check``
    prints no ``link`` errors (an unindexed ref's hint is ``check``'s own)."""
    if error is None:
        return None
    return error.explained if state == "broken" else error.message
