"""``annotate fix``: rewrite refs of moved symbols, and move claims' pins forward.

Edits touch only the text they replace: every other byte of a file (comments, order,
quoting, line endings) stays as it was. A claim's values are found where its YAML says
they stand (`annotations.yaml_edit`), never by searching lines; every edited file is
read again as `check` reads it and must hold exactly the claims it held, but for the
edits meant; and the files are written all or none.

* A ``moved`` ref whose match is unambiguous (no other candidates) and whose content did
  not change (or only cosmetically) is rewritten to the symbol's new place at the target
  version: a ref as ``REPO@TARGET:PATH::QUALNAME`` in annotation files, a permalink as
  the new permalink in Markdown articles. A symbol that moved *and* changed is left as it
  is, with a note: pinning the ref at the target would call the changed code fresh before
  anyone read it.
* ``--bump CLAIM`` moves the claim to the target version after its author re-checked it
  (``CLAIM`` is ``ARTICLE#ID`` or just ``ID`` when that is unique): its ``at:`` becomes
  the target, its moved refs (changed or not) and its permalinks their new places (a ref
  written without a pin stays without one: it takes the claim's new pin), and its refs
  written with their own pin that pin's target. A claim with a ref that would
  not hold at the target (removed, broken, an ambiguous move, a quote or ``uses:`` that
  no longer stands, an unindexed version), or that cannot be rewritten in place, is
  refused, naming that ref.
"""

from __future__ import annotations

import difflib
import errno
import os
import re
import shutil
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from annotations.errors import AnnotationError
from annotations.loader import ComposedYaml, load_annotation_text, load_markdown_text
from annotations.markdown import (
    LINE_BREAK_RE,
    URL_CHARS,
    URL_RE,
    URL_TRAILING,
    markdown_visible_lines,
)
from annotations.model import Article, Claim, RepoFilter
from annotations.refs import PLAIN_VIEW, RefForm, parse_ref
from annotations.results import CheckReport, RefResult, Status
from annotations.yaml_edit import ClaimsYaml, NewLine, Span, Unwritable
from db.close_matches import close_matches, did_you_mean
from indexer.config import line_span

# Lines end where the loader's (and YAML's) line numbers say they do: also at a lone CR,
# NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR.
_LINE = re.compile(f"[^\r\n\x85\u2028\u2029]*(?:{LINE_BREAK_RE.pattern})"
                   "|[^\r\n\x85\u2028\u2029]+\\Z")
_ENDING = re.compile(f"(?:{LINE_BREAK_RE.pattern})\\Z")
_URL_CHARS = re.compile(URL_CHARS + "*")
_EXTENDS_BEFORE = re.compile(r"[\w./:@#<>-]")
_EXTENDS_AFTER = re.compile(r"[\w<>#/-]|[.:][\w:<]")
_BY_HAND = "edit it by hand"


class FixError(AnnotationError):
    """A fix that cannot be applied as asked."""


@dataclass
class FilePlan:
    """The new text of one file: its original lines and the edits to make in them.

    Every edit is placed in the original text (the claims' YAML is composed once) and
    they are all made at the end, from the last to the first, so that none moves the
    place of another: composing the file again after each edit made fix quadratic."""

    path: Path
    original: str
    original_lines: list[str] = field(default_factory=list)
    edits: int = 0
    _pending: dict[tuple, Span | NewLine] = field(default_factory=dict, repr=False)
    _claims: ClaimsYaml | None = field(default=None, repr=False)
    _visible: dict[int, str] | None = field(default=None, repr=False)

    @classmethod
    def read(cls, path: Path) -> FilePlan:
        text = path.read_bytes().decode("utf-8")
        return cls(path, text, _LINE.findall(text))

    @property
    def lines(self) -> list[str]:
        lines = list(self.original_lines)
        for edit in sorted(self._pending.values(), key=_place, reverse=True):
            _make(edit, lines, self._ending())
        return lines

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def claims(self) -> ClaimsYaml:
        if self._claims is None:
            self._claims = ClaimsYaml.of(self.original_lines)
        return self._claims

    def replace_on_line(self, line: int, old: str, new: str) -> bool:
        """Replace the ref ``old`` where it stands whole on ``line`` (not inside a longer
        ref that starts or ends with it, nor where the loader saw no link: in code or an
        HTML comment, nor where an edit already replaces it): a permalink in a Markdown
        article's body."""
        visible = self._visible_lines().get(line - 1)
        if visible is None or not 0 < line <= len(self.original_lines):
            return False
        text = self.original_lines[line - 1]
        taken = {edit.start for edit in self._pending.values()
                 if isinstance(edit, Span) and edit.line == line - 1}
        hidden = zip(visible, text, strict=False)  # the text has its line ending too
        taken.update(column for column, (seen, written) in enumerate(hidden) if seen != written)
        start = _find_ref(text, old, taken)
        if start < 0:
            return False
        self.apply(Span(line - 1, start, start + len(old), new))
        return True

    def _visible_lines(self) -> dict[int, str]:
        if self._visible is None:
            bom = self.original.startswith("\ufeff")
            self._visible = markdown_visible_lines(self.original.removeprefix("\ufeff"))
            if bom and 0 in self._visible:  # the loader reads the text without it
                self._visible[0] = "\ufeff" + self._visible[0]
        return self._visible

    def apply(self, edit: Span | NewLine) -> None:
        if isinstance(edit, Span):
            if self.original_lines[edit.line][edit.start:edit.end] == edit.new:
                return  # already so: a pin at the target, say
            key: tuple = ("span", edit.line, edit.start)
        else:
            key = ("line", edit.after, edit.text)
        if self._pending.get(key) == edit:
            return  # the same edit asked for twice
        self._pending[key] = edit
        self.edits += 1

    def _ending(self) -> str:
        found = LINE_BREAK_RE.search(self.original)
        return found.group(0) if found else "\n"

    def diff(self, display: str) -> str:
        return "".join(
            _ended(line) for line in difflib.unified_diff(
                _LINE.findall(self.original), self.lines,
                fromfile=f"a/{display}", tofile=f"b/{display}",
            )
        )


def _ended(diff_line: str) -> str:
    """A line of a diff; a file's last line that no line break ends is marked as diff(1)
    and git mark it, so that the diff's next line starts a line of its own."""
    if _ENDING.search(diff_line):
        return diff_line
    return diff_line + "\n\\ No newline at end of file\n"


def _place(edit: Span | NewLine) -> tuple[int, int, int]:
    """Where an edit is made in the original lines: a line inserted after line L comes
    after every edit within L."""
    if isinstance(edit, Span):
        return edit.line, 0, edit.start
    return edit.after, 1, 0


def _make(edit: Span | NewLine, lines: list[str], ending: str) -> None:
    if isinstance(edit, Span):
        line = lines[edit.line]
        lines[edit.line] = line[:edit.start] + edit.new + line[edit.end:]
        return
    if not _ENDING.search(lines[edit.after]):
        lines[edit.after] += ending
    lines.insert(edit.after + 1, edit.text + ending)


def _find_ref(line: str, ref: str, taken: Collection[int] = ()) -> int:
    """Where ``ref`` stands on ``line`` as a whole ref (not at a ``taken`` start), or -1."""
    start = line.find(ref)
    while start >= 0:
        end = start + len(ref)
        if ref.startswith("https://"):
            extension = _URL_CHARS.match(line, end)
            assert extension is not None  # a '*' pattern matches everywhere
            whole = not extension.group(0).rstrip(URL_TRAILING)
        else:
            whole = not _EXTENDS_BEFORE.match(line[start - 1:start]) and not (
                _EXTENDS_AFTER.match(line, end))
        if whole and start not in taken:
            return start
        start = line.find(ref, start + 1)
    return -1


@dataclass
class FixPlan:
    """The edits of one fix, file by file, and what each edited file must then hold."""

    root: Path
    markdown: Collection[str] = ()
    tracks: Callable[[str], bool] | None = None  # the repos whose body permalinks are claims
    files: dict[str, FilePlan] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    pins: dict[tuple[str, str], str] = field(default_factory=dict)
    rewrites: dict[tuple[str, str, int, str], str] = field(default_factory=dict)
    older: Callable[[str, str], bool] = field(default=lambda _first, _second: False,
                                              repr=False)
    _originals: dict[str, Article] = field(default_factory=dict, repr=False)
    _claims: dict[str, dict[str, Claim]] = field(default_factory=dict, repr=False)

    def pin_after(self, target: str | None, result: RefResult) -> str | None:
        """The pin of ``result``'s ref when ``target`` comes before it: fix moves refs
        and claims forward only."""
        pin = (result.resolved or "").partition(":")[0]
        return pin if target and self.older(target, pin) else None

    def file(self, display: str) -> FilePlan:
        if display not in self.files:
            # a symlinked annotation file is edited where it lives: the link stays a link
            self.files[display] = FilePlan.read((self.root / display).resolve())
        return self.files[display]

    def edited(self) -> list[tuple[str, FilePlan]]:
        return [(name, plan) for name, plan in sorted(self.files.items()) if plan.edits]

    def edit_count(self) -> int:
        return sum(plan.edits for plan in self.files.values())

    def diff(self) -> str:
        return "".join(plan.diff(name) for name, plan in self.edited())

    def loaded(self, name: str) -> dict[str, Claim]:
        """The claims of file ``name`` as it was read, by id."""
        if name not in self._claims:
            self._claims[name] = {claim.claim_id: claim for claim in self._original(name).claims}
        return self._claims[name]

    def uses_of(self, result: RefResult) -> list[tuple[str, ...]]:
        """The canonical ``uses:`` targets of each entry of the result's ref on its line
        (a ref written twice there has two), as its file held them."""
        claim = self.loaded(result.file).get(result.claim)
        return [ref.uses for ref in claim.refs if (ref.line, ref.text) == (result.line, result.ref)
                ] if claim is not None else []

    def _original(self, name: str) -> Article:
        if name not in self._originals:
            plan = self.file(name)
            self._originals[name] = self._load(name, plan.original, plan.claims().composed)
        return self._originals[name]

    def _load(self, name: str, text: str, composed: ComposedYaml | None = None) -> Article:
        """The file's claims as `link` reads them, from its YAML ``composed`` already when
        it is given (and is the text's)."""
        text = text.removeprefix("\ufeff")
        if name not in self.markdown:
            return load_annotation_text(text, name, composed)
        repos = RepoFilter(self.tracks) if self.tracks else None
        return load_markdown_text(text, name, repos, composed)

    def rewritten_urls(self) -> dict[str, dict[str, str]]:
        """Per file, the permalinks that the plan rewrites there, with their new URLs."""
        by_file: dict[str, dict[str, str]] = defaultdict(dict)
        for (file, _, _, written), new in self.rewrites.items():
            by_file[file][written] = new
        return by_file

    def verify(self) -> None:
        """Read every edited file again: it must load, and hold what it held but for the
        edits meant (another claim's ref or text, a shared anchor, must not change)."""
        urls = self.rewritten_urls()
        for name, file_plan in self.edited():
            before = self._original(name)
            try:
                after = self._load(name, file_plan.text)
            except AnnotationError as error:
                raise FixError(f"the edits would leave {name} unreadable ({error.message}); "
                               "nothing was changed", hint=_BY_HAND) from None
            unmeant = _unmeant_change(before, after, self, name, urls[name])
            if unmeant:
                raise FixError(f"the edits to {name} would also change {unmeant}; nothing "
                               "was changed", hint=_BY_HAND)

    def read_only(self) -> list[str]:
        """The edited files whose owner made them read-only (no write bit: root may write
        any file, so the mode is what says it), or that this user may not write. Renaming
        a new file over one would change it all the same (a new inode: a hard link to it
        is split off), so fix writes none of them."""
        return [name for name, plan in self.edited() if _read_only(plan.path)]

    def write(self) -> list[str]:
        """Write every edited file, or none: each goes to a temporary file beside it first,
        and the temporary files replace the originals once all of them are written. A
        read-only file is refused before any is written."""
        self._refuse_read_only()
        staged: list[tuple[Path, Path]] = []
        try:
            for name, file_plan in self.edited():
                temporary = file_plan.path.with_name(file_plan.path.name + ".annotate-fix")
                staged.append((temporary, file_plan.path))
                _write_staged(name, temporary, file_plan)
            self._refuse_files_changed_meanwhile()
            self._replace_all(staged)
        except BaseException:  # an error, or Ctrl-C or SIGTERM: no temporary file stays
            for temporary, _ in staged:
                if temporary.is_file():  # not a folder of that name that was in the way
                    temporary.unlink()
            raise
        return [name for name, _ in self.edited()]

    def _refuse_files_changed_meanwhile(self) -> None:
        """An edited file saved again since it was read (its author, in an editor): the new
        text, made from the old one, would replace what was saved."""
        for name, file_plan in self.edited():
            if not _as_read(file_plan):
                raise FixError(f"{name} changed while fix ran; nothing was changed",
                               hint="run 'annotate fix' again")

    def _refuse_read_only(self) -> None:
        names = self.read_only()
        if not names:
            return
        one = len(names) == 1
        it = "it" if one else "them"
        globs = " and ".join(sorted({"'articles'" if name in self.markdown else "'annotations'"
                                     for name in names}))
        raise FixError(f"{', '.join(names)} {'is' if one else 'are'} read-only; nothing was "
                       "changed", hint=f"make {it} writable, or leave {it} out of the config's "
                       f"{globs} globs")

    def _replace_all(self, staged: list[tuple[Path, Path]]) -> None:
        """Move the temporary files over the originals; when one cannot be replaced (an
        immutable file), or the run is interrupted, put back the ones already replaced,
        so that nothing changed."""
        originals = {plan.path: plan.original for _, plan in self.edited()}
        done: list[Path] = []
        try:
            for temporary, path in staged:
                try:
                    os.replace(temporary, path)
                except OSError as error:
                    raise FixError(f"cannot replace {path.name} ({error.strerror}); nothing "
                                   "was changed", hint="make it writable") from None
                done.append(path)
        except BaseException:
            for replaced in done:
                replaced.write_bytes(originals[replaced].encode("utf-8"))
            raise


def _read_only(path: Path) -> bool:
    try:
        mode = path.stat().st_mode
    except OSError:
        return False  # gone since it was read: writing it fails, and says why
    return not mode & 0o222 or not os.access(path, os.W_OK)


def _as_read(file_plan: FilePlan) -> bool:
    """Whether the plan's file still holds what the plan was made from (not if it is
    gone, or cannot be read)."""
    try:
        return file_plan.path.read_bytes() == file_plan.original.encode("utf-8")
    except OSError:
        return False


def _write_staged(name: str, temporary: Path, file_plan: FilePlan) -> None:
    try:
        temporary.write_bytes(file_plan.text.encode("utf-8"))
        shutil.copymode(file_plan.path, temporary)
    except OSError as error:
        denied = isinstance(error, PermissionError) or error.errno == errno.EROFS
        raise FixError(f"cannot write {name}'s new text to {temporary.name} "
                       f"({error.strerror}); nothing was changed",
                       hint="make its folder writable" if denied else None) from None


def _unmeant_change(
    before: Article, after: Article, plan: FixPlan, name: str, urls: dict[str, str]
) -> str | None:
    """What the edits change in file ``name`` beyond what they mean to (``urls``: the
    permalinks rewritten there), or None."""
    if (before.path, before.title) != (after.path, after.title):
        return "the article's path or title"
    if len(before.claims) != len(after.claims):
        return "the number of claims"
    for old, new in zip(before.claims, after.claims, strict=True):
        if not _as_meant(old, new, plan, name, urls):
            return f"claim '{old.claim_id}'"
    return None


def _as_meant(old: Claim, new: Claim, plan: FixPlan, name: str, urls: dict[str, str]) -> bool:
    expected = [plan.rewrites.get((name, old.claim_id, ref.line, ref.text), ref.text)
                for ref in old.refs]
    rewritten = expected != [ref.text for ref in old.refs]
    pin = plan.pins.get((name, old.claim_id), old.at)
    if rewritten and old.body_link:
        same_claim = True  # a body permalink's claim is named and worded after its link
    else:
        text = old.text
        if old.body_link:  # its text is its paragraph's: a bare URL rewritten there shows
            text = _with_rewritten_urls(text, urls)
        same_claim = (old.claim_id, text) == (new.claim_id, new.text)
    same_refs = [ref.text for ref in new.refs] == expected and all(
        a.quote == b.quote and (pin != old.at or a.uses == b.uses)
        for a, b in zip(old.refs, new.refs, strict=True)
    )
    return same_claim and same_refs and new.at == pin and _waived(old) == _waived(new)


def _with_rewritten_urls(text: str, urls: dict[str, str]) -> str:
    """``text`` with each permalink that ``urls`` rewrites, where it ends as in prose,
    replaced by its new URL (a URL that runs on, ``#L1`` in ``#L10``, is another)."""
    def rewrite(found: re.Match[str]) -> str:
        url = found[0].rstrip(URL_TRAILING)
        return urls.get(url, url) + found[0][len(url):]
    return URL_RE.sub(rewrite, text)


def _waived(claim: Claim) -> list[tuple]:
    """A claim's waivers, but for their lines (an inserted ``at:`` moves them)."""
    return [(waiver.status, waiver.until, waiver.reason) for waiver in claim.waivers]


def plan_fixes(
    root: Path, report: CheckReport, bump: Iterable[str] = (), markdown: Collection[str] = (),
    repos: RepoFilter | None = None, older: Callable[[str, str], bool] | None = None,
) -> FixPlan:
    """The edits ``fix`` makes (``markdown``: the Markdown articles' display paths, read as
    such when the edits are verified, their body permalinks into the repos ``repos``
    tracks). ``older(a, b)``: whether ``REPO@VERSION`` a comes before b (fix moves refs
    forward only: to a target older than a ref's pin, a check ``--against`` it asks how
    the claim held then, not where to move it)."""
    plan = FixPlan(root, frozenset(markdown), repos.tracks if repos else None)
    if older is not None:
        plan.older = older
    bumps: dict[tuple[str, str], tuple[str, list[RefResult]]] = {}
    for wanted in bump:
        results = _claim_results(report, wanted)
        bumps.setdefault((results[0].article, results[0].claim), (wanted, results))
    bumped = {result for _, results in bumps.values() for result in results}
    by_claim: dict[tuple[str, str], list[RefResult]] = defaultdict(list)
    for result in report.results:
        by_claim[(result.file, result.claim)].append(result)
    for result in report.results:
        if result.status is Status.MOVED and result not in bumped:
            _fix_move(plan, result, by_claim[(result.file, result.claim)])
    pins: list[tuple[str, RefResult, str]] = []
    edits: dict[str, int] = {}  # by claim: the edits its bump made before its pin's
    for wanted, results in bumps.values():
        before = plan.edit_count()
        pins.append(_bump(plan, wanted, results, report.target_versions))
        edits[wanted] = plan.edit_count() - before
    for wanted, first, target in pins:  # last: an inserted 'at:' line moves the lines below
        before = plan.edit_count()
        _set_pin(plan, wanted, first, target)
        if not edits[wanted] and plan.edit_count() == before:
            plan.notes.append(f"claim '{wanted}' is at {target} already: nothing to bump")
    plan.verify()
    return plan


def _fix_move(plan: FixPlan, result: RefResult, its_claims_refs: list[RefResult]) -> None:
    where = f"{result.file}:{result.line}"
    pin = plan.pin_after(result.target, result)
    if pin:
        plan.notes.append(f"{where}: left {result.ref} as it is: {result.target} is older "
                          f"than its pin {pin}, and fix moves refs forward only")
        return
    if result.candidates:
        places = ", ".join(filter(None, (result.new_ref, *result.candidates)))
        plan.notes.append(f"{where}: left {result.ref} as it is: the move is ambiguous "
                          f"({places})")
        return
    if result.changes:
        blockers = _bump_blockers(its_claims_refs)
        plan.notes.append(f"{where}: left {result.ref} as it is: "
                          f"{_moved_and_changed(result, blockers)}")
        return
    _rewrite_at_target(plan, result)


def _moved_and_changed(result: RefResult, blockers: list[tuple[RefResult, str]]) -> str:
    """What to do about a ref that moved and changed: re-read its claim, then bump it, or
    first mend every ref that keeps the claim from being bumped (``blockers``); of one a
    bump can never take, only what to do by hand."""
    changes = ", ".join(result.changes)
    if result.ref.startswith("https://"):
        return (f"it moved to {result.new_url} and changed ({changes}); re-read the text "
                "that links it, then write the new permalink")
    moved = f"it moved to {result.new_ref} and changed ({changes}); re-read claim " \
            f"'{result.claim}'"
    bump = f"'annotate fix --bump {result.article}#{result.claim}' moves it"
    by_hand = next(((other, hint) for other, hint in blockers
                    if other.status in _BUMPED_BY_HAND), None)
    if by_hand is not None:
        other, hint = by_hand
        return f"{moved}; as {other.ref} is {other.status.value}, {hint}"
    mend = "".join(dict.fromkeys(f"; {other.ref} is {other.status.value}: {hint}"
                                 for other, hint in blockers))  # a ref written twice, once
    return f"{moved}{mend}, then {bump}"


def _rewrite_at_target(plan: FixPlan, result: RefResult) -> None:
    """Write the ref as its symbol's place at the target: a move's new ref, or the
    permalink at the target; a ref that cannot be is left, with a note."""
    replacement = _new_permalink(result) if result.ref.startswith("https://") else result.new_ref
    unwritten = _rewrite(plan, result, replacement) if replacement else "no new ref to write"
    if unwritten:
        plan.notes.append(f"{result.file}:{result.line}: left {result.ref} as it is: "
                          f"{unwritten}")


def _rewrite(plan: FixPlan, result: RefResult, new: str) -> str | None:
    """Write ``new`` in place of the result's ref; None once done, else why it is not."""
    file_plan = plan.file(result.file)
    claims = file_plan.claims()
    if claims.claim(result.claim) is None:
        if not _is_body_permalink(plan, result, claims):
            return "its claim is not found in the file"
        if not file_plan.replace_on_line(result.line, result.ref, new):
            return "it is not written on that line"
    else:
        try:
            edits = claims.ref_edits(result.claim, result.line, result.ref, new,
                                     plan.uses_of(result))
        except Unwritable as error:
            return error.message
        if not edits:
            return "it is not found among its claim's refs on that line"
        for edit in edits:
            file_plan.apply(edit)
    plan.rewrites[(result.file, result.claim, result.line, result.ref)] = new
    return None


def _is_body_permalink(plan: FixPlan, result: RefResult, claims: ClaimsYaml) -> bool:
    """A claim that the loader made of a permalink in a Markdown article's text (not one of
    the file's ``claims``)."""
    return result.file in plan.markdown and result.ref.startswith("https://") and (
        claims.claim(result.claim) is None)


def _new_permalink(result: RefResult) -> str | None:
    """The permalink at the target: the lines the author linked, moved with their symbol (all
    of the symbol when its length changed); no anchor stays none, and one line is ``#Lx``."""
    if not result.new_url:
        return None
    plain = PLAIN_VIEW.search(result.ref.split("#", 1)[0])  # GitHub's source view, kept
    base = result.new_url.split("#", 1)[0] + (plain[0] if plain else "")
    written, old, new = (_anchor(url) for url in (result.ref, result.old_url, result.new_url))
    if written is None or new is None:
        return base if written is None else result.new_url
    start, end = new
    if old is not None and old[1] - old[0] == end - start:
        start, end = written[0] + start - old[0], written[1] + start - old[0]
    return f"{base}#{line_span(start, end)}"


def _anchor(url: str | None) -> tuple[int, int] | None:
    match = _ANCHOR.search(url or "")
    if match is None:
        return None
    start = int(match.group(1))
    return start, int(match.group(2) or start)


_ANCHOR = re.compile(r"#L([0-9]+)(?:C[0-9]+)?(?:-L?([0-9]+)(?:C[0-9]+)?)?\Z")


_BUMPED_BY_HAND = frozenset({Status.QUOTE_MISSING, Status.RELATION_MISSING})
_BUMP_BLOCKERS = {
    Status.REMOVED: "edit or drop that ref first",
    Status.BROKEN: "mend that ref first",
    Status.QUOTE_MISSING: "re-read the claim at the target, then edit its quote and its "
                          "'at:' together by hand",
    Status.RELATION_MISSING: "re-read the claim at the target, then edit its uses: and its "
                             "'at:' together by hand",
    Status.UNINDEXED: "index that version first",
}


def _bump(
    plan: FixPlan, wanted: str, results: list[RefResult], targets: tuple[str, ...]
) -> tuple[str, RefResult, str]:
    """Rewrite the claim's refs for its target; return what its pin becomes."""
    first = results[0]
    if _is_body_permalink(plan, first, plan.file(first.file).claims()):
        raise FixError(f"claim '{wanted}' comes from a Markdown permalink",
                       hint="bump it by editing the permalink's version")
    target = _claim_target(plan, wanted, first, targets)
    pin = plan.pin_after(target, first)
    if pin:
        raise FixError(f"claim '{wanted}' cannot move back to {target} from {pin}; nothing "
                       "was changed", hint="fix moves claims forward only")
    for result in results:
        _refuse_unless_it_holds_at_the_target(wanted, target, result)
    for result in results:
        if result.ref.startswith("https://"):
            new = _new_permalink(result)
        elif result.status is Status.MOVED:
            new = _as_written(result, result.new_ref, target)
        else:
            new = _repinned(result)
        if new and new != result.ref:
            unwritten = _rewrite(plan, result, new)
        else:
            unwritten = _pin_uses(plan, result)
        if unwritten:
            raise FixError(f"claim '{wanted}' cannot move to {target}: {result.ref} cannot "
                           f"be rewritten ({unwritten}); nothing was changed", hint=_BY_HAND)
    return wanted, first, target


def _pin_uses(plan: FixPlan, result: RefResult) -> str | None:
    """Write out the old pin of the unpinned ``uses:`` targets of a ref the bump leaves as
    written, which would take the claim's new pin; None once done, else why not."""
    claims = plan.file(result.file).claims()
    if claims.claim(result.claim) is None:
        return None  # a Markdown permalink's claim has no uses:
    try:
        edits = claims.uses_edits(result.claim, result.line, result.ref, plan.uses_of(result))
    except Unwritable as error:
        return error.message
    for edit in edits:
        plan.file(result.file).apply(edit)
    return None


def _claim_target(
    plan: FixPlan, wanted: str, first: RefResult, targets: tuple[str, ...]
) -> str:
    """The target of the repo the claim is pinned in (its refs may name other repos)."""
    claim = plan.loaded(first.file).get(first.claim)
    repo = ((claim.at if claim else None) or first.resolved or "").partition("@")[0]
    target = next((t for t in targets if t.partition("@")[0] == repo), None)
    if target is None:
        raise FixError(f"claim '{wanted}' has no target version for {repo or 'its repo'}",
                       hint="give one with --against REPO@VERSION")
    return target


def _set_pin(plan: FixPlan, wanted: str, first: RefResult, target: str) -> None:
    """Make ``target`` the claim's pin: its own ``at:``, unless its file's pins it there."""
    claim = plan.loaded(first.file).get(first.claim)
    if claim is not None and claim.at == target:
        return
    try:
        edit = plan.file(first.file).claims().pin_edit(first.claim, target)
    except Unwritable as error:
        raise FixError(f"claim '{wanted}' cannot move to {target}: {error.message}; nothing "
                       "was changed", hint="bump this claim by editing its 'at:' by hand"
                       ) from None
    plan.file(first.file).apply(edit)
    plan.pins[(first.file, first.claim)] = target


def _bump_blockers(results: Iterable[RefResult]) -> list[tuple[RefResult, str]]:
    """The refs that keep their claim from being bumped, each with what to do about it."""
    return [(result, hint) for result in results
            if (hint := _blocker_hint(result)) is not None]


def _blocker_hint(result: RefResult) -> str | None:
    if result.status is Status.MOVED and result.candidates:
        return "choose one of its candidates and write it first"
    if result.status is not Status.MOVED and _lines_elsewhere(result):  # a quote may stand
        return ("its lines changed and other lines stand at their numbers at the target: "
                "write the lines to cite there by hand (check's diff shows them)")
    return _BUMP_BLOCKERS.get(result.status)


def _lines_elsewhere(result: RefResult) -> bool:
    """Whether a ``PATH#Lx-Ly`` ref's changed lines are not where its numbers point at the
    target (lines came or went above them): moving its pin alone would cite other lines.
    A permalink is rewritten from where its symbol is instead."""
    if parse_ref(result.ref).form is not RefForm.LINES:
        return False
    old, new = (url.rpartition("/blob/")[2].partition("/")[2] if url else None
                for url in (result.old_url, result.new_url))
    return old != new


def _refuse_unless_it_holds_at_the_target(wanted: str, target: str, result: RefResult) -> None:
    hint = _blocker_hint(result)
    if hint is not None:
        raise FixError(f"claim '{wanted}' cannot move to {target}: "
                       f"{result.ref} is {result.status.value} ({result.message})", hint=hint)


def _unknown_claim_hint(report: CheckReport, article: str, claim_id: str) -> str:
    """Where claim ``claim_id``, which ``article`` (when given) does not hold, is, or the
    closest ids of that article's claims (of every claim's when none is given or it holds
    none): a misspelt ``--bump``."""
    elsewhere = sorted({r.article for r in report.results if r.claim == claim_id})
    if elsewhere:
        return f"it is in {', '.join(elsewhere)}: write {elsewhere[0]}#{claim_id}"
    ids = {r.claim for r in report.results if article in (r.article, r.file)} if article else set()
    close = close_matches(claim_id, sorted(ids or {r.claim for r in report.results}),
                           n=3, cutoff=0.7)
    if close:
        prefix = f"{article}#" if ids else ""
        return did_you_mean([f"{prefix}{other}" for other in close])
    return "write ARTICLE#ID, FILE#ID or the claim's id"


def _as_written(result: RefResult, new: str | None, target: str) -> str | None:
    """``new`` (``REPO@VERSION:...``) without its pin when the ref was written without one
    and that pin is the claim's new one, ``target``, as its author would write it then."""
    if new is None or parse_ref(result.ref).pinned or not new.startswith(f"{target}:"):
        return new
    return new[len(target) + 1:]


def _repinned(result: RefResult) -> str | None:
    """A ref written with its own pin (``vllm@v1:PATH::QUALNAME``) with its target's."""
    repo, _, version = (result.resolved or "").partition(":")[0].partition("@")
    pin = f"{repo}@{version}:"
    if version and result.ref.startswith(pin) and result.target:
        return result.target + ":" + result.ref[len(pin):]
    return None


def _claim_results(report: CheckReport, wanted: str) -> list[RefResult]:
    article, _, claim_id = wanted.rpartition("#")
    article = article.removeprefix("./")
    results = [
        r for r in report.results
        if r.claim == claim_id and (not article or article in (r.article, r.file))
    ]
    if not results:
        raise FixError(f"no claim '{wanted}'", hint=_unknown_claim_hint(report, article, claim_id))
    if len({r.article for r in results}) > 1:
        articles = ", ".join(sorted({r.article for r in results}))
        raise FixError(f"claim id '{claim_id}' is in several articles: {articles}",
                       hint=f"write ARTICLE#{claim_id}")
    return results


